"""Answering approval pauses on the terminal, and reading what the person types.

A paused step carries one interrupt in LangChain's human-in-the-loop schema:

    {"action_requests": [{"name", "args", "description"}, ...],
     "review_configs": [{"action_name", "allowed_decisions": ["approve", "edit", "reject",
                                                              "respond"]}]}

and is resumed with `{"decisions": [...]}`, one decision per request, in order (in `per_call`
mode each gated call is a question of its own, `{"type": "tool_approval", "name", "args"}`,
answered with one decision keyed by its interrupt id):
`{"type": "approve"}`, `{"type": "edit", "edited_action": {"name", "args"}}` or
`{"type": "reject", "message"}` or `{"type": "respond", "message"}` (the person answers in
the tool's place; the tool does not run). These are LangChain's `HumanInTheLoopMiddleware`
decisions.

The person decides on what will really run, so each call is shown as its tool name and one JSON
document that parses back to the exact arguments, with every character that could hide or fake
text escaped (`output.visible_json`), and never through Rich markup. The request's free-text
`description` is not shown: it repeats the call in a form that is not exact. Lines are read as
bytes and decoded leniently: a stray invalid byte must not end a chat or an approval.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter

from graph.cli.output import say, visible, visible_json

CHOICES = {
    "approve": "[a]pprove",
    "edit": "[e]dit input",
    "reject": "[r]eject",
    "respond": "re[s]pond in its place",
}
WORDS = {
    "approve": ("a", "approve", "y", "yes"),
    "edit": ("e", "edit"),
    "reject": ("r", "reject", "n", "no"),
    "respond": ("s", "respond"),
}


def read_line(prompt: str) -> str | None:
    """One line from stdin after `prompt` on stderr; None at end of input. Bytes that are not
    UTF-8 become U+FFFD, and the person is told so in one sentence."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    stdin = sys.stdin
    if stdin is None:
        return _ended(prompt)
    buffer = getattr(stdin, "buffer", None)
    if buffer is None:  # a text-only stream (an embedding test harness)
        line = stdin.readline()
        return _ended(prompt) if line == "" else line.rstrip("\r\n")
    raw = buffer.readline()
    if raw == b"":
        return _ended(prompt)
    if not stdin.isatty():  # piped: no echo ended the prompt's line, so it is ended here
        sys.stderr.write("\n")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        say("note: that line was not valid UTF-8; the unreadable bytes became U+FFFD (\ufffd).")
    return text.rstrip("\r\n")


def _ended(prompt: str) -> None:
    """End of input: nobody typed the newline that ends the prompt's line, so it is written
    here, and whatever is said next (`Paused for approval...`) starts a line of its own."""
    if prompt:
        sys.stderr.write("\n")
        sys.stderr.flush()


def ask_decisions(interrupts: Any) -> Any | None:
    """The resume value for a paused run, asked of the person on the terminal; None when the
    run should stay paused (end of input, or a pause this command cannot answer)."""
    pauses = list(interrupts)
    answers: dict[str, Any] = {}
    by_id = len(pauses) > 1
    for pause in pauses:
        value = pause.value
        if isinstance(value, dict) and value.get("type") == "tool_approval":  # per_call mode
            decision = _decide(value, allowed_by(getattr(pause, "response_schema", None)))
            if decision is None:
                return None
            answers[pause.id], by_id = decision, True  # a decision answers its own question
            continue
        requests = value.get("action_requests") if isinstance(value, dict) else None
        if not isinstance(requests, list) or not requests:
            say(
                f"This run is paused on a question react-agent cannot answer: {visible_json(value)}"
            )
            return None
        configs = value.get("review_configs") or []
        decisions = []
        for request in requests:
            decision = _decide(request, _allowed(request, configs))
            if decision is None:
                return None
            decisions.append(decision)
        answers[pause.id] = {"decisions": decisions}
    if not by_id:
        return next(iter(answers.values()))
    return answers  # several pauses at once, or per_call questions: by interrupt id


def allowed_by(schema: Any) -> list[str]:
    """The decisions a per_call question takes, read off the answer schema LangChain's
    middleware gives its interrupt (a decision type, or a union of them, each with a literal
    `type`); all of them when it says nothing readable."""
    try:
        shape = schema if isinstance(schema, dict) else TypeAdapter(schema).json_schema()
    except Exception:  # no schema, or one pydantic cannot describe
        return list(CHOICES)
    named = set(_decision_types(shape))
    return [choice for choice in CHOICES if choice in named] or list(CHOICES)


def _decision_types(node: Any) -> Iterator[str]:
    """Every literal a schema gives a `type` property, anywhere in it."""
    if isinstance(node, dict):
        kind = (node.get("properties") or {}).get("type") or {}
        if isinstance(kind, dict):
            yield from [kind["const"]] if "const" in kind else kind.get("enum") or []
        for value in node.values():
            yield from _decision_types(value)
    elif isinstance(node, list):
        for value in node:
            yield from _decision_types(value)


def _allowed(request: dict[str, Any], configs: list[Any]) -> list[str]:
    for config in configs:
        if isinstance(config, dict) and config.get("action_name") == request.get("name"):
            allowed = [d for d in config.get("allowed_decisions") or [] if d in CHOICES]
            if allowed:
                return allowed
    return list(CHOICES)


def _decide(request: dict[str, Any], allowed: list[str]) -> dict[str, Any] | None:
    name = str(request.get("name", "?"))
    args = request.get("args")
    say(f"Approval needed: {visible(name)} {visible_json(args)}")
    prompt = "  " + ", ".join(CHOICES[choice] for choice in allowed) + "? "
    while True:
        answer = read_line(prompt)
        if answer is None:
            return None
        word = answer.strip().lower()
        choice = next((c for c, words in WORDS.items() if word in words), None)
        if choice is None and "reject" in allowed:
            choice = "reject"  # anything unclear is a rejection, never a silent approval
        if choice not in allowed:
            say(f"  Choose one of: {', '.join(allowed)}.")
            continue
        if choice == "approve":
            return {"type": "approve"}
        if choice == "edit":
            new_args = _read_args()
            if new_args is None:
                return None
            say(f"  will run: {visible(name)} {visible_json(new_args)}")
            return {"type": "edit", "edited_action": {"name": name, "args": new_args}}
        if choice == "respond":
            reply = read_line("  the tool's result, as you give it: ")
            if reply is None:
                return None
            return {"type": "respond", "message": reply}
        reason = (read_line("  reason (optional): ") or "").strip()
        return {"type": "reject", "message": reason} if reason else {"type": "reject"}


def _read_args() -> dict[str, Any] | None:
    while True:
        raw = read_line("  new input (one JSON object): ")
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError as exc:
            say(f"  That is not JSON ({exc}); type the arguments as one JSON object.")
            continue
        if isinstance(value, dict):
            return value
        say('  The input must be a JSON object, e.g. {"text": "hello"}.')
