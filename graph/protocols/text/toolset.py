"""The enabled tools as the reader sees them: names to resolve, schemas to shape inputs to.

Resolving a written name (the first rule that finds exactly one tool wins):

1. exact, then any case;
2. the same after dropping decoration, a trailing description (`search (web search)`,
   `search: the web`), a `functions.` prefix or a `tool` suffix;
3. the same letters and digits (`SQL query` = `sql_query`, `Product Knowledge Base` =
   `product_knowledge_base`);
4. a unique tool whose name starts with what was written (`duckduckgo` -> `duckduckgo_search`);
5. a unique close match (difflib, ratio >= 0.8).

Shaping an input to the tool's JSON schema (`tool.tool_call_schema`): a JSON object, a Python
dict literal, `key=value` pairs or a call `name(a, b=1)` become the arguments; any other text
(fences and quotes removed) is the value of a tool's only (or only required) argument, converted
to that argument's JSON type. What cannot be shaped is an error naming the arguments expected.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.tools import BaseTool

from graph.protocols.text.arguments import (
    EMPTY_INPUTS,
    CallArgs,
    ToolSpec,
    call_value,
    convert,
    from_text,
    single,
    typed,
    unnest,
    unwrap,
)
from graph.protocols.text.blobs import MISSING

_KEY = re.compile(r"[\W_]+")
_DESCRIPTION = re.compile(r"[:：]|\s[-–—]\s")
_METHOD = re.compile(r"\.(?:call|run|invoke)$")
_NAMESPACE = re.compile(r"^(?:functions|tools|function|tool)[.:]", re.IGNORECASE)


def _schema_of(tool: Any) -> dict[str, Any]:
    try:
        if isinstance(tool, Mapping):
            schema = tool.get("parameters") or tool.get("args_schema") or {}
        else:
            schema = tool.tool_call_schema
        if isinstance(schema, Mapping):
            return dict(schema)
        if hasattr(schema, "model_json_schema"):
            return schema.model_json_schema()
    except Exception:  # a tool whose schema cannot be built is taken as schema-less
        pass
    try:
        return {"properties": dict(tool.args)} if isinstance(tool, BaseTool) else {}
    except Exception:
        return {}


def spec_of(tool: BaseTool | str | Mapping[str, Any]) -> ToolSpec:
    """The tool's name, argument schemas and required arguments."""
    if isinstance(tool, str):
        return ToolSpec(tool, {}, ())
    name = tool["name"] if isinstance(tool, Mapping) else tool.name
    schema = _schema_of(tool)
    properties = schema.get("properties")
    properties = dict(properties) if isinstance(properties, Mapping) else {}
    required = tuple(r for r in schema.get("required") or () if r in properties)
    return ToolSpec(str(name), properties, required)


def _key(name: str) -> str:
    return _KEY.sub("", name.lower())


def _variants(written: str) -> list[str]:
    """The name as written, then without a description, namespace or `tool` suffix."""
    out = [written]
    stripped = written
    if written.endswith(")") and (cut := written.rfind("(")) > 0:
        stripped = written[:cut].strip()
    for part in (stripped, _DESCRIPTION.split(stripped, maxsplit=1)[0].strip()):
        out.append(part)
        out.append(_NAMESPACE.sub("", part))
        out.append(_NAMESPACE.sub("", _METHOD.sub("", part)))  # Llama's `search.call(...)`
        if part.lower().endswith("tool"):
            out.append(part[:-4].rstrip(" _-"))
    return [v for v in dict.fromkeys(out) if v]


class Toolset:
    """The enabled tools: resolves written names and shapes inputs to schemas."""

    def __init__(self, tools: Iterable[BaseTool | str | Mapping[str, Any]]) -> None:
        self.specs = {spec.name: spec for spec in map(spec_of, tools)}
        self.names = list(self.specs)
        self._lower = {n.lower(): n for n in self.names}
        keys: dict[str, list[str]] = {}
        for n in self.names:
            keys.setdefault(_key(n), []).append(n)
        self._keys = keys

    def named(self, written: str) -> str | None:
        """The enabled tool named exactly (any case, maybe with a namespace or a `.call`), for
        text that is a call only when it names a tool exactly."""
        bare = _NAMESPACE.sub("", _METHOD.sub("", written.strip()))
        return self._lower.get(bare.lower())

    def resolve(self, written: str) -> str | None:
        """The enabled tool a written name means, or None."""
        for variant in _variants(written):
            if variant in self.specs:
                return variant
            if variant.lower() in self._lower:
                return self._lower[variant.lower()]
            same = self._keys.get(_key(variant), [])
            if len(same) == 1:
                return same[0]
        key = _key(written)
        if len(key) >= 3:
            starting = [n for k, names in self._keys.items() if k.startswith(key) for n in names]
            if len(starting) == 1:
                return starting[0]
            close = difflib.get_close_matches(key, list(self._keys), n=2, cutoff=0.8)
            if len(close) == 1 and len(self._keys[close[0]]) == 1:
                return self._keys[close[0]][0]
        return None

    def unknown(self, written: str) -> str:
        names = ", ".join(self.names) or "(none)"
        return f"there is no tool named {written!r}; the tools are: {names}"

    def shape(self, name: str, raw: Any) -> tuple[dict[str, Any] | None, str | None]:
        """The input `raw` as arguments of tool `name`: (arguments, None) or (None, error)."""
        spec = self.specs[name]
        props = spec.properties
        if isinstance(raw, CallArgs):
            raw = call_value(raw, spec)
        if isinstance(raw, str):
            raw = from_text(unwrap(raw), spec)
        if raw is MISSING or (isinstance(raw, str) and raw.strip().lower() in EMPTY_INPUTS):
            raw = {}
        if isinstance(raw, dict):
            args = typed(unnest(raw, spec), props)
            missing = [r for r in spec.required if r not in args]
            if missing:
                what = "is missing" if not raw else f"lacks {', '.join(map(repr, missing))}"
                return None, f"the Action Input {what}: {_needs(spec)}"
            return args, None
        if not props:
            return {}, None
        target = single(spec)
        if target is None:
            return None, f"the Action Input must be a JSON object: {_needs(spec)}"
        return {target: convert(raw, props[target])}, None


def _needs(spec: ToolSpec) -> str:
    if not spec.properties:
        return f"{spec.name} takes no arguments"
    example = {p: f"<{(s or {}).get('type', 'value')}>" for p, s in spec.properties.items()}
    return f"{spec.name} takes {json.dumps(example, ensure_ascii=False)}"
