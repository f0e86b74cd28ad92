"""The settings of a run, resolved from their layers and checked: the environment, the
operator's (`build_graph` arguments, the command line) and the caller's run context, which may
only choose what a caller may. A bad value is one sentence that names where it came from."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from graph.settings.fields import ENV_VARS, RUN_FIELDS, AgentContext, ConfigError


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
        message = error["msg"].removeprefix("Value error, ")  # our validators' own words
        problems.append(f"{where}: {message}, got {shown}")
    lead = "Refused run context" if fields <= run else "Invalid agent configuration"
    return f"{lead}: " + "; ".join(problems) + "."
