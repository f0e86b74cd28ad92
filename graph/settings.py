"""Run configuration: one typed object, the LangGraph runtime context.

Precedence, highest first: what a run passes (`context=` from code, the form in Studio), what
`build_graph(...)` was given, the environment (and `.env`), then the defaults below. The API key
itself is never part of it: only the name of the variable that holds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Protocol = Literal["auto", "native", "text"]


class ConfigError(ValueError):
    """A configuration a user can fix; the message says what to set."""


class AgentContext(BaseModel):
    """Settings for one run of the agent."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        default="gpt-4o-mini",
        description="Model name at the endpoint (env REACT_AGENT_MODEL).",
    )
    base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint, e.g. DashScope, DeepSeek, vLLM, Ollama, "
        "llama.cpp (env OPENAI_BASE_URL). Empty means api.openai.com.",
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Name of the environment variable that holds the API key "
        "(env REACT_AGENT_API_KEY_ENV). The key itself never enters the state.",
    )
    protocol: Protocol = Field(
        default="auto",
        description="native: function calling; text: Thought/Action/Observation text protocol "
        "for models without tools; auto: native, falling back to text when the endpoint "
        "rejects tools (env REACT_AGENT_PROTOCOL).",
    )
    max_steps: int = Field(
        default=10,
        ge=1,
        le=200,
        description="Most think/act/observe iterations per run (env REACT_AGENT_MAX_STEPS).",
    )
    temperature: float | None = Field(
        default=0.0,
        ge=0.0,
        le=2.0,
        description="Sampling temperature (env REACT_AGENT_TEMPERATURE).",
    )
    system_prompt: str | None = Field(
        default=None,
        description="Replaces the agent's opening instructions; under the text protocol the "
        "tool list and the reply format are always added (env REACT_AGENT_SYSTEM_PROMPT).",
    )
    tools: list[str] | None = Field(
        default=None,
        description="Built-in tools to offer, by name; empty means all (env REACT_AGENT_TOOLS).",
    )
    approve: list[str] = Field(
        default_factory=list,
        description="Tools whose calls pause for a person's approval first, by name; '*' means "
        "all (env REACT_AGENT_APPROVE). Tools can also ask for it themselves with "
        "metadata={'requires_approval': True}.",
    )
    observation_limit: int = Field(
        default=4000,
        ge=100,
        description="Longest observation passed back to the model, in characters; the rest is "
        "cut with a note saying how much (env REACT_AGENT_OBSERVATION_LIMIT).",
    )
    tool_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds one tool call may take (env REACT_AGENT_TOOL_TIMEOUT).",
    )
    max_invalid: int = Field(
        default=3,
        ge=1,
        description="Consecutive unparseable replies before the run ends with status error "
        "(env REACT_AGENT_MAX_INVALID).",
    )
    model_timeout: float = Field(
        default=120.0,
        gt=0,
        description="Seconds one model request may take (env REACT_AGENT_MODEL_TIMEOUT).",
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        description="Retries, with backoff, of rate-limited or failed model requests "
        "(env REACT_AGENT_MAX_RETRIES).",
    )
    constrained_decoding: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Send a grammar built from the tool schemas with text-protocol requests so "
        "every reply is a valid step: auto = only to the embedded local model, on = to any "
        "endpoint that accepts llama.cpp's `grammar` field, off = never "
        "(env REACT_AGENT_CONSTRAINED_DECODING).",
    )
    answer_on_limit: bool = Field(
        default=False,
        description="When max_steps is reached, ask the model once more for its best answer "
        "from what it has (env REACT_AGENT_ANSWER_ON_LIMIT).",
    )

    @field_validator("tools", "approve", mode="before")
    @classmethod
    def _split_names(cls, value: Any, info: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        if isinstance(value, list):
            value = [name for name in value if isinstance(name, str) and name.strip()]
            if not value and info.field_name == "tools":
                return None
        return value

    @field_validator("base_url", "system_prompt", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


ENV_VARS: dict[str, str] = {
    "model": "REACT_AGENT_MODEL",
    "base_url": "OPENAI_BASE_URL",
    "api_key_env": "REACT_AGENT_API_KEY_ENV",
    "protocol": "REACT_AGENT_PROTOCOL",
    "max_steps": "REACT_AGENT_MAX_STEPS",
    "temperature": "REACT_AGENT_TEMPERATURE",
    "system_prompt": "REACT_AGENT_SYSTEM_PROMPT",
    "tools": "REACT_AGENT_TOOLS",
    "approve": "REACT_AGENT_APPROVE",
    "observation_limit": "REACT_AGENT_OBSERVATION_LIMIT",
    "tool_timeout": "REACT_AGENT_TOOL_TIMEOUT",
    "max_invalid": "REACT_AGENT_MAX_INVALID",
    "model_timeout": "REACT_AGENT_MODEL_TIMEOUT",
    "max_retries": "REACT_AGENT_MAX_RETRIES",
    "constrained_decoding": "REACT_AGENT_CONSTRAINED_DECODING",
    "answer_on_limit": "REACT_AGENT_ANSWER_ON_LIMIT",
}


def env_overrides(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings the environment sets, by field name (unset and empty variables skipped)."""
    env = os.environ if env is None else env
    return {field: env[var] for field, var in ENV_VARS.items() if env.get(var, "").strip()}


def resolve_context(
    *layers: Mapping[str, Any] | AgentContext | None, env: Mapping[str, str] | None = None
) -> AgentContext:
    """Merge env and the given layers (later wins) into one validated context.

    An `AgentContext` layer contributes only the fields it was given explicitly, so a run that
    sets `max_steps` in Studio does not reset the model chosen by `build_graph`.
    """
    merged: dict[str, Any] = dict(env_overrides(env))
    for layer in layers:
        if isinstance(layer, AgentContext):
            merged.update(layer.model_dump(exclude_unset=True))
        elif layer:
            merged.update({k: v for k, v in layer.items() if v is not None})
    try:
        return AgentContext(**merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from None


def _explain(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        where = f"{field} (env {ENV_VARS[field]})" if field in ENV_VARS else field
        problems.append(f"{where}: {error['msg']}, got {error.get('input')!r}")
    return "Invalid agent configuration: " + "; ".join(problems) + "."


def load_env_file(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Read `.env` (from the current directory upwards) without overriding the environment."""
    from dotenv import find_dotenv, load_dotenv

    found = str(path) if path else find_dotenv(usecwd=True)
    if found and Path(found).is_file():
        load_dotenv(found, override=False)
        return Path(found)
    return None
