"""The conversation's reducer (`graph.state.add_message_batches`) gives what LangGraph's
`add_messages` gives, whether it takes its shortcut (a batch that only appends) or not."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import add_messages

from graph.state import add_message_batches

IDS = [f"m{i}" for i in range(8)]


def message(kind: str, message_id: str) -> Any:
    if kind == "dict":  # as a snapshot written by the API server may hold it
        return {"type": "human", "content": f"ask {message_id}", "id": message_id}
    if kind == "human":
        return HumanMessage(content=f"ask {message_id}", id=message_id)
    if kind == "ai":
        return AIMessage(content=f"step {message_id}", id=message_id)
    if kind == "chunk":
        return AIMessageChunk(content=f"part {message_id}", id=message_id)
    if kind == "remove":
        return RemoveMessage(id=message_id)
    return ToolMessage(content=f"result {message_id}", tool_call_id=message_id, id=message_id)


kinds = st.sampled_from(["human", "ai", "tool"])
stored = st.lists(  # what the channel holds: messages, or anything an Overwrite or a snapshot put
    st.tuples(kinds | st.sampled_from(["dict", "chunk"]), st.sampled_from(IDS)),
    max_size=6,
    unique_by=lambda x: x[1],
)
batches = st.lists(
    st.lists(
        st.tuples(
            kinds | st.sampled_from(["chunk", "remove"]), st.sampled_from([*IDS, "n1", "n2"])
        ),
        max_size=3,
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=400, deadline=None)
@given(stored, batches)
def test_the_reducer_matches_add_messages(left_spec: list, batch_specs: list) -> None:
    left = [message(kind, i) for kind, i in left_spec]
    writes = [[message(kind, i) for kind, i in batch] for batch in batch_specs]
    flat = [m for batch in writes for m in batch]
    try:
        expected = add_messages(list(left), list(flat))
    except ValueError as exc:  # removing an id that is not there
        try:
            add_message_batches(list(left), writes)
        except ValueError as ours:
            assert str(ours) == str(exc)
            return
        raise AssertionError("the reducer accepted what add_messages refused") from None
    got = add_message_batches(list(left), writes)
    assert [(type(m), m.id, m.content) for m in got] == [
        (type(m), m.id, m.content) for m in expected
    ]


def test_a_batch_of_new_messages_is_appended_as_given() -> None:
    left = [HumanMessage(content="hi", id="h"), AIMessage(content="", id="a")]
    batch = [ToolMessage(content="r", tool_call_id="c", id="t")]
    got = add_message_batches(left, [batch])
    assert got[:2] == left and got[2] is batch[0] and got is not left
