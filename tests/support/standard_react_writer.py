"""A rule-following stand-in for an LLM without function calling, for LangChain's standard
chat-model suites run on `TextReAct` (tests/unit/test_probe_standard_suites.py).

It answers a chat-completions request body (as the scripted OpenAI-compatible server hands it
over) the way a capable model that obeys the text ReAct prompt would, and only from what the
prompt says:

* the tools it may call are the ones the system prompt lists (`Action: ... exactly one of: a, b`);
* it writes an Action only when the user names a listed tool ("Use the tool", `magic_function`)
  or the prompt insists on one (a forced `tool_choice`); otherwise it writes a Final Answer;
* a tool the prompt demands by name ("you must use magic_function") is the one it calls; when
  the prompt demands "one of the tools" and the question names none, any listed tool obeys the
  prompt, and it takes the last one listed (so a forced tool the prompt never names is not
  reached by the luck of the listing order);
* right after an `Observation:` it writes a Final Answer;
* a call's arguments come from `ARGUMENTS` (the suites' own tools), built for the question.

So what the suites assert about `TextReAct` (its prompt, its stop sequence, its reading of the
reply, its messages) is checked for real: nothing here knows about `TextReAct`'s internals, and
a tool choice the prompt does not ask for is not obeyed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.support.openai_server import Reply

FORCED_MARK = "You must use one of the tools"
_NAMES = re.compile(r"^Action: the tool's name, exactly one of: (?P<names>.+)$", re.MULTILINE)
_QUOTED = re.compile(r"'([^']+)'")
JOKE = {
    "setup": "Why did the cat sit on the computer?",
    "punchline": "To keep an eye on the mouse.",
}


def _customer(question: str) -> dict[str, Any]:
    quoted = _QUOTED.search(question)
    name = quoted.group(1) if quoted else question
    return {"customer_name": name, "description": question.split(" - ", 1)[-1]}


def _adder(question: str) -> dict[str, Any]:
    numbers = [int(n) for n in re.findall(r"\d+", question)] or [1, 2]
    return {"a": numbers[0], "b": numbers[-1]}


# each tool the suites bind, with the arguments a model would write for the question
ARGUMENTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "magic_function": lambda q: {"input": 3},
    "magic_function_no_args": lambda q: {},
    "greeting_generator": lambda q: {"answer_style": "pirate"},
    "get_weather": lambda q: {"location": "San Francisco, CA"},
    "my_adder_tool": _adder,
    "unicode_customer": _customer,
    "Joke": lambda q: dict(JOKE),
    "JokeDict": lambda q: dict(JOKE),
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", "")) for part in content
        )
    return ""


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def _topic(name: str) -> set[str]:
    """The words of a tool's name that say what it is about ('get_weather': weather)."""
    return _words(name.replace("_", " ")) - {"magic", "function", "tool", "args"}


def write_react(body: dict[str, Any]) -> Reply:
    """The reply to one chat-completions request, in the text ReAct format."""
    messages = body.get("messages") or []
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    last = _text(rest[-1].get("content")) if rest else ""
    question = next(
        (
            _text(m.get("content"))
            for m in reversed(rest)
            if m.get("role") == "user" and not _text(m.get("content")).startswith("Observation:")
        ),
        "",
    )
    found = _NAMES.search(system)
    names = [n.strip() for n in found.group("names").split(",")] if found else []
    if last.startswith("Observation:"):
        result = last.removeprefix("Observation:").strip()
        return Reply(content=f"Thought: The tool answered.\nFinal Answer: The result is {result}.")
    demanded = [n for n in names if re.search(rf"\bmust\b[^\n]*\b{re.escape(n)}\b", system)]
    named = [n for n in names if n in question or _topic(n) & _words(question)]
    forced = FORCED_MARK in system
    asked = demanded or named or (names[-1:] if forced or "tool" in question.lower() else [])
    name = max(asked, key=len) if asked else None
    if name in ARGUMENTS:
        arguments = json.dumps(ARGUMENTS[name](question), ensure_ascii=False)
        return Reply(
            content=f"Thought: I should use {name}.\nAction: {name}\nAction Input: {arguments}"
        )
    return Reply(
        content="Thought: I can answer directly.\nFinal Answer: Hello! How can I help you?"
    )
