"""The schema of a structured answer, checked: the schema itself when the graph is built, and
each answer against it.

LangChain's bindings check a pydantic model, a TypedDict or a dataclass as they parse, but
hand back a JSON-schema dict's value unchecked; `checked` holds those values to their schema
too (jsonschema), so a run never ends answered with a value off its schema.
"""

from __future__ import annotations

from typing import Any

from graph.models.failures import one_line

MAX_SCHEMA_DEPTH = 64  # nested objects and arrays of a JSON schema; real ones use a handful


def schema_depth(schema: Any) -> int:
    """How deeply `schema`'s objects and arrays nest (iteratively: a hostile schema must not
    exhaust the recursion limit while it is being measured)."""
    deepest, pending = 0, [(schema, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_SCHEMA_DEPTH:  # past the limit the answer is known
            pending.extend((child, depth + 1) for child in children)
    return deepest


def check_schema(schema: dict[str, Any], where: str = "response_format") -> None:
    """Refuse, in one sentence (`ValueError`), a JSON schema that is not valid JSON Schema
    (by its own `$schema` draft, else the latest) or that nests too deeply to convert."""
    if schema_depth(schema) > MAX_SCHEMA_DEPTH:
        raise ValueError(
            f"{where}: the schema nests more than {MAX_SCHEMA_DEPTH} levels of objects and "
            "arrays; flatten it (or use $defs and $ref for repeated parts)."
        )
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        path = "/".join(str(part) for part in exc.absolute_path)
        at = f" at {path}" if path else ""
        reason = one_line(exc.message, 160)
        raise ValueError(f"{where}: not a valid JSON Schema{at}: {reason}.") from None


def checked(binding: Any, parsed: Any) -> Any:
    """A value LangChain's binding parsed for its schema, checked against it: LangChain checks a
    pydantic model, a TypedDict or a dataclass as it parses, but returns a JSON-schema dict's
    value unchecked, and a run must never end answered with a value off its schema."""
    if binding.schema_kind == "json_schema":
        from jsonschema.validators import validator_for  # imported when a JSON schema is used

        validator_for(binding.schema)(binding.schema).validate(parsed)
    return parsed


def answer_schema(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """The one JSON schema a text Final Answer is asked to match: the schema itself, or for a
    union (`ToolStrategy(A | B)`) any of its variants, their definitions gathered at the root
    where their local `$ref`s point."""
    if len(schemas) == 1:
        return schemas[0]
    defs: dict[str, Any] = {}
    variants = []
    for schema in schemas:
        variant = dict(schema)
        defs.update(variant.pop("$defs", None) or {})
        variants.append(variant)
    return {"anyOf": variants, **({"$defs": defs} if defs else {})}
