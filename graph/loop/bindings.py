"""What the nodes share for one compiled graph: the model, tools and system prompt
`build_graph` was given, the operator's settings, and small bounded caches of the work every
step would otherwise redo (validating the same settings, binding the same tools to the same
model)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool

from graph import protocols
from graph.caller_schemas import settings_part
from graph.lru import LRU
from graph.middleware.chain import AsyncWrap, Wrap, model_layers, tool_layers
from graph.middleware.spans import traced_awrap, traced_wrap
from graph.models import factory
from graph.policies import loop_policies
from graph.protocols.native import DEFAULT_INSTRUCTIONS
from graph.protocols.text.grammar import use_grammar
from graph.protocols.text.observations import quotable_lines
from graph.settings import (
    EMBEDDED_DEFAULTS,
    ENV_VARS,
    AgentContext,
    ConfigError,
    resolve_run_context,
)
from graph.state import LOOP_KEYS
from graph.steps import latest_observations, run_messages
from graph.tooling.registry import one_per_name

# The embedded model is small and slow: it gets bounds of its own unless the operator set them.
LOCAL_DEFAULTS = dict(EMBEDDED_DEFAULTS)  # declared once, with the settings

_ENV_NAMES = frozenset(ENV_VARS.values())


class Bindings:
    """The fixed parts of a graph, and the per-run settings derived from them."""

    def __init__(
        self,
        model: BaseChatModel | None,
        tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | None,
        overrides: Mapping[str, Any],
        load_tools: Callable[[list[str] | None, str | None], list[BaseTool]],
        middleware: Sequence[AgentMiddleware] = (),
        response_format: Any = None,
        system_prompt: SystemMessage | None = None,
    ) -> None:
        self.model = model
        # a SystemMessage given to build_graph, sent as given (its blocks and extras kept) while
        # the run's `system_prompt` setting is its text (`system_message_for`)
        self.system_prompt = system_prompt
        self.response_format = response_format
        self.middleware = list(middleware)
        # the loop's own policies (graph/policies) outermost, then the user's wrappers
        self.policies = loop_policies(self)
        self.user_model_layers = model_layers(self.middleware)
        self.tool_layers = tool_layers(self.middleware)
        # the user's wraps, each call in the span `create_agent` gives it (`middleware.spans`)
        wrapping = self.user_model_layers
        self.user_model_wraps = [traced_wrap(w, "wrap_model_call") for w in wrapping]
        self.user_model_awraps = [traced_awrap(w, "wrap_model_call") for w in wrapping]
        self.tool_wraps = [traced_wrap(w, "wrap_tool_call") for w in self.tool_layers]
        self.tool_awraps = [traced_awrap(w, "wrap_tool_call") for w in self.tool_layers]
        # a middleware's own tools are offered and run like any other
        self.middleware_tools = [t for mw in self.middleware for t in getattr(mw, "tools", [])]
        # provider tools (dicts the provider runs itself): offered to native requests, never run
        self.provider_tools = [t for t in tools or () if isinstance(t, dict)]
        runnable = [as_tool(t) for t in tools or () if not isinstance(t, dict)]
        # the middleware's tools first, as `create_agent` offers them; one per name
        given = [*self.middleware_tools, *runnable]
        self.fixed_tools = one_per_name(given) if tools is not None else None
        self.overrides = dict(overrides)
        self.load_tools = load_tools
        self.caller_fields: frozenset[str] = frozenset()  # build_graph(context_schema=...)
        # the keys only the agent's own steps write: the loop's and every middleware's private
        # keys (set by build_graph from the state schema); a tool's Command may not write them
        self.guarded: frozenset[str] = LOOP_KEYS
        # supersteps the middleware's node hooks add: each iteration (before_model and
        # after_model hooks), after think (after_model and after_agent hooks), at the close
        self.step_hooks = self.after_think_hooks = self.closing_hooks = 0
        self._contexts = LRU(64)
        self._env: frozenset[tuple[str, str | None]] | None = None  # as last read
        self._bound = LRU(64)
        self._tools = LRU(16)
        self.tool_nodes = LRU(32)  # a ToolNode per tool selection and approval policy

    def context(self, run_context: Any, *, read_env: bool = True) -> AgentContext:
        """The run's settings, resolved and validated once per distinct run context (raises
        ConfigError with one sentence), with the embedded model's own bounds filled in: every
        node of a run sees this same object. The caller's own context fields are set aside.

        The environment is read where a turn starts (think at the turn's first step) and
        where a resume starts (review), and at the first call in this process; every other
        node (`read_env=False`) takes the environment as it was last read, instead of going
        through every variable again at every step (that cost grows with the shell's
        environment, and a run's settings should not change halfway through it)."""
        run_context = settings_part(run_context, self.caller_fields)
        env = self._env if not read_env and self._env is not None else self._read_env()
        if run_context is None:  # most runs: no context, nothing to serialize
            key: Hashable = ("none", env)
        elif isinstance(run_context, AgentContext):
            key = ("object", run_context.model_dump_json(exclude_unset=True), env)
        else:
            key = ("dict", json.dumps(run_context or {}, sort_keys=True, default=repr), env)
        return self._contexts.get(
            key,
            lambda: self.limits(
                resolve_run_context(
                    self.overrides, run_context, model_object=self.model is not None
                )
            ),
        )

    def model_wraps(self, ctx: AgentContext) -> list[Wrap]:
        """The layers of this run's model call, outermost first, as the chain calls them: the
        loop policies its settings switch on (`LoopPolicy.needs`), then the user's
        `wrap_model_call` middleware."""
        return [*(p.wrap_model_call for p in self._policies_on(ctx)), *self.user_model_wraps]

    def model_awraps(self, ctx: AgentContext) -> list[AsyncWrap]:
        return [*(p.awrap_model_call for p in self._policies_on(ctx)), *self.user_model_awraps]

    def _policies_on(self, ctx: AgentContext) -> list[AgentMiddleware]:
        return [p for p in self.policies if p.acts_on(ctx)]

    def _read_env(self) -> frozenset[tuple[str, str | None]]:
        """The settings' variables that are set: a set intersection reads the environment once
        (a lookup per variable raises KeyError for each unset one: 3x slower)."""
        self._env = frozenset((n, os.environ.get(n)) for n in _ENV_NAMES.intersection(os.environ))
        return self._env

    def tools(self, ctx: AgentContext) -> list[BaseTool]:
        """The run's tools, loaded once per selection (MCP servers start on the first load)."""
        if self.fixed_tools is not None:
            return self.fixed_tools
        key = self.tool_selection(ctx)
        mine = self.middleware_tools
        return self._tools.get(key, lambda: one_per_name([*mine, *self.load_tools(*key)]))

    def tool_selection(self, ctx: AgentContext) -> tuple[tuple[str, ...], str | None]:
        """What picks the run's tools (names, MCP configuration): the key of every cache of
        something built from them, a value, never the tool objects' identities."""
        return tuple(ctx.tools or ()), ctx.mcp_config

    def approvable(self, ctx: AgentContext) -> list[BaseTool]:
        """Every tool an approval entry may name: the run's, and the whole registry (an entry
        for a tool this run does not use is not a mistake; one that names no tool is)."""
        if self.fixed_tools is not None:
            return self.fixed_tools
        every = self._tools.get(
            ((), ctx.mcp_config), lambda: [*self.load_tools(None, ctx.mcp_config)]
        )
        return [*every, *self.tools(ctx)]

    async def atools(self, ctx: AgentContext) -> list[BaseTool]:
        """The same, loaded off the event loop the first time: loading reads files and starts
        MCP servers, which must not block a server's loop (`langgraph dev` refuses it)."""
        if self.fixed_tools is not None:
            return self.fixed_tools
        cached = self._tools.peek(self.tool_selection(ctx))
        return cached if cached is not None else await asyncio.to_thread(self.tools, ctx)

    def is_local(self, ctx: AgentContext) -> bool:
        return self.model is None and factory.wants_local(ctx)

    def limits(self, ctx: AgentContext) -> AgentContext:
        """The settings with the embedded model's own bounds filled in where none was set."""
        if not self.is_local(ctx):
            return ctx
        missing = {k: v for k, v in LOCAL_DEFAULTS.items() if getattr(ctx, k) is None}
        return ctx.model_copy(update=missing) if missing else ctx

    def chat_model(self, ctx: AgentContext) -> BaseChatModel:
        return self.model or factory.resolve_model(ctx)

    def system_message_for(self, ctx: AgentContext) -> SystemMessage:
        """The run's system message: build_graph's SystemMessage as given unless the run set
        another `system_prompt`; else the setting's text (or the default instructions)."""
        own = self.system_prompt
        if own is not None and ctx.system_prompt == own.text:
            return own
        return protocols.system_message(ctx.system_prompt or DEFAULT_INSTRUCTIONS)

    def quotes(
        self,
        ctx: AgentContext,
        protocol: str,
        local: bool,
        messages: Sequence[BaseMessage],
        question_id: str | None = None,
    ) -> list[str]:
        """The lines a Final Answer may be (quoted answers) after the results that end the
        run's part of `messages` (after its question), or none: the answer is free. The results
        are looked for only where quoted answers are on."""
        if not ctx.quoted_answers:
            return []
        if not use_grammar(ctx.constrained_decoding, protocol=protocol, local=local):
            return []
        observations = latest_observations(run_messages(messages, question_id))
        return quotable_lines(observations) if observations else []

    def bound(
        self,
        ctx: AgentContext,
        protocol: str,
        tools: Sequence[BaseTool],
        local: bool,
        quotes: Sequence[str] = (),
        *,
        model: BaseChatModel | None = None,
        provider_tools: Sequence[dict[str, Any]] = (),
        tool_choice: Any = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Runnable:
        """The model as this step calls it: protocol, tools, grammar (with the lines a quoted
        answer may be, if any) and token bound: the default model with no middleware changes
        bound once per combination, a request a middleware changed for that call."""
        text = protocol == "text"  # only text requests ever carry a grammar
        grammar = text and use_grammar(ctx.constrained_decoding, protocol=protocol, local=local)
        quotes = tuple(quotes)  # `quotes()` gives none where there is no grammar

        def make(chat_model: BaseChatModel) -> Runnable:
            options: dict[str, Any] = {}
            if ctx.max_tokens:
                options["max_tokens"] = ctx.max_tokens
            options.update(settings or {})
            provider = [
                *provider_tools,
                *(t for t in self.provider_tools if t not in provider_tools),
            ]
            strict = protocol == "native" and _strict_schema_mode(chat_model, options)
            if protocol == "native" and (provider or tool_choice is not None or strict):
                listed = [*tools, *provider]
                if not listed:
                    return chat_model.bind(**options)
                # a provider's JSON-schema mode wants strict tools, as create_agent binds them
                extra = {"strict": True, **options} if strict else {}
                bound = chat_model.bind_tools(listed, tool_choice=tool_choice, **extra)
                return bound if strict or not options else bound.bind(**options)
            # constrained decoding (text): every reply is a valid, executable step
            return protocols.bind(
                chat_model, protocol, tools, grammar=grammar, quotes=quotes, **options
            )

        if model is not None or provider_tools or tool_choice is not None or settings:
            return make(model or self.chat_model(ctx))
        key = (
            quotes,
            ctx.model,
            ctx.base_url,
            ctx.temperature,
            protocol,
            tuple(tool.name for tool in tools),
            grammar,
            ctx.max_tokens,
            ctx.model_timeout,
            ctx.max_retries,
            ctx.api_key_env,
        )
        return self._bound.get(key, lambda: make(self.chat_model(ctx)))


def as_tool(given: Any) -> BaseTool:
    """A tool as `create_agent` (its `ToolNode`) takes it: a LangChain tool as is, a plain
    function wrapped with `langchain_core.tools.tool` (its name, docstring and signature)."""
    if isinstance(given, BaseTool):
        return given
    if callable(given):
        try:
            return tool(given)
        except ValueError as exc:  # e.g. a function with no docstring
            name = getattr(given, "__name__", repr(given))
            raise ConfigError(f"Tool {name!r} cannot be used: {exc}") from None
    raise ConfigError(
        f"A tool must be a LangChain tool, a function or a provider tool's dict; got "
        f"{type(given).__name__}."
    )


def _strict_schema_mode(model: BaseChatModel, options: Mapping[str, Any]) -> bool:
    """A request in a provider's JSON-schema mode (`response_format`) to an OpenAI-compatible
    chat model outside the Responses API: its tools must be bound strict, or langchain-openai
    refuses to parse the reply (`create_agent` binds them so for the same reason)."""
    if "response_format" not in options:
        return False
    from langchain_openai.chat_models.base import BaseChatOpenAI  # only where it can apply

    return isinstance(model, BaseChatOpenAI) and not getattr(model, "use_responses_api", False)
