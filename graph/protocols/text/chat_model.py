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

The step as the reader read it is kept in `response_metadata["react_text"]`, so the next
request sends it back as written (never text the reader did not read). Token usage and the
provider's metadata are the inner reply's (its `model_name` as `react_inner_model`, so a usage
counter counts the call once). With
`grammar=True` each request carries a GBNF grammar built from the tool schemas (llama.cpp's
`grammar` field), so every reply is a step the reader accepts.

Because the protocol lives in a model, an agent calls it exactly as it calls a model with
function calling: `create_agent(TextReAct(model), tools=[...])` works, and so does this
project's graph (the native-to-text fallback is a swap of the model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from pydantic import Field

from graph.messages import NOTE, RAW, THOUGHT, new_call_id, refused
from graph.protocols.text.decoding import request_options
from graph.protocols.text.grammar import grammar_for
from graph.protocols.text.prompts import (
    OBSERVATION,
    text_system_prompt,
    text_transcript,
    tool_spec,
)
from graph.protocols.text.reader import parse_react

# The inner reply's `model_name`, kept under this key: LangChain's usage counter
# (`get_usage_metadata_callback`) counts each reply that names its model, and the inner call
# was counted already; the parsed message carries the same usage, so it names no model.
INNER_MODEL = "react_inner_model"

ToolLike = dict[str, Any] | type | Callable[..., Any] | BaseTool


class TextReAct(BaseChatModel):
    """A chat model that speaks the text ReAct protocol to `inner` and answers like a model
    with function calling (see the module docstring)."""

    inner: BaseChatModel
    """The model that writes the text: any LangChain chat model."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The bound tools, as function specs (name, description, JSON-schema parameters)."""
    grammar: bool = False
    """Send a GBNF grammar of the bound tools with each request (llama.cpp servers take it)."""
    quotes: list[str] = Field(default_factory=list)
    """With the grammar: the lines a Final Answer may be (quoted answers); none, it is free."""

    def __init__(self, inner: BaseChatModel | None = None, /, **kwargs: Any) -> None:
        if inner is not None:
            kwargs["inner"] = inner
        super().__init__(**kwargs)

    @property
    def _llm_type(self) -> str:
        return "text-react"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"inner": self.inner._llm_type, "tools": [t["name"] for t in self.tools]}

    def bind_tools(
        self,
        tools: Sequence[ToolLike],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """A copy that offers these tools in its prompt. `tool_choice` cannot be enforced in
        text, so it is accepted and not sent (the reader still only runs the listed tools)."""
        specs = [tool_spec(tool) for tool in tools]
        bound = self.model_copy(update={"tools": specs})
        return bound.bind(**kwargs) if kwargs else bound

    def request(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages the inner model reads: the system prompt (the caller's instructions,
        the tools and the reply format), then the conversation in the text protocol."""
        system = [m for m in messages if isinstance(m, SystemMessage)]
        instructions = "\n\n".join(m.text for m in system) or None
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        prompt = text_system_prompt(self.tools, instructions)
        return [SystemMessage(content=prompt), *text_transcript(rest)]

    def read(self, reply: BaseMessage) -> AIMessage:
        """The inner model's reply as a standard message (see the module docstring)."""
        return read_text_reply(reply, self.tools or None)

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


def read_text_reply(reply: BaseMessage, tools: Sequence[Any] | None) -> AIMessage:
    """A text-protocol reply read into a standard message: `tool_calls` for an action, the
    answer as content, `invalid_tool_calls` with the reason. What the reader reports rides in
    `response_metadata`: the step as read (`react_text`: what later requests send back, never
    text the reader did not read), the thought before a final answer, and its note (e.g. "2
    more actions were ignored"). `tools`: LangChain tools or function specs, or None."""
    if isinstance(reply, AIMessage) and refused(reply):  # for a refusal middleware to see
        return reply
    raw = reply.text
    step = parse_react(raw, tools)
    meta = {**getattr(reply, "response_metadata", {}), RAW: step.read or raw.strip()}
    if "model_name" in meta:  # counted once: see `INNER_MODEL`
        meta[INNER_MODEL] = meta.pop("model_name")
    if step.note:
        meta[NOTE] = step.note
    fields: dict[str, Any] = {
        "id": reply.id,
        "response_metadata": meta,
        "usage_metadata": getattr(reply, "usage_metadata", None),
    }
    if step.kind == "action":
        args = step.tool_input
        if not isinstance(args, dict):  # LangChain's name for one positional input
            args = {} if args in (None, "") else {"__arg1": args}
        call = {"name": step.tool or "", "args": args, "id": new_call_id(), "type": "tool_call"}
        return AIMessage(content=step.thought, tool_calls=[call], **fields)
    if step.kind == "final":
        if step.thought:
            meta[THOUGHT] = step.thought
        return AIMessage(content=step.answer or "", **fields)
    error = step.error or "the reply could not be parsed"
    invalid = {"name": None, "args": raw, "id": new_call_id(), "error": error}
    invalid["type"] = "invalid_tool_call"
    return AIMessage(content=step.thought, invalid_tool_calls=[invalid], **fields)
