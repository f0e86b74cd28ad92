"""Doubles for the concurrency probe (tests/faults/test_probe_concurrency.py): a model that
answers from its own conversation, so any number of runs can share one model object and each
run's replies, usage and steps are its own; and tools that count, block on a gate, or swallow
their cancellation.

`ConversationModel` reads the last user message `q<N>` (any text works: it is echoed back):

- no result yet in this turn: one call, `tool(text=<question>)` (natively, or as the text
  protocol's Action), with a call id that names the question;
- a result in this turn: the answer `answer <question> <result>`.

Each reply carries usage of `N` input tokens and 1 output token (N read from the question's
digits, else 1), so a run's usage says whose replies it counted.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tests.support.scripted_model import ReplyingChatModel


def question_of(messages: list[BaseMessage]) -> tuple[str, list[ToolMessage]]:
    """The last user question and the tool results after it."""
    at = max(
        (
            i
            for i, x in enumerate(messages)
            if isinstance(x, HumanMessage)
            and not str(x.id or "").startswith("do-not-render-")
            and not x.text.startswith("Observation:")
        ),
        default=-1,
    )
    asked = messages[at].text if at >= 0 else ""
    results = [x for x in messages[at + 1 :] if isinstance(x, ToolMessage)]
    # the text protocol sends observations back as text in a human or AI message
    return asked, results


def weight(question: str) -> int:
    digits = re.findall(r"\d+", question)
    return int(digits[-1]) if digits else 1


class ConversationModel(ReplyingChatModel):
    """A stateless model: the reply is a function of the conversation (see the module)."""

    protocol: str = "native"
    tool: str = "echo"
    calls: int = 0  # how many times a reply was made (all runs together)

    @property
    def _llm_type(self) -> str:
        return "conversation"

    def _reply(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> ChatResult:
        object.__setattr__(self, "calls", self.calls + 1)
        asked, results = question_of(messages)
        seen = _observations(messages, self.protocol)
        n = weight(asked)
        usage = {"input_tokens": n, "output_tokens": 1, "total_tokens": n + 1}
        meta = {"model_name": "conversation"}  # LangChain's usage handler needs the name
        if self.protocol == "native":
            if results:
                text = f"answer {asked} {results[-1].text}"
                message = AIMessage(content=text, usage_metadata=usage, response_metadata=meta)
            else:
                call = {
                    "name": self.tool,
                    "args": {"text": asked},
                    "id": f"call_{re.sub(r'[^A-Za-z0-9_]', '_', asked)}_{time.time_ns()}",
                    "type": "tool_call",
                }
                message = AIMessage(
                    content="", tool_calls=[call], usage_metadata=usage, response_metadata=meta
                )
        elif seen:
            text = f"Thought: I know it now.\nFinal Answer: answer {asked} {seen[-1]}"
            message = AIMessage(content=text, usage_metadata=usage, response_metadata=meta)
        else:
            text = (
                "Thought: I need a tool.\n"
                f"Action: {self.tool}\nAction Input: {json.dumps({'text': asked})}"
            )
            message = AIMessage(content=text, usage_metadata=usage, response_metadata=meta)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _observations(messages: list[BaseMessage], protocol: str) -> list[str]:
    """Under the text protocol, the observations of the current question as the model read
    them (`Observation: ...` in the rendered conversation)."""
    if protocol == "native":
        return []
    asked, _ = question_of(messages)
    asked_at = max(
        (i for i, x in enumerate(messages) if isinstance(x, HumanMessage) and x.text == asked),
        default=-1,
    )
    found: list[str] = []
    for message in messages[asked_at + 1 :]:
        for line in (message.text or "").splitlines():
            if line.startswith("Observation:"):
                found.append(line.removeprefix("Observation:").strip())
        if isinstance(message, ToolMessage):
            found.append(message.text)
    return found


class Counted:
    """A thread-safe count of tool executions by label."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, label: str) -> None:
        with self._lock:
            self.counts[label] += 1


async def until(predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll `predicate` on the loop until it holds (a generous bound, only against hangs)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
