"""Every setting, declared once: `AgentContext`, each field with its default, environment
variable, help and scope (run or operator), and what is derived from that one declaration (the
variables' names, the embedded model's own defaults, the run context Studio's form shows).
The package docstring (`graph.settings`) says who may set what."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import TypedDict

from graph.environment import shown_value

Protocol, Scope = Literal["auto", "native", "text"], Literal["run", "operator"]


class ConfigError(ValueError):
    """A configuration a user can fix; the message says what to set."""


def _setting(
    default: Any, env: str, scope: Scope, help: str, *, embedded: Any = None, **bounds: Any
) -> Any:
    """A field with its environment variable and scope recorded beside its help text, and its
    value for the embedded model where that has its own (`EMBEDDED_DEFAULTS`): the help says
    it, so the settings' help, the docs' table and `react-agent config` give the one value."""
    extra: dict[str, Any] = {"env": env, "scope": scope}
    if embedded is not None:
        extra["embedded"] = embedded
        help = f"{help} The embedded model's default: {shown_value(embedded)}."
    if callable(default):
        return Field(default_factory=default, description=help, json_schema_extra=extra, **bounds)
    return Field(default=default, description=help, json_schema_extra=extra, **bounds)


class AgentContext(BaseModel):
    """Settings for one run of the agent, resolved and validated (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    # -- run settings: a caller may choose these --------------------------------------------
    model: str = _setting(
        "gpt-4o-mini", "REACT_AGENT_MODEL", "run",
        "Model name at the endpoint; per run only names in REACT_AGENT_ALLOWED_MODELS (or the "
        "operator's own model). `local` is the embedded offline model.",
    )  # fmt: skip
    protocol: Protocol = _setting(
        "auto", "REACT_AGENT_PROTOCOL", "run",
        "native: function calling; text: the Thought/Action/Observation text protocol for "
        "models without tools; auto: native, falling back to text when the endpoint rejects "
        "tools.",
    )  # fmt: skip
    max_steps: int = _setting(
        10, "REACT_AGENT_MAX_STEPS", "run",
        "Most think/act/observe iterations per run (at most REACT_AGENT_MAX_STEPS_CAP).",
        ge=1, le=1000,
    )  # fmt: skip
    temperature: float | None = _setting(
        0.0, "REACT_AGENT_TEMPERATURE", "run", "Sampling temperature.", ge=0.0, le=2.0
    )
    system_prompt: str | None = _setting(
        None, "REACT_AGENT_SYSTEM_PROMPT", "run",
        "Replaces the agent's opening instructions; under the text protocol the tool list and "
        "the reply format are always added.",
        max_length=20_000,
    )  # fmt: skip
    tools: list[str] | None = _setting(
        None, "REACT_AGENT_TOOLS", "run",
        "Tools to offer, by name; empty means all built-in tools. `package.module:attribute` "
        "entries (your own tools) are an operator choice: environment, CLI or build_graph.",
    )  # fmt: skip
    approve: list[str] = _setting(
        list, "REACT_AGENT_APPROVE", "run",
        "Tools whose calls pause for a person's approval first, by name; '*' means all. A run "
        "can only add to the operator's list. Tools can also ask for it themselves with "
        "metadata={'requires_approval': True}.",
    )  # fmt: skip
    observation_limit: int = _setting(
        4000, "REACT_AGENT_OBSERVATION_LIMIT", "run",
        "Longest observation passed back to the model, in characters; the rest is cut with a "
        "note saying how much.",
        ge=100, le=100_000,
    )  # fmt: skip
    answer_on_limit: bool = _setting(
        False, "REACT_AGENT_ANSWER_ON_LIMIT", "run",
        "When max_steps is reached, ask the model once more for its best answer from what it "
        "has.",
    )  # fmt: skip

    # -- operator settings: environment, command line or build_graph only --------------------
    base_url: str | None = _setting(
        None, "OPENAI_BASE_URL", "operator",
        "OpenAI-compatible endpoint, e.g. DashScope, DeepSeek, vLLM, Ollama, llama.cpp. Empty "
        "means api.openai.com.",
    )  # fmt: skip
    api_key_env: str = _setting(
        "OPENAI_API_KEY", "REACT_AGENT_API_KEY_ENV", "operator",
        "Name of the environment variable that holds the API key. The key itself never enters "
        "the state.",
    )  # fmt: skip
    allowed_models: list[str] = _setting(
        list,
        "REACT_AGENT_ALLOWED_MODELS",
        "operator",
        "Model names a run may choose besides the configured one (comma-separated).",
    )
    max_steps_cap: int = _setting(
        50, "REACT_AGENT_MAX_STEPS_CAP", "operator",
        "Largest max_steps a run may ask for.", ge=1, le=1000,
    )  # fmt: skip
    tool_timeout: float = _setting(
        30.0, "REACT_AGENT_TOOL_TIMEOUT", "operator", "Seconds one tool call may take.", gt=0
    )
    model_timeout: float = _setting(
        120.0, "REACT_AGENT_MODEL_TIMEOUT", "operator",
        "Seconds one model call may take in all (connect, every read, the whole stream).",
        gt=0,
    )  # fmt: skip
    run_timeout: float | None = _setting(
        None, "REACT_AGENT_RUN_TIMEOUT", "operator",
        "Seconds a run may take from its start or its last resume; the run then ends with "
        "what it has. Empty: no limit.",
        gt=0, embedded=30.0,
    )  # fmt: skip
    max_reply_chars: int = _setting(
        100_000, "REACT_AGENT_MAX_REPLY_CHARS", "operator",
        "Longest model reply accepted, in characters; a longer one is refused.", ge=1000,
    )  # fmt: skip
    max_tokens: int | None = _setting(
        None, "REACT_AGENT_MAX_TOKENS", "operator",
        "Most tokens the model may write per step. Empty: the endpoint's default.",
        ge=16, embedded=100,
    )  # fmt: skip
    answer_after: int | None = _setting(
        None, "REACT_AGENT_ANSWER_AFTER", "operator",
        "After this many tool results (failed calls do not count) only a Final Answer is "
        "offered. Empty: never.",
        ge=1, embedded=2,
    )  # fmt: skip
    quoted_answers: bool | None = _setting(
        None, "REACT_AGENT_QUOTED_ANSWERS", "operator",
        "With a grammar, an answer right after an observation is one of its lines (small "
        "models paraphrase into falsehoods). Empty: off.",
        embedded=True,
    )  # fmt: skip
    max_retries: int = _setting(
        2, "REACT_AGENT_MAX_RETRIES", "operator",
        "Retries, with backoff, of rate-limited or failed model requests.", ge=0, le=10,
    )  # fmt: skip
    max_invalid: int = _setting(
        3, "REACT_AGENT_MAX_INVALID", "operator",
        "Consecutive unusable replies before the run ends with status error.", ge=1,
    )  # fmt: skip
    constrained_decoding: Literal["auto", "on", "off"] = _setting(
        "auto", "REACT_AGENT_CONSTRAINED_DECODING", "operator",
        "Send a grammar built from the tool schemas with text-protocol requests so every reply "
        "is a valid step: auto = only to the embedded model, on = to any endpoint that accepts "
        "llama.cpp's `grammar` field, off = never.",
    )  # fmt: skip
    mcp_config: str | None = _setting(
        None,
        "REACT_AGENT_MCP_CONFIG",
        "operator",
        'A JSON file {"mcpServers": {...}} of MCP servers whose tools join the registry.',
    )
    approval_mode: Literal["batched", "per_call"] = _setting(
        "batched", "REACT_AGENT_APPROVAL_MODE", "operator",
        "How approvals pause (HumanInTheLoopMiddleware's interrupt_mode): batched = one pause "
        "per step for all its calls; per_call = one pause per call, as it starts.",
    )  # fmt: skip
    context_window: int | None = _setting(
        None, "REACT_AGENT_CONTEXT_WINDOW", "operator",
        "The model's window in tokens (unset: the model's profile, else 8192).", gt=0,
    )  # fmt: skip
    context_share: float = _setting(
        0.75, "REACT_AGENT_CONTEXT_SHARE", "operator",
        "Share of the window a request aims to fill; beyond it old results are cleared and "
        "older turns left out of the request (the thread keeps them). 0 turns this off.",
        ge=0, le=1,
    )  # fmt: skip
    fallback_models: list[str] = _setting(
        list, "REACT_AGENT_FALLBACK_MODELS", "operator",
        "Models that take over, in order, when the endpoint fails with a connection error, "
        "429 or 5xx: `model`, `model|base_url` or `model|base_url|KEY_VARIABLE`, comma-separated.",
    )  # fmt: skip
    middleware: list[str] = _setting(
        list, "REACT_AGENT_MIDDLEWARE", "operator",
        "LangChain AgentMiddleware to run, by import path (`module:attr`, comma-separated): "
        "an instance, a class taking no arguments, or a function returning one or a list.",
    )  # fmt: skip

    @field_validator(
        "tools", "approve", "allowed_models", "middleware", "fallback_models", mode="before"
    )
    @classmethod
    def _split_names(cls, value: Any, info: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        if isinstance(value, list):
            value = [name for name in value if isinstance(name, str) and name.strip()]
            if not value and info.field_name == "tools":
                return None
        return value

    @field_validator("base_url", "system_prompt", "mcp_config", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("model")
    @classmethod
    def _named_model(cls, value: str) -> str:
        """An empty name would reach the endpoint as model '' and fail there, after the
        question was saved: refused here, before anything runs."""
        if not value.strip():
            raise ValueError("needs a model name, e.g. gpt-4o-mini (or `local`, the embedded one)")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        """An endpoint without http(s):// is taken by the client as a path and fails on the
        first model call, after the question was saved: refused here, before anything runs."""
        parts = urlsplit(value) if value is not None else None
        if parts is not None and (parts.scheme not in ("http", "https") or not parts.netloc):
            raise ValueError("must be an http:// or https:// URL, e.g. http://localhost:8000/v1")
        return value


def _field_extra(name: str) -> dict[str, Any]:
    return AgentContext.model_fields[name].json_schema_extra or {}  # type: ignore[return-value]


ENV_VARS: dict[str, str] = {name: _field_extra(name)["env"] for name in AgentContext.model_fields}
# The embedded model's own values of the settings the operator left unset: it is small and
# slow, so it gets bounds a hosted model does not need. Declared with each field above.
EMBEDDED_DEFAULTS: dict[str, Any] = {
    n: e["embedded"] for n in AgentContext.model_fields if "embedded" in (e := _field_extra(n))
}
RUN_FIELDS = frozenset(n for n in AgentContext.model_fields if _field_extra(n)["scope"] == "run")


def _run_context_schema() -> type:
    """The run context as LangGraph and Studio see it: the run settings only, each with its
    description. A TypedDict, so LangGraph passes the caller's dict through unvalidated and
    `resolve_context` answers a bad value with one sentence instead of a validation dump."""
    fields: dict[str, Any] = {}
    for name in sorted(RUN_FIELDS):
        info = AgentContext.model_fields[name]
        shown = Field(description=info.description, json_schema_extra=_default_of(info))
        fields[name] = Annotated[info.annotation, *info.metadata, shown]
    schema = TypedDict("RunContext", fields, total=False)  # type: ignore[operator]
    schema.__pydantic_config__ = ConfigDict(extra="forbid")  # pydantic's TypedDict config
    return schema


def _default_of(info: Any) -> dict[str, Any]:
    return {} if (d := info.get_default(call_default_factory=True)) is None else {"default": d}


RunContext = _run_context_schema()
