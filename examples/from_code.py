"""The agent from code: a chat model object, your own tools, a SQLite checkpointer, the run's
settings in its context, an approval pause, and streamed updates.

    OPENAI_API_KEY=sk-... uv run python -m examples.from_code [checkpoints.sqlite]

`ChatOpenAI` reads `OPENAI_API_KEY` and `OPENAI_BASE_URL` (any OpenAI-compatible endpoint) from
the environment; `REACT_AGENT_MODEL` names the model. Any other LangChain chat model works the
same way. The test runs this file against a scripted OpenAI-compatible server.
"""

from __future__ import annotations

import os
import sys
import uuid

from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from graph import build_graph


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


def new_thread() -> dict:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def said(message: BaseMessage) -> str:
    """A tool call as `name {args}`, any other message as its text."""
    calls = getattr(message, "tool_calls", None) or []
    return ", ".join(f"{c['name']} {c['args']}" for c in calls) or message.text


def main(path: str = "from_code.sqlite") -> None:
    model = ChatOpenAI(model=os.environ.get("REACT_AGENT_MODEL", "gpt-4o-mini"))
    with SqliteSaver.from_conn_string(path) as saver:
        agent = build_graph(model=model, tools=[multiply], checkpointer=saver)

        # 1. Ask; per-run settings go in the context. Read the answer, status and trace.
        config = new_thread()
        question = {"messages": [("user", "What is 17 * 23?")]}
        out = agent.invoke(question, config, context={"max_steps": 5})
        print(out["status"], "·", out["answer"])
        for step in out["steps"]:
            if step["kind"] == "action":
                print(f"  {step['tool']} {step['tool_input']} -> {step['observation']}")

        # 2. The same thread remembers; stream one update per node as each finishes.
        follow_up = {"messages": [("user", "And that times 2?")]}
        for update in agent.stream(follow_up, config, stream_mode="updates"):
            for node, values in update.items():
                print(f"  {node}:", *map(said, (values or {}).get("messages", [])))
        print(agent.get_state(config).values["answer"])

        # 3. Approval: the call pauses before it runs; resume with one decision per call.
        config = new_thread()
        question = {"messages": [("user", "What is 6 * 7?")]}
        paused = agent.invoke(question, config, context={"approve": ["multiply"]})
        (request,) = paused["__interrupt__"][0].value["action_requests"]
        print("approve?", request["name"], request["args"])
        decision = Command(resume={"decisions": [{"type": "approve"}]})
        out = agent.invoke(decision, config)
        print(out["status"], "·", out["answer"])


if __name__ == "__main__":
    main(*sys.argv[1:])
