"""The front door and the site: a short README whose links land, a site that builds strictly
with every page in its navigation, and a `.dockerignore` that keeps secrets out of images."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.docs.markdown_blocks import REPO, MarkError, blocks, parse_mark
from tests.docs.shell_lines import match_output, program, with_real_ids

README = REPO / "README.md"
DOCS = REPO / "docs"


def nav_pages() -> set[str]:
    """The pages mkdocs.yml's navigation lists."""
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    text = re.sub(r"!!python/name:\S+", "null", text)  # a tag only mkdocs resolves
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, str) and node.endswith(".md"):
            found.add(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(text)["nav"])
    return found


def test_the_readme_is_a_short_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for heading in ("## Quick start", "## From code", "## Documentation"):
        assert heading in text
    assert "about 4-5 minutes the first time" in text and "uv run -v --extra local" in text


def test_the_readme_links_land() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        if not target.startswith("http"):
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"


def test_every_page_is_in_the_navigation() -> None:
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages == nav_pages()


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "REACT_AGENT_FETCH_MAX_CHARS" in table and "settings-table" not in table
    assert not (tmp_path / "hooks").exists()


@pytest.mark.parametrize(
    "pattern",
    [".env", ".env.*", "**/.env", ".venv/", "**/__pycache__/", "**/*.sqlite", "**/*.gguf"],
)
def test_the_dockerignore_keeps_secrets_state_and_models_out(pattern: str) -> None:
    lines = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert pattern in lines
    assert "!.env.example" in lines  # the only .env file an image may carry


# --------------------------------------------------------------------------- the harness itself


def test_a_skip_mark_needs_a_reason() -> None:
    with pytest.raises(MarkError, match="needs a reason"):
        parse_mark(" skip: ", "page.md:1")
    with pytest.raises(MarkError, match="unknown docs-test mark"):
        parse_mark(" skipp: Docker", "page.md:1")
    assert parse_mark('replies:\n{"content": "hi"}\n', "x")["replies"] == ({"content": "hi"},)


def test_a_mark_belongs_to_the_next_block_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test skip: needs Docker -->\n```bash\nuv run a\n```\n\ntext\n\n"
        "```bash\nuv run b\n```\n",
        encoding="utf-8",
    )
    first, second = blocks(page)
    assert (first.skip, second.skip) == ("needs Docker", None)


def test_lines_must_be_uv_run() -> None:
    assert program("uv run --extra local react-agent ask hi") == ("react-agent", None)
    assert program("export OPENAI_API_KEY=sk-...") == (None, None)
    name, problem = program("react-agent history --thread demo")
    assert name is None and "does not start with `uv run`" in (problem or "")


def test_shown_output_allows_ids_and_ellipses_and_learns_the_real_ids() -> None:
    ids: dict[str, str] = {}
    shown = [
        "  1  think  1f1e73c2-4fd9-6d80-8001-a20816fd6d6d  act",
        "error: … thread 3f9c2a1b7d40",
    ]
    printed = [
        "  1  think  1f1e9b3a-4edc-6421-8001-5b940a6ad9c6  act",
        "error: no thread 0123456789ab",
    ]
    assert match_output(shown, printed, ids) is None
    assert with_real_ids("--checkpoint 1f1e73c2-4fd9-6d80-8001-a20816fd6d6d", ids) == (
        "--checkpoint 1f1e9b3a-4edc-6421-8001-5b940a6ad9c6"
    )
    assert match_output(["Final Answer: 391"], ["Final Answer: 392"], {}) is not None
