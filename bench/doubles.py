"""The benchmarks' stand-ins for a real model and real tools, the same for both agents.

The benchmarks are not tests: they do not import `tests.support` (issue 11), so they carry this
one small double of their own. `BenchModel` is a plain `BaseChatModel` whose reply depends only
on the request (how many assistant messages it holds), so any number of concurrent runs can
share one instance, and its own cost is identical and tiny on both sides. Both agents call it
through `BaseChatModel.invoke` / `ainvoke` (callbacks included), exactly as a real model.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

OBSERVATION_CHARS = 2000
USAGE = {"input_tokens": 120, "output_tokens": 20, "total_tokens": 140}
Policy = Callable[[list[BaseMessage]], AIMessage]


def _observations(count: int = 64, chars: int = OBSERVATION_CHARS) -> list[str]:
    """Distinct pseudo-random texts: nothing for PostgreSQL's TOAST compression to squeeze, so
    the stored bytes are what the savers really write."""
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + " .,"
    return ["".join(rng.choices(alphabet, k=chars)) for _ in range(count)]


OBSERVATIONS = _observations()


@dataclass
class Request:
    """What the model was sent: messages, stop words, and the tool schemas bound to it."""

    messages: list[BaseMessage]
    stop: list[str] | None
    tools: list[dict[str, Any]] = field(default_factory=list)


class BenchModel(BaseChatModel):
    """An instant chat model whose reply is `policy(request messages)`.

    `delay` sleeps per call (`asyncio.sleep` under `ainvoke`, `time.sleep` under `invoke`, so
    async runs never hop to a thread); with `record=True` every request is kept in `requests`.
    """

    delay: float = 0.0
    _policy: Policy = PrivateAttr()
    _record: bool = PrivateAttr(default=False)
    _requests: list[Request] = PrivateAttr(default_factory=list)

    def __init__(self, policy: Policy, *, delay: float = 0.0, record: bool = False) -> None:
        super().__init__(delay=delay)
        self._policy = policy
        self._record = record

    @property
    def _llm_type(self) -> str:
        return "bench"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    @property
    def requests(self) -> list[Request]:
        return self._requests

    def _answer(self, messages: list[BaseMessage], stop: Any, kwargs: dict[str, Any]) -> Any:
        if self._record:
            self._requests.append(Request(list(messages), stop, list(kwargs.get("tools") or [])))
        return ChatResult(generations=[ChatGeneration(message=self._policy(messages))])

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        if self.delay:  # no `run_manager` parameter: LangChain then passes none
            time.sleep(self.delay)
        return self._answer(messages, stop, kwargs)

    async def _agenerate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._answer(messages, stop, kwargs)


def loop_policy(
    iterations: int,
    protocol: str = "native",
    *,
    calls_per_step: int = 1,
    tool: str = "fetch",
    args: Callable[[int, int], dict[str, Any]] | None = None,
) -> Policy:
    """`iterations` tool-calling replies (`calls_per_step` calls each under native), then a
    final answer. The step number is the count of assistant messages in the request."""
    make_args = args or (lambda step, _call: {"index": step})

    def policy(messages: list[BaseMessage]) -> AIMessage:
        step = sum(1 for m in messages if m.type == "ai")
        if step >= iterations:
            final = "Thought: I have everything.\nFinal Answer: done"
            return AIMessage(content=final if protocol == "text" else "done", usage_metadata=USAGE)
        if protocol == "text":
            arguments = json.dumps(make_args(step, 0))
            return AIMessage(
                content=f"Thought: I need item {step}.\nAction: {tool}\nAction Input: {arguments}",
                usage_metadata=USAGE,
            )
        calls = [
            {"name": tool, "args": make_args(step, j), "id": f"call_{step}_{j}"}
            for j in range(calls_per_step)
        ]
        return AIMessage(content="", tool_calls=calls, usage_metadata=USAGE)

    return policy


def fetch_tool() -> BaseTool:
    """Instant tool: item `index` is a distinct 2,000-character text (sync and async forms)."""

    def fetch(index: int) -> str:
        return OBSERVATIONS[index % len(OBSERVATIONS)]

    async def afetch(index: int) -> str:
        return OBSERVATIONS[index % len(OBSERVATIONS)]

    return StructuredTool.from_function(
        func=fetch, coroutine=afetch, name="fetch", description="Fetch one item by its index."
    )


def sleep_tool(seconds: float, kind: str) -> BaseTool:
    """A tool that takes `seconds`: `kind="async"` awaits `asyncio.sleep` (no sync form),
    `kind="sync"` blocks in `time.sleep` (no async form: async runs use a worker thread)."""

    def wait(label: str) -> str:
        time.sleep(seconds)
        return f"{label}: waited {seconds} s"

    async def await_(label: str) -> str:
        await asyncio.sleep(seconds)
        return f"{label}: waited {seconds} s"

    if kind == "async":
        return StructuredTool.from_function(
            coroutine=await_, name="wait", description="Wait a moment."
        )
    return StructuredTool.from_function(func=wait, name="wait", description="Wait a moment.")
