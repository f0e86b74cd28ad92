"""The embedded model as a LangChain chat model that writes a prompt of worked examples and asks
llama.cpp's completion endpoint to continue it.

Why not a chat endpoint: the packaged small models are base models, or instruction-tuned ones
too small to follow a page of instructions. They continue documents, and a document of worked
ReAct records (`prompt.py`, `examples.py`) is one they continue in the agent's format. So this
model renders the messages it receives into that document and sends it to `/v1/completions`
with the request's `grammar` (llama.cpp GBNF), `stop` and `max_tokens`.

Contract with the agent (`completion_prompt = True`): under the text protocol it calls
`model.bind_tools(tools).bind(stop=[...], extra_body={"grammar": ...})` and `invoke(messages)`
with a system message, then the conversation in LangChain's standard form or as older
text-rendered steps (`prompt.py` reads both). The bound tools decide which examples are shown;
with no tools bound (the agent's answer-only step) the examples of the tools this model was
last bound with are kept, so the prompt's beginning, and llama.cpp's cache of it, stays the
same across the steps of a run. The reply is an AIMessage with the ReAct text the model wrote,
for the agent's parser; `usage_metadata` comes from the server's usage figures.

The grammar is applied lazily (`lazy_grammar`): the step is first asked for without it and kept
when the grammar accepts what came back (`graph.protocols.text.gbnf_match`), else asked for
again under it. Grammar sampling checks every token of the vocabulary at every step, which
tripled the cost of a step on two cores; few-shot prompted, the model's free step is valid
almost every time.

Policies (how many observations before only an answer is allowed, tokens per step, a run's
deadline) are the agent's settings, not this transport's.

`prompt_mode="chat"` sends the same messages to `/v1/chat/completions` instead, rendered as the
text protocol's transcript (system prompt of instructions and tools, observations as user
turns): the baseline the eval compares against.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import httpx
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field, PrivateAttr

from graph.models.local.copying import whole_question_copy
from graph.models.local.examples import ExamplePool, example_pool, tool_affinity, tool_name
from graph.models.local.prompt import HIDDEN_PREFIX, question_of, render_prompt
from graph.models.local.selection import pick_examples
from graph.protocols.text.gbnf_match import grammar_accepts, grammar_pattern

PromptMode = Literal["completion", "chat"]
ExampleMode = Literal["pick", "all", "none"]
RECORD_STOP = "\nQuestion:"  # without a grammar, a base model goes on to invent the next record
RECORD_END = "\n\n"  # records are apart by a blank line; no step holds one


class LocalModelRequestError(RuntimeError):
    """The llama.cpp server refused a request; `status_code` and `body` say how."""

    def __init__(self, message: str, status_code: int, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class LocalCompletionModel(BaseChatModel):
    """A llama.cpp server's completion endpoint, prompted with worked ReAct examples."""

    completion_prompt: ClassVar[bool] = True

    base_url: str = Field(description="The server's API root, e.g. http://127.0.0.1:PORT/v1")
    model_name: str = Field(default="local", alias="model")
    prompt_mode: PromptMode = "completion"
    examples: ExampleMode = "pick"
    example_count: int = 3  # 2-4 scored alike on the eval; fewer is a shorter, faster prompt
    show_tools: bool = True
    tools: list[Any] = Field(default_factory=list, description="examples when none are bound")
    temperature: float | None = 0.0
    # llama_cpp.server's default 1.1 penalises the tokens just seen: exactly the ones an answer
    # copies from its observation.
    repeat_penalty: float | None = 1.0
    max_tokens: int | None = 256
    timeout: float = 120.0
    max_retries: int = 1
    # Ask without the grammar first and keep the reply when the grammar accepts it; ask again
    # under the grammar only when it does not (`graph.protocols.text.gbnf_match`: grammar
    # sampling over a 262k-token vocabulary costs about 65 ms a token on two cores).
    lazy_grammar: bool = True
    prompt_chars: int = 9000  # examples are dropped (least similar first) beyond this

    model_config = ConfigDict(
        populate_by_name=True, arbitrary_types_allowed=True, protected_namespaces=()
    )

    _last_tools: list[Any] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-completion"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "model": self.model_name,
            "prompt_mode": self.prompt_mode,
            "examples": self.examples,
            "example_count": self.example_count,
        }

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        """The tools are not sent to the server: they choose the examples (and the agent's
        grammar restricts the Action to them)."""
        kwargs.pop("tool_choice", None)
        return self.bind(tools=list(tools), **kwargs)

    # -- the request -------------------------------------------------------------------------

    def prompt_for(self, messages: Sequence[BaseMessage], tools: Sequence[Any] | None) -> str:
        """The completion prompt for these messages (what `invoke` sends), for tests and evals."""
        offered = self._tools_for(tools)
        pool = example_pool(offered) if self.examples != "none" else ExamplePool()
        if self.examples == "pick":
            question = question_of(messages)
            affinity = {tool_name(t): tool_affinity(t, question) for t in offered}
            chosen = pick_examples(question, pool, self.example_count, affinity)
        else:
            chosen = list(pool.examples)
        while True:
            prompt = render_prompt(messages, offered, chosen, show_tools=self.show_tools)
            if len(prompt) <= self.prompt_chars or not chosen:
                return prompt
            chosen = chosen[1:]  # the least similar (or the first declared) goes first

    def _tools_for(self, tools: Sequence[Any] | None) -> list[Any]:
        if tools:
            self._last_tools = list(tools)
            return list(tools)
        return self._last_tools or list(self.tools)

    def _payload(
        self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        kwargs.pop("timeout", None)
        tools = kwargs.pop("tools", None)
        extra = dict(kwargs.pop("extra_body", None) or {})
        grammar = kwargs.pop("grammar", None) or extra.pop("grammar", None)
        max_tokens = kwargs.pop("max_tokens", None) or self.max_tokens
        temperature = kwargs.pop("temperature", self.temperature)
        stops = list(dict.fromkeys([*(stop or []), *(kwargs.pop("stop", None) or [])]))
        body: dict[str, Any] = {"model": self.model_name, **extra}
        if self.prompt_mode == "chat":
            path = "/chat/completions"
            body["messages"] = _chat_messages(messages, tools)
        else:
            path = "/completions"
            body["prompt"] = self.prompt_for(messages, tools)
            if not grammar:
                stops.append(RECORD_STOP)
        if stops:
            body["stop"] = stops
        if grammar:
            body["grammar"] = (
                ending_records(grammar) if self.prompt_mode == "completion" else grammar
            )
        if max_tokens:
            body["max_tokens"] = int(max_tokens)
        if temperature is not None:
            body["temperature"] = temperature
        if self.repeat_penalty is not None:
            body["repeat_penalty"] = self.repeat_penalty
        return self.base_url.rstrip("/") + path, body

    def _result(
        self,
        data: dict[str, Any],
        started: float,
        lazy: str | None,
        messages: Sequence[BaseMessage],
        kwargs: dict[str, Any],
    ) -> ChatResult:
        choice = (data.get("choices") or [{}])[0]
        text = _text_of(data)
        if self.prompt_mode == "completion":
            written = one_line_answer(text.strip())
            offered = self._tools_for(kwargs.get("tools"))
            text = whole_question_copy(written, question_of(messages), offered)
        usage = data.get("usage") or {}
        message = AIMessage(
            content=text,
            response_metadata={
                "model_name": data.get("model") or self.model_name,
                "finish_reason": choice.get("finish_reason"),
                "seconds": round(time.monotonic() - started, 3),
            },
        )
        if self.prompt_mode == "completion" and text != written:
            message.response_metadata["copy_repaired"] = True  # see `copying.py`
        if lazy:  # the grammar was left out and accepted the reply, or the step was retried
            message.response_metadata["lazy_grammar"] = lazy
        if usage:
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
            message.usage_metadata = {
                "input_tokens": prompt_tokens,
                "output_tokens": completion_tokens,
                "total_tokens": int(usage.get("total_tokens") or prompt_tokens + completion_tokens),
            }
        return ChatResult(generations=[ChatGeneration(message=message)])

    # -- BaseChatModel -----------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        url, body = self._payload(messages, stop, dict(kwargs))
        started = time.monotonic()
        timeout = kwargs.get("timeout") or self.timeout
        with httpx.Client(trust_env=False) as client:
            free = self._free_attempt(body)
            if free is not None:
                data = self._post(client, url, free, timeout)
                if _accepted(body["grammar"], data):
                    return self._result(data, started, "accepted", messages, kwargs)
            left = max(timeout - (time.monotonic() - started), 0.1)
            data = self._post(client, url, body, left if free is not None else timeout)
            return self._result(data, started, "retried" if free else None, messages, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        url, body = self._payload(messages, stop, dict(kwargs))
        started = time.monotonic()
        timeout = kwargs.get("timeout") or self.timeout
        async with httpx.AsyncClient(trust_env=False) as client:
            free = self._free_attempt(body)
            if free is not None:
                data = await self._apost(client, url, free, timeout)
                if _accepted(body["grammar"], data):
                    return self._result(data, started, "accepted", messages, kwargs)
            left = max(timeout - (time.monotonic() - started), 0.1)
            data = await self._apost(client, url, body, left if free is not None else timeout)
            return self._result(data, started, "retried" if free else None, messages, kwargs)

    # -- lazy grammar ------------------------------------------------------------------------

    def _free_attempt(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The request without its grammar, when the grammar can be checked here (see
        `gbnf_match`): stopping where a record ends, since nothing else ends it."""
        grammar = body.get("grammar")
        if not (self.lazy_grammar and grammar and self.prompt_mode == "completion"):
            return None
        if grammar_pattern(grammar) is None:
            return None
        free = {key: value for key, value in body.items() if key != "grammar"}
        free["stop"] = list(dict.fromkeys([*body.get("stop", []), RECORD_STOP, RECORD_END]))
        return free

    # -- the wire ----------------------------------------------------------------------------

    def _post(
        self, client: httpx.Client, url: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        for attempt in range(self.max_retries + 1):
            try:
                response = client.post(url, json=body, timeout=timeout)
            except httpx.TimeoutException as exc:
                raise _timeout(timeout) from exc
            except httpx.TransportError as exc:
                if attempt < self.max_retries:
                    time.sleep(_backoff(attempt))
                    continue
                raise ConnectionError(f"the llama.cpp server at {url} failed: {exc}") from exc
            if response.status_code >= 500 and attempt < self.max_retries:
                time.sleep(_backoff(attempt))
                continue
            return _json(response)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _apost(
        self, client: httpx.AsyncClient, url: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        for attempt in range(self.max_retries + 1):
            try:
                response = await client.post(url, json=body, timeout=timeout)
            except httpx.TimeoutException as exc:
                raise _timeout(timeout) from exc
            except httpx.TransportError as exc:
                if attempt < self.max_retries:
                    await asyncio.sleep(_backoff(attempt))
                    continue
                raise ConnectionError(f"the llama.cpp server at {url} failed: {exc}") from exc
            if response.status_code >= 500 and attempt < self.max_retries:
                await asyncio.sleep(_backoff(attempt))
                continue
            return _json(response)
        raise AssertionError("unreachable")  # pragma: no cover


def _text_of(data: dict[str, Any]) -> str:
    choice = (data.get("choices") or [{}])[0]
    text = choice.get("text")
    if text is None:
        text = (choice.get("message") or {}).get("content") or ""
    return text


def _accepted(grammar: str, data: dict[str, Any]) -> bool:
    """Whether `grammar` accepts a reply written without it, as the agent will read it (up to
    the end of a Final Answer's line: under the grammar, the step would have ended there)."""
    return grammar_accepts(grammar, one_line_answer(_text_of(data).strip())) is True


def one_line_answer(text: str) -> str:
    """The reply up to the end of its Final Answer's line: in the prompt a record's answer is
    one line, and without a grammar a base model goes on with more lines of the same."""
    at = text.find("Final Answer:")
    if at < 0:
        return text
    end = text.find("\n", at)
    return text if end < 0 else text[:end].rstrip()


def ending_records(grammar: str) -> str:
    """The grammar, also allowing the newline that ends a record in the prompt.

    In the prompt every Final Answer line ends with a newline; the agent's grammar allows the
    reply to end only by the end-of-sequence token, which a base model in the middle of a
    document hardly ever predicts. Forbidden its newline, it wrote on to the token limit
    ("30.50000000000125000...", the answer again and again). Allowing one trailing newline
    lets the model end the answer where it wants to, after which the grammar only allows the
    end. What the step can say is unchanged (the parser strips the newline).
    """
    lines = grammar.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("root ::= "):
            lines[index] = f'root ::= ({line.removeprefix("root ::= ")}) "\\n"?'
            break
    return "\n".join(lines)


def _backoff(attempt: int) -> float:
    return 0.25 * (2**attempt)


def _timeout(seconds: float) -> TimeoutError:
    return TimeoutError(f"the llama.cpp server did not answer within {seconds:g} s")


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = {"error": {"message": response.text[:500]}}
    if response.status_code >= 400:
        error = data.get("error") if isinstance(data, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        detail = detail or (data.get("detail") if isinstance(data, dict) else None) or data
        raise LocalModelRequestError(
            f"HTTP {response.status_code}: {detail}", response.status_code, data
        )
    return data if isinstance(data, dict) else {}


def _chat_messages(messages: Sequence[BaseMessage], tools: Sequence[Any] | None) -> list[dict]:
    """The text protocol's chat transcript (the `chat` prompt mode)."""
    from graph.protocols.text.prompts import text_system_prompt, text_transcript

    visible = [
        m for m in messages if not (isinstance(m.id, str) and m.id.startswith(HIDDEN_PREFIX))
    ]
    system = next((m.text for m in visible if isinstance(m, SystemMessage)), None)
    if system is None and tools:
        system = text_system_prompt([t for t in tools if tool_name(t)])
    out = [{"role": "system", "content": system}] if system else []
    for message in text_transcript(visible):
        role = "assistant" if isinstance(message, AIMessage) else "user"
        if isinstance(message, HumanMessage) or role == "assistant":
            out.append({"role": role, "content": message.text})
    return out
