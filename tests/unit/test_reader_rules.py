"""The reader's rules, one test each: the ambiguous situations its docstring decides, name
resolution and input shaping against the enabled tools, and the dialects of issue 12.

The corpus (test_reader_corpus.py) checks the same rules on real replies; these cases are
small on purpose, so a failure names the rule that broke.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool

from graph.protocols.text.reader import ReactStep, parse_react


def _search(query: str) -> str:
    """Search the web."""
    return query


def _calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return expression


def _clock() -> str:
    """The time now."""
    return "noon"


def _weather(city: str, days: int = 1) -> str:
    """The forecast for a city."""
    return city * days


def _sql(query: str) -> str:
    """Run a SQL query."""
    return query


TOOLS: list[BaseTool] = [
    StructuredTool.from_function(_search, name="search"),
    StructuredTool.from_function(_calculator, name="calculator"),
    StructuredTool.from_function(_clock, name="clock"),
    StructuredTool.from_function(_weather, name="get_weather"),
    StructuredTool.from_function(_sql, name="SQL query"),
]


def _call(step: ReactStep) -> tuple[str, str | None, Any]:
    return step.kind, step.tool, step.tool_input


def _answer(step: ReactStep) -> tuple[str, str | None]:
    return step.kind, step.answer


# -- the rules for ambiguous replies ---------------------------------------------------------


def test_echoed_observation_before_the_first_label_is_skipped() -> None:
    step = parse_react("Observation: 42\nThought: I know it now.\nFinal Answer: 42")
    assert _answer(step) == ("final", "42")
    assert step.thought == "I know it now."


def test_invented_observation_ends_the_reply() -> None:
    text = "Action: search\nAction Input: cats\nObservation: dogs\nFinal Answer: dogs"
    assert _call(parse_react(text, TOOLS)) == ("action", "search", {"query": "cats"})


def test_the_earlier_of_action_and_final_answer_wins() -> None:
    answer_first = "Final Answer: 4\nAction: search\nAction Input: cats"
    assert _answer(parse_react(answer_first, TOOLS)) == ("final", "4")
    action_first = "Action: search\nAction Input: cats\nFinal Answer: 4"
    assert _call(parse_react(action_first, TOOLS)) == ("action", "search", {"query": "cats"})


def test_a_bare_action_name_followed_by_a_final_answer_is_no_call() -> None:
    step = parse_react("Thought: done\nAction: search\nFinal Answer: done", TOOLS)
    assert _answer(step) == ("final", "done")


@pytest.mark.parametrize("written", ["None", "N/A", "no action", "无"])
def test_an_action_naming_no_tool_is_no_call(written: str) -> None:
    step = parse_react(f"Action: {written}\nThe answer is 4.", TOOLS)
    assert _answer(step) == ("final", "The answer is 4.")
    later = parse_react(f"Action: {written}\nFinal Answer: 4", TOOLS)
    assert _answer(later) == ("final", "4")
    alone = parse_react(f"Action: {written}", TOOLS)
    assert alone.kind == "error" and "names no tool" in (alone.error or "")


def test_an_action_without_input() -> None:
    assert _call(parse_react("Action: clock", TOOLS)) == ("action", "clock", {})
    assert _call(parse_react("Action: search")) == ("action", "search", {})
    missing = parse_react("Action: search", TOOLS)
    assert missing.kind == "error"
    assert missing.error == 'the Action Input is missing: search takes {"query": "<string>"}'


def test_several_actions_run_the_first_and_say_so() -> None:
    text = "Action: search\nAction Input: a\nAction: search\nAction Input: b\nAction: clock"
    step = parse_react(text, TOOLS)
    assert _call(step) == ("action", "search", {"query": "a"})
    assert step.note == "2 more actions were ignored: send one Action per reply."


def test_several_call_blobs_run_the_first_and_say_so() -> None:
    text = '{"action": "search", "action_input": "a"}\n{"action": "clock", "action_input": ""}'
    step = parse_react(text, TOOLS)
    assert _call(step) == ("action", "search", {"query": "a"})
    assert step.note == "1 more action was ignored: send one Action per reply."


def test_a_sentence_where_the_name_belongs_is_an_error() -> None:
    name = "Use pandas boolean indexing to filter the dataframe to the FG-40F row."
    text = f"Action: {name}\nAction Input: x"
    for tools in (TOOLS, None):
        step = parse_react(text, tools)
        assert step.kind == "error"
        assert "must be only a tool's name" in (step.error or "")


def test_a_weak_answer_label_over_a_call_blob_is_the_call() -> None:
    step = parse_react('AI: {"action": "search", "action_input": "cats"}', TOOLS)
    assert _call(step) == ("action", "search", {"query": "cats"})


def test_mid_line_labels_are_read_when_no_line_starts_with_one() -> None:
    step = parse_react("The capital is Paris. Final Answer: Paris")
    assert _answer(step) == ("final", "Paris")


@pytest.mark.parametrize(
    "text",
    ["The answer is 42.", "Paris is the capital of France.\n\nIt has 2 million people.", "巴黎。"],
)
def test_an_unlabeled_reply_is_the_answer(text: str) -> None:
    assert _answer(parse_react(text, TOOLS)) == ("final", text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Let me look that up:", "ends with a colon"),
        ("I need to use the search tool.", "says what it will do"),
        ("我需要先查一下天气。", "says what it will do"),
        ("The result of get_weather will tell us.", "names the tool 'get_weather'"),
        ("Checking with `search` is best.", "names the tool 'search'"),
        ("We have no answer: it is unclear.", "at the start of a line"),
        ("<think>The user wants the weather", "never reaches </think>"),
    ],
)
def test_an_unlabeled_reply_that_is_an_unwritten_step_is_an_error(text: str, why: str) -> None:
    step = parse_react(text, TOOLS)
    assert step.kind == "error"
    assert why in (step.error or "")


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "search",
        "Search",
        "SEARCH",
        "`search`",
        "[search]",
        '"search"',
        "search (web search)",
        "search tool",
        "functions.search",
        "sear",
        "serach",
    ],
)
def test_a_name_resolves_to_the_enabled_tool(written: str) -> None:
    step = parse_react(f"Action: {written}\nAction Input: cats", TOOLS)
    assert _call(step) == ("action", "search", {"query": "cats"})


def test_without_tools_a_name_comes_back_as_written_trimmed() -> None:
    assert parse_react("Action: Search\nAction Input: cats").tool == "Search"
    assert parse_react("Action: **`SQL query`**\nAction Input: x").tool == "SQL query"
    assert parse_react("Action: search (web search)\nAction Input: x").tool == "search"


def test_an_unknown_name_is_an_error_listing_the_tools() -> None:
    step = parse_react("Action: browse\nAction Input: cats", TOOLS)
    assert step.error == (
        "there is no tool named 'browse'; the tools are: "
        "search, calculator, clock, get_weather, SQL query"
    )


def test_tools_may_be_given_as_names() -> None:
    step = parse_react("Action: Search\nAction Input: cats", ["search", "clock"])
    assert step.tool == "search"


@pytest.mark.parametrize(
    "text",
    [
        "Action: SQL query\nAction Input: SELECT 1",
        '{"action": "SQL query", "action_input": "SELECT 1"}',
    ],
)
def test_a_name_of_several_words(text: str) -> None:
    assert _call(parse_react(text, TOOLS)) == ("action", "SQL query", {"query": "SELECT 1"})


# -- inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ('{"city": "Paris", "days": 3}', {"city": "Paris", "days": 3}),
        ("{'city': 'Paris', 'days': '3'}", {"city": "Paris", "days": 3}),
        ("city=Paris, days=3", {"city": "Paris", "days": 3}),
        ("city: Paris", {"city": "Paris"}),
        ("Paris", {"city": "Paris"}),
        ('"Paris"', {"city": "Paris"}),
        ('```json\n{"city": "Paris"}\n```', {"city": "Paris"}),
        ('get_weather(city="Paris", days=2)', {"city": "Paris", "days": 2}),
    ],
)
def test_an_input_is_shaped_to_the_schema(written: str, expected: dict[str, Any]) -> None:
    step = parse_react(f"Action: get_weather\nAction Input: {written}", TOOLS)
    assert _call(step) == ("action", "get_weather", expected)


def test_a_one_item_list_for_a_string_is_the_item() -> None:
    step = parse_react('Action: search\nAction Input: ["cats"]', TOOLS)
    assert _call(step) == ("action", "search", {"query": "cats"})


def test_a_step_written_as_json_answers() -> None:
    assert _answer(parse_react('{"thought": "known", "answer": "42"}')) == ("final", "42")
    assert _answer(parse_react('{"final_answer": "42"}')) == ("final", "42")
    data = '{"answer": "42"}'  # data, not a step: the reply is the answer as written
    assert _answer(parse_react(data)) == ("final", data)


def test_a_tool_name_alone_in_a_fence() -> None:
    text = "Action:\n```\nsearch\n```\nAction Input:\n```\ncats\n```"
    assert _call(parse_react(text, TOOLS)) == ("action", "search", {"query": "cats"})


def test_code_given_to_a_one_argument_tool_stays_code() -> None:
    text = 'Action: search\nAction Input: print("a", 1)'
    assert _call(parse_react(text, TOOLS)) == ("action", "search", {"query": 'print("a", 1)'})


def test_fenced_code_in_a_blob_input_is_kept() -> None:
    text = '```json\n{"action": "search", "action_input": "```python\\nprint(1)\\n```"}\n```'
    assert _call(parse_react(text, TOOLS)) == ("action", "search", {"query": "print(1)"})


def test_smolagents_tool_arguments_are_read() -> None:
    text = '{"name": "search", "tool_arguments": {"query": "cats"}}'
    assert _call(parse_react(text)) == ("action", "search", {"query": "cats"})


@pytest.mark.parametrize(
    "text",
    ['Action: calculator("2+2")', 'calculator({"expression": "2+2"})', "Action: calculator: 2+2"],
)
def test_call_shaped_actions(text: str) -> None:
    assert _call(parse_react(text, TOOLS)) == ("action", "calculator", {"expression": "2+2"})


# -- dialects --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Thought 1: I need to search.\nAction 1: Search[cats]\nObservation 1: ...",
        "Thought: x\nTool: search\nTool Input: cats",
        "<tool>search</tool><tool_input>cats</tool_input>",
        "思考：我需要搜索\n行动：search\n行动输入：cats",
        '想法：好\n动作：search\n动作输入：{"query": "cats"}',
        '✿FUNCTION✿: search\n✿ARGS✿: {"query": "cats"}',
        'Function: search\nArguments: {"query": "cats"}',
        "Act: search\nAct Input: cats",
        "**Action:** search\n**Action Input:** cats",
        "```\nThought: x\nAction: search\nAction Input: cats\n```",
        "<think>hmm</think>\nThought: x\nAction: search\nAction Input: cats",
        "Action - search\nAction Input - cats",
        "<|channel|>analysis<|message|>Need to search.<|end|><|start|>assistant<|channel|>"
        'commentary to=functions.search <|constrain|>json<|message|>{"query":"cats"}<|call|>',
        'analysisNeed to search.assistantcommentary to=functions.search json{"query":"cats"}',
        "```tool_code\nsearch(query='cats')\n```",
        '<|python_tag|>search.call(query="cats")',
        "考え：検索\n行動：search\n行動入力：cats",
        "생각: 검색\n행동: search\n행동 입력: cats",
        "Pensamiento: buscar\nAcción: search\nEntrada de acción: cats",
    ],
)
def test_a_dialect_action(text: str) -> None:
    assert _call(parse_react(text, TOOLS)) == ("action", "search", {"query": "cats"})


@pytest.mark.parametrize(
    "text",
    [
        "Thought 2: done\nAction 2: Finish[42]",
        "<final_answer>42</final_answer>",
        "### Final Answer\n42",
        "最终答案：42",
        "最终回答：42",
        "Final Answer - 42",
        '{"action": "Final Answer", "action_input": "42"}',
        "Thought: done\nAnswer: 42",
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final"
        "<|message|>42<|return|>",
        "analysisEasy.assistantfinal42",
        'finish(answer="42")',
        "最終回答：42",
        "최종 답변: 42",
        "Réponse finale : 42",
    ],
)
def test_a_dialect_answer(text: str) -> None:
    assert _answer(parse_react(text, TOOLS)) == ("final", "42")


def test_an_answer_keeps_its_fences_and_label_like_lines() -> None:
    blob = '{"action": "Final Answer", "action_input": "Use:\\n```python\\nprint(1)\\n```\\nDone."}'
    assert parse_react(blob).answer == "Use:\n```python\nprint(1)\n```\nDone."
    text = "Final Answer: The law.\nLegislative Action: signed in 2019\nNext Action: none"
    assert parse_react(text).answer == text.removeprefix("Final Answer: ")
