"""knowledge_search against a hostile notes folder (issue 16.4): links out of the folder, links
inside it, FIFOs and sockets. Nothing outside the folder may be indexed or shown, and nothing may
block: every test has a timeout, and a FIFO that hung the tool before now fails it fast."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import knowledge_files
from tools.knowledge import search_knowledge
from tools.knowledge_files import read_document, scan
from tools.knowledge_index import index_path

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs and symlinks"),
]

SECRET = "root:x:0:0:TOPSECRET-PASSWORD-LINE:/root:/bin/bash\n"


@pytest.fixture(params=["dir_fd", "checked-path"])
def open_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of opening: relative to the folder with O_NOFOLLOW, and the fallback for
    platforms without `dir_fd` (lstat + resolve, then open)."""
    if request.param == "checked-path":
        monkeypatch.setattr(knowledge_files, "_RELATIVE_OPEN", False)
    return request.param


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd.md").write_text(SECRET, encoding="utf-8")
    (outside / "folder").mkdir()
    (outside / "folder" / "deep.md").write_text("# Deep\nTOPSECRET deep file", encoding="utf-8")
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "real.md").write_text("# Real note\nThe gardener waters roses.", encoding="utf-8")
    (notes / "sub" / "inner.md").write_text("# Inner\nroses inside a subfolder", encoding="utf-8")
    (notes / "secret.md").symlink_to(outside / "passwd.md")  # a link out of the folder
    (notes / "etc.txt").symlink_to("/etc/passwd")
    (notes / "escape").symlink_to(outside / "folder", target_is_directory=True)
    (notes / "alias.md").symlink_to(notes / "real.md")  # a link inside the folder
    (notes / "relative.md").symlink_to("sub/inner.md")
    os.mkfifo(notes / "pipe.md")
    os.mkfifo(notes / "sub" / "pipe.txt")
    monkeypatch.setenv("REACT_AGENT_KB_DIR", str(notes))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(OSError):  # a path too long for AF_UNIX: no socket, the rest stays
        server.bind(str(notes / "sock.md"))
    try:
        yield notes
    finally:
        server.close()


def test_only_regular_files_inside_the_folder_are_documents(hostile: Path) -> None:
    assert sorted(scan(hostile)) == ["real.md", "sub/inner.md"]


def test_search_never_shows_what_links_point_to(hostile: Path, open_mode: str) -> None:
    assert search_knowledge("TOPSECRET") == f"No documents in {hostile} match 'TOPSECRET'."
    assert search_knowledge("root") == f"No documents in {hostile} match 'root'."
    result = search_knowledge("roses")
    assert result.startswith(("[1] real.md — Real note\n", "[1] sub/inner.md — Inner\n"))
    assert "alias.md" not in result and "relative.md" not in result  # links inside: skipped too
    assert result.count("\n\n") == 1  # two documents


def test_a_fifo_does_not_hang_the_tool(hostile: Path, open_mode: str) -> None:
    assert "real.md" in search_knowledge("gardener")
    assert read_document(hostile, "pipe.md") is None
    assert read_document(hostile, "sub/pipe.txt") is None


@pytest.mark.parametrize(
    "relative", ["secret.md", "etc.txt", "alias.md", "escape/deep.md", "../outside/passwd.md"]
)
def test_reading_refuses_links_and_escapes(hostile: Path, open_mode: str, relative: str) -> None:
    assert read_document(hostile, relative) is None


def test_a_file_swapped_for_a_link_after_the_scan_is_not_read(
    hostile: Path, open_mode: str
) -> None:
    assert search_knowledge("gardener").startswith("[1] real.md")
    outside = hostile.parent / "outside" / "passwd.md"
    (hostile / "sub" / "inner.md").unlink()
    (hostile / "sub" / "inner.md").symlink_to(outside)
    assert read_document(hostile, "sub/inner.md") is None
    (hostile / "sub").rename(hostile / "moved")
    (hostile / "sub").symlink_to(outside.parent, target_is_directory=True)
    assert read_document(hostile, "sub/passwd.md") is None


def test_a_file_swapped_for_a_fifo_after_the_scan_is_skipped(
    hostile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = scan(hostile)
    (hostile / "real.md").unlink()
    os.mkfifo(hostile / "real.md")
    monkeypatch.setattr(
        "tools.knowledge_index.scan", lambda folder, skipped=None: before
    )  # the stale view
    assert search_knowledge("roses").startswith("[1] sub/inner.md")
    assert "gardener" not in search_knowledge("roses")


def test_links_indexed_by_an_older_version_are_dropped(hostile: Path) -> None:
    search_knowledge("roses")
    with sqlite3.connect(index_path(hostile)) as conn:  # as if an old index had taken the link
        conn.execute(
            "INSERT INTO documents(path, mtime_ns, size, title, body) VALUES (?, 1, 1, ?, ?)",
            ("secret.md", "secret", SECRET),
        )
        conn.execute(
            "INSERT INTO documents_fts(rowid, title, body) VALUES (last_insert_rowid(), ?, ?)",
            ("secret", SECRET),
        )
    assert search_knowledge("TOPSECRET") == f"No documents in {hostile} match 'TOPSECRET'."
    with sqlite3.connect(index_path(hostile)) as conn:
        assert conn.execute(
            "SELECT count(*) FROM documents WHERE path = 'secret.md'"
        ).fetchone() == (0,)


# -- hard links (issue 27) and the size of the index ---------------------------------------------

LINKED = "[1 file was skipped for having more than one hard link: a hard link can make a file "
LINKED += "from outside the folder look like a note.]"


def test_a_hard_link_out_of_the_folder_is_not_indexed_and_the_search_says_so(
    hostile: Path, tmp_path: Path
) -> None:
    try:
        os.link(tmp_path / "outside" / "passwd.md", hostile / "linked.md")
    except OSError as exc:  # a file system without hard links
        pytest.skip(f"no hard links here: {exc}")
    assert "linked.md" not in scan(hostile)
    assert read_document(hostile, "linked.md") is None  # also when reading, after any scan
    result = search_knowledge("TOPSECRET password line")
    assert result.startswith("No documents in ") and "root:x:0:0" not in result
    assert result.endswith("\n" + LINKED)
    found = search_knowledge("gardener roses")
    assert found.startswith("[1] real.md — Real note") and found.endswith("\n\n" + LINKED)


def test_a_file_hard_linked_after_it_was_indexed_is_dropped(hostile: Path, tmp_path: Path) -> None:
    assert "gardener" in search_knowledge("gardener roses")
    os.link(hostile / "real.md", tmp_path / "outside" / "second-name.md")
    result = search_knowledge("gardener roses")
    assert "gardener" not in result and result.endswith(LINKED)


def test_the_indexed_notes_are_capped_and_the_search_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder of many notes builds an index bounded by MAX_INDEXED_BYTES (lowered here to
    keep the test small): the notes past it, in path order, are left out, with a sentence."""
    cap = 64 * 1024
    monkeypatch.setattr(knowledge_files, "MAX_INDEXED_BYTES", cap)
    notes = tmp_path / "many"
    notes.mkdir()
    words = " ".join(f"word{n}" for n in range(1500))  # about 13 KB of distinct trigrams
    for n in range(30):
        (notes / f"note{n:02}.md").write_text(f"# Note {n}\nmarker{n:02}x {words}\n")
    monkeypatch.setenv("REACT_AGENT_KB_DIR", str(notes))
    kept = scan(notes)
    assert list(kept) == [f"note{n:02}.md" for n in range(len(kept))] and 0 < len(kept) < 30
    assert sum(size for _, size in kept.values()) <= cap
    result = search_knowledge("marker00x")
    assert result.startswith("[1] note00.md — Note 0")
    left = 30 - len(kept)
    assert result.endswith(
        f"[Only the first 65,536 bytes of notes are searched; {left} files were left out.]"
    )
    assert search_knowledge("marker29x").startswith("No documents in ")
    index = index_path(notes)
    assert index.stat().st_size < 40 * cap  # bounded by the cap, not by the 400 KB of notes
    assert knowledge_files.Skipped(over_cap=1).sentence() == (
        "[Only the first 65,536 bytes of notes are searched; 1 file was left out.]"
    )


def test_the_default_cap_is_20_mib() -> None:
    assert knowledge_files.MAX_INDEXED_BYTES == 20 * 1024 * 1024
    assert knowledge_files.Skipped(over_cap=3).sentence() == (
        "[Only the first 20 MiB of notes are searched; 3 files were left out.]"
    )
