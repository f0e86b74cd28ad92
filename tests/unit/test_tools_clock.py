"""current_time with a fixed "now"."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.tools import ToolException

from tools.clock import current_time, describe_time, fixed_now

NOW = datetime(2026, 11, 22, 13, 5, 3, tzinfo=UTC)


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        ("Asia/Shanghai", "2026-11-22 21:05:03 CST (Asia/Shanghai, UTC+08:00), Sunday"),
        ("UTC", "2026-11-22 13:05:03 UTC (UTC, UTC+00:00), Sunday"),
        ("America/New_York", "2026-11-22 08:05:03 EST (America/New_York, UTC-05:00), Sunday"),
        ("Asia/Kolkata", "2026-11-22 18:35:03 IST (Asia/Kolkata, UTC+05:30), Sunday"),
        ("Pacific/Kiritimati", "2026-11-23 03:05:03 +14 (Pacific/Kiritimati, UTC+14:00), Monday"),
        ("asia/shanghai", "2026-11-22 21:05:03 CST (Asia/Shanghai, UTC+08:00), Sunday"),
        ("Tokyo", "2026-11-22 22:05:03 JST (Asia/Tokyo, UTC+09:00), Sunday"),
        ("new york", "2026-11-22 08:05:03 EST (America/New_York, UTC-05:00), Sunday"),
        ("gmt", "2026-11-22 13:05:03 UTC (UTC, UTC+00:00), Sunday"),
        ("", "2026-11-22 13:05:03 UTC (UTC, UTC+00:00), Sunday"),
    ],
)
def test_fixed_now_in_zones(zone: str, expected: str) -> None:
    with fixed_now(NOW):
        assert describe_time(zone) == expected


def test_daylight_saving_time() -> None:
    summer = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)
    assert describe_time("Europe/London", summer) == (
        "2026-07-01 13:00:00 BST (Europe/London, UTC+01:00), Wednesday"
    )


def test_naive_fixed_now_is_utc() -> None:
    with fixed_now(datetime(2026, 11, 22, 13, 5, 3)):
        assert describe_time("UTC") == "2026-11-22 13:05:03 UTC (UTC, UTC+00:00), Sunday"


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "Gotham", "../../etc/passwd", "UTC+15"])
def test_unknown_zone_lists_examples(zone: str) -> None:
    with pytest.raises(ToolException) as caught:
        describe_time(zone)
    assert str(caught.value) == (
        f"Unknown time zone {zone!r}; use an IANA name such as UTC, Asia/Shanghai, "
        "Europe/London, America/New_York, Asia/Tokyo."
    )


async def test_tool_invocation() -> None:
    with fixed_now(NOW):
        assert await current_time.ainvoke({"timezone": "Asia/Shanghai"}) == (
            "2026-11-22 21:05:03 CST (Asia/Shanghai, UTC+08:00), Sunday"
        )
        assert current_time.invoke({}) == "2026-11-22 13:05:03 UTC (UTC, UTC+00:00), Sunday"


def test_real_clock_is_used_without_a_fixed_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    text = describe_time("UTC")
    after = datetime.now(UTC)
    shown = datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert before <= shown <= after


OFFSETS = [("UTC+8", "UTC+08:00"), ("GMT+8", "UTC+08:00"), ("gmt-5", "UTC-05:00")]


@pytest.mark.parametrize(
    ("written", "offset"),
    [
        ("UTC+8", "UTC+08:00"),
        ("GMT+8", "UTC+08:00"),
        ("gmt-5", "UTC-05:00"),
        ("UTC+0", "UTC+00:00"),
    ],
)
def test_an_offset_means_what_a_person_means(written: str, offset: str) -> None:
    # IANA's Etc/GMT+8 is eight hours *behind* UTC; nobody writing GMT+8 means that
    assert f", {offset})" in describe_time(written, datetime(2026, 1, 1, tzinfo=UTC))
