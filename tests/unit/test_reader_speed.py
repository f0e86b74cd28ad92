"""The reader stays linear on degenerate replies (issue 12).

The old reader was quadratic on some shapes: `<think>` repeated 40,000 times took 45 s of CPU,
`Action Input: ` followed by 40,000 `{` took 5 s. The bounds here are functional, not timed
asserts: one second per reply of 100-280 kB is a hundred times what the reader needs
(`bench/parser_compare.py --speed` gives the figures), and far below what any quadratic pass
over such a reply costs, so a regression fails and a loaded machine does not. The cyclic
collector is paused while a reply is read: late in a full suite a collection of the whole
suite's heap costs about a second of CPU on its own (seen once in CI: 1.01 s for a reply the
reader takes 13 ms over), which is the suite's cost, not the reader's.
"""

from __future__ import annotations

import gc
import time

import pytest

from graph.protocols.text.reader import MAX_REPLY, clean_reply, parse_react

N = 100_000
SEARCH = {
    "name": "search",
    "parameters": {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    },
}
SHAPES = {
    "think-40k": "<think>" * 40_000,
    "think-close": "</think>" * 12_500,
    "think-blocks": "<think></think>" * 6_600,
    "think-unclosed-labels": "<think>" + "Thought: a\n" * (N // 11),
    "braces-after-input": "Action: search\nAction Input: " + "{" * 40_000,
    "braces": "{" * N,
    "brackets-after-action": "Action: " + "[" * N,
    "parens-after-call": "Action: f(" + "(" * N,
    "newlines": "\n" * N,
    "thought-lines": "Thought: x\n" * (N // 11),
    "action-lines": "Action: x\n" * (N // 10),
    "empty-actions": "Action:\n" * (N // 8),
    "observation-lines": "Observation: x\n" * (N // 15),
    "fence-lines": "```\n" * (N // 4),
    "answer-fences-label": "Final Answer: x\n" + "```\n" * (N // 4) + "Action: y",
    "fences-and-actions": "```\nAction: x\n" * (N // 14),
    "backticks": "`" * N,
    "quotes": '"' * N,
    "colons": ":" * N,
    "hashes": "#" * N,
    "stars": "*" * N,
    "dashes": "- " * (N // 2),
    "label-words": "Action Input: " * (N // 14),
    "mid-line-labels": "x Action: " * (N // 10),
    "xml-tags": "<tool>" * (N // 6),
    "blob-keys": '{"action": ' * (N // 11),
    "many-blobs": '{"a": 1} ' * (N // 9) + '{"action": "x"}',
    "chinese-labels": "思考：" * (N // 3),
    "broken-json-input": "Action: search\nAction Input: {'q': '" + "x, " * (N // 3),
    "big-json-input": 'Action: search\nAction Input: {"q": "' + "x" * N + '"}',
    "big-answer": "Final Answer: " + "word " * (N // 5),
    "name-colons": "Action: " + "a:" * (N // 2),
    "angle-brackets": "<" * N,
    "tag-starts": "<a" * (N // 2),
    "harmony-messages": "<|channel|>analysis<|message|>x<|end|>" * (N // 38),
    "harmony-open-body": "<|channel|>analysis<|message|>" + "<|x" * (N // 3),
    "harmony-stripped": "analysis" + "assistantcommentary " * (N // 20),
    "python-tag-calls": "<|python_tag|>" + "search(" * (N // 7),
    "tool-code-prints": "```tool_code\n" + "print(" * (N // 6),
    "trailing-tokens": "Final Answer: x" + " <|im_end|>\n" * (N // 12),
    "leading-tokens": "<|im_start|>assistant" * (N // 21) + "hi",
}


@pytest.mark.parametrize("text", list(SHAPES.values()), ids=list(SHAPES))
@pytest.mark.parametrize("tools", [None, [SEARCH]], ids=["no-tools", "tools"])
def test_degenerate_reply_is_read_in_linear_time(text: str, tools: list | None) -> None:
    gc.disable()  # not collected first: a whole-heap collection per case would cost seconds
    try:
        start = time.process_time()
        step = parse_react(text, tools)
        clean_reply(text)
        elapsed = time.process_time() - start
    finally:
        gc.enable()
    assert step.kind in ("action", "final", "error")
    if step.kind == "error":
        assert step.error
    assert elapsed < 1.0, f"{elapsed:.2f} s of CPU for {len(text):,} characters"


def test_the_whole_reply_is_read_not_a_prefix() -> None:
    """The decision at the end of a long reply is found: nothing is truncated for speed."""
    text = "Thought: " + "thinking " * 20_000 + '\nAction: search\nAction Input: {"q": "x"}'
    step = parse_react(text, [SEARCH])
    assert (step.kind, step.tool, step.tool_input) == ("action", "search", {"q": "x"})
    answer = "line\n" * 30_000 + "the end"
    assert parse_react("Final Answer: " + answer).answer == answer


def test_reply_over_the_limit_is_refused_with_a_clear_error() -> None:
    step = parse_react("Final Answer: " + "x" * MAX_REPLY)
    assert step.kind == "error"
    assert step.error is not None and "1,000,000 characters" in step.error
