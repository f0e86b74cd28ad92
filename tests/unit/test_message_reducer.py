"""The conversation's reducer (`graph.message_reducer.add_message_batches`) gives what LangGraph's
`add_messages` gives, whether it takes its shortcut (a batch that only appends) or not."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from graph.message_reducer import add_message_batches, unknown_removals

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


def written(*other_kinds: str) -> st.SearchStrategy:
    """A message a node writes: a known id or a new one."""
    return st.tuples(kinds | st.sampled_from(other_kinds), st.sampled_from([*IDS, "n1", "n2"]))


def shown(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [(type(m), m.id, m.content) for m in messages]


batches = st.lists(st.lists(written("chunk", "remove"), max_size=3), min_size=1, max_size=3)


@settings(max_examples=400, deadline=None)
@given(stored, batches)
def test_the_reducer_matches_add_messages(left_spec: list, batch_specs: list) -> None:
    left = [message(kind, i) for kind, i in left_spec]
    writes = [[message(kind, i) for kind, i in batch] for batch in batch_specs]
    flat = [m for batch in writes for m in batch]
    try:
        expected = add_messages(list(left), list(flat))
    except ValueError:  # removing an id that is not there (yet): that removal is dropped
        known = {m["id"] if isinstance(m, dict) else m.id for m in left}
        kept = []
        for m in flat:
            if isinstance(m, RemoveMessage) and m.id not in known:
                continue
            known.add(m.id)
            kept.append(m)
        expected = add_messages(list(left), kept)
    got = add_message_batches(list(left), writes)
    assert shown(got) == shown(expected)


def test_a_stored_write_the_reducer_cannot_take_is_dropped_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The channel replays its stored writes on every load: an item that is no message, or
    the removal of an id the conversation does not hold, is dropped (and logged), so the
    thread still reads. Client writes are refused before they are stored (`graph.checked`)."""
    left = [HumanMessage(content="hi", id="h")]
    with caplog.at_level(logging.WARNING, logger="graph.message_reducer"):
        got = add_message_batches(list(left), [[{"role": "robot", "content": "x"}], 5])
        assert shown(got) == shown(left)
        got = add_message_batches(list(left), [[RemoveMessage(id="nope"), AIMessage("a", id="a")]])
        assert shown(got) == shown([*left, AIMessage("a", id="a")])
    assert "A 'messages' write was dropped" in caplog.text
    assert "A removal from 'messages' was dropped" in caplog.text


def test_unknown_removals_names_the_ids_the_conversation_lacks() -> None:
    left = [HumanMessage(content="hi", id="h")]
    assert unknown_removals(left, [RemoveMessage(id="h")]) == []
    assert unknown_removals(left, [{"type": "remove", "id": "nope", "content": ""}]) == ["nope"]
    assert unknown_removals(left, [AIMessage("a", id="a"), RemoveMessage(id="a")]) == []
    assert unknown_removals(left, [RemoveMessage(id=REMOVE_ALL_MESSAGES)]) == []
    assert unknown_removals(left, [("user", "plain")]) == []


def test_a_batch_of_new_messages_is_appended_as_given() -> None:
    left = [HumanMessage(content="hi", id="h"), AIMessage(content="", id="a")]
    batch = [ToolMessage(content="r", tool_call_id="c", id="t")]
    got = add_message_batches(left, [batch])
    assert got[:2] == left and got[2] is batch[0] and got is not left


# The reducer keeps the ids of the last conversation it checked. These feed it what LangGraph
# does: its own results back, copies of them (a router's fresh copy of the state), a branch
# that left the kept conversation, and a message whose id was already there.
steps = st.lists(
    st.tuples(
        st.sampled_from(["result", "copy", "earlier"]),  # which conversation the write goes to
        st.lists(written("chunk"), min_size=1, max_size=2),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(stored, steps)
def test_a_growing_conversation_matches_add_messages(left_spec: list, step_specs: list) -> None:
    ours = [message(kind, i) for kind, i in left_spec if kind != "dict"]
    theirs = list(ours)
    history = [(ours, theirs)]
    for source, batch_spec in step_specs:
        base, expected_base = {
            "result": history[-1],
            "copy": (list(history[-1][0]), history[-1][1]),
            "earlier": history[0],
        }[source]
        batch = [message(kind, i) for kind, i in batch_spec]
        ours = add_message_batches(base, [batch])
        theirs = add_messages(list(expected_base), list(batch))
        assert shown(ours) == shown(theirs)
        history.append((ours, theirs))


def test_an_id_already_in_the_kept_conversation_is_replaced_not_appended() -> None:
    left = [HumanMessage(content="hi", id="h"), AIMessage(content="one", id="a")]
    grown = add_message_batches(left, [[ToolMessage(content="r", tool_call_id="c", id="t")]])
    again = add_message_batches(list(grown), [[AIMessage(content="two", id="a")]])
    assert [(m.id, m.content) for m in again] == [("h", "hi"), ("a", "two"), ("t", "r")]


def test_a_list_changed_in_place_after_the_reducer_read_it_is_read_again() -> None:
    left = [HumanMessage(content="hi", id="h")]
    add_message_batches(left, [[AIMessage(content="one", id="a")]])
    left.append(AIMessage(content="two", id="b"))  # someone else's list, appended to
    got = add_message_batches(left, [[AIMessage(content="three", id="b")]])
    assert [(m.id, m.content) for m in got] == [("h", "hi"), ("b", "three")]
