"""Every setting of the agent, declared once: its default, its environment variable, its help
and who may set it.

Two kinds, one declaration (`AgentContext`, each field marked `scope`):

* **run** settings are what a caller may choose per run: the run context of LangGraph (what a
  run's `context`, an assistant's config and Studio's form carry). The served API is reachable
  by whoever can call it, so these are only harmless choices: a model from the operator's
  allow-list, temperature, protocol, `max_steps` within the operator's cap, the system prompt,
  tools from the registry by name, and tools to *add* to the approval list.
* **operator** settings come only from the environment (and `.env`), the `react-agent` command
  line, or `build_graph(...)` arguments: the endpoint, the name of the key variable, import
  paths, MCP servers, upper bounds of timeouts and steps, approvals that always apply. No
  request can reach them; a run context that names one is refused with one sentence.

Precedence, highest first: the run context (run settings only), `build_graph(...)` arguments,
the environment, the defaults. The API key is never a setting, only the name of its variable.
`ENVIRONMENT` (`graph.environment`) lists every other variable the project reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from typing_extensions import TypedDict

from graph.environment import ENVIRONMENT, EnvVar, load_env_file, shown_value

__all__ = ["EMBEDDED_DEFAULTS", "ENVIRONMENT", "AgentContext", "ConfigError", "EnvVar",
           "RunContext", "load_env_file", "resolve_context", "shown_value"]  # fmt: skip

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
        "Seconds a whole run may take; the run then ends with what it has. Empty: no limit.",
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
        "Share of the window a request may fill; older turns beyond it are left out of the "
        "request (the thread keeps them). 0 turns this off.", ge=0, le=1,
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


def env_overrides(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings the environment sets, by field name (unset and empty variables skipped)."""
    env = os.environ if env is None else env
    return {field: env[var] for field, var in ENV_VARS.items() if env.get(var, "").strip()}


def _validate(
    merged: Mapping[str, Any],
    run: frozenset[str] = frozenset(),
    names: Mapping[str, str] | None = None,
) -> AgentContext:
    try:
        return AgentContext(**merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, run, names)) from None


def resolve_context(
    *layers: Mapping[str, Any] | AgentContext | None,
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> AgentContext:
    """Merge the environment and trusted layers (later wins) into one validated context.

    Trusted means operator: `build_graph(...)` arguments, the command line. An `AgentContext`
    layer contributes only the fields it was given explicitly. An error names where the bad
    value came from: its environment variable, or its label in `labels` (`--protocol`).
    """
    merged: dict[str, Any] = dict(env_overrides(env))
    names = {field: f"{field} (env {ENV_VARS[field]})" for field in merged}
    for layer in layers:
        given = layer.model_dump(exclude_unset=True) if isinstance(layer, AgentContext) else layer
        given = {k: v for k, v in (given or {}).items() if v is not None}
        merged.update(given)
        names.update({field: (labels or {}).get(field, field) for field in given})
    return _validate(merged, names=names)


def resolve_run_context(
    operator: Mapping[str, Any],
    run: Mapping[str, Any] | AgentContext | None,
    *,
    model_object: bool = False,
) -> AgentContext:
    """The settings of one run: the operator's (environment + `build_graph` arguments) with the
    caller's run context on top, after checking that the caller only chose what a caller may.

    An `AgentContext` object can only come from code in this process, which is the operator;
    a mapping is what a served run carries and is checked field by field. With a chat model
    object from `build_graph` (`model_object`), a run's model name only names that model.
    """
    base = resolve_context(operator)
    if isinstance(run, AgentContext):
        return _validate({**base.model_dump(), **run.model_dump(exclude_unset=True)})
    given = {key: value for key, value in (run or {}).items() if value is not None}
    refused = sorted(key for key in given if key not in RUN_FIELDS)
    if refused:
        operator_only = [k for k in refused if k in AgentContext.model_fields]
        unknown = [k for k in refused if k not in AgentContext.model_fields]
        parts = []
        if operator_only:
            parts.append(
                f"{', '.join(operator_only)} cannot be set by a run (operator settings: set "
                f"{', '.join(ENV_VARS[k] for k in operator_only)} or pass them to build_graph)"
            )
        if unknown:
            parts.append(
                f"unknown setting(s) {', '.join(unknown)} (a run may set: "
                f"{', '.join(sorted(RUN_FIELDS))})"
            )
        raise ConfigError("Refused run context: " + "; ".join(parts) + ".")
    _check_step_cap(given.get("max_steps"), base)
    merged = {**base.model_dump(), **given}
    if "approve" in given:  # a run adds approvals; it never removes the operator's
        extra = given["approve"]
        extra = extra.split(",") if isinstance(extra, str) else extra
        if isinstance(extra, list):  # anything else is refused by validation, in one sentence
            merged["approve"] = [*base.approve, *[n for n in extra if n not in base.approve]]
    ctx = _validate(merged, run=frozenset(given))
    _check_caller_choices(ctx, base, given, model_object)
    return ctx


def _check_step_cap(value: Any, base: AgentContext) -> None:
    """A run's max_steps above the operator's cap names the cap, whatever else it exceeds."""
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]{1,18}\s*", value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value > base.max_steps_cap:
        shown = value if value < 10**18 else "a number above 10**18"  # str() of 10**5000 fails
        raise ConfigError(
            f"Refused run context: max_steps={shown} is above the operator's cap "
            f"({base.max_steps_cap}, REACT_AGENT_MAX_STEPS_CAP)."
        )


def _check_caller_choices(
    ctx: AgentContext, base: AgentContext, given: Mapping[str, Any], model_object: bool
) -> None:
    if "max_steps" in given:
        _check_step_cap(ctx.max_steps, base)
    if (
        "model" in given
        and not model_object
        and ctx.model not in {base.model, *base.allowed_models}
    ):
        allowed = ", ".join(sorted({base.model, *base.allowed_models}))
        raise ConfigError(
            f"Refused run context: model {ctx.model!r} is not allowed here (allowed: {allowed}; "
            "the operator lists more in REACT_AGENT_ALLOWED_MODELS)."
        )
    if any(":" in name for name in ctx.tools or []) and ctx.tools != base.tools:
        raise ConfigError(
            "Refused run context: tools are chosen by name; `module:attribute` import paths "
            "are an operator setting (REACT_AGENT_TOOLS, --tools or build_graph)."
        )


def _explain(
    exc: ValidationError, run: frozenset[str] = frozenset(), names: Mapping[str, str] | None = None
) -> str:
    """One sentence naming each bad value by its source (`names`: an environment variable, a
    command-line flag); a value the run context gave is named as the run's."""
    problems, fields = [], set()
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        fields.add(field)
        where = field if field in run else (names or {}).get(field, field)
        try:
            shown = repr(error.get("input"))
        except ValueError:  # an int past Python's 4300-digit str() limit
            shown = "a number too large to show"
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        problems.append(f"{where}: {error['msg']}, got {shown}")
    lead = "Refused run context" if fields <= run else "Invalid agent configuration"
    return f"{lead}: " + "; ".join(problems) + "."
