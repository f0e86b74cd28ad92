"""`TextReAct`: the text ReAct protocol as a LangChain chat model, so any agent can run a model
that has no function calling.

Wrap any chat model: `TextReAct(ChatOpenAI(model="deepseek-chat"))`. Its `bind_tools` renders
the tools and the Thought / Action / Action Input / Final Answer format into the system prompt;
each call sends the conversation as the text protocol writes it (tool calls as `Action:`
lines, tool results as `Observation:` messages), stops at `Observation:`, and reads the reply
with the pure reader (`reader.parse_react`) into a standard `AIMessage`:

* an action: `tool_calls` with one call (a generated id), the thought as the content;
* a final answer: the answer as the content;
* a reply that cannot be used: `invalid_tool_calls` with the reason, as a provider reports a
  call whose arguments were broken JSON (an agent tells the model, as it does for those).

`replies.read_text_reply` has the whole rule (a call to an unknown tool, a forced tool choice,
no tools bound). The step as the reader read it is kept in `response_metadata["react_text"]`,
so the next request sends it back as written (never text the reader did not read). With
`grammar=True` each request carries a GBNF grammar built from the tool schemas (llama.cpp's
`grammar` field), so every reply is a step the reader accepts. A caller that streams gets the
step as one chunk: the raw text is not for a client.

One call is one chat-model run: the inner model is called inside TextReAct's own run
(`inner_call`), so callbacks, traces and usage counters see one run, whose reply carries the
inner reply's usage and `model_name`, and whose LangSmith parameters are the inner model's.

A reply cut off at the token limit never runs a call the cut fell inside (`truncation`); a
provider `response_format` (`ProviderStrategy`) is asked for in the prompt, not sent
(`answer_format`); the profile and token counts are the inner model's (`inner_facts`).

Because the protocol lives in a model, an agent calls it exactly as it calls a model with
function calling: `create_agent(TextReAct(model), tools=[...])` works, and so does this
project's graph (the native-to-text fallback is a swap of the model).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from graph.protocols.text.answer_format import RESPONSE_FORMAT, answer_note, as_json_answer
from graph.protocols.text.decoding import request_options
from graph.protocols.text.grammar import grammar_for
from graph.protocols.text.inner_call import (
    agenerate,
    child_config,
    generate,
    identity,
    wrapped_model,
)
from graph.protocols.text.inner_facts import InnerFacts
from graph.protocols.text.one_chunk import OneChunkStream
from graph.protocols.text.prompts import (
    OBSERVATION,
    instructions_text,
    provider_tool,
    text_system_prompt,
    text_transcript,
    tool_spec,
)
from graph.protocols.text.replies import forced_tool, read_text_reply
from graph.protocols.text.truncation import cut_off

# function-calling options of `bind_tools` that mean nothing to a model sent no tools (and that
# a provider refuses in a request without them)
FUNCTION_CALLING_ONLY = ("strict", "parallel_tool_calls")
FORCED = "You must use one of the tools in this reply: write an Action, not a Final Answer."
# the standard chat-model settings that belong to the inner model's client, not to a call
CLIENT_SETTINGS = frozenset({"api_key", "timeout", "max_retries", "base_url"})
SET_ON_INNER = "set it on the model it wraps, e.g. TextReAct(ChatOpenAI(model=..., timeout=30))."
FORCED_ONE = "You must use the tool {name} in this reply: write an Action, not a Final Answer."
# what a call's options say to TextReAct, not to the inner model: the tools and the choice are
# in the prompt, and a provider's `response_format` is asked for there (`answer_format`)
KEPT = ("tools", "tool_choice", RESPONSE_FORMAT)

ToolLike = dict[str, Any] | type | Callable[..., Any] | BaseTool


class TextReAct(OneChunkStream, InnerFacts, BaseChatModel):
    """A chat model that speaks the text ReAct protocol to `inner` and answers like a model
    with function calling (see the module docstring)."""

    inner: Runnable[LanguageModelInput, BaseMessage]
    """The model that writes the text: any LangChain chat model (`.bind(...)` or
    `.with_retry()` around one too)."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The bound tools, as function specs (name, description, JSON-schema parameters)."""
    grammar: bool = False
    """Send a GBNF grammar of the bound tools with each request (llama.cpp servers take it)."""
    quotes: list[str] = Field(default_factory=list)
    """With the grammar: the lines a Final Answer may be (quoted answers); none, it is free."""
    forced: str | None = None
    """The tool a forced `tool_choice` names ("any": any tool), or None."""
    temperature: float | None = None
    """Sent with each call to the inner model, when set (LangChain's standard parameter)."""
    max_tokens: int | None = None
    """Sent with each call to the inner model, when set."""
    stop: list[str] | None = None
    """Stop sequences of every call, beside `Observation:`."""
    streaming: bool = False
    """LangChain's standard switch, taken as given: a stream is the parsed step, one chunk."""

    def __init__(
        self, inner: Runnable[LanguageModelInput, BaseMessage] | None = None, /, **kwargs: Any
    ) -> None:
        if inner is not None:
            kwargs["inner"] = inner
        for name in CLIENT_SETTINGS.intersection(kwargs):  # a client the inner model has
            if kwargs.pop(name) is not None:
                warnings.warn(f"TextReAct ignores {name}: {SET_ON_INNER}", stacklevel=2)
        unknown = sorted(set(kwargs) - set(type(self).model_fields))
        if unknown:  # BaseChatModel would drop them silently
            raise TypeError(f"TextReAct takes no {', '.join(unknown)}: {SET_ON_INNER}")
        super().__init__(**kwargs)

    @property
    def _llm_type(self) -> str:
        return "text-react"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        """The inner model's own (what a response cache keys a plain model by) and the settings
        of this model that change the reply: two TextReAct never share a cached reply that
        only one of them would write."""
        settings = ("tools", "grammar", "quotes", "forced", "temperature", "max_tokens", "stop")
        return {"inner": identity(self.inner), **{name: getattr(self, name) for name in settings}}

    def bind_tools(
        self,
        tools: Sequence[ToolLike],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with these tools offered in its prompt: a binding that carries them (and
        the `tool_choice`) as a provider's `bind_tools` does, so an agent that binds the tools
        at every call (`create_agent`) reuses one model, and one that checks whether the tools
        are bound (LangGraph's prebuilt) finds them. A forced `tool_choice` cannot be enforced
        in text: the prompt asks for a call, and an answer that is a JSON object is read as the
        forced tool's call (`with_structured_output`); neither it nor the other function-calling
        options (`FUNCTION_CALLING_ONLY`) are sent on. `tool_choice="none"` offers no tools, so
        the reply is an answer. A provider's built-in tool (`{"type": "web_search_preview"}`)
        is left out: its provider runs it inside a native call, which a text reply never is,
        and the rest of the tools still work (this project's graph leaves it out too)."""
        runnable = [tool for tool in tools if not provider_tool(tool)]
        specs = [] if tool_choice == "none" else [tool_spec(tool) for tool in runnable]
        kwargs = {k: v for k, v in kwargs.items() if k not in FUNCTION_CALLING_ONLY}
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(spec) for spec in specs], **kwargs)

    def offered(self, kwargs: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
        """The tools (function specs) and the forced tool of one call: what `bind_tools`
        bound, else the model's own `tools` and `forced`."""
        if "tools" not in kwargs:
            return self.tools, self.forced
        tools = [tool_spec(tool) for tool in kwargs["tools"] if not provider_tool(tool)]
        return tools, forced_tool(kwargs.get("tool_choice"))

    def request(
        self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None,
        forced: str | None = None, response_format: Any = None,
    ) -> list[BaseMessage]:  # fmt: skip
        """The messages the inner model reads: the system prompt (the caller's instructions,
        the tools and the reply format, the answer's JSON schema under a `response_format`),
        then the conversation in the text protocol. `tools` and `forced`: the call's
        (`offered`); by default the model's own."""
        tools, forced = (self.tools, self.forced) if tools is None else (tools, forced)
        system = [m for m in messages if isinstance(m, SystemMessage)]
        instructions = "\n\n".join(instructions_text(m) for m in system) or None
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        prompt = text_system_prompt(tools, instructions)
        if forced and tools:
            named = forced in {t["name"] for t in tools}
            prompt = f"{prompt}\n\n{FORCED_ONE.format(name=forced) if named else FORCED}"
        note = answer_note(response_format)
        prompt = f"{prompt}\n\n{note}" if note else prompt
        return [SystemMessage(content=prompt), *text_transcript(rest)]

    def read(
        self, reply: BaseMessage, *, counted: bool = False,
        tools: list[dict[str, Any]] | None = None, forced: str | None = None,
        response_format: Any = None,
    ) -> AIMessage:  # fmt: skip
        """The inner model's reply as a standard message (see the module docstring); under a
        `response_format`, an answer's content is its JSON object (`answer_format`)."""
        tools, forced = (self.tools, self.forced) if tools is None else (tools, forced)
        message = read_text_reply(reply, tools or None, forced=forced, counted=counted)
        if answer_note(response_format) is None:
            return message
        return as_json_answer(message, cut=cut_off(reply.response_metadata))

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """The inner model's (provider, model name, temperature): what a trace prices."""
        model, bound = wrapped_model(self.inner)
        if model is None:
            return super()._get_ls_params(stop=stop, **kwargs)
        options = {**bound, **kwargs}
        stop = [*(stop or []), *(options.pop("stop", None) or [])] or None  # a bound stop too
        return model._get_ls_params(stop=stop, **options)

    def _options(
        self, stop: list[str] | None, kwargs: dict[str, Any], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        kwargs = {k: v for k, v in kwargs.items() if k not in KEPT}
        given = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        kwargs = {**{k: v for k, v in given.items() if v is not None}, **kwargs}
        options = {**kwargs, "stop": [OBSERVATION, *(self.stop or []), *(stop or [])]}
        if self.grammar:
            extra = request_options(grammar_for(tools, quotes=self.quotes))["extra_body"]
            options["extra_body"] = {**(kwargs.get("extra_body") or {}), **extra}
        return options

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools, forced = self.offered(kwargs)
        answer_format = kwargs.get(RESPONSE_FORMAT)
        request = self.request(messages, tools, forced, answer_format)
        options = self._options(stop, kwargs, tools)
        model, bound = wrapped_model(self.inner)
        read = partial(self.read, tools=tools, forced=forced, response_format=answer_format)
        if model is None:
            reply = self.inner.invoke(request, child_config(run_manager), **options)
            return _result(read(reply, counted=True))
        reply, llm_output = generate(model, bound, request, options)
        return _result(read(reply), llm_output)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools, forced = self.offered(kwargs)
        answer_format = kwargs.get(RESPONSE_FORMAT)
        request = self.request(messages, tools, forced, answer_format)
        options = self._options(stop, kwargs, tools)
        model, bound = wrapped_model(self.inner)
        read = partial(self.read, tools=tools, forced=forced, response_format=answer_format)
        if model is None:
            reply = await self.inner.ainvoke(request, child_config(run_manager), **options)
            return _result(read(reply, counted=True))
        reply, llm_output = await agenerate(model, bound, request, options)
        return _result(read(reply), llm_output)


def _result(message: AIMessage, llm_output: dict[str, Any] | None = None) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)], llm_output=llm_output)
