"""Every Python example of the README and the docs runs, or says why it cannot.

The code of each block is read by pytest-markdown-docs's own fence reader (so `continuation`
and `notest` mean here what they mean there) and executed in this process, in a fresh folder;
a block marked `fixture:docs_model` talks to a scripted OpenAI-compatible server that answers
with the replies of its mark (`tests/docs/plugin.py`). When pytest-markdown-docs collects the
Markdown files itself in this session (`--markdown-docs`), it runs the same blocks with the same
fixture and this module only checks the marks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from pytest_markdown_docs.plugin import FenceSyntax, extract_fence_tests

from tests.docs.markdown_blocks import PYTHON, REPO, Block, all_blocks
from tests.docs.plugin import isolate, scripted_model

BLOCKS = all_blocks(PYTHON)
MODEL = "fixture:docs_model"


def source_of(block: Block) -> str:
    """The code pytest-markdown-docs would run for this block (earlier blocks included when it
    is a `continuation`), padded so line numbers are the Markdown file's."""
    text = block.path.read_text(encoding="utf-8")
    for fence in extract_fence_tests(
        MarkdownIt("commonmark"), text, 0, block.path, "md", FenceSyntax.superfences
    ):
        if fence.start_line == block.line:
            return fence.source
    raise AssertionError(f"{block.where}: pytest-markdown-docs does not read this block.")


def test_the_docs_have_python_examples() -> None:
    files = {b.path.relative_to(REPO).as_posix() for b in BLOCKS}
    assert "README.md" in files
    assert sum(1 for b in BLOCKS if "notest" not in b.options) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_every_python_block_runs_or_says_why_not(block: Block) -> None:
    if "notest" in block.options:
        assert block.skip, f"{block.where}: a `notest` block needs a 'skip: <reason>' mark."
    else:
        assert not block.skip, f"{block.where}: a skipped block needs the `notest` option too."
    assert bool(block.replies) == (MODEL in block.options), (
        f"{block.where}: a block that talks to the model has `{MODEL}` and a 'replies:' mark."
    )


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if "notest" not in b.options], ids=lambda b: b.where
)
def test_python_example(
    block: Block,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    pytestconfig: pytest.Config,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if getattr(pytestconfig.option, "markdowndocs", False):
        pytest.skip("pytest-markdown-docs runs the docs' examples in this session")
    code = compile(source_of(block), str(block.path), "exec")
    namespace = {"__name__": "__docs_example__"}
    if MODEL in block.options:
        with scripted_model(block, monkeypatch, tmp_path):
            exec(code, namespace)
    else:
        isolate(monkeypatch, tmp_path)
        exec(code, namespace)
    capsys.readouterr()  # what it printed is the reader's; failing asserts in it fail here
