"""The agent served by two Aegra instances on one PostgreSQL database and one Redis server,
through the LangGraph SDK: what docs/deployment.md promises for running at scale.

The deployment (tests/support/aegra.py) runs the documented launcher, deploy/aegra/serve.py,
twice, in the Python 3.12 serving environment, on a database and a Redis server of its own.
Every flow starts on one instance and continues through the other (`a` and `b`), since behind
a load balancer a client's next request can land anywhere. The model is a scripted server in
this process whose reply depends only on the conversation (so concurrent runs cannot take each
other's replies): `tick L` asks for the tool `tick` with label L, a tool result is answered
with `Done: <result>`. The tools (tests/support/crash_tools.py) append one line per execution
to a file, so "every tool ran once" is counted by the tools themselves, not by a run's report.

Aegra's lease timings are shortened (FAST_RECOVERY) so the instance killed by the last test
has its runs taken over within seconds instead of ~45 s. Without PostgreSQL, redis-server or
the serving environment the module skips with the reason, or fails under
REACT_AGENT_REQUIRE_SERVICES=1 (CI).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.docs.markdown_blocks import SHELL, all_blocks
from tests.docs.shell_lines import commands
from tests.support.aegra import (
    CONFIG,
    LAUNCHER,
    POSTGRES_URL,
    REPO,
    Deployment,
    aegra,
    config_for_tests,
    group_members,
    instance_command,
    report_failures,
)
from tests.support.langgraph_dev import server_env
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = [pytest.mark.integration]

SLEEPY_SECONDS = 3.0  # the tool in flight when an instance is killed
ASK = re.compile(r"^(tick|sleepy|publish) (\S+)$")
APPROVE = {"approve": ["publish"]}  # the run's context: publish pauses for a decision


def reply_for(body: dict[str, Any]) -> Reply:
    """The scripted model: a question `tool label` asks for that tool, a tool result is
    answered with `Done: <result>`. Stateless, so any number of runs can ask at once."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"Done: {last['content']}")
    asked = ASK.match(str(last["content"]).strip())
    if asked is None:
        return Reply(content=f"Cannot read the question {last['content']!r}.")
    tool, label = asked.groups()
    return Reply(tool_calls=[ToolCall(tool, {"text" if tool == "publish" else "label": label})])


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def calls_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("aegra-calls") / "calls.txt"
    path.write_text("", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def two_instances(request: pytest.FixtureRequest, calls_file: Path) -> Iterator[Deployment]:
    with ScriptedOpenAIServer(default=reply_for) as model:
        env = {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-aegra-test",
            "REACT_AGENT_MODEL": "scripted",
            "REACT_AGENT_TOOLS": "tests.support.crash_tools:TOOLS",  # an operator setting
            "CALLS_FILE": str(calls_file),
            "SLEEPY_SECONDS": str(SLEEPY_SECONDS),
            "LOG_LEVEL": "INFO",
        }
        with aegra(env, instances=2) as deployment:
            pids = deployment.pids
            with report_failures(request, deployment):
                yield deployment
    left = group_members(pids)
    assert left == [], f"processes of the deployment outlived it: {left}"


@pytest.fixture
async def a(two_instances: Deployment) -> AsyncIterator[LangGraphClient]:
    """A client of the first instance (the one that stays up)."""
    client = get_client(url=two_instances.urls[0], api_key=two_instances.api_key, timeout=120)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def b(two_instances: Deployment) -> AsyncIterator[LangGraphClient]:
    """A client of the second instance (the one the last test kills)."""
    client = get_client(url=two_instances.urls[1], api_key=two_instances.api_key, timeout=120)
    try:
        yield client
    finally:
        await client.aclose()


def executions(calls_file: Path) -> Counter[str]:
    """How often each `tool:label` really ran, as the tools recorded it."""
    return Counter(calls_file.read_text(encoding="utf-8").split())


async def new_thread(client: LangGraphClient) -> str:
    return (await client.threads.create())["thread_id"]


def kinds(state: dict[str, Any]) -> list[str]:
    return [m["type"] for m in state["values"]["messages"]]


# --------------------------------------------------------------------------- the project's files


def test_the_aegra_config_serves_what_langgraph_json_serves() -> None:
    """deploy/aegra/aegra.json serves the graphs of langgraph.json (through served.py, which
    reads langgraph.json and adds one run at a time per thread), from the same dependencies,
    with the same .env (its paths are relative to deploy/aegra/), and adds the key check."""
    langgraph = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    assert config["graphs"] == {graph_id: "./served.py:agent" for graph_id in langgraph["graphs"]}
    assert [(CONFIG.parent / d).resolve() for d in config["dependencies"]] == [
        (REPO / d).resolve() for d in langgraph["dependencies"]
    ]
    assert (CONFIG.parent / config["env"]).resolve() == (REPO / langgraph["env"]).resolve()
    assert config["auth"]["path"] == "./auth.py:auth"


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["--redis", "redis://127.0.0.1:1/0"], {"AGENT_API_KEYS": "k"}, "Give the PostgreSQL"),
        (["--database", "postgresql://x@127.0.0.1:1/d"], {"AGENT_API_KEYS": "k"}, "Give the Redis"),
        (["--database", "postgresql://x@127.0.0.1:1/d", "--redis", "redis://h/0"], {}, "Set AGENT"),
    ],
)
def test_the_launcher_says_what_is_missing_in_one_sentence(
    args: list[str], env: dict[str, str], said: str, tmp_path: Path
) -> None:
    """No database, no Redis, no key: one sentence and exit status 2, before anything starts
    (these checks need only the standard library and python-dotenv, so any Python runs them)."""
    config = tmp_path / "aegra.json"
    config.write_text(json.dumps({"graphs": {"agent": "x.py:g"}}), encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    clean.pop("AGENT_API_KEYS", None)
    done = subprocess.run(
        [sys.executable, str(LAUNCHER), *args, "--config", str(config)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"serve.py: {said}") and "Traceback" not in done.stderr


def test_the_deployment_page_starts_instances_with_this_launcher() -> None:
    """docs/deployment.md's commands run serve.py with options the launcher takes (the
    deployment fixture runs the same launcher with the same options)."""
    spec = importlib.util.spec_from_file_location("aegra_serve", LAUNCHER)
    assert spec is not None and spec.loader is not None
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)  # the standard library only, at import
    lines = [
        command.line
        for block in all_blocks(SHELL)
        if block.path.name == "deployment.md"
        for command in commands(block)
        if "deploy/aegra/serve.py" in command.line
    ]
    assert len(lines) >= 2  # the first instance and a further one
    for line in lines:
        words = shlex.split(line)
        assert words[:6] == [
            "uv",
            "run",
            "--project",
            "deploy/aegra",
            "python",
            "deploy/aegra/serve.py",
        ]
        args = launcher.parse_args(words[6:])
        assert args.port in (2026, 2027)


def test_the_launcher_creates_a_missing_database_and_migrates_it(two_instances: Deployment) -> None:
    """`serve.py --check` against a database that does not exist yet: created, Aegra's tables
    and LangGraph's checkpoint tables set up, exit 0 (what the first instance does before it
    serves)."""
    import psycopg
    from psycopg import sql

    name = f"aegra_check_{os.getpid()}_{int(time.time())}"
    url = urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
    config = config_for_tests(two_instances.workdir)
    command = instance_command(config, 2026, url, two_instances.redis_url)
    try:
        done = subprocess.run(
            [*command, "--check"],
            env={**server_env({}), "AGENT_API_KEYS": "k"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"created database '{name}'" in done.stderr
        with psycopg.connect(url) as conn:
            tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables")}
        assert {"alembic_version", "thread", "runs", "checkpoints", "store"} <= tables
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


# --------------------------------------------------------------------------- the key


async def test_a_request_without_the_key_is_refused(two_instances: Deployment) -> None:
    for url in two_instances.urls:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            refused = await http.post("/threads", json={})
            assert refused.status_code == 401
            assert refused.json()["message"] == "Send your key in the x-api-key header."
            wrong = await http.post("/threads", json={}, headers={"x-api-key": "not-the-key"})
            assert wrong.status_code == 401
            bearer = await http.post(
                "/threads", json={}, headers={"authorization": f"Bearer {two_instances.api_key}"}
            )
            assert bearer.status_code == 200
            for probe in ("/health", "/ready", "/info"):  # load balancers and probes
                assert (await http.get(probe)).status_code == 200, probe
    anonymous = get_client(url=two_instances.urls[0], api_key=None)
    try:
        with pytest.raises(httpx.HTTPStatusError) as refused_by_sdk:
            await anonymous.threads.search()
        assert refused_by_sdk.value.response.status_code == 401
    finally:
        await anonymous.aclose()


# --------------------------------------------------------------------------- the SDK flows


async def test_a_run_waited_on_one_instance_is_read_on_the_other(
    a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    thread = await new_thread(a)
    out = await a.runs.wait(thread, "agent", input=ask("tick wait-1"))
    assert out["answer"] == "Done: ticked wait-1" and out["status"] == "answered"
    state = await b.threads.get_state(thread)
    assert kinds(state) == ["human", "ai", "tool", "ai"]
    assert state["values"]["messages"][2]["content"] == "ticked wait-1"
    history = list(reversed(await b.threads.get_history(thread, limit=50)))  # oldest first
    assert history[0]["next"] == ["__start__"] and history[-1]["next"] == []
    assert history[-1]["values"]["status"] == "answered"
    assert [h["metadata"]["step"] for h in history] == list(range(-1, len(history) - 1))
    assert executions(calls_file)["tick:wait-1"] == 1


async def test_a_run_streams_messages_and_updates_from_the_other_instance(
    a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    thread = await new_thread(a)
    nodes: list[str] = []
    messages: list[dict[str, Any]] = []
    async for part in b.runs.stream(
        thread, "agent", input=ask("tick stream-1"), stream_mode=["messages-tuple", "updates"]
    ):
        if part.event == "updates":
            nodes += list(part.data)
        elif part.event == "messages":
            messages.append(part.data[0])
    assert nodes[0] == "think" and "act" in nodes and nodes[-1] == "finish"
    # Aegra sends the tool's message as a `ToolMessageChunk` (`langgraph dev`: `tool`)
    tool = next(m for m in messages if m["type"] in ("tool", "ToolMessageChunk"))
    assert tool["content"] == "ticked stream-1"
    assert "".join(m["content"] for m in messages if m["id"] == messages[-1]["id"]).endswith(
        "Done: ticked stream-1"
    )
    state = await a.threads.get_state(thread)
    assert state["values"]["answer"] == "Done: ticked stream-1"
    assert executions(calls_file)["tick:stream-1"] == 1


async def test_a_background_run_is_joined_through_the_other_instance(
    a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    thread = await new_thread(a)
    run = await a.runs.create(thread, "agent", input=ask("tick background-1"))
    out = await b.runs.join(thread, run["run_id"])
    assert out["answer"] == "Done: ticked background-1"
    assert (await b.runs.get(thread, run["run_id"]))["status"] == "success"
    assert executions(calls_file)["tick:background-1"] == 1


async def test_two_runs_enqueued_on_one_thread_run_one_after_the_other(
    a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    thread = await new_thread(a)
    first = await a.runs.create(
        thread, "agent", input=ask("tick queued-1"), multitask_strategy="enqueue"
    )
    second = await b.runs.create(
        thread, "agent", input=ask("tick queued-2"), multitask_strategy="enqueue"
    )
    assert (await b.runs.join(thread, second["run_id"]))["answer"] == "Done: ticked queued-2"
    assert (await a.runs.get(thread, first["run_id"]))["status"] == "success"
    state = await b.threads.get_state(thread)
    # in order, never interleaved: Aegra alone runs both at once and keeps one turn
    # (deploy/aegra/served.py holds the thread's lock around each run)
    assert kinds(state) == ["human", "ai", "tool", "ai"] * 2
    humans = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
    assert humans == ["tick queued-1", "tick queued-2"]
    ran = executions(calls_file)
    assert ran["tick:queued-1"] == 1 and ran["tick:queued-2"] == 1


DECISIONS = {  # what is sent, the call that runs (as the tool records it), the answer's end
    "approve": ({"type": "approve"}, "publish:approve-1", "published 'approve-1'"),
    "edit": (
        {"type": "edit", "edited_action": {"name": "publish", "args": {"text": "edited-1"}}},
        "publish:edited-1",
        "published 'edited-1'",  # after the graph's note that a person changed the call
    ),
    "reject": ({"type": "reject", "message": "Not today."}, None, "Not today."),
}


@pytest.mark.parametrize("decision", list(DECISIONS))
async def test_an_approval_paused_on_one_instance_is_decided_on_the_other(
    decision: str, a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    label = f"{decision}-1"
    thread = await new_thread(a)
    await a.runs.wait(thread, "agent", input=ask(f"publish {label}"), context=APPROVE)
    paused = await b.threads.get_state(thread)
    assert (await b.threads.get(thread))["status"] == "interrupted"
    [pause] = paused["interrupts"]
    [request] = pause["value"]["action_requests"]
    assert request["name"] == "publish" and request["args"] == {"text": label}
    assert executions(calls_file)[f"publish:{label}"] == 0  # nothing ran before the decision

    sent, ran, answer = DECISIONS[decision]
    out = await b.runs.wait(
        thread, "agent", command={"resume": {"decisions": [sent]}}, context=APPROVE
    )
    assert out["status"] == "answered" and out["answer"].startswith("Done: ")
    assert answer in out["answer"]
    published = {k: n for k, n in executions(calls_file).items() if k.startswith("publish:")}
    if ran is None:
        assert f"publish:{label}" not in published  # rejected: never ran
    else:
        assert published[ran] == 1  # the decided call, once
        assert ran == f"publish:{label}" or f"publish:{label}" not in published
    assert (await a.threads.get(thread))["status"] == "idle"


async def test_forty_runs_over_twenty_threads_at_once(
    a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    """Twenty threads at once, two runs each (the first through one instance, the second
    through the other): every answer right, every tool call executed exactly once."""
    before = executions(calls_file)

    async def conversation(index: int) -> list[str]:
        first, second = (a, b) if index % 2 else (b, a)
        thread = await new_thread(first)
        answers = []
        for turn, client in enumerate((first, second)):
            out = await client.runs.wait(thread, "agent", input=ask(f"tick load-{index}-{turn}"))
            answers.append(out["answer"])
        state = await second.threads.get_state(thread)
        assert kinds(state) == ["human", "ai", "tool", "ai"] * 2
        return answers

    started = time.monotonic()
    answers = await asyncio.gather(*(conversation(i) for i in range(20)))
    elapsed = time.monotonic() - started
    assert answers == [[f"Done: ticked load-{i}-{t}" for t in range(2)] for i in range(20)]
    ran = executions(calls_file) - before
    assert ran == Counter({f"tick:load-{i}-{t}": 1 for i in range(20) for t in range(2)})
    assert elapsed < 90, f"40 runs took {elapsed:.0f}s"


# --------------------------------------------------------------------------- a crash (last)


async def test_a_killed_instance_loses_no_run_and_its_reruns_are_marked(
    two_instances: Deployment, a: LangGraphClient, b: LangGraphClient, calls_file: Path
) -> None:
    """`kill -9` of one instance while twelve runs are in their tool call: the other takes its
    runs over when their leases expire, every run finishes with the right answer, and every
    tool call that ran a second time is marked in the thread (`react_rerun` on its
    ToolMessage's response_metadata, written by the graph)."""
    labels = [f"crash-{i}" for i in range(12)]
    runs = []
    for index, label in enumerate(labels):
        client = (a, b)[index % 2]
        thread = await new_thread(client)
        runs.append(
            (thread, (await client.runs.create(thread, "agent", input=ask(f"sleepy {label}"))))
        )
    deadline = time.monotonic() + 60
    while not all(executions(calls_file)[f"sleepy-start:{label}"] for label in labels):
        assert time.monotonic() < deadline, f"not every call started: {executions(calls_file)}"
        await asyncio.sleep(0.1)
    victim = two_instances.instances[1]
    victim.kill()
    assert not victim.alive()

    outs = await asyncio.gather(*(a.runs.join(thread, run["run_id"]) for thread, run in runs))
    assert [out.get("answer") for out in outs] == [f"Done: slept {label}" for label in labels]
    statuses = [(await a.runs.get(thread, run["run_id"]))["status"] for thread, run in runs]
    assert statuses == ["success"] * len(runs)

    ran = executions(calls_file)
    again = [label for label in labels if ran[f"sleepy-start:{label}"] > 1]
    assert again, f"the kill hit no run in flight: {ran}"  # the victim held some of them
    unmarked = []
    for (thread, _), label in zip(runs, labels, strict=True):
        if label not in again:
            continue
        state = await a.threads.get_state(thread)
        [result] = [m for m in state["values"]["messages"] if m["type"] == "tool"]
        if not result.get("response_metadata", {}).get("react_rerun", 0) >= 1:
            unmarked.append((label, result.get("response_metadata")))
    assert not unmarked, (
        f"{len(again)} tool calls ran twice after the kill; these carry no "
        f"response_metadata['react_rerun'] mark: {unmarked}"
    )
