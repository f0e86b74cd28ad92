"""A long chat never sends a request over the model's window: 200 turns against a server
that counts tokens with its own tokenizer and refuses any request over its limit, as a real
endpoint does, under both protocols. Older turns leave the request, never the thread; and a
long run never hides its own calls from the model (30 steps of 2 KB in 8,192 tokens)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.policies.context_fit import CLEARED, fitted, units
from graph.policies.token_estimates import estimated_tokens, most_tokens
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer
from tests.support.scripted_model import ReplyingChatModel

pytestmark = pytest.mark.integration

WINDOW = 3000
TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]|\w+|[^\w\s]", re.UNICODE)


def server_tokens(body: dict[str, Any]) -> int:
    """The server's own count: a word, a CJK character or a punctuation mark is a token, plus
    four per message."""
    total = 0
    for message in body.get("messages", []):
        content = message.get("content") or ""
        text = content if isinstance(content, str) else " ".join(map(str, content))
        total += 4 + len(TOKEN.findall(text)) + len(TOKEN.findall(str(message.get("tool_calls"))))
    return total


class Counting:
    """Refuses a request over the window, as an endpoint does; else answers."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.largest = 0

    def __call__(self, body: dict[str, Any]) -> Reply | HTTPError:
        used = server_tokens(body)
        self.largest = max(self.largest, used)
        if used > WINDOW:
            return HTTPError(400, f"{used} tokens is over {WINDOW}", code="context_length_exceeded")
        text = "Noted."
        return Reply(content=text if self.protocol == "native" else f"Final Answer: {text}")


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_200_turn_chat_never_goes_over_the_window(protocol: str) -> None:
    counting = Counting(protocol)
    with ScriptedOpenAIServer([], default=counting) as server:
        model = ChatOpenAI(model="m", base_url=server.base_url, api_key="sk", max_retries=0)
        agent = build_graph(
            model=model,
            tools=[],
            protocol=protocol,
            checkpointer=InMemorySaver(),
            context_window=WINDOW,
        )
        config = {"configurable": {"thread_id": "long"}}
        for turn in range(200):
            words = " ".join(f"word{turn}_{i}" for i in range(40))
            question = f"Turn {turn}: remember {words} 以及这些汉字记录第{turn}轮。"
            out = agent.invoke({"messages": [("user", question)]}, config)
            assert out["status"] == "answered", (turn, out.get("error"))
        stored = agent.get_state(config).values["messages"]
    assert len([x for x in stored if x.type == "human"]) == 200  # the thread keeps every turn
    assert 0 < counting.largest <= WINDOW


def test_switched_off_the_window_is_passed_and_the_endpoint_refuses() -> None:
    counting = Counting("native")
    with ScriptedOpenAIServer([], default=counting) as server:
        model = ChatOpenAI(model="m", base_url=server.base_url, api_key="sk", max_retries=0)
        agent = build_graph(model=model, tools=[], checkpointer=InMemorySaver(), context_share=0)
        config = {"configurable": {"thread_id": "off"}}
        statuses = set()
        for turn in range(60):
            words = " ".join(f"w{turn}_{i}" for i in range(40))
            statuses.add(agent.invoke({"messages": [("user", words)]}, config)["status"])
    assert "error" in statuses  # the test's server does refuse: the check above is real


def test_a_tool_call_and_its_result_leave_together_and_the_question_stays() -> None:
    call = {"name": "t", "args": {"q": "x" * 300}, "id": "c1", "type": "tool_call"}
    messages = [
        HumanMessage("old question " * 50, id="q0"),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage("result " * 100, tool_call_id="c1", id="r1"),
        AIMessage("old answer", id="a2"),
        HumanMessage("new question", id="q1"),
        AIMessage("", tool_calls=[{**call, "id": "c2"}], id="a3"),
        ToolMessage("fresh result", tool_call_id="c2", id="r2"),
    ]
    kept = fitted(messages, budget=200)
    ids = [x.id for x in kept]
    assert ids[0] == "q1" and "a3" in ids and "r2" in ids
    assert ("a1" in ids) == ("r1" in ids)
    assert [len(u) for u in units(messages)] == [1, 2, 1, 1, 2]
    assert fitted(messages, budget=1) is None  # not even the run: no request at all


@given(
    texts=st.lists(st.text(max_size=300), max_size=6),
    calls=st.lists(st.dictionaries(st.text(max_size=8), st.text(max_size=40)), max_size=2),
)
def test_the_quick_bound_never_undercounts(texts: list[str], calls: list[dict]) -> None:
    """A request that fits by `most_tokens` (no encoding) fits by `estimated_tokens` too, in
    any script: the shortcut never lets an oversized request through."""
    messages: list[Any] = [HumanMessage(t) for t in texts]
    messages += [
        AIMessage("", tool_calls=[{"name": "t", "args": args, "id": f"c{i}"}])
        for i, args in enumerate(calls)
    ]
    assert most_tokens(messages) >= estimated_tokens(messages)


STEPS = 30
MARK = re.compile(r'"index": (\d+)')


class CountsItsOwnCalls(ReplyingChatModel):
    """Calls `fetch(index)` for 0..29, one per step, reading which it has made from the request
    itself (its calls, or their text under the text protocol); a request that hides one of
    its own calls fails the run. Records the largest request, counted as the policy counts."""

    protocol: str = "native"
    largest: int = 0

    @property
    def _llm_type(self) -> str:
        return "counts-its-own-calls"

    def _reply(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> ChatResult:
        self.largest = max(
            self.largest, estimated_tokens(messages) + estimated_tokens(kwargs.get("tools") or [])
        )
        shown = "".join(x.text + json.dumps(getattr(x, "tool_calls", [])) for x in messages)
        seen = {int(i) for i in MARK.findall(shown)}
        step = sum(1 for x in messages if x.type == "ai")
        if seen != set(range(step)):
            raise AssertionError(f"step {step}: the request shows only calls {sorted(seen)}")
        if step == STEPS:
            reply = AIMessage("Final Answer: done" if self.protocol == "text" else "done")
        elif self.protocol == "text":
            reply = AIMessage(f"Action: fetch\nAction Input: {json.dumps({'index': step})}")
        else:
            call = {"name": "fetch", "args": {"index": step}, "id": f"c{step}"}
            reply = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.mark.parametrize("wrap_up", [False, True], ids=["steps-left", "wrap-up"])
@pytest.mark.parametrize("protocol", ["native", "text"])
def test_30_steps_of_2_kb_in_8192_tokens_keep_every_call_in_sight(
    protocol: str, wrap_up: bool
) -> None:
    """With `wrap_up`, the 30th step is the last the limit allows: WrapUp's request for the
    answer follows the run, and the run's calls are still all in sight (where the window is
    tighter, `run.question_id` keeps that request from passing for the run's question:
    tests/unit/test_context_fit_sizes.py)."""
    fetched: list[int] = []

    def fetch(index: int) -> str:
        fetched.append(index)
        return (f"item {index}: " + "lorem ipsum dolor sit amet " * 80)[:2000]

    model = CountsItsOwnCalls(protocol=protocol)
    tool = StructuredTool.from_function(fetch, name="fetch", description="Fetch item `index`.")
    agent = build_graph(
        model=model,
        tools=[tool],
        protocol=protocol,
        context_window=8192,
        max_steps=STEPS if wrap_up else STEPS + 5,
    )
    out = agent.invoke({"messages": [("user", "Fetch items 0 to 29, then say done.")]})
    assert out["status"] == ("max_steps" if wrap_up else "answered"), out.get("error")
    assert fetched == list(range(STEPS))  # no call repeated, none skipped
    assert 0 < model.largest <= 8192
    stored = [x for x in out["messages"] if isinstance(x, ToolMessage)]
    assert len(stored) == STEPS and CLEARED not in {x.text for x in stored}  # the thread keeps all
