"""Every character that can hide, fake or reorder text is made visible on the terminal, in the
approval prompt and in every other output (step lines, answers, tables, `show`, errors), and
JSON output escapes what JSON Lines readers take for line breaks.

The classes come from the second adversarial round: a URL shown as harmless in the approval
prompt carried hidden text in tag characters, variation selectors, Hangul fillers, the braille
blank and combining overlays. The property test checks the escaping against its own statement
of those classes, written here independently of the implementation.
"""

from __future__ import annotations

import io
import json
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.cli.approvals import ask_decisions
from graph.cli.output import json_lines, json_text, table, visible, visible_json
from graph.cli.render import Lines, StepPrinter
from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer

CLASSES: dict[str, list[str]] = {
    "C0 controls": ["\x00", "\x07", "\x1b", "\r", "\x0b"],
    "DEL and C1 controls": ["\x7f", "\x80", "\x85", "\x9b", "\x9f"],
    "format (Cf)": ["\u00ad", "\u061c", "\u180e", "\u200b", "\u200d", "\ufeff", "\u2060"],
    "bidi controls": ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2069"],
    "private use (Co)": ["\ue000", "\uf8ff", "\U000f0000", "\U0010fffd"],
    "surrogates (Cs)": ["\ud800", "\udfff"],
    "combining overlays": ["\u0334", "\u0338", "\u20d2", "\u20d3", "\u20e5", "\u20ea"],
    "enclosing marks": ["\u20dd", "\u20e3", "\u0488"],
    "tags": ["\U000e0001", "\U000e0020", "\U000e0041", "\U000e007f"],
    "variation selectors": ["\ufe00", "\ufe0f", "\U000e0100", "\U000e01ef", "\u180b"],
    "fillers": ["\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f"],
    "line separators": ["\u2028", "\u2029"],
}
EVERY = [(name, char) for name, chars in CLASSES.items() for char in chars]


def hidden(char: str) -> bool:
    """The classes as the issue states them (an oracle independent of graph.cli.output)."""
    code = ord(char)
    return (
        unicodedata.category(char) in {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
        or unicodedata.combining(char) == 1
        or 0x20D0 <= code <= 0x20FF
        or 0xE0000 <= code <= 0xE007F
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or code in (0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800)
    )


def escape(char: str) -> str:
    return f"\\u{{{ord(char):04X}}}"


def raw_hidden(text: str) -> list[str]:
    """The hidden characters left in output, newlines and tabs apart (they lay it out)."""
    return [f"U+{ord(c):04X}" for c in text if hidden(c) and c not in "\n\t"]


@pytest.mark.parametrize(("kind", "char"), EVERY, ids=[f"{k}-U+{ord(c):04X}" for k, c in EVERY])
def test_each_class_is_shown_as_an_escape(kind: str, char: str) -> None:
    shown = visible(f"pay{char}me")
    assert shown == f"pay{escape(char)}me", kind
    assert char not in visible_json({"url": f"https://a.example/{char}"})
    assert json.loads(visible_json({"url": f"x{char}"})) == {"url": f"x{char}"}


def test_ordinary_text_is_left_alone() -> None:
    text = "naïve café 世界 Ünïcödé e\u0301 😀 [bold]x[/bold] tab\there"
    assert visible(text, multiline=True) == text
    assert visible("line one\nline two", multiline=True) == "line one\nline two"
    assert visible("line one\nline two") == "line one\\u{000A}line two"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, categories=None), max_size=40))
def test_escaped_output_never_holds_a_hidden_character(text: str) -> None:
    assert not any(hidden(c) for c in visible(text))
    assert not any(hidden(c) and c not in "\n\t" for c in visible(text, multiline=True))
    document = json_text({"text": text})
    assert not any(hidden(c) for c in document)
    assert json.loads(document) == {"text": text}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([c for _, c in EVERY]), st.text(max_size=10), st.text(max_size=10))
def test_a_hidden_character_anywhere_is_escaped(char: str, before: str, after: str) -> None:
    assert escape(char) in visible(before + char + after)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_json_lines_escape_line_separators(separator: str) -> None:
    out = io.StringIO()
    json_lines([{"q": f"one{separator}two"}, {"q": "three"}], stream=out)
    text = out.getvalue()
    assert separator not in text
    assert text.splitlines() == [json.dumps({"q": f"one{separator}two"}), '{"q": "three"}']
    assert [json.loads(line)["q"] for line in text.split("\n")[:-1]] == [
        f"one{separator}two",
        "three",
    ]


def test_the_approval_prompt_shows_hidden_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tagged = "".join(chr(0xE0000 + ord(c)) for c in "secret")
    url = f"https://harmless.example/{tagged}\ufe0f\u3164\u2800\u20d2"
    pause = type("Pause", (), {"id": "p1", "value": {"action_requests": [
        {"name": "web_fetch", "args": {"url": url}, "description": "fetch"}
    ]}})()  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    assert ask_decisions([pause]) == {"decisions": [{"type": "approve"}]}
    prompt = capsys.readouterr().err
    assert raw_hidden(prompt) == []
    shown = next(line for line in prompt.splitlines() if line.startswith("Approval needed: "))
    assert json.loads(shown.removeprefix("Approval needed: web_fetch ")) == {"url": url}
    assert "\\udb40\\udc73" in shown  # the tag 's' as its JSON escape


def test_step_lines_escape_every_class() -> None:
    out = io.StringIO()
    printer = StepPrinter(Lines(out))
    payload = "".join(c for _, c in EVERY)
    for event in (
        {"event": "thought", "text": payload},
        {"event": "action", "tool": f"calc{payload}", "input": {"x": payload}},
        {"event": "observation", "text": payload},
        {"event": "answer", "text": payload},
    ):
        printer.event(event)
    assert raw_hidden(out.getvalue()) == []
    assert out.getvalue().count(escape("\U000e0041")) == 4  # the tool input: JSON escapes
    assert '{"x": "\\u0000\\u0007\\u001b' in out.getvalue()


def test_tables_escape_every_class() -> None:
    out = io.StringIO()
    payload = "".join(c for _, c in EVERY)
    table(("thread", "question"), [("t1", payload)], title=payload, stream=out)
    assert raw_hidden(out.getvalue()) == []
    assert len(out.getvalue().splitlines()) == 2


# -- the commands themselves, as a user runs them ---------------------------------------------

HIDDEN_ANSWER = "Paris\U000e0041\U000e0042\u2028\u3164\u2800\ufe0f\u20d2\u202e\x85 is the answer"


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


@pytest.mark.integration
def test_every_command_output_is_escaped(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content=HIDDEN_ANSWER))
    asked = run_cli("ask", f"Capital?{HIDDEN_ANSWER}", "--thread", "h1", env=env)
    assert asked.returncode == 0, asked.stderr
    assert raw_hidden(asked.stdout + asked.stderr) == []
    assert escape("\U000e0041") in asked.stdout
    outputs: dict[str, Any] = {}
    for args in (["history", "-t", "h1"], ["threads"], ["history", "-t", "h1", "--json"]):
        done = run_cli(*args, env=env)
        assert done.returncode == 0, done.stderr
        outputs[" ".join(args)] = done.stdout
    checkpoint = json.loads(outputs["history -t h1 --json"].splitlines()[-1])["checkpoint_id"]
    for extra in ([], ["--json"]):
        shown = run_cli("show", "-t", "h1", "-c", checkpoint, *extra, env=env)
        assert shown.returncode == 0, shown.stderr
        outputs[f"show {extra}"] = shown.stdout
    threads = run_cli("threads", "--json", env=env)
    outputs["threads --json"] = threads.stdout
    for name, text in outputs.items():
        assert raw_hidden(text) == [], name
    assert json.loads(threads.stdout)["last_question"] == f"Capital?{HIDDEN_ANSWER}"
