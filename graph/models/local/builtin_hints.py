"""The built-in tools' part in the embedded model, kept with the model (the tools are plain
LangChain tools and know nothing of it): how each one's argument relates to the question, and
their worked records, which are data (records.toml beside this file says what they hold).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from importlib import resources
from typing import Any

from graph.models.local.hints import HINTS_KEY, Example, Step, ToolHints, tool_name

RECORDS_FILE = "records.toml"


@functools.cache
def builtin_hints() -> dict[str, ToolHints]:
    """The built-in tools' hints by tool name (read once)."""
    records = _records()
    arguments: dict[str, dict[str, Any]] = {
        "calculator": {"arithmetic_argument": "expression", "reads": _calculated},
        "current_time": {"piece_argument": "timezone", "accepts": _clock_knows},
        "knowledge_search": {"question_argument": "query"},
        "weather": {"piece_argument": "location", "accepts": _place},
        "wikipedia": {"piece_argument": "query"},
        "web_fetch": {"piece_argument": "url", "accepts": _url},
    }
    return {
        name: ToolHints(examples=records.get(name, ()), **argument)
        for name, argument in arguments.items()
    }


def direct_examples() -> tuple[Example, ...]:
    """The records of questions answered without a tool."""
    return _records().get("direct", ())


@functools.cache
def _records() -> dict[str, tuple[Example, ...]]:
    text = resources.files(__package__).joinpath(RECORDS_FILE).read_text("utf-8")
    return {
        group: tuple(_example(record) for record in records)
        for group, records in tomllib.loads(text).items()
    }


def _example(record: dict[str, Any]) -> Example:
    more = tuple(Step(s["tool"], s["input"], s["result"]) for s in record.get("more", ()))
    return Example(
        record["question"],
        record.get("input"),
        record.get("result", ""),
        record.get("answer", ""),
        more=more,
    )


def _clock_knows(piece: str) -> bool:
    """A piece of the question that is, all of it, a place or a zone the clock knows
    ("Asia/Kolkata", not "Asia/Kolkata please")."""
    return piece in _zones() or _place(piece)  # the IANA names include UTC and GMT


@functools.cache
def _zones() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def _calculated(piece: str) -> str | None:
    """What the calculator makes of a piece of the question as it stands ("15 percent of 80":
    12), None when it refuses it ("40 miles") or it calculates nothing ("35 what is": 35)."""
    from graph.models.local.constrain import question_numbers
    from tools.calculator import calculator

    try:
        value = float(calculator.func(piece).split("\n", 1)[0])
    except Exception:
        return None
    numbers = question_numbers(piece)
    return None if len(numbers) == 1 and float(numbers[0]) == value else repr(value)


def _url(piece: str) -> bool:
    """A piece of the question that is a web address: no spaces, a dot in its host."""
    from urllib.parse import urlsplit

    host = urlsplit(piece if "://" in piece else f"https://{piece}").hostname or ""
    return " " not in piece and "." in host and host.replace(".", "").replace("-", "").isalnum()


BIG_CITY = 1_000_000  # people: a lower-case single word names a place only if one this big


def _place(piece: str) -> bool:
    """A piece of the question that is, all of it, a place GeoNames knows. A place in Latin
    letters is a proper noun, capitalised ("Date" and "Time" are towns, "date" and "time" are
    not), unless it is several words ("los angeles"), a country or a US state ("iceland",
    "texas") or a city of a million people or more ("mumbai"); one in Chinese is two
    characters or more."""
    from tools.zone_names import fold, population, regions, zone_for_place

    if piece.isascii() and not piece[:1].isupper() and " " not in piece:
        return population(piece) >= BIG_CITY or fold(piece) in regions()
    if not piece.isascii() and len(piece) < 2:
        return False
    return zone_for_place(piece, whole=True) is not None


def hints_for(tool: Any) -> ToolHints:
    """The tool's own `metadata[HINTS_KEY]`, else the built-in hints for its name, else none."""
    metadata = getattr(tool, "metadata", None) or {}
    found = metadata.get(HINTS_KEY) if isinstance(metadata, Mapping) else None
    if isinstance(found, ToolHints):
        return found
    return builtin_hints().get(tool_name(tool), ToolHints())
