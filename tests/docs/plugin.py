"""The docs examples' model: a scripted OpenAI-compatible server with the block's replies.

Used two ways, with the same rules:

* by `tests/docs/test_python_examples.py`, which runs every Python block of the README and the
  docs itself (no pytest options needed);
* as a pytest plugin (`-p tests.docs.plugin`) when pytest-markdown-docs collects the Markdown
  files itself: a block whose fence names `fixture:docs_model` gets the `docs_model` fixture,
  which finds the block's `replies` mark by the item's file and line.

Either way the example runs in a fresh folder with an environment that points `ChatOpenAI` at
the scripted server and keeps everything else out (no keys, no embedded model, no tracing),
and afterwards the server must have answered exactly the replies the mark scripted: an example
that stops calling the model, or calls it more, fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import Block, block_at
from tests.support.openai_server import ScriptedOpenAIServer

API_KEY = "sk-docs-example"
_PREFIXES = ("OPENAI_", "REACT_AGENT_", "LANGSMITH_", "LANGCHAIN_")


def isolate(monkeypatch: pytest.MonkeyPatch, workdir: Path) -> None:
    """The reader's fresh shell: none of the developer's keys or agent settings, no tracing,
    never the embedded model, state and files in `workdir`."""
    for name in list(os.environ):
        if name.startswith(_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("REACT_AGENT_LOCAL", "off")
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(workdir / "state"))
    monkeypatch.chdir(workdir)


@contextmanager
def scripted_model(
    block: Block, monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> Iterator[ScriptedOpenAIServer]:
    """The block's scripted server, with the environment pointing at it; checks afterwards
    that every scripted reply, and no more, was asked for."""
    if not block.replies:
        raise AssertionError(f"{block.where}: fixture:docs_model needs a 'replies:' mark.")
    isolate(monkeypatch, workdir)
    with ScriptedOpenAIServer.from_json(block.replies) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        yield server
        asked = len(server.chat_requests)
        assert server.errors == [], f"{block.where}: the scripted server saw {server.errors}"
        assert asked == len(block.replies), (
            f"{block.where}: the example asked the model {asked} times; its mark scripts "
            f"{len(block.replies)} replies."
        )


@pytest.fixture
def docs_model(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[ScriptedOpenAIServer]:
    """For pytest-markdown-docs items: the scripted server of the block this item runs."""
    item = request.node
    line = getattr(item, "start_line", None)
    if not isinstance(line, int):
        raise AssertionError("docs_model is for the Markdown examples of the docs only.")
    with scripted_model(block_at(Path(item.path), line), monkeypatch, tmp_path) as server:
        yield server
