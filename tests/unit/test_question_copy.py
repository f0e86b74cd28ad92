"""A copy of the question that stopped short is made whole (graph/models/local/copying.py)."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool

from graph.models.local.copying import question_argument, slipped_copy, whole_question_copy
from graph.protocols.text.reader import parse_react
from tools import default_tools
from tools.calculator import question_arithmetic
from tools.clock import place_in_question
from tools.safe_eval import MAX_EXPRESSION_CHARS

TOOLS = default_tools()
QUESTION = "The note search isn't picking up my files. Which setting tells it where my folder is?"


def _search(query: str) -> str:
    payload = json.dumps({"query": query}, ensure_ascii=False)
    head = "Thought: I search the notes for the question.\nAction: knowledge_search"
    return f"{head}\nAction Input: {payload}"


@pytest.mark.parametrize(
    "copied",
    [
        "The note search isn't picking up my files?",  # the first sentence, its end changed
        "Which setting tells it where my folder is?",  # the second one
        "which setting tells it",  # a piece, in another case
    ],
)
def test_a_piece_of_the_question_becomes_the_whole_question(copied: str) -> None:
    step = parse_react(whole_question_copy(_search(copied), QUESTION, TOOLS), TOOLS)
    assert (step.kind, step.tool, step.tool_input) == (
        "action",
        "knowledge_search",
        {"query": QUESTION},
    )
    assert step.thought == "I search the notes for the question."


@pytest.mark.parametrize(
    "reply",
    [
        _search(QUESTION),  # already whole
        _search(QUESTION.rstrip("?")),  # whole but for its last mark
        _search("notes folder setting"),  # the model's own words: its choice
        _search("笔记 文件夹"),
        'Thought: I calculate.\nAction: calculator\nAction Input: {"expression": "2 + 2"}',
        "Thought: I have the answer.\nFinal Answer: my files",
        "no record at all",
    ],
)
def test_anything_else_is_left_as_written(reply: str) -> None:
    assert whole_question_copy(reply, QUESTION, TOOLS) == reply


def test_a_question_longer_than_a_tool_argument_is_not_copied() -> None:
    long_question = "Which setting? " + "word " * 60
    reply = _search("Which setting?")
    assert whole_question_copy(reply, long_question, TOOLS) == reply


def test_a_tool_declares_its_question_argument() -> None:
    knowledge = next(t for t in TOOLS if t.name == "knowledge_search")
    calculator = next(t for t in TOOLS if t.name == "calculator")
    assert question_argument(knowledge) == "query" and question_argument(calculator) is None
    custom = StructuredTool.from_function(
        lambda text: text,
        name="lookup",
        description="Look up.",
        metadata={"question_argument": "text"},
    )
    reply = 'Thought: I look it up.\nAction: lookup\nAction Input: {"text": "first part"}'
    completed = whole_question_copy(reply, "first part. second part", [custom])
    assert parse_react(completed, [custom]).tool_input == {"text": "first part. second part"}


@pytest.mark.parametrize(
    ("written", "question", "meant"),
    [
        ("eight times seven", "What is eighteen times seven?", "eighteen times seven"),
        ("15+9*3", "计算 (15+9)*3", "(15+9)*3"),
        ("Sao Paulo", "What time is it in São Paulo now?", "São Paulo"),
        ("17 * 23", "What is 17 * 23?", None),  # exact: kept
        ("Asia/Tokyo", "What time is it in Tokyo?", None),  # its own words: kept
        ("25 加 四十五", "两百加四十五等于多少？", None),  # too far from any piece
        ("2 * 12", "What is twice 12?", None),
    ],
)
def test_a_copy_a_character_or_two_off_is_the_piece_it_copied(
    written: str, question: str, meant: str | None
) -> None:
    assert slipped_copy(written, question) == meant


def test_a_slipped_copy_is_repaired_in_the_step() -> None:
    reply = 'Thought: I calculate.\nAction: calculator\nAction Input: {"expression": "15+9*3"}'
    question = "The box holds (15+9)*3 apples, how many is that?"  # not arithmetic throughout
    step = parse_react(whole_question_copy(reply, question, TOOLS), TOOLS)
    assert step.tool_input == {"expression": "(15+9)*3"}
    knowledge = 'Action: knowledge_search\nAction Input: {"query": "eight times seven"}'
    assert whole_question_copy(knowledge, "What is eighteen times seven?", TOOLS) == knowledge


@pytest.mark.parametrize(
    ("written", "question", "meant"),
    [
        ("(45 + 55)", "(45 + 55) * 12 / 8 = ?", "(45 + 55) * 12 / 8"),  # a part
        ("to the power of four", "what is seven to the power of four", "7 ** 4"),
        ("108 / 8", "一百二十八除以八是多少", "128 / 8"),  # translated badly
        ("twenty-one times 21", "nineteen times twenty-one?", "19 * 21"),
        ("fifty divided by eight", "What is two hundred fifty divided by eight?", "250 / 8"),
        ("25 * 100", "25的平方减去100是多少？", "25 ** 2 - 100"),
    ],
)
def test_a_question_that_is_arithmetic_is_the_expression(
    written: str, question: str, meant: str
) -> None:
    reply = f'Action: calculator\nAction Input: {{"expression": "{written}"}}'
    step = parse_react(whole_question_copy(reply, question, TOOLS), TOOLS)
    assert step.tool_input == {"expression": meant}


@pytest.mark.parametrize(
    ("written", "question"),
    [
        ("17*23", "What is 17 * 23?"),  # the same arithmetic: kept as written
        ("234 / 6", "we're splitting a $234 bill between 6 people, how much does each pay?"),
        ("3 * 4", "How many servers do we run according to my notes? Multiply that by 4."),
        ("42 + 1", "What is 42?"),  # no operation in the question: the model's own arithmetic
    ],
)
def test_a_question_that_is_not_arithmetic_leaves_the_expression(
    written: str, question: str
) -> None:
    reply = f'Action: calculator\nAction Input: {{"expression": "{written}"}}'
    assert whole_question_copy(reply, question, TOOLS) == reply


def test_a_question_longer_than_an_expression_may_be_is_not_read_as_one() -> None:
    """The words would translate ("please" is noise), but a question past the calculator's
    own bound is not arithmetic from end to end; reading it would only cost time."""
    long = "please " * 80 + "what is 2 plus 2"
    assert len(long) > MAX_EXPRESSION_CHARS
    assert question_arithmetic(long) is None
    assert question_arithmetic(long[-16:]) == "2 + 2"


def test_a_tool_declares_how_it_reads_a_question() -> None:
    def failing(question: str) -> str:
        raise RuntimeError("broken reader")

    def upper(question: str) -> str:
        return question.upper()

    def tool(reader: object) -> StructuredTool:
        return StructuredTool.from_function(
            lambda code: code,
            name="lookup",
            description="Look up.",
            metadata={"copied_argument": "code", "argument_from_question": reader},
        )

    reply = 'Action: lookup\nAction Input: {"code": "ab"}'
    assert parse_react(
        whole_question_copy(reply, "abc", [tool(upper)]), [tool(upper)]
    ).tool_input == {"code": "ABC"}
    assert whole_question_copy(reply, "abc", [tool(failing)]) == reply  # a broken reader: kept


@pytest.mark.parametrize(
    ("written", "question", "meant"),
    [
        ("South America", "开罗今天星期几？", "Africa/Cairo"),  # translated wrongly
        ("York", "what time is it in New York right now?", "America/New_York"),
        ("Tokyo", "What time is it in Tokyo?", "Asia/Tokyo"),  # the same zone, named fully
    ],
)
def test_a_question_that_names_one_place_is_the_clock_s_zone(
    written: str, question: str, meant: str
) -> None:
    reply = f'Action: current_time\nAction Input: {{"timezone": "{written}"}}'
    step = parse_react(whole_question_copy(reply, question, TOOLS), TOOLS)
    assert step.tool_input == {"timezone": meant}


@pytest.mark.parametrize(
    "question", ["What time is it?", "现在几点？", "9 am in London is what in Tokyo?"]
)
def test_a_question_with_no_place_or_two_leaves_the_zone(question: str) -> None:
    reply = 'Action: current_time\nAction Input: {"timezone": "Europe/Berlin"}'
    assert whole_question_copy(reply, question, TOOLS) == reply


@pytest.mark.parametrize(
    "question",
    [
        "What time is it in UTC+8?",  # an offset: the model's copy of it is right
        "What time is it in Mountain View?",  # not "Mountain" time
        "What time is it in West Bengal?",  # not Australia/West
        "what time is it at the factory?",  # not the zone "Factory"
        "Tokyo比北京快几个小时？",  # two places
    ],
)
def test_a_stray_word_or_an_offset_is_no_place(question: str) -> None:
    assert place_in_question(question) is None
