"""The conversation a model reads (`graph.protocols.conversation`): run errors left out,
each tool result right after the call that asked for it, as chat APIs require."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph.messages import MARK
from graph.protocols import conversation

CALL_IDS = ["c1", "c2", "c3", "c4"]


def made(spec: tuple[str, Any, bool]) -> BaseMessage:
    kind, detail, error = spec
    meta = {MARK: "error"} if error else {}
    if kind == "ai":
        calls = [{"name": "t", "args": {}, "id": i, "type": "tool_call"} for i in detail]
        return AIMessage(content="", tool_calls=calls, response_metadata=meta)
    if kind == "tool":
        return ToolMessage(content="r", tool_call_id=detail, response_metadata=meta)
    return HumanMessage(content="q", response_metadata=meta)


def test_a_result_written_later_goes_right_after_its_call() -> None:
    question, call = HumanMessage(content="q"), made(("ai", ["c1"], False))
    follow_up, result = HumanMessage(content="and?"), made(("tool", "c1", False))
    assert conversation([question, call, follow_up, result]) == [question, call, result, follow_up]


def test_run_errors_are_left_out() -> None:
    question, error = HumanMessage(content="q"), made(("human", None, True))
    assert conversation([question, error]) == [question]


def test_a_second_result_for_one_call_is_sent_once_and_an_orphan_stays_in_place() -> None:
    call, first = made(("ai", ["c1"], False)), made(("tool", "c1", False))
    again = made(("tool", "c1", False))
    orphan = made(("tool", "c9", False))
    assert conversation([call, orphan, first, again]) == [call, first, orphan]


messages = st.sampled_from(["ai", "tool", "human"]).flatmap(
    lambda kind: st.tuples(
        st.just(kind),
        st.lists(st.sampled_from(CALL_IDS), max_size=2, unique=True)
        if kind == "ai"
        else st.sampled_from(CALL_IDS),
        st.sampled_from([False, False, False, True]),
    )
)


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=12))
def test_each_placed_result_follows_its_call_and_nothing_else_moves(
    specs: list[tuple[str, Any, bool]],
) -> None:
    sent = [made(spec) for spec in specs]
    got = conversation(sent)
    kept = [x for x in sent if x.response_metadata.get(MARK) != "error"]
    # the other messages keep their order; each call id's result is sent once
    assert [id(x) for x in got if not isinstance(x, ToolMessage)] == [
        id(x) for x in kept if not isinstance(x, ToolMessage)
    ]
    result_ids = [x.tool_call_id for x in got if isinstance(x, ToolMessage)]
    assert sorted(result_ids) == sorted(
        {x.tool_call_id for x in kept if isinstance(x, ToolMessage)}
    )
    # a result whose call was sent comes in the run of results right after the first such call
    for position, message in enumerate(got):
        if not isinstance(message, ToolMessage):
            continue
        callers = [
            i
            for i, x in enumerate(got)
            if isinstance(x, AIMessage) and message.tool_call_id in [c["id"] for c in x.tool_calls]
        ]
        if callers:
            between = got[callers[0] + 1 : position]
            assert all(isinstance(x, ToolMessage) for x in between)
