"""The embedded model's completion prompt without the model: the tools' worked examples, which
ones a question gets, how the conversation is rendered, and the request `LocalCompletionModel`
sends (to a tiny HTTP server standing in for llama.cpp)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from graph.models.local import LocalCompletionModel, chat_model
from graph.models.local.completion import ending_records
from graph.models.local.examples import Example, example_pool, render_example, tool_affinity
from graph.models.local.prompt import conversation_turns, custom_instructions, render_prompt
from graph.models.local.selection import (
    asks_for_more_than_one_thing,
    features,
    pick_examples,
)
from graph.protocols.text.grammar import grammar_for, request_options
from graph.protocols.text.observations import observation_text, quotable_lines
from graph.protocols.text.prompts import text_system_prompt
from graph.protocols.text.reader import parse_react
from tools import TOOL_NAMES, load_tools

ALL = load_tools(TOOL_NAMES)
BY_NAME = {tool.name: tool for tool in ALL}


def _examples(tool_name: str) -> list[Example]:
    return [e for e in example_pool(ALL).examples if e.source == tool_name]


# -- the tools' examples -------------------------------------------------------------------------


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_tool_declares_examples_that_fit_its_schema(name: str) -> None:
    examples = _examples(name)
    assert examples, f"{name} declares no EXAMPLES"
    for example in examples:
        assert example.question and example.answer
        for step in example.steps:
            assert step.tool in BY_NAME
            BY_NAME[step.tool].args_schema.model_validate(step.tool_input)


def test_calculator_examples_show_what_the_calculator_returns() -> None:
    for example in _examples("calculator"):
        for step in example.steps:
            assert BY_NAME["calculator"].invoke(step.tool_input) == step.observation


def test_clock_examples_show_what_current_time_returns() -> None:
    from tools.clock import describe_time

    for example in _examples("current_time"):
        (step,) = example.steps
        stamp = step.observation.split(" ")
        zone = step.observation.split("(", 1)[1].split(",", 1)[0]
        moment = datetime.fromisoformat(f"{stamp[0]}T{stamp[1]}")
        from zoneinfo import ZoneInfo

        aware = moment.replace(tzinfo=ZoneInfo(zone))
        assert describe_time(step.tool_input.get("timezone", "UTC"), aware) == step.observation


def test_every_example_answers_as_a_quoted_answer_would() -> None:
    """The records show what the embedded model is held to: after the last observation, its
    first line that says something (quoted answers)."""
    for example in example_pool(ALL, direct=False).examples:
        if example.steps:
            quote = quotable_lines([example.steps[-1].observation])
            assert [example.answer] == quote, example.question


def test_knowledge_examples_have_the_search_results_layout() -> None:
    layout = re.compile(r"^\[\d\] [\w.\-]+\.(md|txt) — .+\n.+", re.S)
    for example in _examples("knowledge_search"):
        for step in example.steps:
            if step.tool == "knowledge_search":
                assert all(layout.match(hit) for hit in step.observation.split("\n\n"))


def test_a_two_tool_example_needs_both_tools() -> None:
    only_kb = example_pool([BY_NAME["knowledge_search"]], direct=False).examples
    both = example_pool([BY_NAME["knowledge_search"], BY_NAME["calculator"]]).examples
    assert all(e.tools == {"knowledge_search"} for e in only_kb)
    assert any(e.tools == {"knowledge_search", "calculator"} for e in both)


def test_a_custom_tool_declares_examples_in_its_metadata() -> None:
    def shout(text: str) -> str:
        return text.upper()

    tool = StructuredTool.from_function(
        shout,
        name="shout",
        description="Upper-case a text.",
        metadata={
            "examples": [
                {
                    "question": "Shout hi",
                    "input": {"text": "hi"},
                    "observation": "HI",
                    "answer": "HI",
                }
            ]
        },
    )
    pool = example_pool([tool], direct=False).examples
    assert [e.question for e in pool] == ["Shout hi"]
    assert pool[0].steps[0].tool == "shout"


def test_an_example_renders_as_the_parser_reads_it() -> None:
    example = _examples("calculator")[0]
    text = render_example(example)
    assert text.startswith(f"Question: {example.question}\nThought: ")
    step_text = text.split("\n", 1)[1].split("\nObservation:", 1)[0]
    step = parse_react(step_text)
    assert step.kind == "action" and step.tool == "calculator"
    assert step.tool_input == example.steps[0].tool_input
    assert parse_react(text.rsplit("\nThought: ", 1)[1]).answer == example.answer


def test_observations_have_no_blank_lines_and_a_bound() -> None:
    assert observation_text("1. a — A\nx\n\n2. b — B\ny  ") == "1. a — A\nx\n2. b — B\ny"
    long = observation_text("z" * 5000, limit=100)
    assert len(long) <= 102 and long.endswith("…")


def test_observations_show_one_sentence_per_line() -> None:
    """An answer is one line: a small model copying a line copies one whole sentence."""
    flattened = (
        "1. notes.md — Settings\n…stations). - `A_SETTING`: the edition, `en` by default. "
        "It is read at start.\n每周的周会在星期二。地点是三楼。"
    )
    assert observation_text(flattened).split("\n") == [
        "1. notes.md — Settings",
        "…stations).",
        "`A_SETTING`: the edition, `en` by default.",
        "It is read at start.",
        "每周的周会在星期二。",
        "地点是三楼。",
    ]
    assert observation_text("17 - 3 = 14") == "17 - 3 = 14"
    assert observation_text("2. Ada (x)\nShe wrote. Then 1.5 more.") == (
        "2. Ada (x)\nShe wrote.\nThen 1.5 more."
    )


def test_a_reply_ends_with_its_answer_line_and_the_grammar_allows_that_newline() -> None:
    from graph.models.local.completion import one_line_answer

    assert one_line_answer("Thought: x\nFinal Answer: 391\nFinal Answer: 391") == (
        "Thought: x\nFinal Answer: 391"
    )
    assert one_line_answer("Thought: x\nAction: a\nAction Input: {}") == (
        "Thought: x\nAction: a\nAction Input: {}"
    )
    grammar = ending_records(grammar_for([BY_NAME["calculator"]]))
    assert grammar.splitlines()[0].startswith("root ::= (") and grammar.splitlines()[0].endswith(
        ') "\\n"?'
    )


# -- picking examples ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("What is 48 * 12?", "calculator"),
        ("What is seventy plus eleven?", "calculator"),
        ("36乘以7等于多少？", "calculator"),
        ("What time is it in Berlin?", "current_time"),
        ("What is the date today in Sydney?", "current_time"),
        ("Which database holds the orders? Search my notes.", "knowledge_search"),
        ("What is the weather in Rome?", "weather"),
        ("Who was Marie Curie?", "wikipedia"),
        ("What time is it in Paris right now?", "current_time"),  # names weigh little
        ("Which weekday is it in Lima?", "current_time"),
        ("What is half of 250?", "calculator"),
    ],
)
def test_the_closest_example_is_of_the_right_tool_and_comes_last(question: str, tool: str) -> None:
    picked = pick_examples(question, example_pool(ALL), count=4)
    assert len(picked) == 4
    assert picked[-1].source == tool, [e.question for e in picked]


def test_a_chinese_question_gets_the_chinese_example() -> None:
    picked = pick_examples("36乘以7等于多少？", example_pool(ALL), count=4)
    assert re.search(r"[\u4e00-\u9fff]", picked[-1].question)


def test_a_name_inside_a_sentence_weighs_a_quarter() -> None:
    found = features('Paris is nice. Who met Ada in Rome? "Tokyo" too')
    assert (found["paris"], found["who"], found["tokyo"]) == (1, 1, 1)  # sentence starts
    assert (found["ada"], found["rome"]) == (0.25, 0.25)


def test_the_last_two_places_go_to_the_closest_tool() -> None:
    picked = pick_examples("What time is it in Paris right now?", example_pool(ALL), count=4)
    assert [e.source for e in picked[-2:]] == ["current_time", "current_time"]
    assert len({e.source for e in picked[:-2]} - {"current_time"}) == 2  # the others vary


def test_a_tools_affinity_for_the_question_wins_it_the_last_places() -> None:
    question = "How often does the agent save its state?"  # like no notes example
    plain = pick_examples(question, example_pool(ALL), count=3)
    assert plain[-1].source != "knowledge_search"
    picked = pick_examples(question, example_pool(ALL), 3, {"knowledge_search": 0.3})
    assert [e.source for e in picked[-2:]] == ["knowledge_search", "knowledge_search"]


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("how often does the agent save its state?", "knowledge_search"),
        ("Can I get rid of old conversation threads?", "knowledge_search"),
        ("What is seventeen times twenty-three?", "calculator"),
        ("What time is it in Tokyo?", "current_time"),
        ("What's the weather in Beijing today?", "weather"),
    ],
)
def test_the_notes_claim_the_questions_they_answer(question: str, tool: str) -> None:
    """Over the shipped sample notes, through the tools' own declarations."""
    model = LocalCompletionModel(base_url="http://127.0.0.1:9/v1")
    prompt = model.prompt_for([HumanMessage(question)], ALL)
    last_record = prompt.rsplit("\n\nQuestion: ", 2)[-2]
    assert f"\nAction: {tool}\n" in last_record


def test_a_declared_affinity_is_advice_clamped_and_never_an_error() -> None:
    def tool(judge: Any) -> StructuredTool:
        return StructuredTool.from_function(
            lambda q: q, name="t", description="T.", metadata={"affinity": judge}
        )

    assert tool_affinity(tool(lambda q: 0.4), "q") == 0.4
    assert tool_affinity(tool(lambda q: 7), "q") == 1.0
    assert tool_affinity(tool(lambda q: float("nan")), "q") == 0.0
    assert tool_affinity(tool(lambda q: 1 / 0), "q") == 0.0
    assert tool_affinity(tool("not callable"), "q") == 0.0
    assert tool_affinity(tool(lambda q: -5), "q") == -1.0  # not for this tool
    weather = next(t for t in ALL if t.name == "weather")
    assert tool_affinity(weather, "What is 2 + 2?") == 0.0  # declares none


@pytest.mark.parametrize(
    ("question", "affinity"),
    [
        ("What is 2 + 2?", 1.0),
        ("一百二十八除以八是多少", 1.0),
        ("How many servers do we run? Multiply that by 4.", 0.0),
        ("In a ReAct round, what exactly does an Action consist of?", -1.0),
        ("What is pi times e?", 0.0),
        ("Multiply the result by itself.", 0.0),
        ("把它翻倍", 0.0),
        ("只有我一个人在一台电脑上用，检查点存在哪里比较合适？", -1.0),
    ],
)
def test_the_calculator_claims_arithmetic_and_leaves_questions_without_numbers(
    question: str, affinity: float
) -> None:
    calculator = next(t for t in ALL if t.name == "calculator")
    assert tool_affinity(calculator, question) == affinity
    model = LocalCompletionModel(base_url="http://127.0.0.1:9/v1")
    shown = "\nAction: calculator\n" in model.prompt_for([HumanMessage(question)], ALL)
    assert shown == (affinity >= 0)


@pytest.mark.parametrize(
    ("question", "several"),
    [
        ("Compute 17 * 23, then subtract 91 from the result.", True),
        ("What year is it in UTC? Multiply that year by 2.", True),
        ("先算17乘23，再减去91。", True),
        ("Where can checkpoints be kept, according to my notes?", False),
        ("What is 7.5 * 4?", False),
        ("I have 12 boxes with 8 apples each. How many apples?", False),
    ],
)
def test_only_a_question_of_several_requests_sees_records_of_several_steps(
    question: str, several: bool
) -> None:
    assert asks_for_more_than_one_thing(question) is several
    picked = pick_examples(question, example_pool(ALL), count=4)
    if not several:
        assert all(len(e.steps) < 2 for e in picked)


def test_no_tool_has_more_than_two_of_the_picked_examples() -> None:
    for question in ("What is 2 + 2?", "What time is it?", "Search my notes for servers"):
        picked = pick_examples(question, example_pool(ALL), count=4)
        sources = [e.source for e in picked]
        assert max(sources.count(s) for s in set(sources)) <= 2


def test_a_tool_that_steps_aside_is_never_shown_even_in_a_small_pool() -> None:
    pool = example_pool(ALL)
    everything = len(pool.examples)
    kept = pick_examples("What is 2 + 2?", pool, count=everything, affinity={"calculator": -1.0})
    assert kept and all(e.source != "calculator" for e in kept)
    only = example_pool([BY_NAME["calculator"]], direct=False)
    assert pick_examples("hi", only, count=10, affinity={"calculator": -1.0}) == list(only.examples)


def test_a_small_pool_is_shown_whole() -> None:
    pool = example_pool([BY_NAME["calculator"]], direct=False)
    assert len(pick_examples("anything", pool, count=10)) == len(pool)


# -- the conversation ----------------------------------------------------------------------------

QUESTION = "What is 17 * 23, minus 91?"


def _standard() -> list[Any]:
    call = {"id": "call_1", "name": "calculator", "args": {"expression": "17 * 23"}}
    return [
        SystemMessage(text_system_prompt(ALL)),
        HumanMessage(QUESTION),
        AIMessage("I need to multiply first.", tool_calls=[call]),
        ToolMessage("391", tool_call_id="call_1"),
        HumanMessage("Your reply could not be used.", id="do-not-render-1"),
    ]


def _older() -> list[Any]:
    return [
        SystemMessage(text_system_prompt(ALL)),
        HumanMessage(QUESTION),
        AIMessage(
            "Thought: I need to multiply first.\nAction: calculator\n"
            'Action Input: {"expression": "17 * 23"}'
        ),
        HumanMessage("Observation: 391"),
    ]


@pytest.mark.parametrize("messages", [_standard(), _older()], ids=["standard", "text"])
def test_both_forms_render_the_same_record(messages: list[Any]) -> None:
    prompt = render_prompt(messages, ALL, [])
    assert prompt.endswith(
        f"Question: {QUESTION}\nThought: I need to multiply first.\nAction: calculator\n"
        'Action Input: {"expression": "17 * 23"}\nObservation: 391\n'
    )
    assert "could not be used" not in prompt  # the agent's correction is not rendered
    assert "You are a careful assistant" not in prompt  # the default instructions neither


def test_an_earlier_question_and_its_answer_stay_in_the_record() -> None:
    messages = [
        HumanMessage("Hi"),
        AIMessage("Hello! How can I help?"),
        HumanMessage("What is 2 + 2?"),
    ]
    turns = conversation_turns(messages)
    assert [t.question for t in turns] == ["Hi", "What is 2 + 2?"]
    prompt = render_prompt(messages, [], [])
    assert (
        "Question: Hi\nThought: I have the answer.\nFinal Answer: Hello! How can I help?" in prompt
    )
    assert prompt.endswith("Question: What is 2 + 2?\n")


def test_custom_instructions_are_kept_and_the_default_is_not() -> None:
    assert custom_instructions([SystemMessage(text_system_prompt(ALL))]) == ""
    custom = [SystemMessage(text_system_prompt(ALL, "Always answer in French."))]
    assert custom_instructions(custom) == "Always answer in French."
    assert render_prompt([*custom, HumanMessage("Hi")], ALL, []).startswith(
        "Always answer in French.\nTools:\n- calculator: "
    )


def test_the_prompt_shows_the_picked_examples_before_the_question() -> None:
    model = chat_model("http://127.0.0.1:9/v1", examples="pick", example_count=3)
    prompt = model.prompt_for([HumanMessage("What is 48 * 12?")], ALL)
    records = prompt.split("\n\n")
    assert records[0].startswith("Tools:\n")
    assert len(records) == 1 + 3 + 1
    assert records[-1] == "Question: What is 48 * 12?\n"
    assert records[-2].startswith("Question: ") and "Action: calculator" in records[-2]


def test_a_long_prompt_drops_examples_not_the_question() -> None:
    model = chat_model("http://127.0.0.1:9/v1", examples="all", prompt_chars=1500)
    prompt = model.prompt_for([HumanMessage("What is 48 * 12?")], ALL)
    assert prompt.count("Question: ") < len(example_pool(ALL)) + 1
    assert prompt.endswith("Question: What is 48 * 12?\n")


# -- the request ---------------------------------------------------------------------------------


class _FakeLlama(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, dict]]] = []
    reply = 'Thought: I need to multiply.\nAction: calculator\nAction Input: {"expression": "1"}'
    queued: ClassVar[list[str]] = []  # replies to give first, one per request

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.startswith("/v1/"):
            self._send(404, {"detail": "Not Found"})
            return
        type(self).requests.append((self.path, body))
        reply = type(self).queued.pop(0) if type(self).queued else self.reply
        if self.path.endswith("/chat/completions"):
            choice = {"message": {"role": "assistant", "content": reply}}
        else:
            choice = {"text": reply + "\n"}
        self._send(
            200,
            {
                "model": "local",
                "choices": [{**choice, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140},
            },
        )

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        return None


@pytest.fixture
def fake_llama() -> Iterator[str]:
    _FakeLlama.requests = []
    _FakeLlama.queued = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeLlama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_agents_call_becomes_one_completion_request(fake_llama: str) -> None:
    model = chat_model(fake_llama, lazy_grammar=False)
    assert LocalCompletionModel.completion_prompt is True
    grammar = grammar_for(ALL)
    bound = model.bind_tools(ALL).bind(stop=["Observation:"], **request_options(grammar))
    reply = bound.invoke(_standard(), max_tokens=64)
    ((path, body),) = _FakeLlama.requests
    assert path == "/v1/completions"
    assert body["grammar"] == ending_records(grammar) and body["max_tokens"] == 64
    assert body["stop"] == ["Observation:"] and body["temperature"] == 0.0
    assert body["repeat_penalty"] == 1.0
    assert body["prompt"].endswith("Observation: 391\n")
    assert isinstance(reply, AIMessage) and reply.text == _FakeLlama.reply
    assert reply.usage_metadata == {"input_tokens": 120, "output_tokens": 20, "total_tokens": 140}


def test_a_reply_the_grammar_accepts_is_kept_without_asking_under_it(fake_llama: str) -> None:
    bound = chat_model(fake_llama).bind_tools(ALL).bind(stop=["\nObservation:"])
    reply = bound.invoke(_standard(), **request_options(grammar_for(ALL)))
    ((_, body),) = _FakeLlama.requests
    assert "grammar" not in body
    assert body["stop"] == ["\nObservation:", "\nQuestion:", "\n\n"]
    assert reply.text == _FakeLlama.reply
    assert reply.response_metadata["lazy_grammar"] == "accepted"


@pytest.mark.parametrize(
    "free_reply",
    [
        "Thought: I need to multiply.\nAction: calculate\nAction Input: {}",  # no such tool
        'Thought: I multiply.\nAction: calculator\nAction Input: {"expression": 12}',  # a number
        'Thought: I multiply.\nAction: calculator\nAction Input: {"expression": "1',  # cut off
        "Thought: Action: calculator",  # a label inside the thought
        "The answer is 391.",  # no record at all
    ],
)
def test_a_reply_the_grammar_refuses_is_asked_for_again_under_it(
    fake_llama: str, free_reply: str
) -> None:
    _FakeLlama.queued = [free_reply]
    grammar = grammar_for(ALL)
    bound = chat_model(fake_llama).bind_tools(ALL).bind(stop=["\nObservation:"])
    reply = bound.invoke(_standard(), **request_options(grammar))
    (_, free), (_, constrained) = _FakeLlama.requests
    assert "grammar" not in free and constrained["grammar"] == ending_records(grammar)
    assert constrained["prompt"] == free["prompt"] and constrained["stop"] == ["\nObservation:"]
    assert reply.text == _FakeLlama.reply
    assert reply.response_metadata["lazy_grammar"] == "retried"


def test_an_answer_is_judged_up_to_the_end_of_its_line(fake_llama: str) -> None:
    """Under the grammar the step would have ended with the answer's line; what a free reply
    writes after it is not the step's."""
    _FakeLlama.queued = ["Thought: I have the answer.\nFinal Answer: 391\nThought: and more"]
    bound = chat_model(fake_llama).bind_tools([])
    reply = bound.invoke(_standard(), **request_options(grammar_for([], quotes=["391"])))
    assert len(_FakeLlama.requests) == 1
    assert reply.text == "Thought: I have the answer.\nFinal Answer: 391"


def test_a_grammar_that_cannot_be_checked_here_goes_with_the_request(fake_llama: str) -> None:
    recursive = 'root ::= "Thought: " item\nitem ::= "x" item?\n'
    chat_model(fake_llama).invoke([HumanMessage("Hi")], **request_options(recursive))
    ((_, body),) = _FakeLlama.requests
    assert body["grammar"] == ending_records(recursive)


def test_without_a_grammar_a_record_boundary_stops_the_reply(fake_llama: str) -> None:
    chat_model(fake_llama).bind(stop=["Observation:"]).invoke([HumanMessage("Hi")])
    ((_, body),) = _FakeLlama.requests
    assert "grammar" not in body
    assert body["stop"] == ["Observation:", "\nQuestion:"]


def test_with_no_tools_bound_the_last_tools_examples_stay(fake_llama: str) -> None:
    model = chat_model(fake_llama, lazy_grammar=False)
    model.bind_tools(ALL).invoke([HumanMessage("What is 48 * 12?")])
    model.bind_tools([]).bind(**request_options(grammar_for([]))).invoke(
        [HumanMessage("What is 48 * 12?")]
    )
    first, second = (body["prompt"] for _, body in _FakeLlama.requests)
    assert first == second  # same examples: llama.cpp reuses the cached prefix
    assert "Action: calculator" in second


def test_async_and_chat_mode(fake_llama: str) -> None:
    model = chat_model(fake_llama, prompt_mode="chat")
    reply = asyncio.run(model.bind(stop=["Observation:"]).ainvoke(_standard()))
    assert reply.text == _FakeLlama.reply
    ((path, body),) = _FakeLlama.requests
    assert path == "/v1/chat/completions"
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert body["messages"][-1]["content"] == "Observation: 391"


def test_a_refused_request_has_a_status_code(fake_llama: str) -> None:
    from graph.models.local import LocalModelRequestError

    model = chat_model(fake_llama.replace("/v1", "/missing"))
    with pytest.raises(LocalModelRequestError) as info:
        model.invoke([HumanMessage("Hi")])
    assert info.value.status_code == 404


def test_an_unreachable_server_is_a_connection_error() -> None:
    model = chat_model("http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(ConnectionError):
        model.invoke([HumanMessage("Hi")])


def test_a_search_given_part_of_the_question_is_given_all_of_it(fake_llama: str) -> None:
    question = "My notes folder is not read. Which setting points at it?"
    _FakeLlama.queued = [
        "Thought: I search the notes for the question.\nAction: knowledge_search\n"
        'Action Input: {"query": "My notes folder is not read?"}'
    ]
    reply = chat_model(fake_llama).bind_tools(ALL).invoke([HumanMessage(question)])
    assert reply.text.endswith(f'Action Input: {{"query": "{question}"}}')
    assert reply.response_metadata["copy_repaired"] is True
