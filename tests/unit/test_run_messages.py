"""`run_messages`: the messages after the last one with the run's question id, found in C.
Checked against the plain reading (a loop from the end) on generated conversations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from graph.steps import run_messages


def by_a_loop(messages: list[BaseMessage], question_id: str | None) -> list[BaseMessage]:
    if question_id:
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].id == question_id:
                return messages[index + 1 :]
    return messages


def test_the_run_starts_after_the_last_message_with_its_id() -> None:
    first, again = HumanMessage("q", id="q1"), HumanMessage("q again", id="q1")
    step, answer = AIMessage("a", id="a1"), AIMessage("b", id="a2")
    messages = [first, step, again, answer]
    assert run_messages(messages, "q1") == [answer]
    assert run_messages(messages, "a2") == []
    assert run_messages(messages, "nowhere") == messages
    assert run_messages(messages, None) == messages
    assert run_messages([], "q1") == []


@given(
    ids=st.lists(st.sampled_from(["a", "b", "c", None]), max_size=12),
    question_id=st.sampled_from(["a", "b", "z", None, ""]),
)
def test_it_agrees_with_a_loop_from_the_end(ids: list[str | None], question_id: str | None) -> None:
    messages: list[BaseMessage] = [HumanMessage(str(i), id=x) for i, x in enumerate(ids)]
    found = run_messages(messages, question_id)
    assert [m.content for m in found] == [m.content for m in by_a_loop(messages, question_id)]
    assert found is not messages  # a list of its own: callers may change it
