"""The scripted model endpoint and the deployment of tests/integration/test_probe_aegra_threads.py.

The endpoint answers from the conversation alone (so concurrent runs, replays and forks can all
ask at once): `tick X`, `publish X`, `both X` (the two in one step), `sleepy X`, `loop X` (a call
every step), `fail` (HTTP 500, not retried); a tool result is answered `Done: <results>`,
anything else `You said: <question>`, under both protocols (the text protocol when the request
has no `tools`). A conversation OpenAI's chat API refuses (a call with no result right after its
step, a result with no call before it, a system message past the first) is refused with HTTP
400, so a run that sends one ends visibly in error.

`deployment(env)` is tests/support/aegra.py's `aegra()` with one more graph in the config:
`per_call` (tests/support/aegra_probe_graphs.py).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from tests.support import aegra as aegra_support
from tests.support.openai_server import HTTPError, Reply, ToolCall, conversation_problem

GRAPHS = Path(__file__).resolve().parent / "aegra_probe_graphs.py"
EXTRA_GRAPHS = {"per_call": f"{GRAPHS}:per_call"}
ASK = re.compile(r"^(tick|publish|both|sleepy|loop|fail)(?: (\S+))?$")
REFUSED: list[str] = []  # every conversation the endpoint refused, and why


def text_of(content: Any) -> str:
    if isinstance(content, list):  # content blocks, as Agent Chat UI sends a question
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def brain(body: dict[str, Any]) -> Reply | HTTPError:
    """The scripted model (see the module docstring)."""
    problem = conversation_problem(body.get("messages", []))
    if problem:
        REFUSED.append(problem)
        return HTTPError(
            400, f"invalid conversation: {problem}", headers={"x-should-retry": "false"}
        )
    messages = [m for m in body.get("messages", []) if m.get("role") != "system"]
    native = "tools" in body
    last = messages[-1] if messages else {}
    questions = [
        text_of(m.get("content")).strip()
        for m in messages
        if m.get("role") == "user" and not text_of(m.get("content")).startswith("Observation:")
    ]
    asked = ASK.match(questions[-1] if questions else "")
    kind, label = asked.groups() if asked else (None, None)
    if kind == "loop":
        if native:
            return Reply(tool_calls=[ToolCall("tick", {"label": label or "x"})])
        args = json.dumps({"label": label or "x"})
        return Reply(content=f"Thought: again.\nAction: tick\nAction Input: {args}")
    if native and last.get("role") == "tool":
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.append(text_of(message.get("content")))
        return Reply(content="Done: " + " | ".join(reversed(results)))
    if not native and text_of(last.get("content")).startswith("Observation:"):
        seen = text_of(last.get("content")).removeprefix("Observation:").strip()
        return Reply(content=f"Thought: done.\nFinal Answer: Done: {seen}")
    if kind == "fail":
        return HTTPError(
            500, "the endpoint broke", type="server_error", headers={"x-should-retry": "false"}
        )
    calls = {
        "tick": [("tick", {"label": label})],
        "publish": [("publish", {"text": label})],
        "both": [("tick", {"label": label}), ("publish", {"text": label})],
        "sleepy": [("sleepy", {"label": label})],
    }.get(kind or "")
    if calls and native:
        return Reply(tool_calls=[ToolCall(name, args) for name, args in calls])
    if calls:
        name, args = calls[0]
        return Reply(
            content=f"Thought: I use {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"
        )
    said = f"You said: {questions[-1] if questions else ''}"
    return Reply(content=said if native else f"Thought: easy.\nFinal Answer: {said}")


@contextlib.contextmanager
def deployment(env: Mapping[str, str], *, instances: int = 2) -> Iterator[aegra_support.Deployment]:
    """`aegra(env, instances=...)` serving `agent` and EXTRA_GRAPHS."""
    plain = aegra_support.config_for_tests

    def with_extra_graphs(workdir: Path) -> Path:
        path = plain(workdir)
        config = json.loads(path.read_text(encoding="utf-8"))
        config["graphs"] = {**config["graphs"], **EXTRA_GRAPHS}
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        return path

    with contextlib.ExitStack() as stack:
        patch = mock.patch.object(aegra_support, "config_for_tests", with_extra_graphs)
        with patch:  # only while the instances start (the config is written once)
            served = stack.enter_context(aegra_support.aegra(env, instances=instances))
        yield served
