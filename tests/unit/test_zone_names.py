"""Place names as people and small models write them -> IANA zones (tools.zone_names)."""

from __future__ import annotations

import contextlib
import zoneinfo
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.tools import ToolException

from tools.clock import describe_time, resolve_zone
from tools.zone_names import (
    ABBREVIATIONS_BY_ZONE,
    CITIES_BY_ZONE,
    PLACES,
    REGIONS_BY_ZONE,
    _zone_index,
    fold,
    zone_for_place,
)

GROUPS = (CITIES_BY_ZONE, REGIONS_BY_ZONE, ABBREVIATIONS_BY_ZONE)
WINTER = datetime(2026, 1, 15, 12, tzinfo=UTC)
SUMMER = datetime(2026, 7, 15, 12, tzinfo=UTC)

CASES = [
    # The calls that failed with "Unknown time zone".
    ("Mumbai", "Asia/Kolkata"),
    ("São Paulo", "America/Sao_Paulo"),
    ("New Zealand", "Pacific/Auckland"),
    ("Moscow/Moscow", "Europe/Moscow"),
    ("Hawaii", "Pacific/Honolulu"),
    # Cities in the table.
    ("Delhi", "Asia/Kolkata"),
    ("New Delhi", "Asia/Kolkata"),
    ("Bangalore", "Asia/Kolkata"),
    ("Bengaluru", "Asia/Kolkata"),
    ("Shenzhen", "Asia/Shanghai"),
    ("Guangzhou", "Asia/Shanghai"),
    ("Xi'an", "Asia/Shanghai"),
    ("XIAN", "Asia/Shanghai"),
    ("Osaka", "Asia/Tokyo"),
    ("Kyoto", "Asia/Tokyo"),
    ("Busan", "Asia/Seoul"),
    ("San Francisco", "America/Los_Angeles"),
    ("san_francisco", "America/Los_Angeles"),
    ("Seattle", "America/Los_Angeles"),
    ("Las Vegas", "America/Los_Angeles"),
    ("Boston", "America/New_York"),
    ("Washington DC", "America/New_York"),
    ("Washington, D.C.", "America/New_York"),
    ("Miami", "America/New_York"),
    ("Houston", "America/Chicago"),
    ("Dallas", "America/Chicago"),
    ("Salt Lake City", "America/Denver"),
    ("Montreal", "America/Toronto"),
    ("Montréal", "America/Toronto"),
    ("Munich", "Europe/Berlin"),
    ("München", "Europe/Berlin"),
    ("Frankfurt", "Europe/Berlin"),
    ("Milan", "Europe/Rome"),
    ("Barcelona", "Europe/Madrid"),
    ("Geneva", "Europe/Zurich"),
    ("Edinburgh", "Europe/London"),
    ("St. Petersburg", "Europe/Moscow"),
    ("Saint Petersburg", "Europe/Moscow"),
    ("Cape Town", "Africa/Johannesburg"),
    ("Rio de Janeiro", "America/Sao_Paulo"),
    ("Hanoi", "Asia/Ho_Chi_Minh"),
    ("Macau", "Asia/Macau"),
    ("Taipei", "Asia/Taipei"),
    ("Wellington", "Pacific/Auckland"),
    ("Melbourne", "Australia/Melbourne"),
    ("Canberra", "Australia/Sydney"),
    ("Tel Aviv", "Asia/Jerusalem"),
    ("Doha", "Asia/Qatar"),
    # Last parts of IANA names, folded.
    ("sao paulo", "America/Sao_Paulo"),
    ("SAO PAULO", "America/Sao_Paulo"),
    ("Sao-Paulo", "America/Sao_Paulo"),
    ("ho chi minh", "Asia/Ho_Chi_Minh"),
    ("Ho Chi Minh City", "Asia/Ho_Chi_Minh"),
    ("buenos aires", "America/Argentina/Buenos_Aires"),
    ("Port-au-Prince", "America/Port-au-Prince"),
    ("Zürich", "Europe/Zurich"),
    ("Kuwait City", "Asia/Kuwait"),
    ("Mexico City", "America/Mexico_City"),
    # Countries and regions.
    ("Japan", "Asia/Tokyo"),
    ("India", "Asia/Kolkata"),
    ("United Kingdom", "Europe/London"),
    ("UK", "Europe/London"),
    ("England", "Europe/London"),
    ("South Korea", "Asia/Seoul"),
    ("Vietnam", "Asia/Ho_Chi_Minh"),
    ("UAE", "Asia/Dubai"),
    ("Saudi Arabia", "Asia/Riyadh"),
    ("Indonesia", "Asia/Jakarta"),
    ("Russia", "Europe/Moscow"),
    ("USA", "America/New_York"),
    ("Canada", "America/Toronto"),
    ("Australia", "Australia/Sydney"),
    ("Brazil", "America/Sao_Paulo"),
    ("Mexico", "America/Mexico_City"),
    ("Alaska", "America/Anchorage"),
    ("California", "America/Los_Angeles"),
    ("Iceland", "Atlantic/Reykjavik"),
    # Time-zone words and abbreviations.
    ("Pacific Time", "America/Los_Angeles"),
    ("PST", "America/Los_Angeles"),
    ("EST", "America/New_York"),
    ("Eastern Standard Time", "America/New_York"),
    ("Central Time", "America/Chicago"),
    ("MT", "America/Denver"),
    ("JST", "Asia/Tokyo"),
    ("IST", "Asia/Kolkata"),
    ("BST", "Europe/London"),
    ("British Summer Time", "Europe/London"),
    ("CEST", "Europe/Paris"),
    ("Central European Summer Time", "Europe/Paris"),
    ("EET", "Europe/Athens"),
    ("AEDT", "Australia/Sydney"),
    ("NZST", "Pacific/Auckland"),
    ("GMT", "UTC"),
    # Chinese.
    ("北京", "Asia/Shanghai"),
    ("北京市", "Asia/Shanghai"),
    ("北京时间", "Asia/Shanghai"),
    ("上海市", "Asia/Shanghai"),
    ("深圳", "Asia/Shanghai"),
    ("香港", "Asia/Hong_Kong"),
    ("台北", "Asia/Taipei"),
    ("东京", "Asia/Tokyo"),
    ("首尔", "Asia/Seoul"),
    ("孟买", "Asia/Kolkata"),
    ("莫斯科", "Europe/Moscow"),
    ("伦敦", "Europe/London"),
    ("纽约", "America/New_York"),
    ("旧金山", "America/Los_Angeles"),
    ("悉尼", "Australia/Sydney"),
    ("奥克兰", "Pacific/Auckland"),
    ("圣保罗", "America/Sao_Paulo"),
    ("美国", "America/New_York"),
    ("澳大利亚", "Australia/Sydney"),
    ("俄罗斯", "Europe/Moscow"),
    ("纽约现在几点？", "America/New_York"),
    ("现在东京时间", "Asia/Tokyo"),
    # Compound input.
    ("Paris, France", "Europe/Paris"),
    ("Tokyo, Japan", "Asia/Tokyo"),
    ("Berlin, Germany", "Europe/Berlin"),
    ("Europe/Paris time", "Europe/Paris"),
    ("time in Berlin", "Europe/Berlin"),
    ("Berlin time", "Europe/Berlin"),
    ("Tokyo time", "Asia/Tokyo"),
    ("What time is it in Tokyo?", "Asia/Tokyo"),
    ("current time in New York City", "America/New_York"),
    ("Mumbai (India)", "Asia/Kolkata"),
    ("USA/Chicago", "America/Chicago"),
    ("Chicago, USA", "America/Chicago"),
    ("Beijing, China", "Asia/Shanghai"),
    ("Sydney, Australia", "Australia/Sydney"),
    ("Hong Kong (HKT)", "Asia/Hong_Kong"),
    ("America/Sao_Paulo now", "America/Sao_Paulo"),
    ("Tokyo时间", "Asia/Tokyo"),
]

UNKNOWN = [
    "Atlantis",
    "xyz/abc",
    "CST",  # US Central, China or Cuba: left to the error, which lists real names
    "America/Atlantis",
    "Europe/Gotham",
    "Mars/Olympus_Mons",
    "UTC+15",
    "time now",
    "现在几点",
    "../../etc/passwd",
]


def _names() -> list[tuple[str, str]]:
    return [
        (name, zone)
        for group in GROUPS
        for zone, names in group.items()
        for name in names.split("|")
    ]


@pytest.mark.parametrize(("text", "zone"), CASES)
def test_zone_for_place(text: str, zone: str) -> None:
    assert zone_for_place(text) == zone


@pytest.mark.parametrize(("text", "zone"), CASES)
def test_resolve_zone_agrees_on_the_clock(text: str, zone: str) -> None:
    """resolve_zone may answer with another name of the same zone (an IANA link);
    the clock it reads must be the same."""
    _, found = resolve_zone(text)
    for moment in (WINTER, SUMMER):
        assert (
            moment.astimezone(found).utcoffset()
            == moment.astimezone(zoneinfo.ZoneInfo(zone)).utcoffset()
        )


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 80
    assert sum(len(names.split("|")) for names in CITIES_BY_ZONE.values()) >= 120


def test_every_table_zone_is_real() -> None:
    for zone in {*PLACES.values(), *(zone for group in GROUPS for zone in group)}:
        zoneinfo.ZoneInfo(zone)


def test_no_name_points_at_two_zones() -> None:
    seen: dict[str, str] = {}
    for name, zone in _names():
        assert seen.setdefault(fold(name), zone) == zone, name


def test_every_table_name_resolves_to_its_zone() -> None:
    for name, zone in _names():
        assert zone_for_place(name) == zone, name


def test_table_agrees_with_iana_where_a_name_is_also_a_zone_part() -> None:
    index = _zone_index()
    for key, zone in PLACES.items():
        if key in index and key != "utc":
            for moment in (WINTER, SUMMER):
                mine = moment.astimezone(zoneinfo.ZoneInfo(zone)).utcoffset()
                theirs = moment.astimezone(zoneinfo.ZoneInfo(index[key])).utcoffset()
                assert mine == theirs, (key, zone, index[key])


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("São Paulo", "sao paulo"),
        ("sao_paulo", "sao paulo"),
        ("SAO PAULO", "sao paulo"),
        ("Sao-Paulo", "sao paulo"),
        ("  São   Paulo ", "sao paulo"),
        ("St. Petersburg", "st petersburg"),
        ("Saint Petersburg", "st petersburg"),
        ("北京 市", "北京市"),
        ("Paris, France", "paris, france"),
    ],
)
def test_fold(text: str, key: str) -> None:
    assert fold(text) == key


@pytest.mark.parametrize("text", UNKNOWN)
def test_unknown_places_keep_the_old_error(text: str) -> None:
    assert zone_for_place(text) is None
    with pytest.raises(ToolException) as caught:
        resolve_zone(text)
    assert str(caught.value) == (
        f"Unknown time zone {text!r}; use an IANA name such as UTC, Asia/Shanghai, "
        "Europe/London, America/New_York, Asia/Tokyo."
    )


def test_empty_text() -> None:
    assert zone_for_place("") is None
    assert zone_for_place("   ") is None
    assert resolve_zone("")[0] == "UTC"  # as before: no zone means UTC


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("Tokyo", "Asia/Tokyo"),
        ("new york", "America/New_York"),
        ("asia/shanghai", "Asia/Shanghai"),
        ("Kiev", "Europe/Kiev"),
        ("Hawaii", "Pacific/Honolulu"),  # an old link (US/Hawaii) gives way to the real zone
        ("Singapore", "Asia/Singapore"),  # so do old top-level links
        ("Iceland", "Atlantic/Reykjavik"),
        ("Japan", "Asia/Tokyo"),
        ("CET", "CET"),
        ("PRC", "PRC"),  # an abbreviation stays what it names
        ("gmt", "UTC"),
    ],
)
def test_what_resolved_before_resolves_the_same(text: str, zone: str) -> None:
    assert resolve_zone(text)[0] == zone


def test_mumbai_is_named_asia_kolkata() -> None:
    now = datetime(2026, 11, 22, 13, 5, 3, tzinfo=UTC)
    assert describe_time("Mumbai", now=now) == (
        "2026-11-22 18:35:03 IST (Asia/Kolkata, UTC+05:30), Sunday"
    )


def test_est_keeps_daylight_saving() -> None:
    """tzdata's "EST" is fixed at UTC-05:00; a person writing EST means New York's clock."""
    assert describe_time("EST", now=SUMMER) == (
        "2026-07-15 08:00:00 EDT (America/New_York, UTC-04:00), Wednesday"
    )


_PIECE_TEXT = "Paris|São|北京|市|time|in|/|,|(|)| |-|_|.|'|Europe|US|CST|现在|时间|..|\x00|+8|İ|ß"
PIECES = st.sampled_from(_PIECE_TEXT.split("|"))


@given(st.one_of(st.text(max_size=80), st.lists(PIECES, max_size=12).map("".join)))
def test_zone_for_place_never_raises(text: str) -> None:
    zone = zone_for_place(text)
    assert zone is None or zoneinfo.ZoneInfo(zone)


@given(st.one_of(st.text(max_size=80), st.lists(PIECES, max_size=12).map("".join)))
def test_resolve_zone_raises_only_tool_exceptions(text: str) -> None:
    with contextlib.suppress(ToolException):
        name, zone = resolve_zone(text)
        assert zoneinfo.ZoneInfo(name) == zone
