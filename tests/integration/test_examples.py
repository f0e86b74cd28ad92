"""Every sample in `examples/` runs as a reader would run it, and prints what it promises.

Each runs as a subprocess (`python -m examples.<name>`) against a scripted OpenAI-compatible
server: `from_code` with `OPENAI_BASE_URL` pointing at it, `sdk_client` against a real
`langgraph dev` whose model is that server; a new example without a test fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.support.langgraph_dev import REPO, LangGraphDev, langgraph_dev, report_failures
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples"


def run_example(name: str, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", f"examples.{name}", *args],
        cwd=REPO,
        env={**os.environ, "LANGSMITH_TRACING": "false", **(env or {})},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout.splitlines()


def model_env(server: ScriptedOpenAIServer) -> dict[str, str]:
    """The environment that points a process's model at the scripted server."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-example",
        "REACT_AGENT_MODEL": "scripted",
    }


def in_order(lines: list[str], expected: list[str]) -> bool:
    """`expected` appear among `lines` in this order (other lines may come between)."""
    rest = iter(lines)
    return all(any(line == want for line in rest) for want in expected)


def texts(request: object) -> str:
    return json.dumps(getattr(request, "messages", []))


def test_every_example_is_run_by_a_test() -> None:
    here = Path(__file__).read_text(encoding="utf-8")
    for path in EXAMPLES.glob("*.py"):
        if path.name != "__init__.py":
            assert f"def test_{path.stem}(" in here, f"{path.name} has no test here"


def test_from_code(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("multiply", {"a": 17, "b": 23})]),
        Reply(content="17 * 23 = 391"),
        Reply(tool_calls=[ToolCall("multiply", {"a": 391, "b": 2})]),
        Reply(content="391 * 2 = 782"),
        Reply(tool_calls=[ToolCall("multiply", {"a": 6, "b": 7})]),
        Reply(content="6 * 7 = 42"),
    ]
    database = tmp_path / "from_code.sqlite"
    with ScriptedOpenAIServer(script) as server:
        lines = run_example("from_code", str(database), env=model_env(server))
        requests = server.chat_requests
        assert server.remaining == []
    assert in_order(
        lines,
        [
            "answered · 17 * 23 = 391",
            "  multiply {'a': 17, 'b': 23} -> 391",
            "  think: multiply {'a': 391, 'b': 2}",
            "  act: 782",
            "  think: 391 * 2 = 782",
            "391 * 2 = 782",
            "approve? multiply {'a': 6, 'b': 7}",
            "answered · 6 * 7 = 42",
        ],
    ), "\n".join(lines)
    assert {r.body["model"] for r in requests} == {"scripted"}
    # the follow-up was asked with the first exchange: the thread remembered it
    assert "What is 17 * 23?" in texts(requests[2]) and "17 * 23 = 391" in texts(requests[2])
    # the approved call ran after the pause, and the model read its result
    assert requests[5].messages[-1]["role"] == "tool"
    assert requests[5].messages[-1]["content"] == "42"
    # LangGraph's stock saver reads the file back: two threads, each ended answered
    with SqliteSaver.from_conn_string(str(database)) as saver:
        threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
        last = [saver.get_tuple({"configurable": {"thread_id": t}}) for t in threads]
    assert len(threads) == 2
    assert [t.checkpoint["channel_values"]["status"] for t in last] == ["answered"] * 2


# --------------------------------------------------------------------------- the SDK client


@pytest.fixture(scope="module")
def served(request: pytest.FixtureRequest) -> Iterator[tuple[ScriptedOpenAIServer, LangGraphDev]]:
    """`langgraph dev` with the repository's graph, its model a scripted server."""
    with (
        ScriptedOpenAIServer() as model,
        langgraph_dev(model_env(model)) as dev,
        report_failures(request, dev),
    ):
        yield model, dev


def test_sdk_client(served: tuple[ScriptedOpenAIServer, LangGraphDev]) -> None:
    model_server, dev = served
    seen = len(model_server.chat_requests)
    model_server.add(
        Reply(
            content="Let me compute that.",
            tool_calls=[ToolCall("calculator", {"expression": "17 * 23"})],
        ),
        Reply(content="17 * 23 = 391"),
    )
    lines = run_example("sdk_client", dev.url)
    assert lines == [
        "Let me compute that.",
        "approve? calculator {'expression': '17 * 23'}",
        "[calculator] 391",
        "17 * 23 = 391",
        "answered · 17 * 23 = 391",
    ]
    first, second = model_server.chat_requests[seen:]
    assert first.body["stream"] is True  # the tokens the client printed were streamed
    assert second.messages[-1] == {
        "role": "tool",
        "content": "391",
        "tool_call_id": second.messages[-2]["tool_calls"][0]["id"],
    }
    assert model_server.remaining == []
