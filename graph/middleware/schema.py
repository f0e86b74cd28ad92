"""The agent's state, input and output schemas extended by the middleware's `state_schema`s.

The agent's own channels win: `messages` stays a delta channel (a middleware schema declares
it with `add_messages`), and `jump_to` is the agent's ephemeral channel. A middleware's other
keys become channels of their own, with the reducers they declare; keys marked
`PrivateStateAttr` (or `OmitFromInput` / `OmitFromOutput`) stay out of the input and output
schemas, as in `create_agent`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NotRequired, Required, get_args, get_origin, get_type_hints

from langchain.agents.middleware.types import OmitFromSchema
from typing_extensions import TypedDict


def hints(schema: type) -> dict[str, Any]:
    """A TypedDict's fields with their annotations (Required / NotRequired unwrapped)."""
    out = {}
    for key, value in get_type_hints(schema, include_extras=True).items():
        while get_origin(value) in (Required, NotRequired):
            value = get_args(value)[0]
        out[key] = value
    return out


def omitted(annotation: Any) -> OmitFromSchema | None:
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, OmitFromSchema):
            return meta
    return None


def extended(
    state: type, input_: type, output: type, extra_schemas: Iterable[type]
) -> tuple[type, type, type]:
    """(state, input, output) schemas with the middleware's keys added after the agent's."""
    own = hints(state)
    added: dict[str, Any] = {}
    for schema in extra_schemas:
        for key, annotation in hints(schema).items():
            if key not in own and key not in added:
                added[key] = annotation
    if not added:
        return state, input_, output
    to_input = {k: a for k, a in added.items() if not (omitted(a) and omitted(a).input)}
    to_output = {k: a for k, a in added.items() if not (omitted(a) and omitted(a).output)}
    return (
        TypedDict("AgentState", {**own, **added}, total=False),  # type: ignore[operator]
        TypedDict("InputState", {**hints(input_), **to_input}, total=False),  # type: ignore[operator]
        TypedDict("OutputState", {**hints(output), **to_output}, total=False),  # type: ignore[operator]
    )


def private_keys(schema: type) -> frozenset[str]:
    """The keys a state schema marks private (`PrivateStateAttr`: out of both the input and the
    output schemas): a middleware's own bookkeeping, which no client may write."""
    found = set()
    for key, annotation in hints(schema).items():
        omit = omitted(annotation)
        if omit is not None and omit.input and omit.output:
            found.add(key)
    return frozenset(found)
