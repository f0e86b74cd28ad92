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
so the next request sends it back as written (never text the reader did not read). Token usage
and the provider's metadata are the inner reply's (its `model_name` as `react_inner_model`, so
a usage counter counts the call once). With `grammar=True` each request carries a GBNF grammar
built from the tool schemas (llama.cpp's `grammar` field), so every reply is a step the reader
accepts. A caller that streams gets the step as one chunk: the raw text is not for a client.

Because the protocol lives in a model, an agent calls it exactly as it calls a model with
function calling: `create_agent(TextReAct(model), tools=[...])` works, and so does this
project's graph (the native-to-text fallback is a swap of the model).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from pydantic import Field

from graph.protocols.text.decoding import request_options
from graph.protocols.text.grammar import grammar_for
from graph.protocols.text.prompts import (
    OBSERVATION,
    text_system_prompt,
    text_transcript,
    tool_spec,
)
from graph.protocols.text.replies import forced_tool, read_text_reply

# function-calling options of `bind_tools` that mean nothing to a model sent no tools (and that
# a provider refuses in a request without them)
FUNCTION_CALLING_ONLY = ("strict", "parallel_tool_calls")
FORCED = "You must use one of the tools in this reply: write an Action, not a Final Answer."

ToolLike = dict[str, Any] | type | Callable[..., Any] | BaseTool


class TextReAct(BaseChatModel):
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

    def __init__(
        self, inner: Runnable[LanguageModelInput, BaseMessage] | None = None, /, **kwargs: Any
    ) -> None:
        if inner is not None:
            kwargs["inner"] = inner
        super().__init__(**kwargs)

    @property
    def _llm_type(self) -> str:
        return "text-react"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        inner = getattr(self.inner, "_llm_type", type(self.inner).__name__)
        return {"inner": inner, "tools": [t["name"] for t in self.tools]}

    def bind_tools(
        self,
        tools: Sequence[ToolLike],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """A copy that offers these tools in its prompt. A forced `tool_choice` cannot be
        enforced in text: the prompt asks for a call, and an answer that is a JSON object is
        read as the forced tool's call (`with_structured_output`); it is not sent, nor are
        the other function-calling options (`FUNCTION_CALLING_ONLY`). `tool_choice="none"`
        offers no tools, so the reply is an answer."""
        specs = [] if tool_choice == "none" else [tool_spec(tool) for tool in tools]
        bound = self.model_copy(update={"tools": specs, "forced": forced_tool(tool_choice)})
        kwargs = {k: v for k, v in kwargs.items() if k not in FUNCTION_CALLING_ONLY}
        return bound.bind(**kwargs) if kwargs else bound

    def request(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages the inner model reads: the system prompt (the caller's instructions,
        the tools and the reply format), then the conversation in the text protocol."""
        system = [m for m in messages if isinstance(m, SystemMessage)]
        instructions = "\n\n".join(m.text for m in system) or None
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        prompt = text_system_prompt(self.tools, instructions)
        if self.forced and self.tools:
            prompt = f"{prompt}\n\n{FORCED}"
        return [SystemMessage(content=prompt), *text_transcript(rest)]

    def read(self, reply: BaseMessage) -> AIMessage:
        """The inner model's reply as a standard message (see the module docstring)."""
        return read_text_reply(reply, self.tools or None, forced=self.forced)

    def _options(self, stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        options = {**kwargs, "stop": [OBSERVATION, *(stop or [])]}
        if self.grammar:
            extra = request_options(grammar_for(self.tools, quotes=self.quotes))["extra_body"]
            options["extra_body"] = {**(kwargs.get("extra_body") or {}), **extra}
        return options

    def _config(self, manager: Any) -> RunnableConfig:
        """The inner call runs as a child of this model's run (traces nest; LangChain's LLM run
        managers have no `get_child`, so it is built as the chain managers build theirs),
        tagged `nostream`: the raw Thought/Action text is not for a client's token stream, the
        parsed message is."""
        if manager is None:
            return {"tags": [TAG_NOSTREAM]}
        child = CallbackManager(handlers=[], parent_run_id=manager.run_id)
        child.set_handlers(manager.inheritable_handlers)
        child.add_tags(manager.inheritable_tags)
        child.add_metadata(manager.inheritable_metadata)
        child.add_tags([TAG_NOSTREAM], inherit=False)
        return {"callbacks": child}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.inner.invoke(
            self.request(messages), self._config(run_manager), **self._options(stop, kwargs)
        )
        return ChatResult(generations=[ChatGeneration(message=self.read(reply))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = await self.inner.ainvoke(
            self.request(messages), self._config(run_manager), **self._options(stop, kwargs)
        )
        return ChatResult(generations=[ChatGeneration(message=self.read(reply))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The step as one chunk: the inner model's text is read whole (its tokens are the
        raw protocol, not for a client), and the inner call is an `invoke`, so provider
        fields a stream drops (a refusal) survive."""
        result = self._generate(messages, stop, run_manager, **kwargs)
        yield _as_chunk(cast(AIMessage, result.generations[0].message))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        result = await self._agenerate(messages, stop, run_manager, **kwargs)
        yield _as_chunk(cast(AIMessage, result.generations[0].message))


def _as_chunk(message: AIMessage) -> ChatGenerationChunk:
    """A whole message as the one chunk of a stream: the calls as `tool_call_chunks` (their
    arguments as JSON), so adding the chunks up gives the message back."""
    chunk = AIMessageChunk(
        content=message.content,
        id=message.id,
        tool_calls=message.tool_calls,
        invalid_tool_calls=message.invalid_tool_calls,
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
        chunk_position="last",
    )
    return ChatGenerationChunk(message=chunk)
