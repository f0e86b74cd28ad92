"""MCP configuration attacks (issue 27): approvals that a tool-name clash used to drop, a
config file any user could change, and relative paths read against two different folders.

The servers are the test toolbox (tests/support/mcp_servers), started over stdio for real.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_servers import TOOLBOX, toolbox, write_config
from tools.mcp import MCPConfigError, close_all, load_config, mcp_tools
from tools.mcp.approvals import ApprovalConfigError, approves, check_approvals, unmatched

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def stop_servers() -> Iterator[None]:
    yield
    close_all()


# -- approvals survive renaming ------------------------------------------------------------------


def test_a_clash_keeps_the_operators_approval_of_both_tools(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"files": toolbox(), "backup": toolbox()})
    loaded = {t.name: t for t in mcp_tools(config)}
    one, two = loaded["files_echo"], loaded["backup_echo"]  # both renamed: the names clashed
    assert one.metadata["mcp_server"] == "files" and one.metadata["mcp_tool"] == "echo"
    # the tool's own name approves every server's tool of that name
    assert approves(one, {"echo"}) and approves(two, {"echo"})
    # `server:tool` (or `server/tool`) approves that server's alone
    assert approves(one, {"files:echo"}) and not approves(two, {"files:echo"})
    assert approves(two, {"backup/echo"}) and not approves(one, {"backup/echo"})
    # the registry name still works, and `*` approves everything
    assert approves(two, {"backup_echo"}) and approves(one, {"*"})
    assert not approves(one, {"add", "backup:echo"})
    check_approvals(["echo", "files:add", "backup_pid", "*"], loaded.values())


def test_an_approval_that_names_no_tool_is_a_startup_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"files": toolbox(), "backup": toolbox()})
    loaded = mcp_tools(config)
    assert unmatched(["echo", "delete_file", "files:echo", "other:echo"], loaded) == [
        "delete_file",
        "other:echo",
    ]
    with pytest.raises(ApprovalConfigError) as caught:
        check_approvals(["files:echo", "delete_file"], loaded)
    message = str(caught.value)
    assert message.startswith(
        "The approval setting 'delete_file' names no tool, so nothing would be asked; use a "
        "tool's name or, for an MCP tool, 'server:tool' (the tools are: backup_add, "
    )
    assert message.count(".") == 1 and message.endswith(", files_slow).")


# -- a config file any user may change -------------------------------------------------------------


def test_a_world_writable_config_that_starts_commands_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mcp.json", {"box": toolbox()})
    path.chmod(0o666)
    with pytest.raises(MCPConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"MCP config {path}: any user may write this file, and it starts commands; make it "
        "writable by its owner only (chmod o-w)."
    )
    with pytest.raises(MCPConfigError):
        mcp_tools(path)
    path.chmod(0o644)
    assert [s.name for s in load_config(path).servers] == ["box"]


def test_a_config_in_a_world_writable_folder_is_refused_unless_sticky(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = write_config(folder / "mcp.json", {"box": toolbox()})
    folder.chmod(0o777)
    try:
        with pytest.raises(MCPConfigError) as caught:
            load_config(path)
        assert "its folder is world-writable" in str(caught.value)
        folder.chmod(0o777 | stat.S_ISVTX)  # like /tmp: others cannot replace the owner's file
        assert [s.name for s in load_config(path).servers] == ["box"]
    finally:
        folder.chmod(0o755)


def test_a_world_writable_config_of_remote_servers_only_is_read(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mcp.json", {"web": {"url": "https://example.test/mcp"}})
    path.chmod(0o666)
    assert [s.name for s in load_config(path).servers] == ["web"]


# -- relative paths ------------------------------------------------------------------------------


def test_relative_command_and_cwd_are_both_read_from_the_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from another folder, `./bin/toolbox` and `cwd: work` are both the config folder's."""
    config_dir = tmp_path / "conf"
    (config_dir / "bin").mkdir(parents=True)
    (config_dir / "work").mkdir()
    launcher = config_dir / "bin" / "toolbox"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{TOOLBOX}" "$@"\n')
    launcher.chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "bin").mkdir(parents=True)
    (elsewhere / "work").mkdir()
    monkeypatch.chdir(elsewhere)
    path = write_config(
        config_dir / "mcp.json", {"box": {"command": "./bin/toolbox", "cwd": "work"}}
    )
    connection = load_config(path).server("box").connection()
    assert connection["command"] == str(launcher)
    assert connection["cwd"] == str(config_dir / "work")
    loaded = {t.name: t for t in mcp_tools(path, timeout=20)}
    assert loaded["echo"].invoke({"text": "hi"}) == "echo: hi"
    assert (
        load_config(write_config(tmp_path / "b.json", {"b": {"command": "npx"}}))
        .server("b")
        .command
        == "npx"
    )  # a bare name is looked up on PATH, as usual
    assert os.getcwd() == str(elsewhere)


def test_through_the_agent_a_renamed_tool_still_pauses_and_a_stray_entry_is_one_sentence(
    tmp_path: Path,
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from graph import build_graph
    from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

    config = write_config(tmp_path / "mcp.json", {"files": toolbox(), "backup": toolbox()})
    step = calls(tool_call("backup_echo", {"text": "hi"}))
    agent = build_graph(
        model=ScriptedChatModel([step, "done"]),
        checkpointer=InMemorySaver(),
        mcp_config=str(config),
        approve=["echo"],
    )
    paused = agent.invoke({"messages": [("user", "echo hi")]}, {"configurable": {"thread_id": "m"}})
    [request] = paused["__interrupt__"][0].value["action_requests"]
    assert request["name"] == "backup_echo"

    stray = build_graph(
        model=ScriptedChatModel(["never"]), mcp_config=str(config), approve=["delete_file"]
    )
    out = stray.invoke({"messages": [("user", "hi")]})
    assert out["status"] == "error" and "'delete_file' names no tool" in out["error"]
