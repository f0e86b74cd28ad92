"""A scripted chat model: replies come from a list, every request is recorded.

It stands in for a real model in unit tests and benchmarks. `bind_tools` works (the tools are
recorded with the request), so both protocols run through their real code paths.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

Item = AIMessage | str | BaseException | Callable[[list[BaseMessage]], "AIMessage | str"]


@dataclass
class Request:
    messages: list[BaseMessage]
    stop: list[str] | None
    tools: list[dict[str, Any]] = field(default_factory=list)


def tool_call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> dict:
    """A tool call as an `AIMessage` carries it."""
    return {
        "name": name,
        "args": args or {},
        "id": id or f"call_{name}_{time.time_ns()}",
        "type": "tool_call",
    }


def calls(*items: dict, content: str = "") -> AIMessage:
    """A native reply asking for these tool calls."""
    return AIMessage(content=content, tool_calls=list(items))


def action(
    protocol: str, name: str, args: dict[str, Any] | str, thought: str = "I need a tool."
) -> AIMessage | str:
    """One scripted reply that calls a tool, in the protocol's own form (a plain string
    argument is the text protocol's bare input, `{"input": ...}` natively)."""
    if protocol == "native":
        return calls(tool_call(name, args if isinstance(args, dict) else {"input": args}))
    shown = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else args
    return f"Thought: {thought}\nAction: {name}\nAction Input: {shown}"


def answer(protocol: str, text: str) -> str:
    """One scripted final answer, in the protocol's own form."""
    return text if protocol == "native" else f"Thought: I know it now.\nFinal Answer: {text}"


class ReplyingChatModel(BaseChatModel):
    """A chat model whose reply comes from `_reply(messages, stop, **kwargs)`: the parts every
    test or benchmark double shares (tool binding that records the schemas with the request,
    an optional delay, sync and async without a thread hop)."""

    delay: float = 0.0

    def bind_tools(self, tools: Sequence[BaseTool | dict], **kwargs: Any) -> Runnable:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> ChatResult:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return self._reply(messages, stop, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._reply(messages, stop, **kwargs)


class ScriptedChatModel(ReplyingChatModel):
    """Replies in order from `script`; a string is plain content, an exception is raised, a
    callable gets the request messages. Running out of script raises, so a test that
    under-scripts fails clearly."""

    script: list[Any]
    cycle: bool = False
    _requests: list[Request] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, script: Iterable[Item], **kwargs: Any) -> None:
        super().__init__(script=list(script), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[Request]:
        return self._requests

    @property
    def remaining(self) -> int:
        return len(self.script) - self._position

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> ChatResult:
        with self._lock:
            self._requests.append(Request(list(messages), stop, kwargs.get("tools") or []))
            if self._position >= len(self.script):
                if not self.cycle or not self.script:
                    raise RuntimeError(
                        f"scripted model: script exhausted after {self._position} replies"
                    )
                self._position = 0
            item = self.script[self._position]
            self._position += 1
        if callable(item) and not isinstance(item, BaseException):
            item = item(messages)
        if isinstance(item, BaseException):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        if stop and isinstance(message.content, str):
            cut = min((message.content.find(s) for s in stop if s in message.content), default=-1)
            if cut >= 0:
                message = message.model_copy(update={"content": message.content[:cut]})
        return ChatResult(generations=[ChatGeneration(message=message)])
