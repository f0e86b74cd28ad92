"""Bounded parsing: replies built to make the text reader superlinear read correctly, whole.

Issue 27: a 100 KB reply of escaped quotes that never close took 35-45 s (the string scanner
looked for the closing quote again from every later quote), and native replies that contain
"answer" reach the same reader. Each reply here is about 200 KB; the test asserts what the reader
makes of it, and the pytest timeout is the bound (generous: the fixed reader needs well under a
second for each; the old one needed minutes). `json_repair`, which is quadratic or worse, only
ever gets small segments (`REPAIR_LIMIT`).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from graph.protocols import native
from graph.protocols.decisions import Answer
from graph.protocols.text.blobs import REPAIR_LIMIT, REPAIR_QUOTES, balanced_end, read_value
from graph.protocols.text.reader import parse_react

SIZE = 200_000
SEARCH = {
    "name": "search",
    "parameters": {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    },
}
ESCAPED = '\\"' * (SIZE // 2)

# reply -> (kind, tool, tool_input, answer) with the search tool enabled
REPLIES = {
    "escaped quotes in a blob": (
        '{"action": "search", "action_input": "' + ESCAPED,
        ("error", None, None, None),
    ),
    "escaped quotes in an Action Input": (
        'Action: search\nAction Input: {"q": "' + ESCAPED,
        ("action", "search", {"q": '{"q": "' + ESCAPED}, None),
    ),
    "escaped quotes in a final answer": (
        'Final Answer: {"answer": "' + ESCAPED,
        ("final", None, None, '{"answer": "' + ESCAPED),
    ),
    "escaped quotes after a call": (
        '{"action": "search", "action_input": {"q": "x"}}' + ESCAPED,
        ("action", "search", {"q": "x"}, None),
    ),
    "apostrophes on one line": (
        "Final Answer: " + "don't {" * (SIZE // 7),
        ("final", None, None, ("don't {" * (SIZE // 7)).strip()),
    ),
    "quotes and braces": (
        "Final Answer: " + '{"' * (SIZE // 2),
        ("final", None, None, '{"' * (SIZE // 2)),
    ),
    "single quotes and lines": (
        "Final Answer: ok\n" + "{'\n" * (SIZE // 3),
        ("final", None, None, ("ok\n" + "{'\n" * (SIZE // 3)).strip()),
    ),
    "bare observations": (
        'Action: search\nAction Input: {"q": "x"}\n' + "Observation\n" * (SIZE // 12),
        ("action", "search", {"q": "x"}, None),
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(REPLIES))
def test_adversarial_replies_are_read_whole(name: str) -> None:
    reply, expected = REPLIES[name]
    assert len(reply) >= SIZE * 0.99
    step = parse_react(reply, [SEARCH])
    assert (step.kind, step.tool, step.tool_input, step.answer) == expected
    if step.kind == "error":
        assert step.error


@pytest.mark.timeout(60)
def test_a_native_reply_that_mentions_an_answer_is_read_in_bounded_time() -> None:
    text = 'The answer is in {"answer": "' + ESCAPED
    decision = native.decide_native(AIMessage(content=text))
    assert isinstance(decision, Answer) and decision.text == text


@pytest.mark.timeout(60)
def test_a_string_that_never_closes_is_not_looked_for_again() -> None:
    """Once a `"` string fails to close, no later quote is tried again (each try scanned to the
    end: quadratic); its quote is ignored and the brackets after it count, as before."""
    assert balanced_end('{"a": "' + '\\"}' * (SIZE // 3), 0) == len('{"a": "\\"}')
    assert balanced_end('{"a": "' + '\\"' * (SIZE // 2), 0) is None
    assert balanced_end("{'a': 'b'\n" + "don't }\n" * (SIZE // 8), 0) == len("{'a': 'b'\ndon't }")
    assert balanced_end("{" + "don't [" * (SIZE // 7), 0) is None


def test_json_repair_gets_only_small_segments() -> None:
    """A segment over the bound, or with many quotes, is not repaired: it stays unread."""
    small = "{'q': 'x', 'n': 1,"  # a missing brace: repaired
    assert read_value(small) is not None and read_value(small).value == {"q": "x", "n": 1}
    long = '{"q": "' + "x" * REPAIR_LIMIT + '", "n": 1,'
    assert read_value(long) is None
    quoted = "{" + '"a": 1, ' * (REPAIR_QUOTES // 2 + 1)
    assert len(quoted) < REPAIR_LIMIT and read_value(quoted) is None
