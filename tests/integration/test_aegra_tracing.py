"""Under Aegra each run is traced once: with the standard OTEL_* variables the graph factory
switches the agent's tracing on (`deploy/aegra/served.py`), and when Aegra's own set-up
instruments LangChain as well (`OTEL_CONSOLE_EXPORT`, `OTEL_TARGETS`) the run still yields one
span tree, not two. Spans are read from the instance's log (the `console` exporter), exported
every 0.1 s (`OTEL_BSP_SCHEDULE_DELAY`): a server stopped by a signal exits without the
exporters' last flush. Skips, or fails under
REACT_AGENT_REQUIRE_SERVICES=1, where Aegra cannot be started (tests/support/aegra.py)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.support.aegra import aegra
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = [pytest.mark.integration, pytest.mark.aegra]  # skipped, or required in CI

KEY = "sk-aegra-tracing"


def reply_for(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply(content=f"The result is {body['messages'][-1]['content']}.")
    return Reply(tool_calls=[ToolCall("calculator", {"expression": "17 * 23"})])


def spans_in(log: str) -> list[dict[str, Any]]:
    """The spans the console exporter printed (one JSON object each, pretty-printed)."""
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"^\{$", log, re.MULTILINE):
        try:
            value, _ = decoder.raw_decode(log, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            found.append(value)
    return found


def traced_run(extra_env: dict[str, str]) -> tuple[list[dict[str, Any]], str, str]:
    """One run through one Aegra instance; the spans its log holds, its thread id, the log."""
    with ScriptedOpenAIServer(default=reply_for) as model:
        env = {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": KEY,
            "REACT_AGENT_MODEL": "scripted",
            "REACT_AGENT_TOOLS": "calculator",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            **extra_env,
        }
        with aegra(env, instances=1) as served:

            async def one_run() -> tuple[str, dict[str, Any]]:
                client = get_client(url=served.urls[0], api_key=served.api_key, timeout=120)
                try:
                    thread = (await client.threads.create())["thread_id"]
                    question = {"messages": [{"role": "user", "content": "What is 17 * 23?"}]}
                    out = await client.runs.wait(thread, "agent", input=question)
                    return thread, out
                finally:
                    await client.aclose()

            thread, out = asyncio.run(one_run())
            assert out["status"] == "answered" and "391" in out["answer"], out
            log = exported(served.instances[0], thread)
    return spans_in(log), thread, log


def exported(instance: Any, thread: str, timeout: float = 20.0) -> str:
    """The instance's log once the run's root span is in it (it ends last), and a moment
    more for a second exporter's copy, if there were one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        roots = [s for s in spans_in(instance.log()) if s.get("parent_id") is None]
        if any(thread in json.dumps(s) and s["kind"] != "SpanKind.SERVER" for s in roots):
            time.sleep(1.0)
            break
        time.sleep(0.2)
    return instance.log()


@pytest.mark.parametrize(
    "aegra_own",
    [{}, {"OTEL_CONSOLE_EXPORT": "true"}],
    ids=["agent-only", "aegra-instruments-too"],
)
def test_a_run_under_aegra_is_traced_once(aegra_own: dict[str, str]) -> None:
    spans, thread, log = traced_run({"OTEL_TRACES_EXPORTER": "console", **aegra_own})
    assert spans, f"no span in the instance's log:\n{log[-3000:]}"
    names = [s["name"] for s in spans]
    for node in ("think", "act", "calculator"):
        assert node in names, f"no {node} span: {sorted(set(names))}"
    calculators = [s for s in spans if s["name"] == "calculator"]
    assert len(calculators) == 1, f"the tool call was traced {len(calculators)} times"
    thinks = [s for s in spans if s["name"] == "think"]
    assert len(thinks) == 2, f"two model steps, {len(thinks)} think spans"
    assert len({s["context"]["trace_id"] for s in thinks + calculators}) == 1  # one tree
    roots = [s for s in spans if s.get("parent_id") is None and thread in json.dumps(s)]
    roots = [s for s in roots if s["kind"] != "SpanKind.SERVER"]  # Aegra's HTTP request spans
    assert len(roots) == 1, f"{len(roots)} span trees for one run"
    if not aegra_own:  # the agent's own set-up: its run attributes on the root
        assert roots[0]["attributes"]["react_agent.status"] == "answered"
    assert KEY not in log
