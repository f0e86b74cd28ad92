"""`react-agent` after each way a run ends, as a demanding daily user meets it: the exit status,
the one sentence on stderr, the `--json` document, then the next commands on the same thread
(`history`, `trace`, `threads`, `resume`, a new `ask --thread`), against an endpoint that refuses
(HTTP 400, as OpenAI does) a conversation with a tool call left without its result
(`tests/support/cli_endings_server.py`; the plain scripted server takes anything), so a thread
an ending broke shows up as an error.

Covered: answered; HTTP 500 and an unreachable endpoint (then resumed); the step limit, with and
without `answer_on_limit`; the run timeout; the repeated-call guard (`stuck`); unusable replies
(error after `max_invalid`); paused for approval (`--approve`, or the environment) then edited or
rejected on a resume in a new process, or answered by a new question instead; Ctrl-C during a
tool, then a new question or a resume; a `--schema` answer and a failed `--schema` run. Each
protocol runs its endings one after the other on one thread (`CHAINS`: every ending's question
is the new question after the one before it), human and `--json` output alternating; the
approval and Ctrl-C cases run on the default SQLite store and on PostgreSQL by URL (skipped, with
the reason, when it is not there). Every command has a distinctive API key in its environment,
which the 500 replies echo. The CLI runs happen once per module, three scenarios at a time (each
with its own store, endpoint and thread), and the tests read what they printed. `trace` writes
no file, so there is no offline output to check.

Not repeated: the four stdin decisions on one run and kill -9 (test_persistence.py), a second
resume of a rejected pause, paused `--json` token counts, broken 200 replies, schema violations
(test_cli_probe.py), crash reruns (tests/faults/test_crash_rerun.py), hostile text in JSON
(tests/security/test_json_output.py).

Defects found (strict xfails, each checked to fail on its assertion with --runxfail), all fixed
and ordinary tests now:
- history and trace label a stop notice (max_steps, stuck, timeout) "Final Answer: I stopped
  ...", and the think row that set the status reads "stuck:" / "timeout:" with nothing after;
- `resume` after the unusable-replies error re-prints the old error (exit 1) and asks no model;
- with `answer_on_limit` the output is "Stopped: <best answer>", exit 3, and nothing says the
  step limit was reached;
- after a new question on a thread left with a dangling call (Ctrl-C, or a pause answered by a
  new question), history lists the earlier question and call again as the new step's;
- trace calls a run cut short by Ctrl-C `running`, threads calls it `unfinished`;
- `ask --schema --json` drops `structured_response` on every ending but answered, where `answer`
  and `error` stay, as null.
The fixes: the closing notice is the row's status, never a Final Answer, and a status set
before its notice is said alone (`graph/persistence/history.py`); a run ended by unusable
replies resumes from before the first of them (`graph/persistence/resume.py`); the `final`
event carries the notice beside a best answer and the CLI prints it as a note
(`graph/nodes/finish.py`, `graph/cli/render.py`); a row leaves out messages an earlier row
described, by id or, for a question written without one, by its text
(`graph/persistence/timeline.py`); trace says `unfinished` where the run's last checkpoint has
work left, as threads does (`graph/tracing/waterfall.py`); `--json` of a `--schema` run always
has `structured_response` (`graph/cli/session.py`); `--json` printed nothing on Ctrl-C and now
prints the thread, `"status": "interrupted"` and the resume command (`graph/cli/interrupts.py`).

What held: the documented exit status for every ending (0, 1, 3, 4, 130); one `error:` sentence
on stderr for an error and none otherwise; under `--json` one document with the same six keys
and types for every ending and nothing on stderr (bar approval prompts); the API key never shown
(the 500's echo is redacted); trace and threads agree with the ending; resume continues an
outage (the model asked once) and refuses a finished run in one sentence (exit 2); each ending
took exactly its scripted replies, and every next question was answered on a conversation the
endpoint accepted, under both protocols and both stores; an edit or a rejection given to
`resume` in a new process runs the edited input or nothing; Ctrl-C prints only the resume
sentence (exit 130) and the cut call is reported to the model on the next question.
"""

from __future__ import annotations

import json
import signal
import socket
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import httpx
import pytest

from tests.support.cli import checkpointer_url, cli_env, recorded, run_cli, start_cli, wait_for
from tests.support.cli_endings_server import StrictScript, final_answer
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration

TOOLS = "tests.support.crash_tools:TOOLS"
KEY = "sk-proj-Zq8xY7wV6uT5sR4qP3oN2mL1kJ0iH9gFendings"
AGAIN = "again-ok"  # what the model answers a question asked after the ending
SUMMARY_KEYS = {"thread_id", "status", "answer", "error", "steps", "usage"}
STEP_KEYS = {"step", "kind", "protocol", "thought", "tool", "tool_input", "observation"}
STATUSES = {"answered", "max_steps", "stuck", "timeout", "error", "stopped", "paused"}
EXIT = {"answered": 0, "error": 1, "max_steps": 3, "stuck": 3, "timeout": 3, "paused": 4}
PG_PREFIX = f"endings{uuid.uuid4().hex[:8]}"
# PostgreSQL by URL was probed too and held; its CLI runs stay in test_persistence.py and
# tests/faults/test_crash_rerun.py (CI's 30 minutes: this module's runs are its slowest setup)
STORES = ["sqlite"]


# --------------------------------------------------------------------------- running scenarios


@dataclass
class Bench:
    """One scenario's endpoint, store and environment, and what its commands printed."""

    folder: Path
    server: ScriptedOpenAIServer
    script: StrictScript
    env: dict[str, str]
    thread: str
    runs: dict[str, CompletedProcess] = field(default_factory=dict)
    asked: dict[str, int] = field(default_factory=dict)  # model requests each command made
    leftover: dict[str, int] = field(default_factory=dict)  # replies an ending did not take

    def cli(self, label: str, *args: str, env: dict[str, str] | None = None, **kw: Any) -> Any:
        before = len(self.server.chat_requests)
        done = run_cli(*args, env=env or self.env, **kw)
        self.runs[label] = done
        self.asked[label] = len(self.server.chat_requests) - before
        return done

    def read_back(self, *which: str) -> None:
        """history, trace and threads (as JSON; `which` of them), at once."""
        reads = {
            "history": ("history", "--thread", self.thread, "--json"),
            "trace": ("trace", "--thread", self.thread, "--json"),
            "threads": ("threads", "--json"),
        }
        chosen = {k: reads[k] for k in which or reads}
        with ThreadPoolExecutor(len(chosen)) as pool:
            done = {k: pool.submit(run_cli, *a, env=self.env) for k, a in chosen.items()}
        self.runs.update({k: f.result() for k, f in done.items()})

    def drain(self, label: str) -> None:
        """Count and throw away the replies a command left in the script."""
        self.leftover[label] = len(self.server.remaining)
        while self.server.remaining:
            httpx.post(f"{self.server.base_url}/chat/completions", json={"messages": []})

    def history(self, label: str = "history") -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.runs[label].stdout.splitlines()]

    def trace(self, label: str = "trace") -> dict[str, Any]:
        return json.loads(self.runs[label].stdout)

    def thread_status(self) -> str:
        rows = [json.loads(line) for line in self.runs["threads"].stdout.splitlines()]
        return next(r["status"] for r in rows if r["thread_id"] == self.thread)


@dataclass(frozen=True)
class Ending:
    status: str
    as_json: bool
    script: Callable[[str], list[Any]]  # the ending's model replies, by protocol
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    # what resume does next: "continues" (an outage), "refuses" (finished), "asks again"
    # (unusable replies: from before the first of them)
    resume: str | None = None


def call(protocol: str, value: str, tool: str = "tick") -> Reply:
    """A call of a test tool (`crash_tools`: tick and sleepy take a label, publish a text)."""
    key = "text" if tool == "publish" else "label"
    if protocol == "native":
        return Reply(tool_calls=[ToolCall(tool, {key: value})])
    return Reply(
        content=f'Thought: I use {tool}.\nAction: {tool}\nAction Input: {{"{key}": "{value}"}}'
    )


def boom(_protocol: str) -> list[Any]:
    return [HTTPError(500, f"upstream overloaded for key {KEY}", type="server_error")]


HELD: list[socket.socket] = []  # bound, never listening: refused, and no server can take it


def closed_port() -> str:
    """An endpoint that refuses connections for the whole module: the port stays bound (so a
    server another scenario starts cannot land on it) and never listens."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    HELD.append(held)
    return f"http://127.0.0.1:{held.getsockname()[1]}/v1"


# Each protocol's endings, in the order they run on one thread: each ending's question is the
# new question asked after the one before it, on a conversation the endpoint must take.
CHAINS: dict[str, dict[str, Ending]] = {
    "native": {
        "answered": Ending("answered", True, lambda p: [call(p, "a"), final_answer("ticked a")]),
        "max_steps": Ending(
            "max_steps",
            True,
            lambda p: [call(p, "a"), call(p, "b")],
            ("--max-steps", "2"),
            resume="refuses",
        ),
        "stuck": Ending("stuck", False, lambda p: [call(p, "same")] * 3),
        "invalid_native": Ending(
            "error",
            True,
            lambda p: [Reply(tool_calls=[ToolCall("tick", "{broken")])] * 3,
            resume="asks again",
        ),
        "unreachable": Ending(
            "error", True, lambda p: [], ("--base-url", closed_port()), resume="continues"
        ),
    },
    "text": {
        "http500": Ending("error", False, boom, resume="continues"),
        "invalid_text": Ending(
            "error", False, lambda p: [Reply(content="")] * 3, resume="asks again"
        ),
        "answer_on_limit": Ending(
            "max_steps",
            False,
            lambda p: [call(p, "a"), call(p, "b"), final_answer("best guess: 42")],
            ("--max-steps", "2"),
            env=(("REACT_AGENT_ANSWER_ON_LIMIT", "true"),),
        ),
        "timeout": Ending(
            "timeout",
            True,
            lambda p: [call(p, "a", tool="sleepy")],  # the deadline passes while the tool runs
            env=(("REACT_AGENT_RUN_TIMEOUT", "1"), ("SLEEPY_SECONDS", "1.5")),
            resume="refuses",
        ),
    },
}
ENDINGS = {name: e for chain in CHAINS.values() for name, e in chain.items()}
PROTOCOL = {name: protocol for protocol, chain in CHAINS.items() for name in chain}


def new_bench(folder: Path, thread: str, **extra: str) -> Bench:
    script = StrictScript()
    server = ScriptedOpenAIServer(default=script.item(final_answer(AGAIN))).start()
    env = cli_env(
        server.base_url,
        folder / "state",
        OPENAI_API_KEY=KEY,
        REACT_AGENT_MAX_RETRIES="0",
        CALLS_FILE=str(folder / "calls.txt"),
        **extra,
    )
    return Bench(folder, server, script, env, thread)


def run_chain(protocol: str, folder: Path) -> Bench:
    """The protocol's endings one after the other on one thread: each ending, its trace, and
    (where it says) a resume; then history, threads and one more question."""
    bench = new_bench(folder, f"chain-{protocol}")
    args = ("--protocol", protocol, "--tools", TOOLS, "--thread", bench.thread)
    for name, ending in CHAINS[protocol].items():
        bench.server.add(*bench.script.items(*ending.script(protocol)))
        json_flag = ("--json",) if ending.as_json else ()
        ask_env = {**bench.env, **dict(ending.env)}
        bench.cli(
            f"{name}:ending", "ask", f"do {name}", *args, *ending.args, *json_flag, env=ask_env
        )
        bench.drain(name)
        bench.cli(f"{name}:trace", "trace", "--thread", bench.thread, "--json")
        if ending.resume:
            bench.cli(
                f"{name}:resume", "resume", "--thread", bench.thread, "--tools", TOOLS, "--json"
            )
            bench.drain(f"{name}:resume")
    bench.read_back("history", "threads")
    bench.cli("again", "ask", "and now?", *args, "--json")
    return bench


@contextmanager
def on_store(bench: Bench, store: str) -> Iterator[None]:
    """SQLite: the default store under the state folder; PostgreSQL: by URL, its threads of this
    module deleted afterwards."""
    if store == "sqlite":
        yield
        return
    with checkpointer_url(store, bench.folder, PG_PREFIX) as url:
        bench.env["REACT_AGENT_CHECKPOINTER"] = url
        yield


def run_ctrl_c(store: str, folder: Path) -> Bench:
    """Ctrl-C while a tool runs (native, --json); then a new question (SQLite) or a resume
    (PostgreSQL) on the same thread."""
    bench = new_bench(folder, f"{PG_PREFIX}-ctrlc-{store}")
    with on_store(bench, store):
        bench.server.add(bench.script.item(call("native", "z", tool="sleepy")))
        args = ("--protocol", "native", "--tools", TOOLS, "--thread", bench.thread)
        worker = start_cli("ask", "nap", *args, "--json", env={**bench.env, "SLEEPY_SECONDS": "60"})
        try:
            calls = Path(bench.env["CALLS_FILE"])
            wait_for(lambda: "sleepy-start:z" in recorded(calls), what="the tool to start")
            worker.send_signal(signal.SIGINT)
            out, err = worker.communicate(timeout=60)
        finally:
            if worker.poll() is None:
                worker.kill()
        bench.runs["ending"] = CompletedProcess(worker.args, worker.returncode, out, err)
        bench.read_back()
        if store == "sqlite":
            bench.cli("again", "ask", "forget the nap; and now?", *args, "--json")
            bench.cli("history_after", "history", "--thread", bench.thread, "--json")
        else:
            bench.cli("again", "resume", *args, "--json", env={**bench.env, "SLEEPY_SECONDS": "0"})
    return bench


def run_approval(store: str, folder: Path) -> Bench:
    """SQLite: text protocol, `--approve`, human output, an edit on the resume. PostgreSQL:
    native, the policy and tools from the environment, `--json`, a rejection on the resume."""
    extra = {"REACT_AGENT_APPROVE": "publish", "REACT_AGENT_TOOLS": TOOLS}
    bench = new_bench(
        folder, f"{PG_PREFIX}-approve-{store}", **({} if store == "sqlite" else extra)
    )
    with on_store(bench, store):
        protocol = "text" if store == "sqlite" else "native"
        bench.server.add(bench.script.item(call(protocol, "hello", tool="publish")))
        gate = ("--tools", TOOLS, "--approve", "publish") if store == "sqlite" else ()
        args = ("--protocol", protocol, "--thread", bench.thread)
        json_flag = () if store == "sqlite" else ("--json",)
        bench.cli("ending", "ask", "publish hello", *args, *gate, *json_flag)
        bench.read_back("history", "trace", "threads")
        decision = 'e\n{"text": "edited"}\n' if store == "sqlite" else "r\nnot today\n"
        tools = ("--tools", TOOLS) if store == "sqlite" else ()
        bench.cli("resume", "resume", "--thread", bench.thread, *tools, "--json", stdin=decision)
        bench.cli("again", "ask", "and now?", *args, *tools, "--json")
    return bench


def run_paused_then_asked(folder: Path) -> Bench:
    """Paused for approval (native); a new question comes instead of a decision."""
    bench = new_bench(folder, "paused-asked")
    bench.server.add(bench.script.item(call("native", "hello", tool="publish")))
    args = ("--protocol", "native", "--tools", TOOLS, "--thread", bench.thread)
    bench.cli("ending", "ask", "publish hello", *args, "--approve", "publish", "--json")
    bench.cli("again", "ask", "never mind; and now?", *args, "--json")
    bench.cli("history_after", "history", "--thread", bench.thread, "--json")
    return bench


def run_schema(folder: Path) -> Bench:
    """`--schema`: answered (native), then a failed run (text, HTTP 500) on the same thread."""
    bench = new_bench(folder, "schema")
    schema = folder / "answer.json"
    answer = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    schema.write_text(json.dumps(answer))
    bench.server.add(bench.script.item(Reply(content='{"n": 391}')), *bench.script.items(*boom("")))
    shape = ("--schema", str(schema), "--thread", bench.thread, "--json")
    bench.cli("answered", "ask", "17*23 as n", "--protocol", "native", *shape)
    bench.cli("failed", "ask", "17*24 as n", "--protocol", "text", *shape)
    bench.cli(
        "again", "ask", "and now?", "--protocol", "native", "--thread", bench.thread, "--json"
    )
    return bench


SCENARIOS: dict[str, Callable[[Path], Bench]] = {
    **{f"chain_{p}": (lambda folder, p=p: run_chain(p, folder)) for p in CHAINS},
    **{f"ctrl_c_{s}": (lambda folder, s=s: run_ctrl_c(s, folder)) for s in STORES},
    **{f"approval_{s}": (lambda f, s=s: run_approval(s, f)) for s in STORES},
    "paused_then_asked": run_paused_then_asked,
    "schema": run_schema,
}


def postgres_missing() -> str | None:
    from tests.conftest import missing_service

    return missing_service("postgres")


@pytest.fixture(scope="module")
def benches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every scenario, run once, three at a time; a scenario that raised keeps its exception."""
    missing = postgres_missing()

    def one(name: str) -> Any:
        if name.endswith("postgres") and missing:
            return missing
        try:
            return SCENARIOS[name](tmp_path_factory.mktemp(name))
        except Exception as exc:  # the tests of this scenario fail with it; the others run
            return exc

    with ThreadPoolExecutor(3) as pool:
        results = dict(zip(SCENARIOS, pool.map(one, SCENARIOS), strict=True))
    yield results
    for result in results.values():
        if isinstance(result, Bench):
            result.server.close()


def bench_of(benches: dict[str, Any], name: str) -> Bench:
    result = benches[name]
    if isinstance(result, str):
        pytest.skip(result)
    if isinstance(result, Exception):
        raise result
    return result


# --------------------------------------------------------------------------- checks


def one_error_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    sentence = lines[0].removeprefix("error: ")
    assert sentence.endswith((".", ")")) and "REACT_AGENT_DEBUG" not in sentence, sentence
    return sentence


def check_summary(
    done: CompletedProcess, status: str, thread: str, *, asked: bool = False
) -> dict[str, Any]:
    """The documented `--json` document: the same keys and types for every ending."""
    summary = json.loads(done.stdout)
    assert set(summary) - {"structured_response"} == SUMMARY_KEYS, summary.keys()
    assert summary["thread_id"] == thread and summary["status"] == status in STATUSES
    assert summary["answer"] is None or isinstance(summary["answer"], str)
    assert isinstance(summary["error"], str) if status == "error" else summary["error"] is None
    assert isinstance(summary["steps"], list)
    for step in summary["steps"]:
        assert set(step) >= STEP_KEYS, step
    usage = summary["usage"]
    assert isinstance(usage, dict) and all(isinstance(v, int) for v in usage.values()), usage
    if not asked:  # a run that asked for a decision has the prompts on stderr
        assert done.stderr == "", done.stderr
    return summary


def no_secret(bench: Bench) -> None:
    for label, done in bench.runs.items():
        assert KEY not in done.stdout + done.stderr, label


# --------------------------------------------------------------------------- every ending


def chain_of(benches: dict[str, Any], name: str) -> Bench:
    return bench_of(benches, f"chain_{PROTOCOL[name]}")


def said_stop(done: CompletedProcess, as_json: bool) -> str:
    """The notice a stopped run printed: the JSON answer, or the `Stopped:` line."""
    if as_json:
        return json.loads(done.stdout)["answer"]
    return next(x for x in done.stdout.splitlines() if x.startswith("Stopped: "))[9:]


@pytest.mark.parametrize("name", list(ENDINGS))
def test_the_ending_reports_itself(benches: dict[str, Any], name: str) -> None:
    """Exit status, stderr and the JSON document of the ending itself; the endpoint took the
    conversation the ending before it left; no key anywhere."""
    bench, ending = chain_of(benches, name), ENDINGS[name]
    done = bench.runs[f"{name}:ending"]
    assert done.returncode == EXIT[ending.status], (done.stdout, done.stderr)
    assert bench.leftover[name] == 0  # the ending took exactly its scripted replies
    if ending.as_json:
        summary = check_summary(done, ending.status, bench.thread)
        if ending.status == "error":
            assert summary["answer"] is None and summary["error"]
            if "--base-url" in ending.args:  # the endpoint that could not be reached is named
                assert ending.args[1] in summary["error"], summary["error"]
        elif ending.status != "answered":  # a stop says why, in words
            assert summary["answer"] and summary["steps"][-1]["kind"] == "limit"
    else:
        assert "Traceback" not in done.stderr
        if ending.status == "error":
            sentence = one_error_sentence(done.stderr)
            assert "resume" in sentence or "model" in sentence, sentence
        else:
            assert "error:" not in done.stderr
            assert said_stop(done, False)
        assert done.stderr.rstrip().endswith(f"continue with --thread {bench.thread}")
    assert bench.script.refused == []
    no_secret(bench)


@pytest.mark.parametrize("name", list(ENDINGS))
def test_the_next_commands_read_and_continue_the_thread(benches: dict[str, Any], name: str) -> None:
    """trace says the ending's status; resume continues an outage and refuses a finished run in
    one sentence; history has the run's closing row, in order; threads and a new question
    after the whole chain."""
    bench, ending = chain_of(benches, name), ENDINGS[name]
    trace = bench.trace(f"{name}:trace")
    assert trace["status"] == ending.status
    if ending.resume == "continues":
        resumed = bench.runs[f"{name}:resume"]
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["answer"] == AGAIN
        assert bench.asked[f"{name}:resume"] == 1
    elif ending.resume == "refuses":
        resumed = bench.runs[f"{name}:resume"]
        assert resumed.returncode == 2 and bench.asked[f"{name}:resume"] == 0
        assert "has nothing to resume" in one_error_sentence(resumed.stderr)
    # history: each ending's closing row, in the chain's order
    closing = [r["summary"] for r in bench.history() if r["node"] == "finish"]
    position = 0
    for earlier, other in CHAINS[PROTOCOL[name]].items():
        mark = f"{other.status}: "
        while position < len(closing) and mark not in closing[position]:
            position += 1
        assert position < len(closing), (earlier, closing)
        position += 1
        if earlier == name:
            break
    last = list(CHAINS[PROTOCOL[name]].values())[-1]  # threads ran after the chain's last ending
    assert bench.thread_status() == ("answered" if last.resume == "continues" else last.status)
    again = bench.runs["again"]
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == AGAIN
    assert bench.script.refused == []


# --------------------------------------------------------------------------- found and fixed


@pytest.mark.parametrize("name", ["max_steps", "stuck", "timeout"])
def test_history_and_trace_do_not_call_a_stop_notice_a_final_answer(
    benches: dict[str, Any], name: str
) -> None:
    bench, ending = chain_of(benches, name), ENDINGS[name]
    notice = said_stop(bench.runs[f"{name}:ending"], ending.as_json)
    assert notice.startswith("I stopped")
    summaries = [r["summary"] for r in bench.history()]
    summaries += [bar["what"] for bar in bench.trace(f"{name}:trace")["bars"]]
    labelled = [s for s in summaries if f"Final Answer: {notice[:60]}" in s]
    empty = [s for s in summaries if s.rstrip().endswith(f"{ending.status}:")]
    assert labelled == [] and empty == [], summaries


@pytest.mark.parametrize("name", ["invalid_native", "invalid_text"])
def test_resume_after_unusable_replies_asks_again_or_says_there_is_nothing(
    benches: dict[str, Any], name: str
) -> None:
    bench = chain_of(benches, name)
    resumed, asked = bench.runs[f"{name}:resume"], bench.asked[f"{name}:resume"]
    tried = asked > 0 and resumed.returncode in (0, 1)
    refused = resumed.returncode == 2 and "nothing to resume" in resumed.stderr
    assert tried or refused, (resumed.returncode, asked, resumed.stdout[:300], resumed.stderr)


def test_a_best_answer_at_the_step_limit_says_the_limit_was_reached(
    benches: dict[str, Any],
) -> None:
    done = chain_of(benches, "answer_on_limit").runs["answer_on_limit:ending"]
    assert done.returncode == 3
    assert "Stopped: best guess: 42" in done.stdout  # the best answer is shown...
    assert "max_steps" in done.stdout + done.stderr, (done.stdout, done.stderr)  # ...and why


# --------------------------------------------------------------------------- Ctrl-C


@pytest.mark.parametrize("store", STORES)
def test_ctrl_c_during_a_tool_then_the_thread_goes_on(benches: dict[str, Any], store: str) -> None:
    bench = bench_of(benches, f"ctrl_c_{store}")
    done = bench.runs["ending"]
    # the options the run was started with: a thread keeps neither its tools nor its store
    resume = f"react-agent resume --thread {bench.thread} --protocol native --tools {TOOLS}"
    sentence = f"Interrupted. The run is saved; continue it with: {resume}"
    assert done.returncode == 130 and done.stderr.strip() == sentence
    # --json: a script reading stdout gets one object there too
    assert json.loads(done.stdout) == {
        "thread_id": bench.thread,
        "status": "interrupted",
        "saved": True,
        "resume": resume,
        "error": sentence,
    }
    assert bench.thread_status() == "unfinished"
    assert bench.history()[-1]["next"] == ["act"]
    again = bench.runs["again"]
    assert again.returncode == 0, again.stderr
    summary = check_summary(again, "answered", bench.thread)
    if store == "sqlite":  # a new question: the model is told the call was cut short
        assert summary["answer"] == AGAIN
        told = bench.server.chat_requests[-1].messages[-2]
        assert told["role"] == "tool" and "cut short" in told["content"]
    else:  # resumed: the call ran again, marked, and the run answered
        assert summary["steps"][0]["observation"].startswith("slept z")
    assert bench.script.refused == []
    no_secret(bench)


@pytest.mark.parametrize("store", STORES)
def test_trace_and_threads_agree_on_a_run_cut_short(benches: dict[str, Any], store: str) -> None:
    bench = bench_of(benches, f"ctrl_c_{store}")
    assert bench.trace()["status"] == bench.thread_status() == "unfinished"


@pytest.mark.parametrize("name", ["ctrl_c_sqlite", "paused_then_asked"])
def test_history_after_a_new_question_lists_only_what_that_step_did(
    benches: dict[str, Any], name: str
) -> None:
    bench = bench_of(benches, name)
    rows = [json.loads(line) for line in bench.runs["history_after"].stdout.splitlines()]
    first_question = rows[1]["summary"]  # the __start__ row of the first run
    assert first_question.startswith("question: ")
    second_run = rows[[r["node"] for r in rows].index("input", 1) :]
    said = [r["summary"] for r in second_run]
    assert not [s for s in said if first_question in s or "→ Action:" in s], said


# --------------------------------------------------------------------------- approvals


@pytest.mark.parametrize("store", STORES)
def test_paused_for_approval_then_decided_on_a_resume(benches: dict[str, Any], store: str) -> None:
    bench = bench_of(benches, f"approval_{store}")
    done = bench.runs["ending"]
    assert done.returncode == 4
    assert 'Approval needed: publish {"text": "hello"}' in done.stderr
    assert (
        f"Paused for approval. Continue with: react-agent resume --thread {bench.thread}"
        in (done.stderr)
        or store == "postgres"
    )  # --json: the document says it
    if store == "postgres":
        summary = check_summary(done, "paused", bench.thread, asked=True)
        assert summary["answer"] is None and summary["steps"][0]["observation"] is None
    assert "error:" not in done.stderr
    rows = bench.history()
    assert rows[-1]["next"] == ["review"] and "waiting for approval" in rows[-1]["summary"]
    assert bench.trace()["status"] == bench.thread_status() == "paused"
    resumed = bench.runs["resume"]
    assert resumed.returncode == 0, resumed.stderr
    summary = check_summary(resumed, "answered", bench.thread, asked=True)
    ran = recorded(Path(bench.env["CALLS_FILE"]))
    if store == "sqlite":  # edited: the typed input ran, not the model's
        assert ran == ["publish:edited"] and 'will run: publish {"text": "edited"}' in (
            resumed.stderr
        )
        assert summary["steps"][0]["tool_input"] == {"text": "edited"}
    else:  # rejected: nothing ran, the model read the reason
        assert ran == [] and "not today" in summary["steps"][0]["observation"]
    assert json.loads(bench.runs["again"].stdout)["answer"] == AGAIN
    assert bench.script.refused == []
    no_secret(bench)


def test_a_new_question_instead_of_a_decision_runs_nothing(benches: dict[str, Any]) -> None:
    bench = bench_of(benches, "paused_then_asked")
    assert bench.runs["ending"].returncode == 4
    again = bench.runs["again"]
    assert again.returncode == 0, again.stderr
    assert check_summary(again, "answered", bench.thread)["answer"] == AGAIN
    assert recorded(Path(bench.env["CALLS_FILE"])) == []
    told = bench.server.chat_requests[-1].messages[-2]
    assert told["role"] == "tool" and "was not run" in told["content"]
    assert bench.script.refused == []


# --------------------------------------------------------------------------- --schema


def test_a_schema_answer_then_a_failed_schema_run(benches: dict[str, Any]) -> None:
    bench = bench_of(benches, "schema")
    answered = bench.runs["answered"]
    assert answered.returncode == 0, answered.stderr
    assert check_summary(answered, "answered", bench.thread)["structured_response"] == {"n": 391}
    failed = bench.runs["failed"]
    assert failed.returncode == 1
    summary = check_summary(failed, "error", bench.thread)
    assert summary.get("structured_response") is None  # nothing stale from the first run
    again = bench.runs["again"]
    assert again.returncode == 0 and json.loads(again.stdout)["answer"] == AGAIN
    assert "structured_response" not in json.loads(again.stdout)  # no --schema: no key
    no_secret(bench)


def test_a_failed_schema_run_keeps_the_structured_response_key(benches: dict[str, Any]) -> None:
    summary = json.loads(bench_of(benches, "schema").runs["failed"].stdout)
    assert "structured_response" in summary and summary["structured_response"] is None
