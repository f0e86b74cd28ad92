"""The two agents every benchmark compares, built the same way: ours and LangGraph's prebuilt
`create_react_agent`, with run configs, inputs and a check that a run did the work it is timed
for. The model and tools both get are in `bench.doubles`; timing in `bench.timing`; tables and
JSON in `bench.report`.

Importing this module puts the repository root on `sys.path` (the scripts run as
`python bench/<name>.py`) and drops `REACT_AGENT_*` variables: the benchmarks measure the
defaults.
"""

from __future__ import annotations

import os
import sys
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES", os.environ.get("REACT_AGENT_TEST_POSTGRES", "")
) or ("postgresql://postgres@127.0.0.1:5432/test")
QUESTION = "Fetch the items one by one, then say done."
PREBUILT_RECURSION_LIMIT = 10_000

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graph import build_graph  # noqa: E402

# The benchmarks measure the defaults: no REACT_AGENT_* setting from the shell.
for _name in [n for n in os.environ if n.startswith("REACT_AGENT_")]:
    del os.environ[_name]


def build_ours(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    protocol: str = "native",
    checkpointer: Any = None,
    iterations: int = 10,
) -> Any:
    """Our agent; `max_steps` leaves room for `iterations` tool steps and the answer."""
    return build_graph(
        model=model,
        tools=list(tools),
        protocol=protocol,
        checkpointer=checkpointer,
        max_steps=min(iterations + 1, 200),
        # the scripted model counts its steps in the request: keep every step in it (the
        # context policy still runs and counts tokens, its cost is measured)
        context_window=10_000_000,
    )


FOREIGN = frozenset({"prebuilt", "create_agent"})  # the agents we compare against


def build_prebuilt(model: BaseChatModel, tools: Sequence[BaseTool], *, checkpointer: Any = None):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # deprecated in favour of langchain.agents.create_agent
        warnings.simplefilter("ignore")
        return create_react_agent(model, list(tools), checkpointer=checkpointer)


def build_create_agent(
    model: BaseChatModel, tools: Sequence[BaseTool], *, checkpointer: Any = None
):
    """LangChain v1's `create_agent`, bare: no middleware, the same model, tools and saver."""
    from langchain.agents import create_agent

    return create_agent(model, list(tools), checkpointer=checkpointer)


def build_agent(kind: str, protocol: str, iterations: int, checkpointer: Any = None) -> Any:
    """One of the compared agents (`prebuilt`, `create_agent`, `ours`) with the benchmarks'
    instant model scripted for `iterations` tool steps and the `fetch` tool.

    Under the text protocol the other agents get the model wrapped in `TextReAct`, as ours
    wraps it (`graph.protocols.bound_model`): both then pay the same protocol (the prompt
    rendered, the reply read), and the ratio is the loop's own cost, as under native."""
    from bench.doubles import BenchModel, fetch_tool, loop_policy

    model: BaseChatModel = BenchModel(loop_policy(iterations, protocol))
    if protocol == "text" and kind in FOREIGN:
        from graph.protocols.text.chat_model import TextReAct

        model = TextReAct(model, disable_streaming=True)
    if kind == "prebuilt":
        return build_prebuilt(model, [fetch_tool()], checkpointer=checkpointer)
    if kind == "create_agent":
        return build_create_agent(model, [fetch_tool()], checkpointer=checkpointer)
    return build_ours(
        model, [fetch_tool()], protocol=protocol, checkpointer=checkpointer, iterations=iterations
    )


def run_config(agent_kind: str, thread_id: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id or new_thread()}}
    if agent_kind in FOREIGN:
        config["recursion_limit"] = PREBUILT_RECURSION_LIMIT
    return config


def new_thread(prefix: str = "bench") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def inputs(question: str = QUESTION) -> dict[str, Any]:
    return {"messages": [("user", question)]}


def tool_results(out: dict[str, Any], agent_kind: str) -> int:
    """Tool results a finished run holds (ours: its trace; the prebuilt: its ToolMessages)."""
    if agent_kind in FOREIGN:
        return sum(isinstance(m, ToolMessage) for m in out["messages"])
    return sum(1 for s in out.get("steps", []) if s.get("kind") == "action")


def check_run(out: dict[str, Any], agent_kind: str, expected_results: int) -> None:
    """Fail loudly when a run did not do the work it is timed for."""
    got = tool_results(out, agent_kind)
    status = out.get("status", "answered") if agent_kind not in FOREIGN else "answered"
    if got != expected_results or status != "answered":
        raise RuntimeError(
            f"{agent_kind}: expected {expected_results} tool results and an answer, got {got} "
            f"(status {status!r}, error {out.get('error')!r})"
        )
