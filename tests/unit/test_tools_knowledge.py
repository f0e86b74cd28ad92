"""knowledge_search: FTS5 trigram index over a folder, kept in step with the files."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.tools import ToolException

from tools import knowledge_index
from tools.knowledge import SAMPLE_DIR, knowledge_search, search_knowledge
from tools.knowledge_files import document_title
from tools.knowledge_index import index_path
from tools.knowledge_query import Term, _placement, excerpt, excerpt_and_score, query_terms
from tools.knowledge_text import asks_a_number, sections, sentences

CHECKPOINTS = """# Checkpoints

The agent saves a checkpoint after every step, so a thread can resume after a crash.
"""
TOOLS = """# Tool configuration

Set REACT_AGENT_TOOLS to pick tools by name. The weather tool needs no API key.
"""
WEATHER_ZH = """# 天气查询

用户问北京的天气时，模型调用 weather 工具，工具返回气温和风速。广州也可以查询。
"""
NOTES_TXT = """Meeting notes

We agreed to ship the calculator first and the web fetcher later.
"""


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("REACT_AGENT_KB_DIR", raising=False)
    return tmp_path / "state"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "checkpoints.md").write_text(CHECKPOINTS, encoding="utf-8")
    (folder / "tools.md").write_text(TOOLS, encoding="utf-8")
    (folder / "sub" / "weather-zh.md").write_text(WEATHER_ZH, encoding="utf-8")
    (folder / "notes.txt").write_text(NOTES_TXT, encoding="utf-8")
    (folder / "image.png").write_bytes(b"\x89PNG checkpoint")
    (folder / ".hidden.md").write_text("# Hidden\ncheckpoint secret", encoding="utf-8")
    monkeypatch.setenv("REACT_AGENT_KB_DIR", str(folder))
    return folder


def rewrite(path: Path, text: str) -> None:
    """Write `text` and move the mtime forward, as an editor saving later would."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def test_search_returns_file_title_and_excerpt(corpus: Path) -> None:
    assert search_knowledge("checkpoint resume") == (
        "[1] checkpoints.md — Checkpoints\n"
        "The agent saves a checkpoint after every step, so a thread can resume "
        "after a crash."
    )


def test_index_lives_in_the_state_dir(corpus: Path, state: Path) -> None:
    search_knowledge("checkpoint")
    files = list((state / "knowledge").glob("*.sqlite"))
    assert files == [index_path(corpus)]
    with sqlite3.connect(files[0]) as conn:
        paths = sorted(row[0] for row in conn.execute("SELECT path FROM documents"))
    assert paths == ["checkpoints.md", "notes.txt", "sub/weather-zh.md", "tools.md"]


def test_each_folder_has_its_own_index(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert index_path(other) != index_path(corpus)


def test_no_match(corpus: Path) -> None:
    assert search_knowledge("zebra migration") == (
        f"No documents in {corpus} match 'zebra migration'."
    )


def test_titles_from_headings_and_file_names(corpus: Path) -> None:
    result = search_knowledge("calculator")
    assert result.startswith("[1] notes.txt — Meeting notes\n")
    (corpus / "plain.txt").write_text("no heading here\nabout zeppelins\n", encoding="utf-8")
    assert search_knowledge("zeppelins").startswith("[1] plain.txt — plain.txt\n")


def test_changed_file_is_reindexed(corpus: Path) -> None:
    assert search_knowledge("airship").startswith("No documents")
    rewrite(corpus / "tools.md", "# Tool configuration\n\nThe airship tool is new.\n")
    assert search_knowledge("airship") == (
        "[1] tools.md — Tool configuration\nThe airship tool is new."
    )
    assert "REACT_AGENT_TOOLS" not in search_knowledge("tool")


def test_same_size_edit_is_seen_through_mtime(corpus: Path) -> None:
    path = corpus / "notes.txt"
    new = NOTES_TXT.replace("calculator", "calcul8tor")
    assert len(new) == len(NOTES_TXT)
    rewrite(path, new)
    assert search_knowledge("calcul8tor").startswith("[1] notes.txt — Meeting notes")


def test_deleted_and_added_files(corpus: Path) -> None:
    assert search_knowledge("checkpoint").startswith("[1] checkpoints.md")
    (corpus / "checkpoints.md").unlink()
    assert search_knowledge("checkpoint") == f"No documents in {corpus} match 'checkpoint'."
    rewrite(corpus / "resume.md", "# Resume\ncheckpoint")
    assert search_knowledge("checkpoint") == "[1] resume.md — Resume\ncheckpoint"


def test_hidden_and_non_text_files_are_skipped(corpus: Path) -> None:
    assert "secret" not in search_knowledge("checkpoint")
    assert "image.png" not in search_knowledge("checkpoint")


def test_two_character_chinese_word_uses_like(corpus: Path) -> None:
    assert query_terms("北京") == [Term("北京", fts=False)]
    result = search_knowledge("北京")
    assert result.startswith("[1] sub/weather-zh.md — 天气查询\n")
    assert "北京的天气" in result


def test_chinese_terms_of_three_or_more_characters_use_fts(corpus: Path) -> None:
    terms = query_terms("天气查询")
    assert Term("天气查询", fts=True) in terms
    assert search_knowledge("天气查询").startswith("[1] sub/weather-zh.md — 天气查询\n")
    assert search_knowledge("weather 工具").startswith("[1] sub/weather-zh.md")


def test_a_chinese_question_finds_the_document(corpus: Path) -> None:
    # No document contains the whole question; its two-character words still match.
    result = search_knowledge("广州的天气怎么样？")
    assert result.startswith("[1] sub/weather-zh.md — 天气查询\n")


def test_short_latin_words_and_case(corpus: Path) -> None:
    assert search_knowledge("API KEY").startswith("[1] tools.md — Tool configuration\n")
    assert search_knowledge("CHECKPOINT").startswith("[1] checkpoints.md")


@pytest.mark.parametrize(
    "query",
    [
        'checkpoint" OR "',
        "NEAR(checkpoint resume)",
        "checkpoint*",
        "-checkpoint",
        "^check AND",
        "a:b",
        "'; DROP TABLE documents; --",
        "check_point 100%",
    ],
)
def test_query_text_never_becomes_fts_syntax(corpus: Path, query: str) -> None:
    result = search_knowledge(query)
    assert result.startswith(("[1] ", "No documents"))
    assert search_knowledge("checkpoint").startswith("[1] checkpoints.md")


def test_query_without_words_is_refused(corpus: Path) -> None:
    with pytest.raises(ToolException) as caught:
        search_knowledge("?!  …")
    assert str(caught.value) == "The search text '?! …' has no words to search for."


def test_missing_folder_names_the_folder_and_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope"
    monkeypatch.setenv("REACT_AGENT_KB_DIR", str(missing))
    with pytest.raises(ToolException) as caught:
        search_knowledge("anything")
    assert str(caught.value) == (
        f"Knowledge base folder {missing} does not exist; set REACT_AGENT_KB_DIR to a folder "
        f"of .md or .txt files."
    )


def test_corrupt_index_is_rebuilt(corpus: Path) -> None:
    path = index_path(corpus)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    assert search_knowledge("checkpoint").startswith("[1] checkpoints.md")


def test_locked_index_falls_back_to_the_existing_index(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert search_knowledge("checkpoint").startswith("[1] checkpoints.md")
    monkeypatch.setattr(knowledge_index, "BUSY_TIMEOUT_S", 0.05)
    rewrite(corpus / "tools.md", "# Tool configuration\n\nballoon checkpoint\n")
    holder = sqlite3.connect(index_path(corpus), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process is re-indexing
        result = search_knowledge("checkpoint")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.startswith("[1] checkpoints.md")
    assert "balloon" not in result  # stale, but answered
    assert "balloon" in search_knowledge("balloon")  # once the lock is gone the change shows


def test_concurrent_searches_on_a_fresh_index(corpus: Path) -> None:
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(search_knowledge("checkpoint resume"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(results)) == 1 and results[0].startswith("[1] checkpoints.md")
    with sqlite3.connect(index_path(corpus)) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 4


def test_the_sample_corpus_answers_sample_questions() -> None:
    assert search_knowledge("resume a conversation after a crash").startswith(
        "[1] checkpoints.md — Checkpoints and resuming a conversation\n"
    )
    assert search_knowledge("天气查询").startswith("[1] weather-zh.md — 天气查询与 ReAct 模式\n")
    assert search_knowledge("REACT_AGENT_FETCH_ALLOW").startswith(
        ("[1] troubleshooting.txt", "[1] tools-and-configuration.md")
    )
    assert search_knowledge("Thought Action Observation").startswith("[1] react-loop.md")
    assert SAMPLE_DIR.is_dir() and len(list(SAMPLE_DIR.glob("*.md"))) >= 4


async def test_tool_ainvoke(corpus: Path) -> None:
    result = await knowledge_search.ainvoke({"query": "checkpoint"})
    assert result.startswith("[1] checkpoints.md — Checkpoints\n")
    assert knowledge_search.invoke({"query": "checkpoint"}) == result


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Heading one\nbody", "Heading one"),
        ("intro\n\n## Second level ##\n", "Second level"),
        ("Setext title\n=====\nbody", "Setext title"),
        ("---\ntitle: From front matter\n---\n# Heading", "From front matter"),
        ("---\ndate: 2025\n---\n# After front matter", "After front matter"),
        ("no heading at all", "file.md"),
    ],
)
def test_document_title(text: str, title: str) -> None:
    assert document_title(text, "file.md") == title


def test_query_terms() -> None:
    assert query_terms("ReAct 模式") == [
        Term("react", fts=True),
        Term("模式", fts=False),
    ]
    assert query_terms("北京天气") == [
        Term("北京天气", fts=True),
        Term("北京", fts=False),
        Term("京天", fts=False),
        Term("天气", fts=False),
    ]
    assert query_terms("a") == [Term("a", fts=False)]
    assert query_terms("a big cat") == [
        Term("big", fts=True),
        Term("cat", fts=True),
    ]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=40))
def test_any_query_text_gives_a_result_or_the_no_words_error(corpus: Path, query: str) -> None:
    try:
        result = search_knowledge(query)
    except ToolException as exc:
        assert str(exc) == "Give some words to search the knowledge base for." or str(exc).endswith(
            "has no words to search for."
        )
    else:
        assert result.startswith(("[1] ", "No documents in "))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_index_and_its_folders_are_created_private(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "fresh" / "state"
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(state))
    old = os.umask(0o022)  # a usual umask: without care, 0755 folders and 0644 files
    try:
        search_knowledge("checkpoint")
    finally:
        os.umask(old)
    db = index_path(corpus)
    sidecars = [Path(f"{db}-wal"), Path(f"{db}-shm")]
    assert mode(db) == 0o600
    assert all(mode(p) == 0o600 for p in sidecars if p.exists())
    assert [mode(p) for p in (db.parent, state, state.parent)] == [0o700] * 3


def test_existing_folders_and_index_keep_their_modes(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "shared"
    (state / "knowledge").mkdir(parents=True)
    os.chmod(state / "knowledge", 0o750)
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(state))
    search_knowledge("checkpoint")
    assert mode(state / "knowledge") == 0o750


def test_the_observation_is_bounded(corpus: Path) -> None:
    for number in range(6):
        rewrite(
            corpus / ("d" * 150 + f"{number}.md"),
            "---\ntitle: " + "Long title " * 500 + "\n---\n" + "zeppelin " * 5000,
        )
    result = search_knowledge("zeppelin")
    assert result.count("\n\n") == 3  # four hits
    assert len(result) < 2500
    first = result.split("\n", 1)[0]
    assert first.startswith("[1] " + "d" * 150) and first.endswith("…") and len(first) < 340


STORAGE = """# Storage

The agent is a state machine.
Old threads can be deleted when their history is no longer needed.
Checkpoints are stored in a local SQLite file or in PostgreSQL.
"""


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("agents", ["agent"]),
        ("stored", ["store"]),
        ("resuming", ["resum"]),
        ("running", ["run"]),
        ("quickly", ["quick"]),
        ("agent's", []),  # the apostrophe splits the word: "agent" and "s"
        ("stories", ["stori"]),  # Snowball's stem: it matches "story" too
        ("process", []),
        ("big", []),
    ],
)
def test_stems(word: str, expected: list[str]) -> None:
    assert [t.text for t in query_terms(word) if t.stem] == expected


def test_stop_words_are_dropped_unless_nothing_else_is_left() -> None:
    assert [t.text for t in query_terms("Where are the checkpoints?")] == [
        "checkpoints",
        "checkpoint",
    ]
    assert query_terms("the") == [Term("the", fts=True)]


def test_a_plural_query_finds_the_singular_word(corpus: Path) -> None:
    assert search_knowledge("agents").startswith("[1] checkpoints.md — Checkpoints\n")
    assert search_knowledge("crashes").startswith("[1] checkpoints.md — Checkpoints\n")
    assert search_knowledge("picked tools").startswith("[1] tools.md — Tool configuration\n")


def test_a_question_phrased_as_a_sentence_finds_the_note(corpus: Path) -> None:
    result = search_knowledge("How does the agent resume after a crash?")
    assert result.startswith(
        "[1] checkpoints.md — Checkpoints\n"
        "The agent saves a checkpoint after every step, so a thread can resume after a crash."
    )
    assert search_knowledge("Which setting picks the tools?").startswith("[1] tools.md")


def test_the_excerpt_is_the_best_matching_sentence(corpus: Path) -> None:
    rewrite(corpus / "storage.md", STORAGE)
    result = search_knowledge("Where are checkpoints stored?")
    assert result.startswith(
        "[1] storage.md — Storage\n"
        "Checkpoints are stored in a local SQLite file or in PostgreSQL.\n"
    )


def test_a_short_best_sentence_comes_with_the_next_one_line_by_line(corpus: Path) -> None:
    rewrite(corpus / "storage.md", STORAGE)
    assert search_knowledge("state machine").startswith(
        "[1] storage.md — Storage\n"
        "The agent is a state machine.\n"
        "Old threads can be deleted when their history is no longer needed."
    )


def test_sentences_of_a_wrapped_markdown_note() -> None:
    text = (
        "# Title\n\nFirst sentence wraps\nonto the next line. Second one.\n\n"
        "- **item** one\n- item two\n\n| a | b |\n| --- | --- |\n\n## Part\n天气很好。风很大。\n"
    )
    assert sentences(text, "Title") == [
        "First sentence wraps onto the next line.",
        "Second one.",
        "item one",
        "item two",
        "a | b",
        "Part",
        "天气很好。",
        "风很大。",
    ]


def test_chinese_still_finds_the_sentence(corpus: Path) -> None:
    assert search_knowledge("北京天气").startswith(
        "[1] sub/weather-zh.md — 天气查询\n用户问北京的天气时，模型调用 weather 工具，"
    )
    assert search_knowledge("广州 查询") == ("[1] sub/weather-zh.md — 天气查询\n广州也可以查询。")


def test_the_sample_corpus_answers_with_the_right_sentence() -> None:
    result = search_knowledge("Where can checkpoints be kept?")
    assert result.split("\n")[1].startswith("Checkpoints can be kept in memory")
    result = search_knowledge("same thread id")
    assert result.split("\n")[1].startswith("Running again with the same thread id continues")
    result = search_knowledge("private hosts")
    assert result.split("\n")[1].startswith("`REACT_AGENT_FETCH_ALLOW`: host names")


def test_a_tie_goes_to_the_sentence_whose_words_are_rare_in_the_note(corpus: Path) -> None:
    note = "# 台风\n\n台风很常见。台风可以用中文查询。默认使用 Open-Meteo，不需要密钥。"
    rewrite(corpus / "typhoon.md", note)
    result = search_knowledge("台风默认用哪个来源？")  # 台风 is in two sentences, 默认 in one
    assert result.startswith("[1] typhoon.md — 台风\n默认使用 Open-Meteo")


def test_a_table_row_ranks_below_prose_with_as_many_words(corpus: Path) -> None:
    rewrite(
        corpus / "config.md",
        "# Config\n\nsearch | full-text search over a folder of notes\n\n"
        "`NOTES_DIR`: the folder that search indexes.",
    )
    assert "\n`NOTES_DIR`: the folder" in search_knowledge("Which setting sets the search folder?")


def test_a_sentence_counts_the_words_of_the_heading_it_stands_under(corpus: Path) -> None:
    rewrite(
        corpus / "setup.md",
        "# Setup\n\nThe cache folder fills up quickly.\n\n## Settings\n\n"
        "- `CACHE_HOME`: the cache folder.\n",
    )
    result = search_knowledge("Which setting moves the cache folder?")
    assert result.startswith("[1] setup.md — Setup\n`CACHE_HOME`: the cache folder.")


def test_a_plain_text_line_over_an_indented_block_is_its_heading() -> None:
    text = "Problems\n\nThe upload fails.\n  Check the proxy.\n  Raise UPLOAD_LIMIT.\nPlain line.\n"
    assert sections(text, "Problems") == [
        ("The upload fails.", "The upload fails."),
        ("Check the proxy.", "The upload fails."),
        ("Raise UPLOAD_LIMIT.", "The upload fails."),
        ("Plain line.", "The upload fails."),
    ]
    assert sections("# T\n\n- item one\n  wrapped\n", "T") == [("item one wrapped", "")]


def test_a_stem_inside_another_word_counts_little(corpus: Path) -> None:
    rewrite(
        corpus / "threads.md",
        "# Threads\n\nOld threads can be deleted at any time.\n\n"
        "The retry setting lets a tool try again.\n",
    )
    # "lets" also searches for "let", which is inside "deleted"
    assert "\nThe retry setting lets" in search_knowledge("What lets a tool try again?")
    assert _placement("deleted", 2, 3, True) < _placement("lets go", 0, 3, True)


def test_a_word_rare_among_the_sentences_outweighs_a_common_one(corpus: Path) -> None:
    rewrite(
        corpus / "kit.md",
        "# Kit\n\nEvery tool can use the network. A tool may use the network twice. "
        "Each tool can use the network.\nThe calculator is parsed safely.\n",
    )
    # three common words against two rare ones
    result = search_knowledge("Can the calculator tool use the network safely?")
    assert result.startswith("[1] kit.md — Kit\nThe calculator is parsed safely.")


def test_a_heading_is_never_the_excerpt_s_first_line() -> None:
    """A small model copies the excerpt's first line; a heading answers nothing."""
    plain = (
        "Troubleshooting\n\nThe search finds nothing.\n  Search with distinctive keywords.\n"
        "  Check the folder.\n"
    )
    shown = excerpt(plain, query_terms("the search finds nothing, why?"), "Troubleshooting")
    assert shown.splitlines()[0] == "Search with distinctive keywords."
    markdown = "# Notes\n\n## Settings\n\n- `APP_TOOLS` picks the tools.\n"
    assert excerpt(markdown, query_terms("settings"), "Notes") == "`APP_TOOLS` picks the tools."
    nested = "# Notes\n\n## Settings\n\n### Folder\n\nThe notes folder is `APP_DIR`.\n"
    assert excerpt(nested, query_terms("settings"), "Notes") == "The notes folder is `APP_DIR`."


def test_a_hyphenated_word_is_searched_whole() -> None:
    """A "check-out" is not any check: the line holding the whole word comes first."""
    assert Term("check-out", fts=True) in query_terms("when is check-out?")
    body = "# Hotel\n\nCheck the bill at the desk.\nCheck-out is at 11 am.\n"
    assert excerpt(body, query_terms("when is check-out?"), "Hotel").splitlines()[0] == (
        "Check-out is at 11 am."
    )


def test_a_label_is_shown_with_the_sentence_it_names() -> None:
    body = (
        "# Modes\n\n- **Fast mode.** Skips the index and reads files directly.\n"
        "- **Safe mode.** Locks the index first.\n"
    )
    first = excerpt(body, query_terms("what does fast mode do"), "Modes").splitlines()[0]
    assert first == "Fast mode. Skips the index and reads files directly."


def test_a_how_many_question_prefers_the_sentence_with_a_number() -> None:
    body = (
        "# Kit\n\nErrors come back to the model as text.\n\n"
        "The kit ships six tools. Each tool has a name.\n"
    )
    terms = query_terms("how many tools does the kit come with?")
    assert excerpt_and_score(body, terms, "Kit", wants_number=True)[0].startswith(
        "The kit ships six tools."
    )
    assert asks_a_number("how many tools?") and asks_a_number("要重试几次？")
    assert not asks_a_number("Which setting picks the tools?") and not asks_a_number("几乎")
    every = "# Kit\n\nEvery tool of the kit comes with its own tests.\n\nThe kit ships six tools.\n"
    assert excerpt_and_score(every, terms, "Kit", wants_number=True)[0].startswith(
        "The kit ships six tools."
    )
