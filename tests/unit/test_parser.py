"""Table-driven tests for the text ReAct parser (``graph.protocols.text.reader.parse_react``).

Written from the specification, independently of the implementation. Cases are grouped
by rule; where the specification fixes a value the exact value is asserted, and details it
leaves open (the wording of ``error`` and ``note``) are not.

Several cases re-type, as clean strings, replies quoted in the seed articles: DeepSeek-v3's
JSON blob in a ``` fence after ``Action:``, the ``Action: wikipedia: France`` / ``PAUSE``
protocol, ``Answer:`` lines, ``Thought:`` / ``Action:`` / ``Action Input:`` lines, a trailing
bare ``Observation`` line and spaces before colons (``Thought : ...``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.protocols.text.reader import ReactStep, parse_react

KINDS = {"action", "final", "error"}


# --------------------------------------------------------------------------- helpers


def act(tool: str, tool_input: dict | str, **extra: Any) -> dict[str, Any]:
    """Expected fields of an action step."""
    return {"kind": "action", "tool": tool, "tool_input": tool_input, **extra}


def fin(answer: str, **extra: Any) -> dict[str, Any]:
    """Expected fields of a final-answer step."""
    return {"kind": "final", "answer": answer, **extra}


def err(**extra: Any) -> dict[str, Any]:
    """Expected fields of an error step."""
    return {"kind": "error", **extra}


def assert_consistent(step: object) -> None:
    """The invariants every result must satisfy, whatever the input."""
    assert isinstance(step, ReactStep)
    assert step.kind in KINDS
    assert isinstance(step.thought, str)
    assert step.note is None or isinstance(step.note, str)
    if step.kind == "action":
        assert isinstance(step.tool, str) and step.tool.strip()
        assert isinstance(step.tool_input, dict | str)
        assert step.answer is None
        assert step.error is None
    elif step.kind == "final":
        assert isinstance(step.answer, str) and step.answer.strip()
        assert step.tool is None
        assert step.error is None
    else:
        assert isinstance(step.error, str) and step.error.strip()
        assert step.tool is None
        assert step.answer is None


def check(text: str, expected: dict[str, Any]) -> ReactStep:
    step = parse_react(text)
    assert_consistent(step)
    for field, want in expected.items():
        got = getattr(step, field)
        assert got == want, f"{field}: got {got!r}, want {want!r}"
        # {} == {} but also make sure a str is not returned where a dict is expected
        assert type(got) is type(want), f"{field}: got type {type(got)}, want {type(want)}"
    return step


# --------------------------------------------------------------------------- seed replies

SEED_DEEPSEEK_BEIJING = (
    "Thought: I need to get weather information for Beijing and Guangzhou. "
    "First, I will get the weather in Beijing.\n"
    "\n"
    "Action:\n"
    "```\n"
    "{\n"
    ' "action": "get_weather",\n'
    ' "action_input": {\n'
    ' "location": "北京"\n'
    " }\n"
    "}\n"
    "```"
)
SEED_DEEPSEEK_INLINE = (
    "Thought: I need to get weather information for Beijing and Guangzhou. "
    "First, I will get the weather in Beijing. "
    'Action:```{ "action": "get_weather", "action_input": { "location": "Beijing" }}```'
)
SEED_DEEPSEEK_TRAILING_OBSERVATION = (
    "Thought: I have already obtained the weather information for Beijing. "
    "Next, I will obtain the weather information for Guangzhou.\n"
    "\n"
    "Action:\n"
    "```\n"
    "{\n"
    '"action": "get_weather",\n'
    '"action_input": {\n'
    '"location": "Guangzhou"\n'
    "}\n"
    "}\n"
    "```\n"
    "Observation"
)
SEED_DEEPSEEK_SPACED_ACTION = (
    "Thought : I need to get the weather information of Beijing and Guangzhou . "
    "First, I will get the weather of Beijing .\n"
    "Action :\n"
    "```\n"
    "{\n"
    '"action" : "get_weather" ,\n'
    '"action_input" : {\n'
    '"location" : "Beijing"\n'
    "}\n"
    "}\n"
    "```"
)
SEED_DEEPSEEK_SPACED_TRAILING_OBSERVATION = (
    "Thought : Now that I have obtained the weather information for Beijing, "
    "I will obtain the weather information for Guangzhou next .\n"
    "Action :\n"
    "```\n"
    "{\n"
    '"action" : "get_weather" ,\n'
    '"action_input" : {\n'
    '"location" : "Guangzhou"\n'
    "}\n"
    "}\n"
    "```\n"
    "Observation\n"
)
DEEPSEEK_FINAL_TEXT = (
    "The weather temperature in Beijing is 23.4°C, the humidity is 43%, the wind direction "
    "is southwest, and the wind speed is 2.7m/s. The weather temperature in Guangzhou is "
    "24.2°C, the humidity is 79%, the wind direction is northeast, and the wind speed is 1.3m/s."
)
SEED_DEEPSEEK_FINAL = (
    "Thought: I have obtained the weather information of Beijing and Guangzhou. "
    "Now I can answer the user's question.\n"
    "\n"
    f"Final Answer: {DEEPSEEK_FINAL_TEXT}"
)
DEEPSEEK_SPACED_FINAL_TEXT = (
    "The weather conditions in Beijing are: temperature 23.4 ° C, humidity 43 % , southwest "
    "wind, wind speed 2.7 m /s, light breeze. The weather conditions in Guangzhou are: "
    "temperature 24.2°C, humidity 79%, northeast wind, wind speed 1.3 m/ s, light breeze ."
)
SEED_DEEPSEEK_SPACED_FINAL = (
    "Thought : I have obtained the weather information for Beijing and Guangzhou, "
    "and now I can answer users' questions .\n"
    f"Final Answer : {DEEPSEEK_SPACED_FINAL_TEXT}"
)

SEED_WIKI_FRANCE = "Thought: I should look up France on Wikipedia\nAction: wikipedia: France\nPAUSE"
SEED_WIKI_INDIA = (
    "Thought: To answer this question, I need to look up information about India's geography "
    "and its neighboring countries on Wikipedia.\n"
    "Action: wikipedia: India\n"
    "PAUSE"
)
INDIA_ANSWER = "India shares borders with China, Bhutan, Nepal, Pakistan, Bangladesh, and Myanmar."
SEED_WIKI_HALLUCINATED = (
    "Thought: The current observation still does not provide the specific information about "
    "the countries that share borders with India. I will try a more direct search to find "
    "this information.\n"
    "Action: wikipedia: Borders of India\n"
    "PAUSE\n"
    "Observation: The Republic of India shares borders with several sovereign countries; it "
    "shares land borders with China, Bhutan, Nepal, Pakistan, Bangladesh, and Myanmar\n"
    f"Answer: {INDIA_ANSWER}"
)


# --------------------------------------------------------------------------- seed cases

SEED_CASES = [
    pytest.param(
        SEED_DEEPSEEK_BEIJING,
        act(
            "get_weather",
            {"location": "北京"},
            thought=(
                "I need to get weather information for Beijing and Guangzhou. "
                "First, I will get the weather in Beijing."
            ),
        ),
        id="seed-deepseek-fenced-blob-after-action",
    ),
    pytest.param(
        SEED_DEEPSEEK_INLINE,
        act(
            "get_weather",
            {"location": "Beijing"},
            thought=(
                "I need to get weather information for Beijing and Guangzhou. "
                "First, I will get the weather in Beijing."
            ),
        ),
        id="seed-deepseek-inline-thought-action-fence",
    ),
    pytest.param(
        SEED_DEEPSEEK_TRAILING_OBSERVATION,
        act("get_weather", {"location": "Guangzhou"}),
        id="seed-deepseek-trailing-bare-observation",
    ),
    pytest.param(
        SEED_DEEPSEEK_SPACED_ACTION,
        act(
            "get_weather",
            {"location": "Beijing"},
            thought=(
                "I need to get the weather information of Beijing and Guangzhou . "
                "First, I will get the weather of Beijing ."
            ),
        ),
        id="seed-deepseek-space-before-colon-action",
    ),
    pytest.param(
        SEED_DEEPSEEK_SPACED_TRAILING_OBSERVATION,
        act(
            "get_weather",
            {"location": "Guangzhou"},
            thought=(
                "Now that I have obtained the weather information for Beijing, "
                "I will obtain the weather information for Guangzhou next ."
            ),
        ),
        id="seed-deepseek-space-before-colon-trailing-observation",
    ),
    pytest.param(
        SEED_DEEPSEEK_FINAL,
        fin(
            DEEPSEEK_FINAL_TEXT,
            thought=(
                "I have obtained the weather information of Beijing and Guangzhou. "
                "Now I can answer the user's question."
            ),
        ),
        id="seed-deepseek-final-answer",
    ),
    pytest.param(
        SEED_DEEPSEEK_SPACED_FINAL,
        fin(
            DEEPSEEK_SPACED_FINAL_TEXT,
            thought=(
                "I have obtained the weather information for Beijing and Guangzhou, "
                "and now I can answer users' questions ."
            ),
        ),
        id="seed-deepseek-final-answer-space-before-colon",
    ),
    pytest.param(
        SEED_WIKI_FRANCE,
        act("wikipedia", "France", thought="I should look up France on Wikipedia"),
        id="seed-wikipedia-france-pause",
    ),
    pytest.param(
        SEED_WIKI_INDIA,
        act(
            "wikipedia",
            "India",
            thought=(
                "To answer this question, I need to look up information about India's "
                "geography and its neighboring countries on Wikipedia."
            ),
        ),
        id="seed-wikipedia-india-pause",
    ),
    pytest.param(
        "Action: calculate: 4 * 7 / 3\nPAUSE",
        act("calculate", "4 * 7 / 3"),
        id="seed-calculate-one-line-pause",
    ),
    pytest.param(
        f"Answer: {INDIA_ANSWER}",
        fin(INDIA_ANSWER, thought=""),
        id="seed-answer-line",
    ),
    pytest.param(
        "Answer: The capital of France is Paris",
        fin("The capital of France is Paris"),
        id="seed-answer-france",
    ),
    pytest.param(
        SEED_WIKI_HALLUCINATED,
        act("wikipedia", "Borders of India"),
        id="seed-wikipedia-hallucinated-observation-and-answer",
    ),
    pytest.param(
        "Thought: 用户想知道今天的天气，我需要先获取当前位置。\n"
        "Action: get_location\n"
        "Action Input: {}",
        act(
            "get_location",
            {},
            thought="用户想知道今天的天气，我需要先获取当前位置。",
        ),
        id="seed-zh-get-location-empty-json",
    ),
    pytest.param(
        "Thought: 已经知道位置是北京，现在查询北京的天气。\n"
        "Action: get_weather\n"
        'Action Input: {"location": "北京"}',
        act(
            "get_weather",
            {"location": "北京"},
            thought="已经知道位置是北京，现在查询北京的天气。",
        ),
        id="seed-zh-get-weather-json-input",
    ),
    pytest.param(
        "Thought: 我已经得到了北京的天气信息。\nFinal Answer：北京今天晴，23.4°C",
        fin("北京今天晴，23.4°C", thought="我已经得到了北京的天气信息。"),
        id="seed-zh-final-answer-fullwidth-colon",
    ),
    pytest.param(
        "Thought: The current language of the user is: Chinese. I need to use a tool to help "
        "me answer the question.\n"
        "Action: add\n"
        'Action Input: {"a": 1, "b": 1}',
        act(
            "add",
            {"a": 1, "b": 1},
            thought=(
                "The current language of the user is: Chinese. I need to use a tool to help "
                "me answer the question."
            ),
        ),
        id="seed-llamaindex-add-action-input",
    ),
    pytest.param(
        "Thought: I can answer without using any more tools. I'll use the user's language to "
        "answer\n"
        "Answer: 1+1=2",
        fin(
            "1+1=2",
            thought=(
                "I can answer without using any more tools. I'll use the user's language to answer"
            ),
        ),
        id="seed-llamaindex-answer",
    ),
]


# --------------------------------------------------------------------------- rule 1: keywords

KEYWORD_CASES = [
    pytest.param(
        'thought: look it up\naction: search\naction input: {"q": "cats"}',
        act("search", {"q": "cats"}, thought="look it up"),
        id="kw-lowercase",
    ),
    pytest.param(
        "THOUGHT: I KNOW IT\nFINAL ANSWER: 42",
        fin("42", thought="I KNOW IT"),
        id="kw-uppercase-final",
    ),
    pytest.param(
        'Thought：我需要查询天气\nAction：get_weather\nAction Input：{"location": "北京"}',
        act("get_weather", {"location": "北京"}, thought="我需要查询天气"),
        id="kw-fullwidth-colons",
    ),
    pytest.param(
        "Thought : x\nAction : search\nAction Input : hello",
        act("search", "hello", thought="x"),
        id="kw-space-before-colon",
    ),
    pytest.param(
        "Thought ： 想一想\nFinal Answer ： 好的",
        fin("好的", thought="想一想"),
        id="kw-space-before-fullwidth-colon",
    ),
    pytest.param(
        "**Thought:** I need the weather in Beijing.\n\n"
        "**Action:** get_weather\n"
        '**Action Input:** {"location": "Beijing"}',
        act("get_weather", {"location": "Beijing"}, thought="I need the weather in Beijing."),
        id="kw-markdown-bold-colon-inside",
    ),
    pytest.param(
        "**Thought**: I need the weather.\n"
        "**Action**: get_weather\n"
        '**Action Input**: {"location": "Beijing"}',
        act("get_weather", {"location": "Beijing"}, thought="I need the weather."),
        id="kw-markdown-bold-colon-outside",
    ),
    pytest.param(
        "__Thought__: time to search\nAction: search\nAction Input: cats",
        act("search", "cats", thought="time to search"),
        id="kw-markdown-underscores",
    ),
    pytest.param(
        "### Final Answer: Paris is the capital of France.",
        fin("Paris is the capital of France."),
        id="kw-markdown-heading-final",
    ),
    pytest.param(
        "> Thought: I should search.\n- Action: search\n- Action Input: cats",
        act("search", "cats", thought="I should search."),
        id="kw-markdown-quote-and-bullet",
    ),
    pytest.param(
        "Thought: I need Beijing first. "
        'Action: ```{"action": "get_weather", "action_input": {"location": "Beijing"}}```',
        act("get_weather", {"location": "Beijing"}, thought="I need Beijing first."),
        id="kw-midline-action-fenced-blob",
    ),
    pytest.param(
        "Thought: search it. Action: search Action Input: cats",
        act("search", "cats", thought="search it."),
        id="kw-midline-action-and-action-input",
    ),
    pytest.param(
        "I have everything I need. Final Answer: 42",
        fin("42", thought="I have everything I need."),
        id="kw-midline-final-answer",
    ),
    pytest.param(
        "Thought: the Answer: is not clear yet\nAction: search\nAction Input: cats",
        act("search", "cats", thought="the Answer: is not clear yet"),
        id="kw-midline-answer-is-not-a-keyword",
    ),
    pytest.param(
        "I think the Answer: is 42, but I am not sure.",
        err(),
        id="kw-midline-answer-only-is-error",
    ),
    pytest.param(
        "Thought: I will decide the action: later, and give the final answer: soon",
        err(),
        id="kw-midline-lowercase-not-keywords",
    ),
]


# --------------------------------------------------------------------------- rule 2: <think>

THINK_CASES = [
    pytest.param(
        "<think>Maybe Final Answer: 41? No, let me use a tool.</think>\n"
        "Thought: x\nAction: search\nAction Input: cats",
        act("search", "cats", thought="x"),
        id="think-block-removed",
    ),
    pytest.param(
        "<think>first idea</think>\n<think>Final Answer: wrong</think>\nFinal Answer: right",
        fin("right"),
        id="think-several-blocks",
    ),
    pytest.param(
        "The user wants the weather. Action: fake_tool\nFinal Answer: not this\n</think>\n"
        'Thought: ok\nAction: get_weather\nAction Input: {"location": "北京"}',
        act("get_weather", {"location": "北京"}, thought="ok"),
        id="think-only-closing-tag",
    ),
    pytest.param(
        "reasoning one </think> more reasoning Final Answer: no </think>\nFinal Answer: yes",
        fin("yes"),
        id="think-up-to-last-closing-tag",
    ),
    pytest.param(
        "<think>I could answer Final Answer: 42 here</think>",
        err(),
        id="think-nothing-after-is-error",
    ),
]


# --------------------------------------------------------------------------- rule 3: cuts

CUT_CASES = [
    pytest.param(
        "Thought: I need the weather.\n"
        "Action: get_weather\n"
        'Action Input: {"location": "Beijing"}\n'
        "Observation: sunny, 23°C\n"
        "Thought: I now know the final answer\n"
        "Final Answer: It is sunny.",
        act("get_weather", {"location": "Beijing"}, thought="I need the weather."),
        id="cut-hallucinated-observation-then-final",
    ),
    pytest.param(
        "Action: search\nAction Input: cats\nObservation：猫是一种动物\nFinal Answer: 猫很可爱",
        act("search", "cats"),
        id="cut-fullwidth-observation",
    ),
    pytest.param(
        "Action: search\nAction Input: cats\nObservation",
        act("search", "cats"),
        id="cut-trailing-bare-observation-plain-input",
    ),
    pytest.param(
        "Action: search\nAction Input: cats\nPAUSE\n",
        act("search", "cats"),
        id="cut-pause-after-action-input",
    ),
    pytest.param(
        "Thought: the last Observation: was empty, retry.\nAction: search\nAction Input: cats",
        act("search", "cats", thought="the last Observation: was empty, retry."),
        id="cut-midline-observation-not-cut",
    ),
    pytest.param(
        "Final Answer:\nObservation: the answer is 42",
        err(),
        id="cut-leaves-empty-final-answer",
    ),
]


# --------------------------------------------------------------------------- rule 4: actions

ACTION_CASES = [
    # 4a: JSON blob after Action:
    pytest.param(
        'Action:\n```json\n{"action": "search", "action_input": "cats"}\n```',
        act("search", "cats"),
        id="4a-json-fence-string-input",
    ),
    pytest.param(
        'Action: {"action": "get_weather", "action_input": {"location": "Beijing"}}',
        act("get_weather", {"location": "Beijing"}),
        id="4a-bare-blob-same-line",
    ),
    pytest.param(
        'Action:\n{\n  "action": "get_weather",\n  "action_input": {"location": "上海"}\n}',
        act("get_weather", {"location": "上海"}),
        id="4a-bare-blob-following-lines",
    ),
    pytest.param(
        'Action: ```json\n{"action": "search", "action_input": {"q": "x"}}\n```',
        act("search", {"q": "x"}),
        id="4a-fence-opens-on-action-line",
    ),
    pytest.param(
        "Action:\n```\n"
        '{"action": "get_weather", "action_input": "{\\"location\\": \\"Beijing\\"}"}\n'
        "```",
        act("get_weather", {"location": "Beijing"}),
        id="4a-input-string-holding-json-object",
    ),
    pytest.param(
        'Action: {"tool": "search", "tool_input": {"q": "x"}}',
        act("search", {"q": "x"}),
        id="4a-keys-tool-tool_input",
    ),
    pytest.param(
        'Action: {"name": "search", "arguments": {"q": "x"}}',
        act("search", {"q": "x"}),
        id="4a-keys-name-arguments",
    ),
    pytest.param(
        'Action: {"tool_name": "search", "parameters": {"q": "x"}}',
        act("search", {"q": "x"}),
        id="4a-keys-tool_name-parameters",
    ),
    pytest.param(
        'Action: {"name": "search", "args": {"q": "x"}}',
        act("search", {"q": "x"}),
        id="4a-keys-name-args",
    ),
    pytest.param(
        'Action: {"action": "search", "input": "cats"}',
        act("search", "cats"),
        id="4a-keys-action-input",
    ),
    pytest.param(
        'Action:\n```json\n{"action": "get_location"}\n```',
        act("get_location", {}),
        id="4a-blob-without-input-key",
    ),
    pytest.param(
        "Sure, let me check.\n\n"
        'Action:\n```json\n{"action": "get_weather", "action_input": {"location": "北京"}}\n```\n'
        "I will wait for the observation.",
        act("get_weather", {"location": "北京"}, thought="Sure, let me check."),
        id="4a-prose-around-fenced-blob",
    ),
    # 4b: blob without Action:
    pytest.param(
        '{"action": "search", "action_input": "cats"}',
        act("search", "cats"),
        id="4b-bare-blob-no-keyword",
    ),
    pytest.param(
        '```json\n{"action": "get_weather", "action_input": {"location": "北京"}}\n```',
        act("get_weather", {"location": "北京"}),
        id="4b-fenced-blob-no-keyword",
    ),
    pytest.param(
        'I\'ll look that up.\n```\n{"action": "search", "action_input": {"q": "LangGraph"}}\n```',
        act("search", {"q": "LangGraph"}),
        id="4b-fenced-blob-after-prose",
    ),
    # 4c: blob whose action is Final Answer
    pytest.param(
        "Thought: I now know the final answer\n"
        "Action:\n"
        "```json\n"
        '{"action": "Final Answer", "action_input": "The capital of France is Paris."}\n'
        "```",
        fin("The capital of France is Paris.", thought="I now know the final answer"),
        id="4c-blob-final-answer",
    ),
    pytest.param(
        '```\n{"action": "final answer", "action_input": "北京今天晴"}\n```',
        fin("北京今天晴"),
        id="4c-blob-final-answer-lowercase-no-keyword",
    ),
    pytest.param(
        'Action: {"action": "FINAL ANSWER", "action_input": 42}',
        fin("42"),
        id="4c-blob-final-answer-number-as-string",
    ),
    # 4d: Action: name + Action Input:
    pytest.param(
        'Action: search\nAction Input: {"query": "LangGraph", "limit": 3}',
        act("search", {"query": "LangGraph", "limit": 3}),
        id="4d-json-object-input",
    ),
    pytest.param(
        "Action: search\nAction Input: weather in Paris today",
        act("search", "weather in Paris today"),
        id="4d-plain-text-input",
    ),
    pytest.param(
        'Action: get_weather\nAction Input: "Beijing"',
        act("get_weather", "Beijing"),
        id="4d-json-string-literal",
    ),
    pytest.param(
        "Action: get_weather\nAction Input: 'Beijing'",
        act("get_weather", "Beijing"),
        id="4d-single-quoted-input",
    ),
    pytest.param(
        "Action: shell\nAction Input: `ls -la`",
        act("shell", "ls -la"),
        id="4d-backticked-input",
    ),
    pytest.param(
        "Thought: 需要计算\n"
        "Action: calculator\n"
        "Action Input: {\n"
        '  "expression": "2 + 3 * 4",\n'
        '  "precision": 2\n'
        "}\n",
        act("calculator", {"expression": "2 + 3 * 4", "precision": 2}, thought="需要计算"),
        id="4d-multiline-json-input",
    ),
    pytest.param(
        'Action: get_weather\nAction Input:\n```json\n{"location": "广州"}\n```',
        act("get_weather", {"location": "广州"}),
        id="4d-fenced-json-input-next-line",
    ),
    # 4e: Action: name: input
    pytest.param(
        "Action: wikipedia: Geography of India",
        act("wikipedia", "Geography of India"),
        id="4e-name-colon-input",
    ),
    pytest.param(
        'Action: get_weather: {"location": "北京"}',
        act("get_weather", {"location": "北京"}),
        id="4e-name-colon-json-object",
    ),
    # 4f: no input at all
    pytest.param(
        "Thought: 我需要先获取当前位置。\nAction: get_location",
        act("get_location", {}, thought="我需要先获取当前位置。"),
        id="4f-no-input",
    ),
    pytest.param(
        "Action: get_time\nPAUSE",
        act("get_time", {}),
        id="4f-no-input-then-pause",
    ),
    # 4g: tool-name cleaning
    pytest.param(
        "Action: [calculator]\nAction Input: 2 + 2",
        act("calculator", "2 + 2"),
        id="4g-square-brackets",
    ),
    pytest.param(
        "Action: `calculator`\nAction Input: 2 + 2",
        act("calculator", "2 + 2"),
        id="4g-backticks",
    ),
    pytest.param(
        'Action: "calculator".\nAction Input: 2 + 2',
        act("calculator", "2 + 2"),
        id="4g-quotes-and-trailing-period",
    ),
    pytest.param(
        'Action:   get_weather  \t\nAction Input: {"location": "北京"}',
        act("get_weather", {"location": "北京"}),
        id="4g-surrounding-whitespace",
    ),
    pytest.param(
        'Thought: 我需要查询天气\nAction: [get_weather]\nAction Input: {"location": "北京"}',
        act("get_weather", {"location": "北京"}, thought="我需要查询天气"),
        id="4g-seed-template-brackets-zh",
    ),
]


# --------------------------------------------------------------------------- rule 5: repair

REPAIR_CASES = [
    pytest.param(
        "Action: search\nAction Input: {'query': 'cats'}",
        act("search", {"query": "cats"}),
        id="5-single-quotes",
    ),
    pytest.param(
        'Action: search\nAction Input: {"query": "cats", "limit": 5,}',
        act("search", {"query": "cats", "limit": 5}),
        id="5-trailing-comma",
    ),
    pytest.param(
        'Action: search\nAction Input: {query: "cats"}',
        act("search", {"query": "cats"}),
        id="5-unquoted-key",
    ),
    pytest.param(
        'Action: get_weather\nAction Input: {"location": "北京"',
        act("get_weather", {"location": "北京"}),
        id="5-missing-closing-brace",
    ),
    pytest.param(
        'Action: run\nAction Input: {"verbose": True, "dry_run": False, "limit": None}',
        act("run", {"verbose": True, "dry_run": False, "limit": None}),
        id="5-python-literals",
    ),
    pytest.param(
        "Action:\n```\n{'action': 'search', 'action_input': {'q': 'x'},}\n```",
        act("search", {"q": "x"}),
        id="5-blob-single-quotes-trailing-comma",
    ),
    pytest.param(
        'Action: {"action": "search", "action_input": {"q": "x"}',
        act("search", {"q": "x"}),
        id="5-blob-missing-closing-brace",
    ),
    pytest.param(
        'Action:\n```json\n{"action_input": {"q": "x"}}\n```',
        err(),
        id="5-blob-without-tool-name-is-error",
    ),
    pytest.param(
        'Action: {"action": "", "action_input": {"q": "x"}}',
        err(),
        id="5-blob-with-empty-tool-name-is-error",
    ),
    pytest.param(
        'Action: {"foo": 1, "bar": 2}',
        err(),
        id="5-blob-unrelated-object-is-error",
    ),
]


# --------------------------------------------------------------------------- rule 6: finals

FINAL_CASES = [
    pytest.param(
        "Final Answer: The capital of France is Paris.",
        fin("The capital of France is Paris.", thought=""),
        id="6-final-answer-only",
    ),
    pytest.param(
        "Thought: done\nFinal Answer: Line one.\nLine two.\n\n- a bullet\n",
        fin("Line one.\nLine two.\n\n- a bullet", thought="done"),
        id="6-multiline-answer",
    ),
    pytest.param(
        "Final Answer：北京今天晴，23.4°C",
        fin("北京今天晴，23.4°C"),
        id="6-chinese-fullwidth",
    ),
    pytest.param(
        "Final Answer:\n北京：晴，23.4°C\n广州：多云，24.2°C",
        fin("北京：晴，23.4°C\n广州：多云，24.2°C"),
        id="6-answer-starts-on-next-line-zh",
    ),
    pytest.param(
        "Final Answer: Use this:\n```python\nprint('hi')\n```",
        fin("Use this:\n```python\nprint('hi')\n```"),
        id="6-answer-with-code-fence",
    ),
    pytest.param(
        'Final Answer: The result is {"temp": 23.4}',
        fin('The result is {"temp": 23.4}'),
        id="6-answer-with-json-object",
    ),
    pytest.param(
        "Thought: ok\r\nFinal Answer: 42  \r\n",
        fin("42", thought="ok"),
        id="6-windows-line-endings",
    ),
    pytest.param(
        "answer: yes",
        fin("yes"),
        id="6-answer-lowercase-line-start",
    ),
    pytest.param(
        "Thought: done\nFinal Answer:   \n\n",
        err(),
        id="6-empty-final-answer",
    ),
    pytest.param(
        "Answer:",
        err(),
        id="6-empty-answer",
    ),
]


# --------------------------------------------------------------------------- rule 7: ordering

ORDER_CASES = [
    pytest.param(
        "Thought: need data\nAction: search\nAction Input: cats\nFinal Answer: cats are great",
        act("search", "cats", thought="need data"),
        id="7-action-then-final",
    ),
    pytest.param(
        'Action:\n```json\n{"action": "search", "action_input": {"q": "x"}}\n```\n'
        "Final Answer: x is y",
        act("search", {"q": "x"}),
        id="7-blob-then-final",
    ),
]


# --------------------------------------------------------------------------- rule 9: thought

THOUGHT_CASES = [
    pytest.param(
        "I should look this up.\nAction: search\nAction Input: cats",
        act("search", "cats", thought="I should look this up."),
        id="9-prose-before-action-is-thought",
    ),
    pytest.param(
        "Thought: line one\nline two\n\nAction: search\nAction Input: cats",
        act("search", "cats", thought="line one\nline two"),
        id="9-multiline-thought",
    ),
    pytest.param(
        "Action: search\nAction Input: cats",
        act("search", "cats", thought=""),
        id="9-no-thought",
    ),
    pytest.param(
        "Let me summarise.\nFinal Answer: 42",
        fin("42", thought="Let me summarise."),
        id="9-prose-before-final-is-thought",
    ),
    pytest.param(
        "Thought: I now know the final answer\nFinal Answer: 42",
        fin("42", thought="I now know the final answer"),
        id="9-thought-before-final",
    ),
]


# --------------------------------------------------------------------------- noise

NOISE_CASES = [
    pytest.param(
        "Thought: I need the weather.\r\n"
        "Action: get_weather\r\n"
        'Action Input: {"location": "北京"}\r\n',
        act("get_weather", {"location": "北京"}, thought="I need the weather."),
        id="noise-crlf-json-input",
    ),
    pytest.param(
        "Thought: search\r\nAction: search\r\nAction Input: cats  \r\n",
        act("search", "cats", thought="search"),
        id="noise-crlf-plain-input",
    ),
    pytest.param(
        "\n\n  Thought: x   \n\n\nAction:   search   \n\nAction Input:   cats   \n\n",
        act("search", "cats", thought="x"),
        id="noise-blank-lines-and-trailing-spaces",
    ),
    pytest.param(
        "Thought: I need Beijing first.\r\n\r\nAction:\r\n```json\r\n"
        '{"action": "get_weather", "action_input": {"location": "Beijing"}}\r\n```\r\n',
        act("get_weather", {"location": "Beijing"}, thought="I need Beijing first."),
        id="noise-crlf-fenced-blob",
    ),
]


# --------------------------------------------------------------------------- rule 10: errors

ERROR_CASES = [
    pytest.param("", err(), id="10-empty"),
    pytest.param("   \n\t \r\n ", err(), id="10-whitespace-only"),
    # A reply without any label is plainly an answer (issue 12, class 10): see the next group.
    pytest.param(
        "Thought: I am still thinking about it.\nMaybe I should search.",
        err(),
        id="10-thought-only",
    ),
    pytest.param('Action:\nAction Input: {"q": 1}', err(), id="10-action-without-name"),
    pytest.param("Thought: hmm\nAction:   ", err(), id="10-action-blank-name"),
    pytest.param('Action Input: {"q": "x"}', err(), id="10-action-input-without-action"),
    pytest.param("Thought: hmm\nAction Input: cats", err(), id="10-thought-and-action-input-only"),
    pytest.param("Final Answer:", err(), id="10-empty-final-answer"),
    pytest.param("Thought: done\r\nFinal Answer: \r\n", err(), id="10-empty-final-answer-crlf"),
]


# --------------------------------------------------------------------------- unlabeled replies

UNLABELED_CASES = [
    pytest.param("The answer is 42.", fin("The answer is 42.", thought=""), id="10-plain-prose"),
    pytest.param("北京今天晴，23.4°C。", fin("北京今天晴，23.4°C。"), id="10-plain-prose-zh"),
    pytest.param("Let me look that up:", err(), id="10-plain-prose-announcing-a-step"),
]


ALL_CASES = (
    SEED_CASES
    + KEYWORD_CASES
    + THINK_CASES
    + CUT_CASES
    + ACTION_CASES
    + REPAIR_CASES
    + FINAL_CASES
    + ORDER_CASES
    + THOUGHT_CASES
    + NOISE_CASES
    + ERROR_CASES
    + UNLABELED_CASES
)


@pytest.mark.parametrize(("text", "expected"), ALL_CASES)
def test_parse_react_table(text: str, expected: dict[str, Any]) -> None:
    check(text, expected)


# --------------------------------------------------------------------------- focused tests


FINAL_FIRST_CASES = [
    pytest.param(
        "Thought: I know.\nFinal Answer: 42\nAction: calculator\nAction Input: 6*7",
        "I know.",
        "42",
        id="7-final-then-action",
    ),
    pytest.param(
        "Thought: 我已经知道了\nAnswer: 北京今天晴\nAction: wikipedia: 北京",
        "我已经知道了",
        "北京今天晴",
        id="7-answer-then-action-zh",
    ),
    pytest.param(
        'Final Answer: done.\n```json\n{"action": "search", "action_input": "more"}\n```',
        "",
        "done.",
        id="7-final-then-blob",
    ),
]


@pytest.mark.parametrize(("text", "thought", "answer_start"), FINAL_FIRST_CASES)
def test_final_before_action_wins(text: str, thought: str, answer_start: str) -> None:
    """Rule 7: a final answer before an action wins. The spec makes the answer run to the
    end of the text, so only its beginning is checked here."""
    step = check(text, {"kind": "final", "thought": thought})
    assert step.answer.startswith(answer_start)


MULTI_ACTION_CASES = [
    pytest.param(
        "Thought: I need both cities.\n"
        "Action: get_weather\n"
        'Action Input: {"location": "北京"}\n'
        "Action: get_weather\n"
        'Action Input: {"location": "广州"}',
        act("get_weather", {"location": "北京"}, thought="I need both cities."),
        id="8-two-action-input-pairs",
    ),
    pytest.param(
        "Action:\n"
        '```json\n{"action": "get_weather", "action_input": {"location": "Beijing"}}\n```\n'
        "Action:\n"
        '```json\n{"action": "get_weather", "action_input": {"location": "Guangzhou"}}\n```',
        act("get_weather", {"location": "Beijing"}),
        id="8-two-fenced-blobs",
    ),
    pytest.param(
        "Thought: Look up both.\nAction: wikipedia: India\nAction: wikipedia: China\nPAUSE",
        act("wikipedia", "India", thought="Look up both."),
        id="8-two-one-line-actions",
    ),
    pytest.param(
        "Thought: first weather\n"
        "Action: get_weather\n"
        "Action Input: Beijing\n"
        "Thought: then the second\n"
        "Action: search\n"
        "Action Input: Guangzhou",
        act("get_weather", "Beijing", thought="first weather"),
        id="8-thought-action-repeated-without-observation",
    ),
]


@pytest.mark.parametrize(("text", "expected"), MULTI_ACTION_CASES)
def test_several_actions_first_used_with_note(text: str, expected: dict[str, Any]) -> None:
    """Rule 8: the first action is used and the note says the others were ignored."""
    step = check(text, expected)
    assert isinstance(step.note, str) and step.note.strip()
    assert "ignored" in step.note.lower()


def test_single_clean_action_has_no_note() -> None:
    """A note is a warning; a clean, single-action reply has nothing to warn about."""
    step = check(SEED_DEEPSEEK_BEIJING, act("get_weather", {"location": "北京"}))
    assert step.note is None


def test_hopeless_json_after_action_input_is_not_an_error() -> None:
    """Rule 5: an unrepairable input after Action Input: is kept, not turned into an error."""
    text = "Action: search\nAction Input: {{{ ]]] :::"
    step = check(text, {"kind": "action", "tool": "search"})
    if isinstance(step.tool_input, str):
        assert step.tool_input == "{{{ ]]] :::"


def test_react_step_is_frozen_dataclass() -> None:
    step = parse_react("Final Answer: 42")
    assert dataclasses.is_dataclass(step)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.kind = "error"  # type: ignore[misc]


# --------------------------------------------------------------------------- rule 11: never raises

PATHOLOGICAL = [
    pytest.param("Action: " + "{" * 5000, id="deep-open-braces-after-action"),
    pytest.param("Action: search\nAction Input: " + "[" * 5000, id="deep-brackets-input"),
    pytest.param("{" * 3000 + '"action": "x"' + "}" * 3000, id="deep-nested-blob"),
    pytest.param("\x00\x01\ufeff Action:\x00 \ud800", id="control-and-surrogate-chars"),
    pytest.param("Thought: " + "x " * 50000 + "\nAction: search", id="very-long-thought"),
    pytest.param("```" * 1000, id="many-fences"),
    pytest.param("<think>" * 500 + "</think>" * 3, id="unbalanced-think"),
    pytest.param("Observation:" * 100, id="only-observations"),
    pytest.param('Action: {"action": ["x"], "action_input": 1}', id="non-string-tool-name"),
    pytest.param('Action: {"action": null}', id="null-tool-name"),
    pytest.param('{"action": {"nested": 1}}', id="dict-tool-name-no-keyword"),
]


@pytest.mark.parametrize("text", PATHOLOGICAL)
def test_pathological_inputs_do_not_raise(text: str) -> None:
    assert_consistent(parse_react(text))


FRAGMENTS = [
    "Thought",
    "Action",
    "Action Input",
    "Final Answer",
    "Answer",
    "Observation",
    "thought",
    "ACTION",
    "final answer",
    ":",
    "：",
    " : ",
    "PAUSE",
    "```",
    "```json",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "`",
    ",",
    '"action"',
    '"action_input"',
    '"Final Answer"',
    '"name"',
    '"args"',
    "True",
    "None",
    "null",
    "<think>",
    "</think>",
    "**",
    "__",
    "### ",
    "- ",
    "> ",
    "\n",
    "\r\n",
    " ",
    "\t",
    "北京",
    "get_weather",
    "search",
    "42",
]

react_like = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    assert_consistent(parse_react(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(react_like)
def test_never_raises_on_react_like_text(text: str) -> None:
    assert_consistent(parse_react(text))
