"""LangChain's own `create_agent` + `HumanInTheLoopMiddleware`, for `langgraph dev`: the reference.

The browser checks serve this graph beside the project's, with the same scripted model and the
same calculator, so a difference in what Agent Chat UI does is a difference in what the two
graphs put in their interrupt or their state, not in the model, the tool or the server.

`langgraph_config()` is the `langgraph.json` that serves `build_graph` (a graph factory, so the
graph is built by the server, not when a test imports this module) under the id `agent`, the one
the UI asks for. The model is `ChatOpenAI` at OPENAI_BASE_URL with OPENAI_API_KEY, model name
from REACT_AGENT_MODEL (default `scripted`): those must be in the server's environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_openai import ChatOpenAI

REPO = Path(__file__).resolve().parents[2]
GRAPH_ID = "agent"
# What the reviewer may decide for the calculator: the same three choices the project offers.
DECISIONS = ["approve", "edit", "reject"]


def build_graph() -> Any:
    """The reference agent: the project's calculator, every call of it paused for review."""
    from tools.calculator import calculator

    model = ChatOpenAI(
        model=os.environ.get("REACT_AGENT_MODEL", "scripted"),
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],  # type: ignore[arg-type]
        max_retries=0,
    )
    review = HumanInTheLoopMiddleware(interrupt_on={"calculator": {"allowed_decisions": DECISIONS}})
    return create_agent(model, [calculator], middleware=[review])


def langgraph_config() -> dict[str, Any]:
    """A `langgraph.json` serving `build_graph` from this file, with this repository on the path."""
    return {
        "dependencies": [str(REPO)],
        "graphs": {GRAPH_ID: f"{REPO}/tests/support/create_agent_hitl.py:build_graph"},
        "python_version": "3.11",
    }
