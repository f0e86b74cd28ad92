"""ContextFit's order of what leaves a request that outgrows its budget: old tool results
first (their calls stay), then earlier turns, and the current run's calls never; the last
resort lists them in one note. Sizes are counted by `estimated_tokens`; the quick bound
is never below it, and follows an edit in place."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph.messages import is_agent_note
from graph.policies.context_fit import CLEARED, CONDENSED, KEEP_RESULTS, fitted
from graph.policies.token_estimates import estimated_tokens, most_tokens

RESULT = "r" * 2000  # about 670 tokens


def step(turn: int, index: int, result: str = RESULT) -> list[BaseMessage]:
    call = {"name": "fetch", "args": {"turn": turn, "index": index}, "id": f"c{turn}_{index}"}
    return [
        AIMessage("", tool_calls=[call], id=f"a{turn}_{index}"),
        ToolMessage(result, tool_call_id=call["id"], name="fetch", id=f"r{turn}_{index}"),
    ]


def run(turn: int, steps: int, result: str = RESULT) -> list[BaseMessage]:
    question = HumanMessage(f"Turn {turn}", id=f"q{turn}")
    return [question, *(x for i in range(steps) for x in step(turn, i, result))]


def calls_in(messages: list[BaseMessage]) -> list[dict]:
    return [c["args"] for x in messages if isinstance(x, AIMessage) for c in x.tool_calls]


def test_the_bound_is_safe_and_follows_an_edit_in_place() -> None:
    message = HumanMessage("x" * 30)
    first = most_tokens([message])
    assert first >= estimated_tokens([message])
    assert most_tokens([message, message]) == 2 * first
    message.content = "x" * 3000  # a middleware that edits in place
    assert most_tokens([message]) > first
    assert most_tokens([message]) >= estimated_tokens([message])


def test_a_tool_call_counts() -> None:
    step = AIMessage("", tool_calls=[{"name": "f", "args": {"q": "y" * 90}, "id": "c"}])
    assert most_tokens([step]) >= estimated_tokens([step]) > estimated_tokens([AIMessage("")])


# what a parsed tool call's arguments are made of: JSON's own values, any Unicode text
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    text=st.text(),
    args=st.dictionaries(st.text(min_size=1), JSON_VALUES, max_size=4),
    name=st.text(min_size=1),
)
def test_the_bound_is_never_below_the_estimate(text: str, args: dict, name: str) -> None:
    step = AIMessage(text, tool_calls=[{"name": name, "args": args, "id": "c1"}])
    assert most_tokens([step]) >= estimated_tokens([step])


def test_old_results_are_cleared_first_and_every_call_stays() -> None:
    messages = run(1, 12)
    budget = 6000
    kept = fitted(messages, budget, "q1")
    assert estimated_tokens(messages) > budget >= estimated_tokens(kept)
    assert [x.id for x in kept] == [x.id for x in messages]  # nothing left out, only cleared
    assert calls_in(kept) == calls_in(messages)
    results = [x for x in kept if isinstance(x, ToolMessage)]
    assert results[0].content == CLEARED and results[-KEEP_RESULTS:] == messages[-5::2]
    assert all(x.content == RESULT for x in messages if isinstance(x, ToolMessage))  # no edit


def test_earlier_turns_leave_before_any_call_of_this_run() -> None:
    earlier = run(1, 40)
    messages = [*earlier, AIMessage("done", id="answer1"), *run(2, 30)]
    kept = fitted(messages, 3000, "q2")
    assert estimated_tokens(kept) <= 3000
    assert calls_in(kept) == [{"turn": 2, "index": i} for i in range(30)]  # turn 1's went
    assert kept[0].id == "q2" and not any(is_agent_note(x) for x in kept)
    roomy = fitted(messages, 4000, "q2")  # room for the end of turn 1, from its question on
    assert roomy[0].type == "human" and calls_in(roomy)[-30:] == calls_in(kept)


def test_a_policy_request_after_the_run_is_not_taken_for_its_question() -> None:
    """WrapUp appends a plain HumanMessage after the run: the run still starts at its
    question (`run.question_id`), so none of its calls is taken for an earlier turn."""
    messages = [*run(1, 30), HumanMessage("You have used all steps: answer now.", id="wrap")]
    kept = fitted(messages, 1500, "q1")
    shown = "\n".join(x.text for x in kept) + str(calls_in(kept))
    assert all(f"'index': {i}}}" in shown or f'"index": {i}}}' in shown for i in range(30))
    assert kept[-1].id == "wrap" and estimated_tokens(kept) <= 1500


def test_calls_that_alone_outgrow_the_budget_are_listed_in_one_note() -> None:
    messages = run(1, 60, result="short")
    budget = 1200
    assert estimated_tokens(messages) > budget
    kept = fitted(messages, budget, "q1")
    assert estimated_tokens(kept) <= budget
    assert kept[0].id == "q1" and is_agent_note(kept[1]) and kept[1].text.startswith(CONDENSED)
    listed = kept[1].text
    shown = [a["index"] for a in calls_in(kept)]
    for i in range(60):  # each call is listed or kept whole, the newest kept whole
        assert f'"index": {i}}}' in listed or i in shown
    assert kept[-2:] == messages[-2:]


def test_when_even_the_list_does_not_fit_nothing_is_sent() -> None:
    """No call of the run is left out of sight: when even the note listing them cannot fit,
    there is no request (the policy ends the run with a sentence saying why)."""
    messages = run(1, 200, result="short")
    assert fitted(messages, 600, "q1") is None
    assert fitted(messages, 6000, "q1") is not None
