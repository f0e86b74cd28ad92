"""Every shell line of the README and the docs works as written, or its block says why not.

Each line must be `uv run ...` (or `export NAME=value`): a fresh clone has no other way to reach
the project's commands. A block without a skip mark may only run `react-agent`; it runs with the
model pointed at a scripted OpenAI-compatible server answering the block's `replies`, never the
embedded model (`REACT_AGENT_LOCAL=off`), state in a fresh folder, and must end with the
block's exit status. A `console` block's output must be what the commands print
(`tests/docs/shell_lines.py`). Lines that need Docker, a real key, a browser or the embedded model
carry a `skip:` mark with the reason; the README's first command is run by
tests/integration/test_local_llm.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import REPO, SHELL, Block, all_blocks
from tests.docs.plugin import API_KEY
from tests.docs.shell_lines import (
    RUNNABLE,
    commands,
    match_output,
    program,
    with_real_ids,
    write_shim,
)
from tests.support.openai_server import ScriptedOpenAIServer

BLOCKS = all_blocks(SHELL)
RUN = [b for b in BLOCKS if not b.skip]
_PREFIXES = ("OPENAI_", "REACT_AGENT_", "LANGSMITH_", "LANGCHAIN_")
# The embedded model takes minutes to build and seconds a question: the docs tests never start it.
EMBEDDED = re.compile(r"--extra\s+local|--model[ =]local\b|REACT_AGENT_MODEL=local\b")


def shell_env(tmp_path: Path, base_url: str) -> dict[str, str]:
    """A fresh shell's environment: the test's programs on PATH (behind the `uv` stand-in), the
    model at the scripted server, nothing of the developer's keys or settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(_PREFIXES)}
    bin_dir = str(Path(sys.executable).parent)
    return {
        **clean,
        "PATH": os.pathsep.join([str(write_shim(tmp_path / "shim")), bin_dir, "/usr/bin", "/bin"]),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": API_KEY,
        "REACT_AGENT_LOCAL": "off",
        "REACT_AGENT_STATE_DIR": str(tmp_path / "state"),
        "LANGSMITH_TRACING": "false",
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }


def test_the_docs_have_shell_lines_that_run() -> None:
    assert len(RUN) >= 4
    assert sum(len(commands(b)) for b in RUN) >= 8


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_every_shell_line_is_uv_run(block: Block) -> None:
    lines = commands(block)
    assert lines, f"{block.where}: a shell block without a command; use ```text for output."
    for command in lines:
        name, problem = program(command.line)
        assert problem is None, f"{block.where}: {problem}"
        if block.skip or name is None:
            continue
        assert name in RUNNABLE, (
            f"{block.where}: `{command.line}` runs {name}; mark the block "
            "'<!-- docs-test skip: <why it cannot run in the tests> -->'."
        )
        assert "OPENAI_BASE_URL=" not in command.line, (
            f"{block.where}: a line that points at a real endpoint needs a skip mark."
        )
        assert not EMBEDDED.search(command.line), (
            f"{block.where}: `{command.line}` starts the embedded model; mark the block "
            "'<!-- docs-test skip: starts the embedded model -->'."
        )


def test_the_readme_commands_are_exact() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert 'uv run --extra local react-agent ask "What is 17 * 23?"' in readme
    assert "uv run --extra local pytest" in readme


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.where)
def test_shell_example(block: Block, tmp_path: Path) -> None:
    ids: dict[str, str] = {}
    exports: list[str] = []
    with ScriptedOpenAIServer.from_json(block.replies) as server:
        env = shell_env(tmp_path, server.base_url)
        for command in commands(block):
            line = with_real_ids(command.line, ids)
            if line.startswith("export "):
                exports.append(line)
                continue
            done = subprocess.run(
                ["bash", "-c", "\n".join([*exports, line])],
                cwd=tmp_path,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=60,
                check=False,
            )
            printed = done.stdout.splitlines()
            assert done.returncode == block.exit, (
                f"{block.where}: `{line}` exited {done.returncode}, expected {block.exit}:\n"
                + done.stdout[-3000:]
            )
            if block.lang == "console":
                problem = match_output(command.shown, printed, ids)
                assert problem is None, f"{block.where}: `{line}`: {problem}\n{done.stdout}"
        asked = len(server.chat_requests)
    assert asked == len(block.replies), (
        f"{block.where}: the commands asked the model {asked} times; the mark scripts "
        f"{len(block.replies)} replies."
    )
