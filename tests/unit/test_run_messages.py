"""`run_messages`: the messages after the last one with the run's question id, found in C.
Checked against the plain reading (a loop from the end) on generated conversations, and
`steps_taken`, which reads the same part of the conversation from its end, against the count
over `run_messages`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from graph import messages as m
from graph.steps import run_messages, steps_taken


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


def counted_over_the_run(messages: list[BaseMessage], run: dict) -> int:
    for message in reversed(run_messages(messages, run.get("question_id"))):
        if isinstance(message, AIMessage) and m.STEP in message.response_metadata:
            return int(message.response_metadata[m.STEP])
    return int(run.get("iteration") or 0)


@given(
    kinds=st.lists(
        st.tuples(st.sampled_from(["human", "step", "answer"]), st.sampled_from(["a", "b", "c"])),
        max_size=12,
    ),
    question_id=st.sampled_from(["a", "b", "z", None]),
    iteration=st.sampled_from([0, 3]),
)
def test_steps_taken_counts_the_last_step_after_the_question(
    kinds: list[tuple[str, str]], question_id: str | None, iteration: int
) -> None:
    messages: list[BaseMessage] = []
    for number, (kind, message_id) in enumerate(kinds, start=1):
        if kind == "human":
            messages.append(HumanMessage("q", id=message_id))
        else:
            meta = {m.STEP: number} if kind == "step" else {}
            messages.append(AIMessage("s", id=message_id, response_metadata=meta))
    run = {"question_id": question_id, "iteration": iteration}
    assert steps_taken(messages, run) == counted_over_the_run(messages, run)
