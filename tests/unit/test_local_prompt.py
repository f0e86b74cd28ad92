"""The embedded model's prompt, hints, grammars and step (graph.models.local), without a model:
a fake llama.cpp server answers the requests and records them."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from graph.messages import ARGUMENT_BY, DECIDED_BY
from graph.models.local import chat_model
from graph.models.local.builtin_hints import builtin_hints, direct_examples, hints_for
from graph.models.local.constrain import (
    arithmetic_grammar,
    arithmetic_pieces,
    choice_grammar,
    piece_grammar,
    question_numbers,
    question_pieces,
)
from graph.models.local.hints import HINTS_KEY, Example, ToolHints
from graph.models.local.prompt import conversation_turns, render_prompt
from graph.protocols.text.reader import parse_react
from tools import TOOL_NAMES, load_tools

ALL = load_tools(TOOL_NAMES)


def _lookup(order: str) -> str:
    return f"order {order}: shipped"


LOOKUP = StructuredTool.from_function(
    func=_lookup,
    name="order_status",
    description="The status of an order.",
    metadata={
        HINTS_KEY: ToolHints(
            examples=(
                Example("Where is order 42?", {"order": "42"}, "order 42: shipped", "It shipped."),
            ),
            piece_argument="order",
        )
    },
)


# -- hints and records ---------------------------------------------------------------------


def test_a_tools_own_hints_win_and_builtin_tools_have_theirs() -> None:
    assert hints_for(LOOKUP).piece_argument == "order"
    calculator = next(t for t in ALL if t.name == "calculator")
    assert hints_for(calculator) is builtin_hints()["calculator"]
    assert not getattr(calculator, "metadata", None)  # a plain LangChain tool


def test_records_put_the_choice_first_and_show_direct_answers() -> None:
    prompt = render_prompt([HumanMessage("How tall is it?")], ALL, direct_examples())
    assert (
        "Question: What is 12 * 9?\nTool: calculator\nInput: 12 * 9\nResult: 108\nAnswer: 108"
        in prompt
    )
    assert "\nTool: none\nAnswer: Bonjour." in prompt
    assert prompt.endswith("\n\nQuestion: How tall is it?\n")


def test_the_records_are_the_same_for_every_question() -> None:
    """The prompt's beginning does not depend on the question: llama.cpp reuses it."""
    first = render_prompt([HumanMessage("one?")], ALL, direct_examples())
    second = render_prompt([HumanMessage("another question?")], ALL, direct_examples())
    assert first.removesuffix("Question: one?\n") == second.removesuffix(
        "Question: another question?\n"
    )


def test_no_tools_records_stand_all_last() -> None:
    prompt = render_prompt([HumanMessage("q")], ALL, direct_examples())
    tools = re.findall(r"^Tool: (\S+)", prompt, re.MULTILINE)
    assert len(set(tools[-3:])) == 3  # the last records are of different tools (or none)


def test_an_example_whose_tools_are_not_all_offered_is_left_out() -> None:
    knowledge = [t for t in ALL if t.name == "knowledge_search"]
    prompt = render_prompt([HumanMessage("q")], knowledge, ())
    assert "Tool: calculator" not in prompt and "Tool: knowledge_search" in prompt


def test_a_user_tools_hints_make_its_records() -> None:
    prompt = render_prompt([HumanMessage("q")], [LOOKUP], ())
    assert "Question: Where is order 42?\nTool: order_status\nInput: 42\n" in prompt


def test_the_conversation_renders_as_records() -> None:
    messages = [
        SystemMessage("You can use these tools: ..."),
        HumanMessage("Where is order 7?"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "order_status", "args": {"order": "7"}}]),
        ToolMessage("order 7: shipped", tool_call_id="c1"),
    ]
    prompt = render_prompt(messages, [LOOKUP], ())
    assert prompt.endswith(
        "Question: Where is order 7?\nTool: order_status\nInput: 7\nResult: order 7: shipped\n"
    )
    ((turn,),) = [conversation_turns(messages)]
    assert turn.steps[0].observation == "order 7: shipped" and not turn.steps[0].failed


# -- grammars ------------------------------------------------------------------------------


def test_numbers_are_read_in_digits_words_and_chinese() -> None:
    assert question_numbers("Add 1,250 and eleven") == ("1250", "11")
    assert set(question_numbers("三十六乘以十一")) == {"36", "11"}


def test_the_arithmetic_grammar_allows_only_the_questions_numbers_and_an_operation() -> None:
    grammar = arithmetic_grammar("Share 84 sweets among 6 children.")
    assert '"84"' in grammar and '"6"' in grammar and '"85"' not in grammar
    assert 'expression ::= term (" " op " " term){1,6}' in grammar  # a lone number is not
    assert '"84 sweets among 6"' in grammar  # or words of the question the calculator reads


def test_the_question_s_arithmetic_is_copied_once_when_the_calculator_reads_it() -> None:
    """With the calculator's hints, an argument is the question's own words when they state
    its arithmetic, once: not "sixty divided by three" inside "two hundred sixty divided by
    three" (part of the question), not "What is 38 * 12" around "38 * 12" (the same sum with
    more words); never a piece the calculator would refuse ("40 miles") nor one that
    calculates nothing ("35 what is"); brackets and thousands stay."""
    from graph.models.local.builtin_hints import hints_for
    from tools.calculator import calculator

    reads = hints_for(calculator).reads
    assert arithmetic_pieces("We drove 40 miles; what is 15 percent of 80?", reads) == (
        "15 percent of 80",
    )
    assert arithmetic_pieces("Is two hundred sixty divided by three", reads) == (
        "two hundred sixty divided by three",
    )
    assert arithmetic_pieces("What is 38 * 12?", reads) == ("38 * 12",)
    assert arithmetic_pieces("I am 35; what is 12 * 9?", reads) == ("12 * 9",)
    assert arithmetic_pieces("so 3 * (2.4 + 1.1) is?", reads) == ("3 * (2.4 + 1.1)",)
    assert arithmetic_pieces("Take 6,000 divided by 8", reads) == ("6000 divided by 8",)
    # a piece inside brackets is part of the whole expression, not a reading of its own
    assert arithmetic_pieces("((7 - 2.5) * 4) / 1.5 = ?", reads) == ("((7 - 2.5) * 4) / 1.5",)
    grammar = arithmetic_grammar("Share 84 sweets among 6 children.", reads)
    assert grammar.startswith("root ::= expression")  # no piece reads: an expression


def test_pieces_are_runs_of_the_questions_words() -> None:
    pieces = question_pieces("What time is it in Rio de Janeiro?")
    assert "Rio de Janeiro" in pieces and "Janeiro" in pieces
    assert "东京" in question_pieces("东京几点？")


def test_a_piece_the_tool_accepts_is_all_the_grammar_offers() -> None:
    grammar = piece_grammar("Is order 99 late?", accepts=lambda p: p.isdigit())
    assert grammar == 'root ::= "99"\n'
    assert '"Is"' in piece_grammar("Is order 99 late?", accepts=lambda p: False)
    assert (
        piece_grammar("Is it late?", accepts=lambda p: False, default="UTC") == 'root ::= "UTC"\n'
    )


def test_the_clock_is_offered_whole_places_and_zones_only() -> None:
    """ "York" is inside "New York", and "Asia/Tokyo today" is no zone: neither is offered."""
    from graph.models.local.builtin_hints import hints_for
    from tools.clock import current_time

    accepts = hints_for(current_time).accepts
    assert piece_grammar("Is it late in New York?", accepts, "UTC") == 'root ::= "New York"\n'
    assert piece_grammar("time in Asia/Tokyo today", accepts, "UTC") == 'root ::= "Asia/Tokyo"\n'
    assert piece_grammar("现在纽约几点？", accepts, "UTC") == 'root ::= "纽约"\n'
    # a sentence's first word has its capital from the sentence: Tell is a town, "tell" is not
    assert piece_grammar("Tell me what time it is in Chile.", accepts, "UTC") == (
        'root ::= "Chile"\n'
    )
    assert piece_grammar("Paris: is it late there?", accepts, "UTC") == 'root ::= "Paris"\n'


def test_the_choice_is_a_tool_or_none() -> None:
    assert choice_grammar(["a", "b"]) == 'root ::= "a" | "b" | "none"\n'
    assert '"Answer:"' in choice_grammar(["a"], after_result=True)


# -- the step, against a fake server -------------------------------------------------------


class _FakeLlama(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []
    queued: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        text = type(self).queued.pop(0) if type(self).queued else ""
        payload = {
            "choices": [{"text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        return None


@pytest.fixture
def fake_llama() -> Iterator[str]:
    _FakeLlama.requests, _FakeLlama.queued = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeLlama)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_model_chooses_the_tool_then_writes_its_input(fake_llama: str) -> None:
    _FakeLlama.queued = [" calculator", " 84 / 6\n"]
    reply = chat_model(fake_llama).bind_tools(ALL).invoke([HumanMessage("Share 84 among 6.")])
    choice, argument = _FakeLlama.requests
    assert choice["prompt"].endswith("Question: Share 84 among 6.\nTool:")
    assert '"calculator"' in choice["grammar"] and '"none"' in choice["grammar"]
    assert argument["prompt"].endswith("Tool: calculator\nInput:") and '"84"' in argument["grammar"]
    step = parse_react(reply.text)
    assert step.kind == "action" and step.tool == "calculator"
    assert step.tool_input == {"expression": "84 / 6"}
    assert reply.response_metadata[DECIDED_BY] == "model"
    assert reply.response_metadata[ARGUMENT_BY] == "model"
    assert reply.usage_metadata["input_tokens"] == 200


def test_none_gets_the_models_own_short_answer(fake_llama: str) -> None:
    _FakeLlama.queued = [" none", " Lima.\n"]
    reply = chat_model(fake_llama).bind_tools(ALL).invoke([HumanMessage("Capital of Peru?")])
    answer = _FakeLlama.requests[1]
    assert answer["prompt"].endswith("Tool: none\nAnswer:") and "grammar" not in answer
    assert parse_react(reply.text).answer == "Lima."
    assert reply.response_metadata[DECIDED_BY] == "model"


def test_a_search_gets_the_whole_question_from_code(fake_llama: str) -> None:
    _FakeLlama.queued = [" knowledge_search"]
    question = "Which port does the proxy use? It moved."
    reply = asyncio.run(chat_model(fake_llama).bind_tools(ALL).ainvoke([HumanMessage(question)]))
    assert len(_FakeLlama.requests) == 1
    assert parse_react(reply.text).tool_input == {"query": question}
    assert reply.response_metadata[ARGUMENT_BY] == "code"


def test_arithmetic_the_question_states_in_one_piece_is_copied_by_code(fake_llama: str) -> None:
    """The model chooses the calculator; its input is the question's own words, the only
    piece the calculator reads, so no request asks for it and the step says code wrote it."""
    _FakeLlama.queued = [" calculator"]
    question = "Could you tell me what 3 to the power of 7 is?"
    reply = chat_model(fake_llama).bind_tools(ALL).invoke([HumanMessage(question)])
    assert len(_FakeLlama.requests) == 1
    (argument,) = parse_react(reply.text).tool_input.values()
    assert "3 to the power of 7" in argument
    assert reply.response_metadata[DECIDED_BY] == "model"
    assert reply.response_metadata[ARGUMENT_BY] == "code"


def test_the_records_are_evaluated_ahead_of_the_first_question(fake_llama: str) -> None:
    """A new server's cache is empty: the worked records go to it first, so the first
    question only adds its own lines to what was evaluated."""
    chat_model(fake_llama, ALL).warm()
    (sent,) = _FakeLlama.requests
    assert sent["max_tokens"] == 1 and "Question: What is 12 * 9?" in sent["prompt"]
    question = chat_model(fake_llama, ALL).prompt_for([HumanMessage("What is 6 * 7?")], None)
    assert question.startswith(sent["prompt"])


def test_the_fixed_part_is_what_every_prompt_of_the_conversation_begins_with() -> None:
    """Instructions of the user's own stand before the records, so they are part of it."""
    model = chat_model("http://127.0.0.1:9/v1", ALL)
    system = SystemMessage("Answer in French.")
    turns = [system, HumanMessage("What is 6 * 7?"), AIMessage("Final Answer: 42")]
    later = [*turns, HumanMessage("And 6 * 8?")]
    fixed = model.prefix_for(turns, ALL)
    assert fixed.startswith("Answer in French.\n\nQuestion: ")
    assert model.prompt_for(turns, ALL).startswith(fixed)
    assert model.prompt_for(later, ALL).startswith(fixed)


def test_a_prefill_that_cannot_reach_the_server_is_quiet() -> None:
    import graph.models.local as local
    from graph.models.local.transport import prefill

    prefill("http://127.0.0.1:9/v1", "records")  # no exception escapes: the question will
    assert local.LocalModelRequestError.__module__ == "graph.models.local.wire"  # lazy export


def _after_call(observation: str, status: str = "success") -> list:
    return [
        HumanMessage("What is 6 * 7?"),
        AIMessage(
            "", tool_calls=[{"id": "c", "name": "calculator", "args": {"expression": "6 * 7"}}]
        ),
        ToolMessage(observation, tool_call_id="c", status=status),
    ]


def test_one_line_to_quote_is_written_by_code(fake_llama: str) -> None:
    reply = chat_model(fake_llama).bind_tools([]).invoke(_after_call("42"))
    assert not _FakeLlama.requests
    assert parse_react(reply.text).answer == "42"
    assert reply.response_metadata[DECIDED_BY] == "code"


def test_after_a_result_the_model_may_call_again_or_answer(fake_llama: str) -> None:
    _FakeLlama.queued = ["Answer:"]
    reply = chat_model(fake_llama).bind_tools(ALL).invoke(_after_call("42"))
    (choice,) = _FakeLlama.requests
    assert choice["prompt"].endswith("Result: 42\n") and '"Answer:"' in choice["grammar"]
    assert parse_react(reply.text).answer == "42"


def test_a_failed_call_is_not_quoted(fake_llama: str) -> None:
    _FakeLlama.queued = [" I could not calculate it.\n"]
    reply = chat_model(fake_llama).bind_tools([]).invoke(_after_call("Cannot calculate", "error"))
    (answer,) = _FakeLlama.requests
    assert "grammar" not in answer
    assert parse_react(reply.text).answer == "I could not calculate it."
