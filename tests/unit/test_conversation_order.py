"""The conversation a model reads (`graph.protocols.ordering`): the order reused for a
conversation that grew at its end is the order the whole list gets, whatever was added."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph.messages import MARK
from graph.protocols.ordering import Ordering, ordered

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


messages = st.tuples(
    st.sampled_from(["ai", "tool", "human"]), st.just(None), st.booleans()
).flatmap(
    lambda spec: st.tuples(
        st.just(spec[0]),
        st.lists(st.sampled_from(CALL_IDS), max_size=2)
        if spec[0] == "ai"
        else st.sampled_from(CALL_IDS),
        st.sampled_from([False, False, False, True]),
    )
)
# each step: messages appended, or an earlier message marked in place, or a list cut short
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(messages, min_size=1, max_size=3)),
        st.tuples(st.just("mark"), st.integers(0, 20)),
        st.tuples(st.just("cut"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=400, deadline=None)
@given(steps)
def test_the_reused_order_is_the_whole_lists_order(plan: list[tuple[str, Any]]) -> None:
    ordering = Ordering()
    conversation: list[BaseMessage] = []
    for action, detail in plan:
        if action == "append":
            conversation = [*conversation, *map(made, detail)]
        elif action == "mark" and conversation:
            target = conversation[detail % len(conversation)]
            target.response_metadata = {MARK: "error"}  # an edit in place
        elif action == "cut":
            conversation = conversation[: detail % (len(conversation) + 1)]
        got = ordering(conversation)
        expected = ordered(conversation)
        assert [id(m) for m in got] == [id(m) for m in expected]


def test_a_step_and_its_result_are_ordered_without_the_earlier_messages() -> None:
    ordering = Ordering()
    first = [HumanMessage(content="q"), made(("ai", ["c1"], False)), made(("tool", "c1", False))]
    assert ordering(first) == first
    grown = [*first, made(("ai", ["c2"], False)), made(("tool", "c2", False))]
    result = ordering(grown)
    assert result == grown and result[:3] is not first  # a new list, the same messages
    late = made(("tool", "c1", False))  # a second result for an earlier call: ordered in full
    assert ordering([*grown, late]) == ordered([*grown, late])


def test_a_new_call_that_reuses_an_unanswered_earlier_id_is_ordered_in_full() -> None:
    ordering = Ordering()
    first = [HumanMessage(content="q"), made(("ai", ["c1"], False)), HumanMessage(content="r")]
    ordering(first)
    grown = [*first, made(("ai", ["c1"], False)), made(("tool", "c1", False))]
    assert ordering(grown) == ordered(grown)  # the result goes after the first call with its id
    assert ordering(grown)[2] is grown[4]
