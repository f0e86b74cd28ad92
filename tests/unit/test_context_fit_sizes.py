"""ContextFit measures each message once while it lives, and again after an edit in place."""

from __future__ import annotations

import gc

from langchain_core.messages import AIMessage, HumanMessage

from graph.policies import context_fit
from graph.policies.context_fit import estimated_tokens, most_tokens


def test_the_bound_is_measured_once_and_again_after_an_edit_in_place() -> None:
    message = HumanMessage("x" * 30)
    first = most_tokens([message])
    assert first >= estimated_tokens([message])
    assert most_tokens([message, message]) == 2 * first
    message.content = "x" * 3000  # a middleware that edits in place
    assert most_tokens([message]) > first
    assert most_tokens([message]) >= estimated_tokens([message])


def test_a_tool_call_counts_and_a_message_that_died_is_forgotten() -> None:
    step = AIMessage("", tool_calls=[{"name": "f", "args": {"q": "y" * 90}, "id": "c"}])
    assert most_tokens([step]) >= estimated_tokens([step]) > estimated_tokens([AIMessage("")])
    assert step in context_fit._BOUNDS
    stored = context_fit._BOUNDS._entries[id(step)]  # the entry (a weak reference)
    del step
    most_tokens([])  # the last request is held until the next one (its prefix is reused)
    gc.collect()
    assert all(entry is not stored for entry in context_fit._BOUNDS._entries.values())


def test_a_request_that_grew_at_its_end_is_measured_for_its_new_messages_only() -> None:
    measured: list[int] = []
    older = [HumanMessage("q"), AIMessage("a" * 10), HumanMessage("b" * 20)]
    original = context_fit._bound

    def counting(message):  # type: ignore[no-untyped-def]
        measured.append(len(message.content))
        return original(message)

    context_fit._BOUNDS._entries.clear()
    try:
        context_fit._bound = counting
        first = most_tokens(older)
        grown = [*older, HumanMessage("c" * 40)]
        assert most_tokens(grown) == first + most_tokens([grown[-1]])
        assert measured == [1, 10, 20, 40]  # each message once
        older[1].content = "a" * 500  # an edit in place, in the reused prefix
        assert most_tokens(grown) > first + most_tokens([grown[-1]])
        assert measured[-1] == 500
    finally:
        context_fit._bound = original
