"""`react-agent` probed as a demanding daily user would: bad input, broken endpoints and stores,
approvals across processes, and the JSON a script reads. Each known defect is a strict xfail
that asserts the right behaviour; the passing tests pin behaviours no other test covers.

Found and fixed (now ordinary tests): a `--base-url` without http(s):// and an empty `--model`
reached the endpoint after the thread was written (now one sentence naming the option, exit 2,
nothing written); a SQLite store that is not a database, or a folder, gave a generic
`DatabaseError` line and, as aiosqlite's worker thread outlived the event loop, sometimes a
traceback (now one sentence naming the file, exit 1, the thread waited for inside the loop); a
bad REACT_AGENT_TOOLS / _APPROVE / _CHECKPOINTER / _MCP_CONFIG / _STATE_DIR was refused without
naming its variable; a paused `ask --json` reported `usage: null`; at end of input the pause
notice shared the approval prompt's line; `threads --limit` past SQLite's INTEGER was an
`OverflowError`; `config` showed a `--max-steps` above the cap or an unknown store URL as
usable; `chat` paused for approval exited 0 offering `chat --thread`; Ctrl-C while the embedded
model started promised a resume of a question never saved (it now says the question was not
kept, and resume agrees); `trace` counted the wait between a failed run and its resume as model
time; `history` labelled a failed run's error a Final Answer; `ask --schema` (a JSON schema)
ended answered with a value off the schema, and explained a non-JSON answer as "schema: 0"."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.integration

CALC = (
    'Thought: I should use the calculator.\nAction: calculator\nAction Input: {"expression": '
    '"17 * 23"}'
)
DONE = "Thought: The calculator says 391.\nFinal Answer: 17 * 23 = 391"
TEXT = ("--protocol", "text")
GATED = (*TEXT, "--approve", "calculator")


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


def no_traceback(stderr: str) -> bool:
    return "Traceback" not in stderr and "REACT_AGENT_DEBUG" not in stderr


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def thread_ids(env: dict[str, str]) -> list[str]:
    listed = run_cli("threads", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return [row["thread_id"] for row in json_lines(listed.stdout)]


# --------------------------------------------------------------------------- a broken endpoint


class _Broken(BaseHTTPRequestHandler):
    """Answers every chat request with a 200 whose body is not a reply: broken JSON, or a body
    cut off midway (the connection closes before the promised length)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b'{"id": "x", "choices": [{"ind' if self.server.mode == "cut" else b"{not json"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "1000" if self.server.mode == "cut" else str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if self.server.mode == "cut":
            self.connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture(params=["malformed", "cut", "closed"])
def broken_endpoint(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "closed":
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        yield f"http://127.0.0.1:{port}/v1"
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    server.mode = request.param  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- behaviours that hold


def test_a_broken_endpoint_under_json_is_one_error_document(
    broken_endpoint: str, tmp_path: Path
) -> None:
    """Malformed JSON, a body cut midway, a closed port: `ask --json` still prints exactly one
    JSON document with status `error` and the endpoint named, exit 1, nothing on stderr."""
    env = cli_env(broken_endpoint, tmp_path / "state", REACT_AGENT_MAX_RETRIES="0")
    done = run_cli("ask", "hi", "--json", "--thread", "broken", env=env)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] == "error" and result["answer"] is None
    assert broken_endpoint in result["error"]
    assert set(result) >= {"thread_id", "status", "answer", "error", "steps", "usage"}
    assert done.stderr == ""


def test_reject_with_a_reason_then_a_second_resume_has_nothing_to_do(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    """A rejection typed in a second process reaches the model with its reason, the tool never
    runs, and resuming the same pause again is one sentence (exit 2), with no model call."""
    openai_server.add(Reply(content=CALC))
    paused = run_cli("ask", "17*23?", *GATED, "--thread", "rej", env=env)
    assert paused.returncode == 4, paused.stderr
    openai_server.add(Reply(content="Thought: fine.\nFinal Answer: not computed"))
    done = run_cli("resume", "--thread", "rej", "--json", env=env, stdin="r\nnot now\n")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    action = result["steps"][0]
    assert action["tool"] == "calculator" and action["is_error"] is True
    assert "not now" in action["observation"] and "391" not in action["observation"]
    assert "not now" in openai_server.chat_requests[-1].messages[-1]["content"]
    calls = len(openai_server.chat_requests)
    again = run_cli("resume", "--thread", "rej", env=env, stdin="a\n")
    assert again.returncode == 2
    assert "nothing to resume" in again.stderr and no_traceback(again.stderr)
    assert len(openai_server.chat_requests) == calls


def test_an_edited_call_runs_with_the_typed_input(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content=CALC), Reply(content="Thought: ok.\nFinal Answer: 4"))
    done = run_cli("ask", "17*23?", *GATED, "--json", env=env, stdin='e\n{"expression": "2+2"}\n')
    assert done.returncode == 0, done.stderr
    observation = json.loads(done.stdout)["steps"][0]["observation"]
    assert observation.rstrip().endswith("4") and "391" not in observation
    assert 'will run: calculator {"expression": "2+2"}' in done.stderr


def test_paused_thread_reads_as_json_lines_everywhere(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    """history, threads (JSON Lines) and trace (one object) on a paused text-protocol thread:
    every line parses and carries its documented fields; resume --json with no answer stays
    paused (exit 4) and still prints its JSON."""
    openai_server.add(Reply(content=CALC))
    assert run_cli("ask", "17*23?", *GATED, "--thread", "p", env=env).returncode == 4
    history = run_cli("history", "--thread", "p", "--json", env=env)
    rows = json_lines(history.stdout)
    assert all(
        set(r) >= {"thread_id", "step", "node", "checkpoint_id", "next", "summary"} for r in rows
    )
    assert rows[-1]["next"] == ["review"] and "waiting for approval" in rows[-1]["summary"]
    listed = json_lines(run_cli("threads", "--json", env=env).stdout)
    assert [(r["thread_id"], r["status"]) for r in listed] == [("p", "paused")]
    trace = json.loads(run_cli("trace", "--thread", "p", "--json", env=env).stdout)
    assert trace["status"] == "paused" and trace["bars"][-1]["node"] == "review"
    resumed = run_cli("resume", "--thread", "p", "--json", env=env)
    assert resumed.returncode == 4
    assert json.loads(resumed.stdout)["status"] == "paused"


def test_hiding_characters_in_a_thread_id_are_escaped(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Final Answer: ok"))
    done = run_cli("ask", "hi", "--thread", "a/b c\u202e", env=env)
    assert done.returncode == 0, done.stderr
    assert "\u202e" not in done.stderr and "a/b c\\u{202E}" in done.stderr
    assert thread_ids(env) == ["a/b c\u202e"]


# --------------------------------------------------------------------------- defects found (fixed)


def test_trace_does_not_count_the_wait_before_a_resume_as_model_time(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    env = cli_env(openai_server.base_url, tmp_path / "state", REACT_AGENT_MAX_RETRIES="0")
    openai_server.add(HTTPError(500, "boom", type="server_error"))
    assert run_cli("ask", "hi", "--thread", "gap", env=env).returncode == 1
    time.sleep(3)
    openai_server.add(Reply(content="Final Answer: ok"))
    assert run_cli("resume", "--thread", "gap", env=env).returncode == 0
    trace = json.loads(run_cli("trace", "--thread", "gap", "--json", env=env).stdout)
    assert trace["model_ms"] < 2000, trace["bars"]  # two quick model calls, not the 3 s wait


def test_history_does_not_call_an_error_a_final_answer(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    env = cli_env(openai_server.base_url, tmp_path / "state", REACT_AGENT_MAX_RETRIES="0")
    openai_server.add(HTTPError(500, "boom", type="server_error"))
    done = run_cli("ask", "hi", "--json", "--thread", "failed", env=env)
    assert json.loads(done.stdout)["answer"] is None  # the run has no answer
    rows = json_lines(run_cli("history", "--thread", "failed", "--json", env=env).stdout)
    assert rows[-1]["node"] == "finish"
    assert not any("Final Answer:" in row["summary"] for row in rows), rows[-1]["summary"]


def test_a_base_url_that_is_not_a_url_is_bad_input(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    done = run_cli("ask", "hi", "--base-url", "notaurl", "--thread", "bu", env=env)
    assert done.returncode == 2
    assert "--base-url" in done.stderr and "notaurl/notaurl" not in done.stderr
    assert thread_ids(env) == []


def test_an_empty_model_name_is_bad_input(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Final Answer: ok"))
    done = run_cli("ask", "hi", "--model", "", env=env)
    assert done.returncode == 2 and "--model" in done.stderr
    assert openai_server.chat_requests == []


@pytest.mark.parametrize(
    ("store", "command"),
    [
        ("corrupt", ("ask", "hi")),
        ("corrupt", ("resume", "--thread", "x")),
        ("folder", ("threads",)),
    ],
)
def test_a_damaged_store_is_named_in_one_sentence(
    store: str, command: tuple[str, ...], env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "store.sqlite"
    if store == "corrupt":
        path.write_bytes(b"this is not a database" * 100)
    else:
        path.mkdir()
    done = run_cli(*command, "--checkpointer", f"sqlite:///{path}", env=env)
    assert done.returncode == 1
    assert str(path) in done.stderr and no_traceback(done.stderr)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("REACT_AGENT_TOOLS", "nope"),
        ("REACT_AGENT_APPROVE", "nope"),
        ("REACT_AGENT_CHECKPOINTER", "mongodb://x"),
        ("REACT_AGENT_MCP_CONFIG", "/nonexistent/mcp.json"),
        ("REACT_AGENT_STATE_DIR", "/proc/no-such/state"),
    ],
)
def test_a_bad_environment_value_names_its_variable(
    variable: str, value: str, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    env = cli_env(openai_server.base_url, tmp_path / "state", **{variable: value})
    done = run_cli("ask", "hi", env=env)
    assert done.returncode == 2 and no_traceback(done.stderr)
    assert variable in done.stderr


def test_paused_json_reports_the_tokens_spent(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content=CALC, usage=(100, 20)))
    done = run_cli("ask", "17*23?", *GATED, "--json", env=env)
    assert done.returncode == 4
    result = json.loads(done.stdout)
    assert result["status"] == "paused"
    assert result["steps"][0]["usage"]["total_tokens"] == 120
    assert isinstance(result["usage"], dict) and result["usage"]["total_tokens"] == 120


def test_the_pause_notice_starts_its_own_line(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content=CALC))
    done = run_cli("ask", "17*23?", *GATED, env=env)
    assert done.returncode == 4
    assert any(line.startswith("Paused for approval.") for line in done.stderr.splitlines()), (
        done.stderr
    )


def test_sqlite_store_locked_by_another_writer_is_one_sentence(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], tmp_path: Path
) -> None:
    """A store another process holds an exclusive lock on: the question is not saved, the
    sentence says so and how to send it again; the earlier thread is intact afterwards."""
    store = tmp_path / "locked.sqlite"
    url = f"sqlite:///{store}"
    openai_server.add(Reply(content="Final Answer: first"))
    assert run_cli("ask", "hi", "--thread", "L", "--checkpointer", url, env=env).returncode == 0
    holder = sqlite3.connect(store, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        done = run_cli("ask", "again", "--thread", "L", "--checkpointer", url, env=env)
    finally:
        holder.rollback()
        holder.close()
    assert done.returncode == 1 and no_traceback(done.stderr)
    assert "database is locked" in done.stderr and "was not saved" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    listed = json_lines(run_cli("threads", "--json", "--checkpointer", url, env=env).stdout)
    assert [(r["thread_id"], r["status"], r["last_question"]) for r in listed] == [
        ("L", "answered", "hi")
    ]


def test_a_huge_threads_limit_is_bad_input(env: dict[str, str]) -> None:
    done = run_cli("threads", "--limit", "99999999999999999999", env=env)
    assert done.returncode == 2 and no_traceback(done.stderr)
    assert "--limit" in done.stderr and "OverflowError" not in done.stderr


@pytest.mark.parametrize(
    "args", [("--max-steps", "60"), ("--checkpointer", "mongodb://x")], ids=["cap", "store"]
)
def test_config_refuses_what_a_run_refuses(args: tuple[str, ...], env: dict[str, str]) -> None:
    refused = run_cli("ask", "hi", *args, env=env)
    assert refused.returncode == 2  # a run refuses it...
    shown = run_cli("config", *args, env=env)
    assert shown.returncode == 2, shown.stdout  # ...so config does too
    assert shown.stderr == refused.stderr


def test_a_folder_as_the_store_never_prints_a_traceback(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The traceback comes from aiosqlite's worker thread outliving the event loop: a race, so
    several runs (four at a time) are made and the first traceback ends the test."""
    import subprocess

    from tests.support.cli import CLI, REPO

    folder = tmp_path / "store.sqlite"
    folder.mkdir()
    args = [CLI, "history", "--thread", "x", "--checkpointer", f"sqlite:///{folder}"]
    for _batch in range(6):
        runs = [
            subprocess.Popen(args, env=env, cwd=REPO, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)
        ]  # fmt: skip
        results = [(run.communicate(timeout=60)[1], run.returncode) for run in runs]
        for stderr, code in results:
            assert code == 1
            assert "Traceback" not in stderr and "Exception in thread" not in stderr, stderr


def _local_available() -> bool:
    from graph.models.local import local_available

    return local_available()


@pytest.mark.local_llm
@pytest.mark.skipif(not _local_available(), reason="the local extra is not installed")
def test_ctrl_c_during_the_model_start_keeps_its_promise(tmp_path: Path) -> None:
    """Ctrl-C while the embedded model starts (the question not yet saved) says that the
    question was not kept; whatever it says, resume agrees with it."""
    import signal

    from tests.support.cli import start_cli, wait_for

    env = cli_env("http://unused", tmp_path / "state", REACT_AGENT_LOCAL="on")
    del env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"]  # the embedded model
    run = start_cli("ask", "What is 17 * 23?", "--thread", "early", env=env)
    store = tmp_path / "state" / "checkpoints.sqlite"
    wait_for(store.exists, timeout=60, what="the store to be opened")  # the model starts next
    time.sleep(0.2)
    run.send_signal(signal.SIGINT)
    _out, err = run.communicate(timeout=60)
    assert run.returncode == 130 and no_traceback(err)
    resumed = run_cli("resume", "--thread", "early", env=env, timeout=120)
    if "The run is saved; continue it with" in err:  # a promise made...
        assert "no thread 'early'" not in resumed.stderr  # ...is kept
    else:  # the model was still starting, as it is 0.2 s after the store opens
        assert "nothing of it was kept, so ask it again" in err
        assert "no thread 'early'" in resumed.stderr


@pytest.fixture
def answer_schema(tmp_path: Path) -> Path:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(schema))
    return path


@pytest.mark.parametrize(
    ("protocol", "reply"),
    [
        ("native", '{"m": 1}'),
        ("native", '{"n": "x"}'),
        ("native", "[1]"),
        ("text", 'Final Answer: {"m": 1}'),
        ("text", 'Final Answer: {"n": "x"}'),
    ],
)
def test_an_answer_that_breaks_the_schema_is_not_answered(
    protocol: str,
    reply: str,
    answer_schema: Path,
    openai_server: ScriptedOpenAIServer,
    env: dict[str, str],
) -> None:
    openai_server.add(Reply(content=reply))
    args = ("--schema", str(answer_schema), "--protocol", protocol, "--max-steps", "1")
    done = run_cli("ask", "17*23?", *args, "--json", env=env)
    result = json.loads(done.stdout)
    assert result["status"] != "answered" and done.returncode != 0, result
    assert result.get("structured_response") is None


@pytest.mark.parametrize(
    ("protocol", "reply"),
    [("native", "not json at all"), ("text", "Final Answer: not json at all")],
)
def test_a_non_json_answer_is_explained(
    protocol: str,
    reply: str,
    answer_schema: Path,
    openai_server: ScriptedOpenAIServer,
    env: dict[str, str],
) -> None:
    openai_server.add(Reply(content=reply))
    args = ("--schema", str(answer_schema), "--protocol", protocol, "--max-steps", "1")
    result = json.loads(run_cli("ask", "17*23?", *args, "--json", env=env).stdout)
    told = result["steps"][0]["observation"]
    assert "schema" in told  # the unusable reply, explained...
    assert "schema: 0." not in told and "schema (0)" not in told, told  # ...in words


def test_chat_paused_for_approval_says_so(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content=CALC))
    done = run_cli("chat", "--thread", "cp", *GATED, env=env, stdin="17*23?\n")
    assert "Approval needed: calculator" in done.stderr
    assert done.returncode == 4
    assert "resume --thread cp" in done.stderr


def test_per_call_approvals_are_answered_on_the_terminal(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    """In per_call mode each gated call is a question of its own (LangChain's
    `tool_approval`): the terminal asks each, by name and exact input, and the answers run
    (approve) or not (reject). The CLI once printed "a question react-agent cannot answer"
    and a resume hint that led back to it."""
    two = 'Thought: both.\nAction: calculator\nAction Input: {"expression": "1+1"}\n'
    openai_server.add(Reply(content=two), Reply(content="Thought: ok.\nFinal Answer: two"))
    per_call = {**env, "REACT_AGENT_APPROVAL_MODE": "per_call"}
    paused = run_cli("ask", "1+1?", *GATED, "--thread", "pc", env=per_call, stdin="")
    assert paused.returncode == 4 and "cannot answer" not in paused.stderr, paused.stderr
    done = run_cli("resume", "--thread", "pc", "--json", env=per_call, stdin="a\n")
    assert done.returncode == 0, done.stderr
    assert 'Approval needed: calculator {"expression": "1+1"}' in done.stderr
    result = json.loads(done.stdout)
    assert result["answer"] == "two" and result["steps"][0]["observation"].strip() == "2"


def test_a_dotenv_that_is_not_utf8_is_named_in_one_sentence(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".env").write_bytes(b"REACT_AGENT_MODEL=\xff\n")
    done = run_cli("threads", env=env, cwd=folder)
    assert done.returncode == 2 and no_traceback(done.stderr)
    assert f"{folder / '.env'} is not UTF-8 text" in done.stderr, done.stderr


def test_a_rejected_call_shows_its_result_in_the_live_output(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    """Without the Observation line the output read as if the tool ran and gave the answer."""
    openai_server.add(Reply(content=CALC), Reply(content="Thought: fine.\nFinal Answer: skipped"))
    done = run_cli("ask", "17*23?", *GATED, env=env, stdin="r\nnot today\n")
    assert done.returncode == 0, done.stderr
    lines = [x for x in done.stdout.splitlines() if not x.startswith("Thought:")]
    assert lines[0].startswith("Action: calculator")
    assert lines[1].startswith("Observation:") and "not today" in lines[1], done.stdout
    assert "place? \n" in done.stderr  # a piped answer ends the prompt line: nothing glued on


def test_the_resume_command_it_prints_repeats_the_options_the_run_needs(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], tmp_path: Path
) -> None:
    """A thread keeps neither its tools nor its store: the printed command must carry them,
    or following it loses the decision (the tool unknown) or the thread (another store)."""
    store = f"sqlite:///{tmp_path / 'elsewhere.sqlite'}"
    openai_server.add(Reply(content=CALC), Reply(content=DONE))
    paused = run_cli(
        "ask", "17*23?", *GATED, "--tools", "calculator", "--checkpointer", store,
        "--thread", "hint", env=env,
    )  # fmt: skip
    assert paused.returncode == 4, paused.stderr
    printed = paused.stderr.split("Continue with: ", 1)[1].splitlines()[0]
    assert "--tools calculator" in printed and f"--checkpointer {store}" in printed
    command = printed.split()[printed.split().index("resume") :]
    done = run_cli(*command, "--json", env=env, stdin="a\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "17 * 23 = 391"
