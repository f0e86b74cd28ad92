"""Issue 17.3: a model endpoint that never finishes its reply cannot hold a run.

A per-read timeout is not a deadline: an endpoint that trickles a byte every 0.3 s, or streams
content chunks without end, answers every read in time and would keep a run alive forever. The
agent runs with the real ChatOpenAI client against `MisbehavingModel` (a local server speaking
just enough of OpenAI's streaming to do that) and `model_timeout=2`; each run must end with
status `error` and the timeout or too-long sentence, in the sync (`invoke`, from the main thread
and from a worker thread: the call is waited for, never interrupted) and async (`ainvoke`)
forms, and the thread must stay resumable once the endpoint is healthy again. The model is
called with `invoke` (no caller streams here), so a reply that never ends is cut by the deadline
and a whole reply past the cap by the cap.

Bounds are functional: a run that honours no deadline never ends, so `BOUND` (well above
`model_timeout`, generous for a loaded machine) separates the two without timing anything tight.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.persistence.resume import aresume_config, resume_config
from tests.support.hostile_http import MisbehavingModel
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.sentences import assert_one_sentence

pytestmark = pytest.mark.integration

MODEL_TIMEOUT = 2.0
BOUND = 15.0  # seconds; without a deadline these runs never end at all
TIMED_OUT = f"did not answer within {MODEL_TIMEOUT:g} s"
TOO_LONG = "the model's reply passed 100,000 characters and was cut off"
KINDS = {
    # one byte every 0.3 s: each read is answered long before any read timeout
    "trickle": ({"interval": 0.3}, TIMED_OUT),
    # a small content chunk every 10 ms, never [DONE]: 2 s is far below the reply cap
    "endless": ({"interval": 0.01}, TIMED_OUT),
    # 200 characters every 0.5 ms without end: a reply that is never whole meets the deadline
    "flood": ({"interval": 0.0005, "piece": "x" * 200}, TIMED_OUT),
}
QUESTION = {"messages": [("user", "What is 17 * 23?")]}


@pytest.fixture(params=["sync", "sync-worker", "async"])
def form(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Points the agent's environment at a server: `endpoint(server)`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-deadline-test-123456")

    def point(server: Any) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

    yield point


def agent(**settings: Any) -> Any:
    """The agent as an operator builds it (build_graph arguments are operator settings)."""
    settings = {"model_timeout": MODEL_TIMEOUT, **settings}
    return build_graph(protocol="native", checkpointer=InMemorySaver(), **settings)


def timed_run(graph: Any, form: str, inputs: Any, config: dict) -> tuple[dict, float]:
    started = time.monotonic()
    if form == "sync":
        out = graph.invoke(inputs, config)
    elif form == "sync-worker":  # not the main thread: no timer signal, a reader thread
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as worker:
            out = worker.submit(graph.invoke, inputs, config).result()
    else:
        out = asyncio.run(graph.ainvoke(inputs, config))
    return out, time.monotonic() - started


def resume_target(graph: Any, form: str, config: dict) -> dict | None:
    if form.startswith("sync"):
        return resume_config(graph, config)
    return asyncio.run(aresume_config(graph, config))


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_endless_reply_ends_the_run_in_time_and_it_resumes(
    kind: str, form: str, endpoint: Any
) -> None:
    options, sentence = KINDS[kind]
    graph = agent()
    config = {"configurable": {"thread_id": f"{kind}-{form}"}}
    with MisbehavingModel(kind, **options) as hostile:
        endpoint(hostile)
        out, seconds = timed_run(graph, form, QUESTION, config)
    assert seconds < BOUND, f"the run took {seconds:.1f} s"
    assert out["status"] == "error", out
    assert sentence in out["error"], out["error"]
    assert_one_sentence(out["error"])
    assert hostile.requests >= 1
    stored = json.dumps(graph.get_state(config).values, default=str)
    assert len(stored) < 20_000  # what was streamed before the cut is not kept

    target = resume_target(graph, form, config)
    assert target is not None, "the failed model call left nothing to resume"
    with ScriptedOpenAIServer([Reply(content="17 * 23 = 391")]) as healthy:
        endpoint(healthy)
        resumed, _ = timed_run(graph, form, None, target)
    assert resumed["status"] == "answered" and resumed["answer"] == "17 * 23 = 391"


def test_a_huge_non_streamed_reply_ends_the_run_quickly(form: str, endpoint: Any) -> None:
    """5 MB of JSON answering a streamed request: the run ends with one sentence and none of
    the 5 MB is stored."""
    graph = agent()
    config = {"configurable": {"thread_id": f"huge-{form}"}}
    with MisbehavingModel("huge", size=5_000_000) as hostile:
        endpoint(hostile)
        out, seconds = timed_run(graph, form, QUESTION, config)
    assert seconds < BOUND
    assert out["status"] == "error", out
    assert_one_sentence(out["error"])
    assert len(json.dumps(graph.get_state(config).values, default=str)) < 20_000
    assert resume_target(graph, form, config) is not None


def test_a_huge_non_streamed_reply_is_refused_as_too_long(endpoint: Any) -> None:
    """The whole reply is read (the model is invoked, not streamed), so the cap sees it."""
    with MisbehavingModel("huge", size=5_000_000) as hostile:
        endpoint(hostile)
        out, _ = timed_run(agent(), "sync", QUESTION, {"configurable": {"thread_id": "huge"}})
    assert TOO_LONG in (out["error"] or ""), out["error"]


def test_stuck_readers_never_starve_later_calls(form: str, endpoint: Any) -> None:
    """A sync HTTP read cannot be interrupted, so a call stuck on a trickling endpoint lives
    on after its run gave up. However many there are, a later call still starts at once
    (a fixed pool of 16 readers once made every later sync call time out unsent)."""
    graph = agent(model_timeout=0.5, max_retries=0)
    with MisbehavingModel("trickle", interval=0.3) as hostile:
        endpoint(hostile)
        with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
            runs = [
                pool.submit(
                    timed_run, graph, form, QUESTION, {"configurable": {"thread_id": f"t{i}"}}
                )
                for i in range(20)
            ]
            outs = [run.result(timeout=BOUND * 2)[0] for run in runs]
        assert {out["status"] for out in outs} == {"error"}
        with ScriptedOpenAIServer([Reply(content="fine")]) as healthy:
            endpoint(healthy)
            out, seconds = timed_run(graph, form, QUESTION, {"configurable": {"thread_id": "ok"}})
        assert out["status"] == "answered", out.get("error")
        assert len(healthy.chat_requests) == 1 and seconds < BOUND
