"""The ReAct grammar: built from tool schemas, parsed and enforced by llama.cpp's own grammar
engine, and every text it allows is a step `parse_react` reads into a real tool with a
schema-valid input (or a final answer).

llama.cpp's parser is reached through its C API (`llama_sampler_init_grammar` returns NULL for a
grammar it cannot parse; `llama_cpp.LlamaGrammar.from_string` only stores the text), with the
vocabulary of the packaged model loaded alone (`vocab_only`, about half a second). Whether a
text is in the grammar is asked the same way llama.cpp decides during sampling: token by token,
then whether the end of the reply is allowed. Those tests need the `local` extra, which CI
installs; the sampling tests use a small GBNF reader below and run everywhere.
"""

from __future__ import annotations

import ctypes
import enum
import json
import random
import re
import zlib
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from graph.protocols.text.gbnf import json_literal, literal
from graph.protocols.text.grammar import (
    Limits,
    grammar_for,
    grammar_from_schemas,
    request_options,
    use_grammar,
)
from graph.protocols.text.reader import parse_react
from tools import default_tools

# -- tools of every schema shape -------------------------------------------------------------


class Color(enum.StrEnum):
    red = "red"
    dark_blue = "dark blue"
    quoted = 'say "hi"\\now'


class Inner(BaseModel):
    a: int
    b: str | None = None


class Shapes(BaseModel):
    text: str = Field(description="a string")
    amount: float
    count: int
    flag: bool
    color: Color
    mode: Literal["fast", "slow"] = "fast"
    note: str | None = None
    inner: Inner
    tags: list[str] = Field(default_factory=list, max_length=3)
    items: list[Inner] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    anything: Any = None


class OnlyOptional(BaseModel):
    first: str = "x"
    second: int = 2
    third: bool = False


class NoArgs(BaseModel):
    pass


def _tool(name: str, schema: type[BaseModel]) -> BaseTool:
    return StructuredTool.from_function(
        lambda **kwargs: json.dumps(kwargs, default=str),
        name=name,
        description=f"test tool {name}",
        args_schema=schema,
    )


def _single(field: str, annotation: Any, default: Any = ...) -> type[BaseModel]:
    from pydantic import create_model

    return create_model(f"One_{field}", **{field: (annotation, default)})


SHAPES: dict[str, BaseTool] = {
    "string": _tool("string_tool", _single("value", str)),
    "number": _tool("number_tool", _single("value", float)),
    "integer": _tool("integer_tool", _single("value", int)),
    "boolean": _tool("boolean_tool", _single("value", bool)),
    "enum": _tool("enum_tool", _single("value", Color)),
    "literal": _tool("literal_tool", _single("value", Literal["a", "b"])),
    "optional": _tool("optional_tool", OnlyOptional),
    "nested": _tool("nested_tool", _single("inner", Inner)),
    "array": _tool("array_tool", _single("values", list[int])),
    "array_bounded": _tool("bounded_tool", _single("values", list[str], Field(max_length=2))),
    "anyof": _tool("anyof_tool", _single("value", str | None, None)),
    "union": _tool("union_tool", _single("value", int | str)),
    "free_dict": _tool("dict_tool", _single("value", dict[str, Any])),
    "no_args": _tool("noargs_tool", NoArgs),
    "everything": _tool("shapes", Shapes),
}


# -- llama.cpp's grammar engine --------------------------------------------------------------


class LlamaGrammarEngine:
    """llama.cpp's grammar parser and matcher over a model's vocabulary (no weights loaded)."""

    def __init__(self) -> None:
        import llama_cpp as lc

        from graph.models.local import model_path

        self.lc = lc
        lc.llama_backend_init()
        params = lc.llama_model_default_params()
        params.vocab_only = True
        self.model = lc.llama_model_load_from_file(str(model_path(None)).encode(), params)
        assert self.model, "could not load the model's vocabulary"
        self.vocab = lc.llama_model_get_vocab(self.model)
        self.eos = lc.llama_vocab_eos(self.vocab)

    def close(self) -> None:
        self.lc.llama_model_free(self.model)

    def parses(self, grammar: str) -> bool:
        sampler = self.lc.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")
        if not sampler:
            return False
        self.lc.llama_sampler_free(sampler)
        return True

    def accepts(self, grammar: str, text: str) -> bool:
        """Whether llama.cpp would let a model write exactly `text` (and then stop)."""
        sampler = self.lc.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")
        assert sampler, "the grammar does not parse"
        try:
            for token in self.tokenize(text):
                if not self._allowed(sampler, token):
                    return False
                self.lc.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, self.eos)
        finally:
            self.lc.llama_sampler_free(sampler)

    def tokenize(self, text: str) -> list[int]:
        raw = text.encode()
        size = len(raw) + 16
        buffer = (self.lc.llama_token * size)()
        n = self.lc.llama_tokenize(self.vocab, raw, len(raw), buffer, size, False, False)
        assert n >= 0
        return list(buffer[:n])

    def _allowed(self, sampler: Any, token: int) -> bool:
        data = (self.lc.llama_token_data * 1)(self.lc.llama_token_data(token, 0.0, 0.0))
        candidates = self.lc.llama_token_data_array(data, 1, -1, False)
        self.lc.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return data[0].logit != float("-inf")


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaGrammarEngine]:
    from graph.models.local import LocalModelError, local_available

    if not local_available():
        pytest.skip("the local extra (llama-cpp-python + model) is not installed")
    try:
        engine = LlamaGrammarEngine()
    except LocalModelError as exc:  # pragma: no cover - extra installed but model unusable
        pytest.skip(str(exc))
    yield engine
    engine.close()


# -- a small GBNF reader and sampler (for the subset grammar.py writes) ----------------------


class Gbnf:
    """Parses the grammar text into rules and samples random texts from it."""

    def __init__(self, text: str) -> None:
        self.rules: dict[str, Any] = {}
        for line in text.strip().splitlines():
            name, _, body = line.partition(" ::= ")
            self.text, self.pos = body, 0
            self.rules[name] = self._alternatives()
            assert self.pos == len(body), f"unparsed rest in rule {name}: {body[self.pos :]!r}"

    # parsing
    def _alternatives(self) -> Any:
        options = [self._sequence()]
        while self._peek("|"):
            self.pos += 1
            options.append(self._sequence())
        return ("alt", options)

    def _sequence(self) -> Any:
        items = []
        while True:
            self._skip()
            if self.pos >= len(self.text) or self.text[self.pos] in "|)":
                return ("seq", items)
            items.append(self._quantified(self._atom()))

    def _atom(self) -> Any:
        ch = self.text[self.pos]
        if ch == '"':
            return ("lit", self._literal())
        if ch == "[":
            return self._class()
        if ch == "(":
            self.pos += 1
            inner = self._alternatives()
            self._skip()
            assert self.text[self.pos] == ")"
            self.pos += 1
            return inner
        match = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.pos)
        assert match, f"unexpected {self.text[self.pos :]!r}"
        self.pos = match.end()
        return ("ref", match.group())

    def _quantified(self, atom: Any) -> Any:
        if self.pos < len(self.text) and self.text[self.pos] == "?":
            self.pos += 1
            return ("rep", atom, 0, 1)
        assert self.pos >= len(self.text) or self.text[self.pos] not in "*+", "unbounded"
        match = re.compile(r"\{(\d+)(?:,(\d+))?\}").match(self.text, self.pos)
        if match:
            self.pos = match.end()
            low = int(match.group(1))
            high = int(match.group(2)) if match.group(2) is not None else low
            return ("rep", atom, low, high)
        return atom

    def _char(self) -> str:
        ch = self.text[self.pos]
        if ch != "\\":
            self.pos += 1
            return ch
        code = self.text[self.pos + 1]
        if code == "x":
            value = chr(int(self.text[self.pos + 2 : self.pos + 4], 16))
            self.pos += 4
            return value
        self.pos += 2
        return {"n": "\n", "r": "\r", "t": "\t"}.get(code, code)

    def _literal(self) -> str:
        self.pos += 1
        out = []
        while self.text[self.pos] != '"':
            out.append(self._char())
        self.pos += 1
        return "".join(out)

    def _class(self) -> Any:
        self.pos += 1
        negated = self.text[self.pos] == "^"
        if negated:
            self.pos += 1
        ranges = []
        while self.text[self.pos] != "]":
            low = self._char()
            high = low
            if self.text[self.pos] == "-" and self.text[self.pos + 1] != "]":
                self.pos += 1
                high = self._char()
            ranges.append((low, high))
        self.pos += 1
        return ("class", negated, ranges)

    def _peek(self, ch: str) -> bool:
        self._skip()
        return self.pos < len(self.text) and self.text[self.pos] == ch

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    # sampling
    POOL = 'aZeEfF0123456789 +-_.,;"\\/\n\t\x01:：<>{}[]北é😀'

    def sample(self, rng: random.Random, rule: str = "root") -> str:
        return self._gen(self.rules[rule], rng)

    def _gen(self, node: Any, rng: random.Random) -> str:
        kind = node[0]
        if kind == "alt":
            return self._gen(rng.choice(node[1]), rng)
        if kind == "seq":
            return "".join(self._gen(item, rng) for item in node[1])
        if kind == "lit":
            return node[1]
        if kind == "ref":
            return self._gen(self.rules[node[1]], rng)
        if kind == "rep":
            _, atom, low, high = node
            count = rng.randint(low, min(high, low + 4))
            return "".join(self._gen(atom, rng) for _ in range(count))
        _, negated, ranges = node
        choices = [c for c in self.POOL if any(a <= c <= b for a, b in ranges) != negated]
        return rng.choice(choices)


def _schema_valid(tool: BaseTool, value: Any) -> None:
    assert isinstance(value, dict), value
    tool.args_schema.model_validate(value)


# -- building ---------------------------------------------------------------------------------


def test_the_grammar_of_the_real_tools_ties_each_name_to_its_schema() -> None:
    text = grammar_for(default_tools())
    assert text.startswith('root ::= "Thought: " thought "\\n" (')
    assert '"Action: calculator\\nAction Input: " calculator-input' in text
    assert '"\\"expression\\"" ":" ws string' in text
    assert 'current-time-input ::= "{" (current-time-input-timezone-kv)? "}"' in text
    assert 'final ::= "Final Answer: " answer' in text


def test_no_tools_allows_only_a_final_answer() -> None:
    text = grammar_for([])
    assert "Action" not in text
    assert '"Thought: " thought "\\n" (final)' in text


def test_every_repetition_is_bounded() -> None:
    """No `*` or `+` outside literals and character classes: generation always ends."""
    for tools in ([], default_tools(), list(SHAPES.values())):
        text = grammar_for(tools)
        bare = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', "", text)
        assert "*" not in bare and "+" not in bare, bare


def test_limits_are_respected() -> None:
    text = grammar_for(default_tools(), Limits(thought=50, string=20, answer=30, answer_lines=2))
    assert "thought-char{0,49}" in text
    assert "char{0,20}" in text
    assert 'answer ::= answer-line ("\\n" answer-line)?' in text


def test_literals_escape_quotes_backslashes_and_control_characters() -> None:
    assert literal('a"b\\c\nd\te\r\x01\x7f北') == '"a\\"b\\\\c\\nd\\te\\r\\x01\\x7F北"'
    assert json_literal('say "hi"\\now') == '"\\"say \\\\\\"hi\\\\\\"\\\\\\\\now\\""'


def test_schema_details() -> None:
    text = grammar_from_schemas(
        {
            "t": {
                "type": "object",
                "properties": {
                    "s": {"type": "string", "minLength": 2, "maxLength": 5},
                    "n": {"type": ["integer", "null"]},
                    "c": {"const": "fixed"},
                    "a": {"type": "array", "items": {"type": "boolean"}, "minItems": 1},
                    "r": {"$ref": "#/$defs/R"},
                    "x": {"$ref": "#/$defs/Missing"},
                },
                "required": ["s", "n", "c", "a", "r", "x"],
                "$defs": {"R": {"type": "number"}},
            }
        }
    )
    assert "char{2,5}" in text
    assert "integer | null" in text
    assert '"\\"fixed\\""' in text
    assert '"[" boolean ("," ws boolean){0,7} "]"' in text
    assert '"\\"r\\"" ":" ws number' in text
    assert '"\\"x\\"" ":" ws json-value-2' in text


def test_use_grammar_decision() -> None:
    assert use_grammar("auto", protocol="text", local=True)
    assert not use_grammar("auto", protocol="text", local=False)
    assert use_grammar("on", protocol="text", local=False)
    assert not use_grammar("on", protocol="native", local=True)
    assert not use_grammar("off", protocol="text", local=True)
    with pytest.raises(ValueError, match="constrained_decoding"):
        use_grammar("yes", protocol="text", local=True)
    assert request_options("root ::= x") == {"extra_body": {"grammar": "root ::= x"}}


# -- llama.cpp parses and enforces it ----------------------------------------------------------


def test_llama_cpp_rejects_a_broken_grammar(llama: LlamaGrammarEngine) -> None:
    """The check below means something: a grammar llama.cpp cannot read is caught here."""
    assert not llama.parses("root ::= missing-rule")
    assert not llama.parses('root ::= "unterminated')
    assert llama.parses('root ::= "ok"')


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_parses_in_llama_cpp(llama: LlamaGrammarEngine, shape: str) -> None:
    assert llama.parses(grammar_for([SHAPES[shape]]))


def test_all_shapes_together_and_the_real_tools_parse(llama: LlamaGrammarEngine) -> None:
    assert llama.parses(grammar_for(list(SHAPES.values())))
    assert llama.parses(grammar_for(default_tools()))
    assert llama.parses(grammar_for([]))


CALC = 'Thought: I use the calculator.\nAction: calculator\nAction Input: {{"expression": {}}}'


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (CALC.format('"17 * 23"'), True),
        (CALC.format('"a\\"b\\\\c\\nd\\u00e9/\\/"'), True),  # JSON escapes
        (CALC.format('"北京 😀"'), True),
        (CALC.format('"line\nbreak"'), False),  # a raw newline inside a JSON string
        (CALC.format('"tab\there"'), False),  # a raw control character
        (CALC.format('"bad \\q escape"'), False),
        (CALC.format("17"), False),  # a number where the schema says string
        ('Thought: x\nAction: calculator\nAction Input: {"location": "Paris"}', False),
        ('Thought: x\nAction: weather\nAction Input: {"location": "Paris"}', True),
        ('Thought: x\nAction: teleport\nAction Input: {"to": "Mars"}', False),
        ('Thought: x\nAction: calculator\nAction Input: {"expression": "1"}\nObservation:', False),
        ("Thought: x\nAction: current_time\nAction Input: {}", True),
        ('Thought: x\nAction: current_time\nAction Input: {"timezone":"Asia/Tokyo"}', True),
        ("Thought: done\nFinal Answer: 17 * 23 = 391", True),
        ("Thought: done\nFinal Answer: 391\nAction: calculator", False),
        ("Thought: a: b\nFinal Answer: 391", False),  # a colon could start a keyword
        ("Thought: a </think> b\nFinal Answer: 391", False),
        ("Thought:  leading space\nFinal Answer: 391", False),
        ("Final Answer: 391", False),  # the Thought comes first
        ("Thought: x\nFinal Answer: ", False),  # an empty answer
        ("Thought: x\nFinal Answer: __", False),  # empty once the parser drops the emphasis
        ("Thought: x\nFinal Answer: **391**", True),
    ],
)
def test_llama_cpp_enforces_the_format(llama: LlamaGrammarEngine, text: str, ok: bool) -> None:
    assert llama.accepts(grammar_for(default_tools()), text) is ok


SHAPED = "Thought: t\nAction: shapes\nAction Input: "
# Required properties first (in schema order), then the optional ones present (in schema order).
REQUIRED = {
    "text": 'q"\\',
    "amount": -1.5e3,
    "count": 3,
    "flag": True,
    "color": "dark blue",
    "inner": {"a": 1, "b": "x"},
}
FULL = {
    **REQUIRED,
    "mode": "slow",
    "note": None,
    "tags": ["a", "b"],
    "items": [{"a": 2}],
    "extra": {"k": [1, "two", None]},
    "anything": {"nested": {"deep": True}},
}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (FULL, True),
        (REQUIRED, True),  # optional fields left out
        ({**REQUIRED, "note": "n", "extra": {}}, True),  # some optional ones, in schema order
        ({k: v for k, v in REQUIRED.items() if k != "count"}, False),  # a required one missing
        ({**REQUIRED, "color": "green"}, False),  # not in the enum
        ({**REQUIRED, "count": 1.5}, False),  # not an integer
        ({**REQUIRED, "flag": "yes"}, False),
        ({**REQUIRED, "tags": ["a", "b", "c", "d"]}, False),  # more than maxItems
        ({**REQUIRED, "inner": {"b": "x"}}, False),  # nested required field missing
        ({**REQUIRED, "unknown": 1}, False),
        ({**REQUIRED, "color": Color.quoted.value}, True),  # an enum value that needs escapes
        ({**{k: FULL[k] for k in ("text", "amount", "count", "flag", "color", "mode")}}, False),
        ({**{k: REQUIRED[k] for k in reversed(REQUIRED)}}, False),  # not in schema order
    ],
)
def test_llama_cpp_enforces_the_schema(llama: LlamaGrammarEngine, value: Any, ok: bool) -> None:
    text = SHAPED + json.dumps(value, ensure_ascii=False)
    assert llama.accepts(grammar_for([SHAPES["everything"]]), text) is ok


def test_optional_fields_may_come_in_any_subset(llama: LlamaGrammarEngine) -> None:
    grammar = grammar_for([SHAPES["optional"]])
    head = "Thought: t\nAction: optional_tool\nAction Input: "
    for value in ({}, {"second": 1}, {"first": "a", "third": True}, {"third": False}):
        assert llama.accepts(grammar, head + json.dumps(value)), value
    assert not llama.accepts(grammar, head + '{"third": true, "first": "a"}')  # schema order
    assert not llama.accepts(grammar, head + '{, "second": 1}')


# -- what the grammar allows is what the parser reads ----------------------------------------


def _samples(tools: list[BaseTool], count: int, seed: int) -> Iterator[str]:
    reader = Gbnf(grammar_for(tools))
    rng = random.Random(seed)
    for _ in range(count):
        yield reader.sample(rng)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sampled_steps_parse_into_the_tool_and_a_schema_valid_input(shape: str) -> None:
    tool = SHAPES[shape]
    seen = set()
    for text in _samples([tool], 40, seed=zlib.crc32(shape.encode())):
        step = parse_react(text)
        assert step.kind in ("action", "final"), (text, step)
        seen.add(step.kind)
        if step.kind == "final":
            assert step.answer and "\n" not in step.answer
            continue
        assert step.tool == tool.name
        assert step.note is None
        payload = text.split("\nAction Input: ", 1)[1]
        assert json.loads(payload) == step.tool_input, text
        _schema_valid(tool, step.tool_input)
    assert seen == {"action", "final"}


def test_sampled_steps_for_the_real_tools() -> None:
    tools = default_tools()
    by_name = {t.name: t for t in tools}
    names = set()
    for text in _samples(tools, 300, seed=7):
        step = parse_react(text)
        assert step.kind in ("action", "final"), (text, step)
        if step.kind == "action":
            names.add(step.tool)
            _schema_valid(by_name[step.tool], step.tool_input)
            assert step.thought in text.split("\n", 1)[0]  # markdown-like `__`/`**` may go
    assert names == set(by_name)


def test_sampled_steps_are_accepted_by_llama_cpp(llama: LlamaGrammarEngine) -> None:
    """The reader above reads the grammar as llama.cpp does: its samples are in the grammar."""
    tools = [*default_tools(), *SHAPES.values()]
    grammar = grammar_for(tools)
    for text in _samples(tools, 60, seed=11):
        assert llama.accepts(grammar, text), text


def test_hand_written_examples_parse_as_expected() -> None:
    tools = {t.name: t for t in default_tools()}
    head = "Thought: I need it.\nAction: "
    examples = [
        (
            f'{head}calculator\nAction Input: {{"expression": "17 * 23"}}',
            "calculator",
            {"expression": "17 * 23"},
        ),
        (
            f'{head}knowledge_search\nAction Input: {{"query": "say \\"resume\\""}}',
            "knowledge_search",
            {"query": 'say "resume"'},
        ),
        (f"{head}current_time\nAction Input: {{}}", "current_time", {}),
    ]
    grammar = Gbnf(grammar_for(list(tools.values())))
    assert grammar.rules  # the reader takes the real grammar
    for text, tool, value in examples:
        step = parse_react(text)
        assert (step.kind, step.tool, step.tool_input) == ("action", tool, value)
        _schema_valid(tools[tool], step.tool_input)
    final = parse_react("Thought: the tool said 391\nFinal Answer: 17 * 23 = 391")
    assert (final.kind, final.answer) == ("final", "17 * 23 = 391")


# -- the embedded model's per-question grammars (graph.models.local.constrain) ---------------


def test_llama_cpp_holds_an_expression_to_the_questions_numbers(llama: LlamaGrammarEngine) -> None:
    from graph.models.local.constrain import arithmetic_grammar
    from graph.models.local.inputs import spaced as _spaced

    grammar = _spaced(arithmetic_grammar("Split eighty-four sweets among 6 children."))
    for text in [" 84 / 6", " 84 / 6\n", " (84 - 6) * 2", " sqrt(84)"]:
        assert llama.accepts(grammar, text), text
    for text in [" 85 / 6", " 84", "84 / 6", " 84 % 6", " 84 / 6 apples"]:
        assert not llama.accepts(grammar, text), text


def test_llama_cpp_holds_a_piece_and_a_choice(llama: LlamaGrammarEngine) -> None:
    from graph.models.local.constrain import choice_grammar, piece_grammar
    from graph.models.local.inputs import spaced as _spaced

    pieces = _spaced(piece_grammar("What time is it in Rio de Janeiro?"))
    assert llama.accepts(pieces, " Rio de Janeiro") and not llama.accepts(pieces, " Paris")
    choice = _spaced(choice_grammar(["calculator", "current_time"]))
    assert llama.accepts(choice, " none") and not llama.accepts(choice, " wikipedia")


def test_llama_cpp_holds_a_tools_arguments_to_its_schema(llama: LlamaGrammarEngine) -> None:
    from graph.protocols.text.grammar import arguments_grammar

    grammar = arguments_grammar(SHAPES["everything"])
    assert llama.parses(grammar)
    assert llama.accepts(grammar, json.dumps(REQUIRED, ensure_ascii=False))
    assert not llama.accepts(grammar, json.dumps({"text": "x"}))
