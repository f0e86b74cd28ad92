"""The current date and time in an IANA time zone.

Models do not know what time it is; this tool tells them. "Now" comes from a `ContextVar` so
tests can fix it with `fixed_now(datetime(...))` without patching anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import zoneinfo
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta, tzinfo

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools.zone_names import zone_for_place

EXAMPLE_ZONES = ("UTC", "Asia/Shanghai", "Europe/London", "America/New_York", "Asia/Tokyo")
_ALIASES = {"utc": "UTC", "z": "UTC", "gmt": "UTC", "zulu": "UTC", "etc/utc": "Etc/UTC"}
# tzdata's "EST" is a fixed UTC-05:00 (a link to America/Panama); whoever writes EST means the
# clock in New York, daylight saving included. (MST stays: Arizona keeps it all year.)
_DST_OVER_FIXED = {"est": "America/New_York"}

_now: ContextVar[Callable[[], datetime]] = ContextVar(
    "react_agent_clock_now", default=lambda: datetime.now(UTC)
)


@contextlib.contextmanager
def fixed_now(moment: datetime) -> Iterator[None]:
    """Make `current_time` report `moment` (an aware datetime; a naive one is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    token = _now.set(lambda: moment)
    try:
        yield
    finally:
        _now.reset(token)


# Old link names: the place table's real zone is the better answer (US/Hawaii: Pacific/Honolulu).
_LEGACY_AREAS = frozenset({"US", "Canada", "Brazil", "Chile", "Mexico", "SystemV", "Etc"})


@functools.cache
def _zones_by_folded_name() -> dict[str, str]:
    """Every available zone by its case-folded full name and by its last part ('new york')."""
    table: dict[str, str] = {}
    for name in sorted(zoneinfo.available_timezones()):
        table.setdefault(name.casefold(), name)
    for name in sorted(zoneinfo.available_timezones()):
        city = name.rsplit("/", 1)[-1].replace("_", " ").casefold()
        if "/" in name:
            table.setdefault(city, name)
    return table


def _candidates(text: str) -> Iterator[str]:
    """Zone names to try for `text`, best first; cheap ones before the place-name table."""
    offset = _UTC_OFFSET.fullmatch(text)
    if offset:  # 'UTC+8' means eight hours ahead; IANA's Etc/GMT+8 is eight hours behind
        sign, hours = offset.group(1), int(offset.group(2))
        yield f"Etc/GMT{'-' if sign == '+' else '+'}{hours}" if hours else "UTC"
        return
    yield _DST_OVER_FIXED.get(text.casefold(), "")
    yield _ALIASES.get(text.casefold(), "")
    if "/" not in text and not text.isupper():  # 'Singapore', 'Japan': old top-level links
        place = zone_for_place(text) or ""
        yield place if "/" in place else ""
    yield text
    if "/" not in text and not text.startswith("."):
        found = _zones_by_folded_name().get(text.replace("_", " ").casefold(), "")
        if found.split("/", 1)[0] in _LEGACY_AREAS:  # 'Hawaii': US/Hawaii is an old link
            yield zone_for_place(text) or ""
        yield found
    elif ".." not in text:
        yield _zones_by_folded_name().get(text.casefold(), "")
    # What a person means: 'Mumbai', 'São Paulo', 'New Zealand', 'Moscow/Moscow', 'Tokyo time'.
    yield zone_for_place(text) or ""


_UTC_OFFSET = re.compile(r"(?:UTC|GMT)\s*([+-])\s*(1[0-4]|0?\d)(?::?00)?", re.IGNORECASE)


def resolve_zone(name: str) -> tuple[str, tzinfo]:
    """('Asia/Shanghai', ZoneInfo) for an IANA name in any case, a city part like 'Tokyo', or a
    place as people write it ('Mumbai' -> Asia/Kolkata; see tools.zone_names)."""
    text = name.strip() or "UTC"
    for candidate in _candidates(text):
        if not candidate:
            continue
        try:
            return candidate, zoneinfo.ZoneInfo(candidate)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            continue
    raise ToolException(
        f"Unknown time zone {name!r}; use an IANA name such as {', '.join(EXAMPLE_ZONES)}."
    )


def _offset(delta: timedelta | None) -> str:
    minutes = int((delta or timedelta()).total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    hours, minutes = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours:02d}:{minutes:02d}"


def describe_time(timezone: str = "UTC", now: datetime | None = None) -> str:
    """'2026-11-22 21:05:03 CST (Asia/Shanghai, UTC+08:00), Sunday'."""
    zone_name, zone = resolve_zone(timezone)
    moment = (now or _now.get()()).astimezone(zone)
    abbreviation = moment.tzname() or zone_name
    return (
        f"{moment:%Y-%m-%d %H:%M:%S} {abbreviation} "
        f"({zone_name}, {_offset(moment.utcoffset())}), {moment:%A}"
    )


class CurrentTimeInput(BaseModel):
    timezone: str = Field(
        default="UTC",
        description="An IANA time zone such as 'Asia/Shanghai' or 'Europe/Paris'; default UTC.",
    )


def _current_time(timezone: str = "UTC") -> str:
    return describe_time(timezone)


async def _acurrent_time(timezone: str = "UTC") -> str:
    # zoneinfo reads the tz database from disk: keep that off the event loop (the LangGraph
    # server refuses blocking calls in async code).
    return await asyncio.to_thread(describe_time, timezone)


current_time = StructuredTool.from_function(
    func=_current_time,
    coroutine=_acurrent_time,
    name="current_time",
    description=(
        "Get the current date, time and weekday in a time zone (IANA name like "
        "'Asia/Shanghai' or 'America/New_York'; default UTC). Use it whenever the answer "
        "depends on today's date or the time now; never guess the date."
    ),
    args_schema=CurrentTimeInput,
)
