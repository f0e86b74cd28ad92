"""What a user can type wrong, and what a damaged store does: one sentence, the right exit
status, and never a lost chat or a hidden thread."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


def one_sentence(stderr: str) -> bool:
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_refused(
    question: str, openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    done = run_cli("ask", question, env=env)
    assert done.returncode == 2
    assert one_sentence(done.stderr) and "question is empty" in done.stderr
    assert not openai_server.chat_requests


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "hi", "--thread", ""],
        ["ask", "hi", "--thread", "  "],
        ["chat", "--thread", ""],
        ["resume", "--thread", ""],
        ["history", "--thread", ""],
        ["show", "--thread", "", "--checkpoint", "x"],
        ["replay", "--thread", "", "--checkpoint", "x"],
    ],
)
def test_an_empty_thread_id_is_refused_not_a_new_thread(
    args: list[str], openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    done = run_cli(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert one_sentence(done.stderr) and "--thread needs a thread id" in done.stderr
    assert not openai_server.chat_requests


@pytest.mark.parametrize("limit", ["0", "-3"])
def test_threads_limit_must_be_positive(limit: str, env: dict[str, str]) -> None:
    done = run_cli("threads", "--limit", limit, env=env)
    assert done.returncode == 2
    assert one_sentence(done.stderr) and f"--limit must be at least 1, got {limit}" in done.stderr


def test_invalid_utf8_on_chat_stdin_does_not_end_the_chat(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Got it."), Reply(content="Still here."))
    typed = b"caf\xe9 \xff\xfe please\nand then?\n/exit\n"
    done = run_cli("chat", "--thread", "u1", "--protocol", "native", env=env, stdin=typed)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Final Answer: Got it.", "Final Answer: Still here."]
    assert done.stderr.count("not valid UTF-8") == 1
    sent = [m["content"] for m in openai_server.chat_requests[1].body["messages"][1:]]
    assert sent == ["caf\ufffd \ufffd\ufffd please", "Got it.", "and then?"]


def test_a_damaged_thread_is_named_and_the_others_still_listed(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    for thread in ("good-1", "bad", "good-2"):
        openai_server.add(Reply(content=f"Answer for {thread}."))
        done = run_cli("ask", f"question {thread}", "--thread", thread, env=env)
        assert done.returncode == 0, done.stderr
    store = Path(env["REACT_AGENT_STATE_DIR"]) / "checkpoints.sqlite"
    with sqlite3.connect(store) as conn:
        damaged = conn.execute(
            "UPDATE checkpoints SET checkpoint = X'00ff00ff' WHERE thread_id = 'bad'"
        ).rowcount
        conn.execute("UPDATE writes SET value = X'00ff00ff' WHERE thread_id = 'bad'")
    assert damaged > 0

    listing = run_cli("threads", env=env)
    assert listing.returncode == 1
    listed = [line.split()[0] for line in listing.stdout.splitlines()[1:]]
    assert listed == ["good-2", "good-1"]
    assert one_sentence(listing.stderr)
    assert "thread 'bad' cannot be read: a stored checkpoint is damaged" in listing.stderr

    as_json = run_cli("threads", "--json", env=env)
    assert [json.loads(line)["thread_id"] for line in as_json.stdout.splitlines()] == [
        "good-2",
        "good-1",
    ]
    history = run_cli("history", "--thread", "bad", env=env)
    assert history.returncode == 1 and one_sentence(history.stderr)
    assert "thread 'bad' cannot be read" in history.stderr
    assert run_cli("history", "--thread", "good-1", env=env).returncode == 0
