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

import ast
import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool

from graph.protocols.text.blobs import INPUT_KEYS, MISSING, TOOL_KEYS, read_object, read_value

_EMPTY_INPUTS = frozenset(("", "none", "null", "n/a", "na", "nil", "()", "无", "空"))
_KEY = re.compile(r"[\W_]+")
_CALL = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)[ \t]*\((?P<args>.*)\)$", re.DOTALL)
_PAIR_SPLIT = re.compile(r"[,;\n]\s*(?=[A-Za-z_]\w*\s*[=:])")
_PAIR = re.compile(r"^\s*([A-Za-z_]\w*)\s*[=:]\s*(.*?)\s*$", re.DOTALL)
_FENCED = re.compile(r"\A(`{3,})[^\n`]*\n(?P<body>.*?)\n?[ \t]*\1[ \t]*\Z", re.DOTALL)
_AST_LIMIT = 20_000
_DESCRIPTION = re.compile(r"[:：]|\s[-–—]\s")
_NAMESPACE = re.compile(r"^(?:functions|tools|function|tool)[.:]", re.IGNORECASE)


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name and the parts of its JSON schema the reader uses."""

    name: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]


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


_SPECS: dict[int, tuple[Any, ToolSpec]] = {}


def spec_of(tool: BaseTool | str | Mapping[str, Any]) -> ToolSpec:
    """The spec of a tool (cached per tool object: schemas are costly to build)."""
    if isinstance(tool, str):
        return ToolSpec(tool, {}, ())
    cached = _SPECS.get(id(tool))
    if cached is not None and cached[0] is tool:
        return cached[1]
    schema = _schema_of(tool)
    properties = schema.get("properties")
    properties = dict(properties) if isinstance(properties, Mapping) else {}
    required = tuple(r for r in schema.get("required") or () if r in properties)
    name = tool["name"] if isinstance(tool, Mapping) else tool.name
    spec = ToolSpec(str(name), properties, required)
    if len(_SPECS) > 512:
        _SPECS.clear()
    _SPECS[id(tool)] = (tool, spec)
    return spec


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
            raw = _from_text(unwrap(raw), spec)
        if raw is MISSING or (isinstance(raw, str) and raw.strip().lower() in _EMPTY_INPUTS):
            raw = {}
        if isinstance(raw, dict):
            args = _typed(_unnest(raw, spec), props)
            missing = [r for r in spec.required if r not in args]
            if missing:
                what = "is missing" if not raw else f"lacks {', '.join(map(repr, missing))}"
                return None, f"the Action Input {what}: {_needs(spec)}"
            return args, None
        if not props:
            return {}, None
        target = _single(spec)
        if target is None:
            return None, f"the Action Input must be a JSON object: {_needs(spec)}"
        return {target: _convert(raw, props[target])}, None


def _needs(spec: ToolSpec) -> str:
    if not spec.properties:
        return f"{spec.name} takes no arguments"
    example = {p: f"<{(s or {}).get('type', 'value')}>" for p, s in spec.properties.items()}
    return f"{spec.name} takes {json.dumps(example, ensure_ascii=False)}"


def _single(spec: ToolSpec) -> str | None:
    if len(spec.properties) == 1:
        return next(iter(spec.properties))
    return spec.required[0] if len(spec.required) == 1 else None


def unwrap(text: str) -> str:
    """Text without a fence around all of it, surrounding quotes or backticks."""
    value = text.strip()
    fenced = _FENCED.match(value) if value.startswith("```") else None
    if fenced:
        value = fenced.group("body").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        if value[0] == '"':
            try:
                decoded = json.loads(value)
                if isinstance(decoded, str):
                    return decoded
            except ValueError:
                pass
        inner = value[1:-1]
        if value[0] not in inner:
            return inner.strip()
    return value


def _from_text(text: str, spec: ToolSpec) -> Any:
    """Arguments written as text: an object, a call, `key=value` pairs, or the text itself."""
    if text.lower() in _EMPTY_INPUTS:
        return MISSING
    obj = read_object(text)
    if obj is not None:
        return obj
    if text[:1] == "[" and (found := read_value(text)) is not None and found.end == len(text):
        return found.value
    call = _CALL.match(text)
    if call is not None:
        value = call_value(CallArgs(call.group("args")), spec)
        if not isinstance(value, str):
            return value
    pairs = _pairs(text, spec)
    return pairs if pairs is not None else text


@dataclass(frozen=True)
class CallArgs:
    """The text between the parentheses of a call written as `name(...)`."""

    text: str


def call_value(args: CallArgs, spec: ToolSpec | None) -> Any:
    """The arguments of `name(...)`: an object, keywords and positions (mapped to the schema's
    argument order when it is known), or a single literal; the text when none of these."""
    text = args.text.strip()
    if not text:
        return MISSING
    obj = read_object(text)
    if obj is not None:
        return obj
    try:
        if len(text) > _AST_LIMIT:
            raise ValueError(text[:20])
        call = ast.parse(f"f({text})", mode="eval").body
        if not isinstance(call, ast.Call):
            raise ValueError(text[:20])
        positional = [ast.literal_eval(a) for a in call.args]
        named = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return text
    if len(positional) == 1 and not named:
        value = positional[0]
        if spec is None or _single(spec) is not None or not isinstance(value, dict):
            return value
    order = list(spec.properties) if spec is not None else []
    if len(positional) > len(order):
        return text if positional else named
    return {**dict(zip(order, positional, strict=False)), **named}


def _pairs(text: str, spec: ToolSpec) -> dict[str, Any] | None:
    if not spec.properties or len(text) > 4_000 or ("=" not in text and ":" not in text):
        return None
    out: dict[str, Any] = {}
    for part in _PAIR_SPLIT.split(text):
        match = _PAIR.match(part)
        if match is None or match.group(1) not in spec.properties:
            return None
        out[match.group(1)] = unwrap(match.group(2).rstrip(","))
    return out or None


def _unnest(args: dict[str, Any], spec: ToolSpec) -> dict[str, Any]:
    """Arguments wrapped once more: a whole blob, or a generic key around the only argument."""
    name_key = next((k for k in TOOL_KEYS if args.get(k) == spec.name), None)
    if name_key is not None:
        inner = next((args[k] for k in INPUT_KEYS if k in args), None)
        if isinstance(inner, dict):
            return inner
        if isinstance(inner, str) and (obj := read_object(inner)) is not None:
            return obj
    target = _single(spec)
    if target is not None and len(args) == 1 and target not in args:
        ((key, value),) = args.items()
        if key in INPUT_KEYS or key in ("query", "text", "value", "__arg1", "q"):
            return {target: value}
    return args


def _typed(args: dict[str, Any], props: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {k: _convert(v, props[k]) if k in props else v for k, v in args.items()}


def _convert(value: Any, schema: dict[str, Any] | None) -> Any:
    """A value in the JSON type its schema asks for, when it converts cleanly."""
    kind = (schema or {}).get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        if isinstance(value, str):
            return unwrap(value) if value[:1] in "\"'`" else value
        return value if isinstance(value, (dict, list)) or value is None else str(value)
    if not isinstance(value, str):
        return value
    text = unwrap(value)
    if kind in ("integer", "number"):
        try:
            number = float(text.replace(",", "")) if kind == "number" else int(text)
            return number
        except ValueError:
            return value
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if kind in ("array", "object") and text[:1] in "[{":
        found = read_value(text)
        if found is not None and found.end == len(text):
            return found.value
    return value
