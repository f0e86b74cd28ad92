"""Small MCP servers written for the MCP tool tests (`TOOLBOX` is the script to start), and
the helpers those tests use to start them and to check that no process is left behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

TOOLBOX = Path(__file__).with_name("toolbox.py")


def children() -> list[tuple[int, str, str]]:
    """(pid, state, command line) of this process's children, from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == os.getpid():
            out.append((int(entry.name), fields[0], cmdline))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def write_config(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def toolbox(**extra: object) -> dict:
    return {"command": sys.executable, "args": [str(TOOLBOX)], **extra}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(flag: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(TOOLBOX), flag, str(port)])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"toolbox {flag} did not listen on {port}")
