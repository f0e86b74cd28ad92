"""The embedded model as a LangChain chat model: worked records continued by llama.cpp's
completion endpoint, one decision at a time, each under a grammar built for the question.

Why a completion endpoint: the packaged models are base models, or instruction-tuned ones too
small to follow a page of instructions. They continue documents; a document of worked records
(`prompt.py`) is one they continue in the agent's format.

A step is up to two short requests, and the model makes every decision in them:

1. the choice (`Tool:`): the offered tools' names or `none`, under a grammar that allows only
   those; greedy decoding picks the model's most likely option;
2. then, for a tool, its input (`Input:`, `inputs.py`: under the grammar its hints give, or
   from code where they leave no choice); for `none`, the model's own short answer (`Answer:`).

After a result, the choice is another tool or the answer; the answer may be one of the lines
the result offers (quoted answers). When only one line is allowed, code writes it without a
call. Every reply says who decided in `response_metadata["react_decided_by"]` (`model` or
`code`) and, for a call, who wrote the input in `react_argument_by`.

The reply is an AIMessage with ReAct text for the agent's parser. The agent's own grammar
(`extra_body`) is used only in the `chat` prompt mode (the text protocol's transcript, the
eval's baseline): the completion mode builds narrower ones itself.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Generator, Sequence
from typing import Any, ClassVar, Literal

import httpx
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field, PrivateAttr

from graph.messages import ARGUMENT_BY, DECIDED_BY
from graph.models.local import transport
from graph.models.local.builtin_hints import direct_examples
from graph.models.local.constrain import choice_grammar, quote_grammar
from graph.models.local.hints import tool_name
from graph.models.local.inputs import possible, spaced, tool_input
from graph.models.local.prompt import conversation_turns, fixed_part, render_prompt
from graph.models.local.wire import chat_request, chat_result, single, text_of
from graph.protocols.text.grammar import object_grammar
from graph.protocols.text.observations import QUOTED_THOUGHT, quotable_lines
from graph.protocols.text.one_chunk import OneChunkStream

PromptMode = Literal["completion", "chat"]
ExampleMode = Literal["all", "none"]
DIRECT_THOUGHT = "I can answer this myself."
ANSWER_SCHEMA = "answer_schema"  # a bound setting: the JSON schema an answer must match
ANSWER_TOKENS = 60  # a direct answer is one short line
FREE_ANSWER = r'root ::= " " [^\x00-\x20*_] [^\x00-\x1F]{0,200}' + "\n"

Request = dict[str, Any]


class LocalCompletionModel(OneChunkStream, BaseChatModel):
    """A llama.cpp server's completion endpoint, prompted with worked records."""

    completion_prompt: ClassVar[bool] = True

    base_url: str = Field(description="The server's API root, e.g. http://127.0.0.1:PORT/v1")
    model_name: str = Field(default="local", alias="model")
    prompt_mode: PromptMode = "completion"
    examples: ExampleMode = "all"
    tools: list[Any] = Field(default_factory=list, description="examples when none are bound")
    temperature: float | None = 0.0
    # llama_cpp.server's default 1.1 penalises the tokens just seen: exactly the ones an answer
    # copies from its result.
    repeat_penalty: float | None = 1.0
    max_tokens: int | None = 256
    timeout: float = 120.0
    max_retries: int = 1
    quoted_answers: bool = True  # after a result, the answer is one of its quotable lines

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
        }

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        """The tools are not sent to the server: they are the options of the step's choice,
        and their hints give the records shown."""
        kwargs.pop("tool_choice", None)
        return self.bind(tools=list(tools), **kwargs)

    # -- the step ----------------------------------------------------------------------------

    def prompt_for(self, messages: Sequence[BaseMessage], tools: Sequence[Any] | None) -> str:
        """The prompt up to the current question's last line (for tests and evals)."""
        shown = self._tools_for(tools)
        return render_prompt(messages, shown, direct_examples(), examples=self.examples != "none")

    def _tools_for(self, tools: Sequence[Any] | None) -> list[Any]:
        """The tools whose records are shown: the bound ones, or when none are bound (an
        answer-only step) the last ones bound, so the prompt's beginning stays the same."""
        if tools:
            self._last_tools = list(tools)
            return list(tools)
        return self._last_tools or list(self.tools)

    def _step(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[Any] | None,
        max_tokens: int,
        schema: dict[str, Any] | None = None,
    ) -> Generator[Request, dict[str, Any], tuple[str, dict[str, Any]]]:
        """The step's requests, one at a time (each is sent by the caller and its response
        sent back in); returns the reply text and what the reply's metadata says."""
        prompt = self.prompt_for(messages, tools)
        turns = conversation_turns(messages)
        question = turns[-1].question if turns else ""
        offered = {tool_name(t): t for t in tools or [] if possible(t, question)}
        done = [s for s in (turns[-1].steps if turns else []) if s.observation is not None]
        observed = [s.observation for s in done]
        answered = [s.observation for s in done if not s.failed]  # what an answer may quote
        meta: dict[str, Any] = {DECIDED_BY: "model"}
        chosen = None
        if offered and not observed:
            data = yield self._request(prompt + "Tool:", spaced(choice_grammar(list(offered))), 12)
            picked = text_of(data).strip()
            chosen = picked if picked in offered else None
            prompt += f"Tool: {picked or 'none'}\n"
        elif offered:
            data = yield self._request(prompt, choice_grammar(list(offered), after_result=True), 12)
            picked = text_of(data).strip().removeprefix("Tool:").strip()
            chosen = picked if picked in offered else None
            if chosen:
                prompt += f"Tool: {chosen}\n"
        elif not observed:
            prompt += "Tool: none\n"
        if chosen is not None:
            arguments, by = yield from tool_input(
                prompt, offered[chosen], question, max_tokens, self._request
            )
            meta[ARGUMENT_BY] = by
            text = (
                f"Thought: I should use {chosen}.\nAction: {chosen}\n"
                f"Action Input: {json.dumps(arguments, ensure_ascii=False)}"
            )
            return text, meta
        prompt += "Answer:"
        if schema:  # the grammar writes the schema's JSON object: the answer is typed
            data = yield self._request(prompt, spaced(object_grammar(schema)), max_tokens)
            thought = QUOTED_THOUGHT if observed else DIRECT_THOUGHT
            return f"Thought: {thought}\nFinal Answer: {text_of(data).strip()}", meta
        last_ok = bool(done) and not done[-1].failed
        quotes = quotable_lines(answered[-1:]) if last_ok and self.quoted_answers else []
        if len(quotes) == 1:
            return f"Thought: {QUOTED_THOUGHT}\nFinal Answer: {quotes[0]}", {DECIDED_BY: "code"}
        if quotes:
            data = yield self._request(prompt, spaced(quote_grammar(quotes)), max_tokens)
        else:
            data = yield self._request(prompt, None, min(max_tokens, ANSWER_TOKENS))
            if not text_of(data).strip():
                data = yield self._request(prompt, FREE_ANSWER, min(max_tokens, ANSWER_TOKENS))
        answer = " ".join(text_of(data).split())
        thought = QUOTED_THOUGHT if observed else DIRECT_THOUGHT
        return f"Thought: {thought}\nFinal Answer: {answer}", meta

    def _request(self, prompt: str, grammar: str | None, max_tokens: int) -> Request:
        body: Request = {
            "model": self.model_name,
            "prompt": prompt,
            "max_tokens": int(max_tokens),
            "stop": ["\n"],
        }
        if grammar:
            body["grammar"] = grammar
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.repeat_penalty is not None:
            body["repeat_penalty"] = self.repeat_penalty
        return body

    def _plan(
        self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[str, Generator[Request, dict[str, Any], tuple[str, dict[str, Any]]]]:
        if self.prompt_mode == "chat":
            body = chat_request(
                self.model_name, self.temperature, self.max_tokens, messages, stop, kwargs
            )
            return "/chat/completions", single(body)
        max_tokens = int(kwargs.get("max_tokens") or self.max_tokens or 256)
        schema = kwargs.get(ANSWER_SCHEMA)  # a structured answer (build_graph(response_format))
        return "/completions", self._step(messages, kwargs.get("tools"), max_tokens, schema)

    # -- BaseChatModel -----------------------------------------------------------------------

    def prefix_for(self, messages: Sequence[BaseMessage], tools: Sequence[Any] | None) -> str:
        """The prompt's fixed part (instructions, worked records) and the blank line after
        it: what every prompt of this conversation begins with."""
        shown = self._tools_for(tools)
        examples = self.examples != "none"
        return fixed_part(messages, shown, direct_examples(), examples=examples) + "\n\n"

    def warm(self, tools: Sequence[Any] | None = None) -> None:
        """Have the model evaluate (or restore) the worked records before the first question
        (the CLI does it while the command gets ready)."""
        if self.prompt_mode == "completion":
            transport.warm(self.base_url, self.prefix_for([], tools))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if transport.in_process(self.base_url):
            return self._in_process(messages, stop, kwargs)
        path, plan = self._plan(messages, stop, kwargs)
        url = self.base_url.rstrip("/") + path
        started = time.monotonic()
        timeout = kwargs.get("timeout") or self.timeout
        usage: list[dict[str, Any]] = []
        with httpx.Client(trust_env=False) as client:
            try:
                body = next(plan)
                while True:
                    left = max(timeout - (time.monotonic() - started), 0.1)
                    data = transport.post(client, url, body, left, self.max_retries)
                    usage.append(data.get("usage") or {})
                    body = plan.send(data)
            except StopIteration as done:
                text, meta = done.value
        return chat_result(text, meta, usage, started, self.model_name, stop)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if transport.in_process(self.base_url):  # llama.cpp computes: off the event loop
            return await asyncio.to_thread(self._in_process, messages, stop, kwargs)
        path, plan = self._plan(messages, stop, kwargs)
        url = self.base_url.rstrip("/") + path
        started = time.monotonic()
        timeout = kwargs.get("timeout") or self.timeout
        usage: list[dict[str, Any]] = []
        async with httpx.AsyncClient(trust_env=False) as client:
            try:
                body = next(plan)
                while True:
                    left = max(timeout - (time.monotonic() - started), 0.1)
                    data = await transport.apost(client, url, body, left, self.max_retries)
                    usage.append(data.get("usage") or {})
                    body = plan.send(data)
            except StopIteration as done:
                text, meta = done.value
        return chat_result(text, meta, usage, started, self.model_name, stop)

    def _in_process(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        """The step on the model loaded in this process, its KV cache first made to begin
        with the prompt's fixed part (restored from disk when it does not)."""
        if self.prompt_mode != "completion":
            raise ValueError("the in-process model takes the completion prompt mode only")
        started = time.monotonic()
        timeout = kwargs.get("timeout") or self.timeout
        model = transport.engine()
        model.warm(self.prefix_for(messages, kwargs.get("tools")))
        _path, plan = self._plan(messages, stop, kwargs)
        usage: list[dict[str, Any]] = []
        try:
            body = next(plan)
            while True:
                data = model.complete(body, max(timeout - (time.monotonic() - started), 0.1))
                usage.append(data.get("usage") or {})
                body = plan.send(data)
        except StopIteration as done:
            text, meta = done.value
        return chat_result(text, meta, usage, started, self.model_name, stop)
