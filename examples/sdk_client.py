"""A client of the agent served by `langgraph dev` (or LangGraph Server), through the LangGraph
SDK: the calls a chat client such as Agent Chat UI makes. It creates a thread, streams a run
(`values` for the state, `messages-tuple` for the tokens and tool results as they come), and
answers the approval pause with a resume command.

    uv run langgraph dev                                  # in another terminal
    uv run python -m examples.sdk_client [http://127.0.0.1:2024]

The server's model comes from its own environment (`OPENAI_API_KEY`, `OPENAI_BASE_URL`,
`REACT_AGENT_MODEL`); the client sends only the question and the run's settings (`context`).
"""

from __future__ import annotations

import sys
from typing import Any

from langgraph_sdk import get_sync_client


def stream(client: Any, thread_id: str, **run: Any) -> dict[str, Any]:
    """Run the agent on the thread, printing tokens and tool results; return the last state."""
    state: dict[str, Any] = {}
    modes = ["values", "messages-tuple"]
    for part in client.runs.stream(thread_id, "agent", stream_mode=modes, **run):
        if part.event == "messages":
            message, _metadata = part.data
            if message["type"] == "AIMessageChunk":
                print(message["content"], end="", flush=True)
            elif message["type"] == "tool":
                print(f"\n[{message['name']}] {message['content']}")
        elif part.event == "values":
            state = part.data
    return state


def main(url: str = "http://127.0.0.1:2024") -> None:
    client = get_sync_client(url=url)
    thread_id = client.threads.create()["thread_id"]
    question = {"messages": [{"role": "user", "content": "What is 17 * 23?"}]}
    state = stream(client, thread_id, input=question, context={"approve": ["calculator"]})
    while state.get("__interrupt__"):  # paused: one decision per requested call
        requests = state["__interrupt__"][0]["value"]["action_requests"]
        for request in requests:
            print(f"\napprove? {request['name']} {request['args']}", end="")
        decisions = [{"type": "approve"} for _ in requests]
        state = stream(client, thread_id, command={"resume": {"decisions": decisions}})
    print(f"\n{state['status']} · {state['answer']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
