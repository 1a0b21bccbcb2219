"""
Tests for L{gophergem._time}: the one ISO 8601 UTC writer and reader.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gophergem._time import format_datetime, format_utc, parse_utc

_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")

#: The first and last second that can be written.
FIRST = int(datetime(1, 1, 1, tzinfo=UTC).timestamp())
LAST = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp())


# -- writing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (0.5, "1970-01-01T00:00:00Z"),
        (-0.5, "1969-12-31T23:59:59Z"),
        (1764720000.0, "2025-12-03T00:00:00Z"),
        (FIRST, "0001-01-01T00:00:00Z"),
        (-30_000_000_000, "1019-05-04T18:40:00Z"),
        (LAST, "9999-12-31T23:59:59Z"),
    ],
)
def test_format_utc(seconds: float, expected: str) -> None:
    """Seconds since 1970 are written in UTC to the second, the year in four digits."""
    assert format_utc(seconds) == expected


@pytest.mark.parametrize("seconds", [FIRST - 1, LAST + 1, float("inf"), float("nan"), 1e300])
def test_format_utc_out_of_range(seconds: float) -> None:
    """A time outside years 1 to 9999 is refused as the standard library refuses it."""
    with pytest.raises((OverflowError, OSError, ValueError)):
        format_utc(seconds)


def test_format_datetime() -> None:
    """A datetime is written in UTC; a naive one is taken as UTC; fractions go."""
    assert format_datetime(datetime(2026, 1, 2, 3, 4, 5, 999_999)) == "2026-01-02T03:04:05Z"
    plus_two = datetime(2026, 1, 2, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert format_datetime(plus_two) == "2026-01-01T23:30:00Z"
    assert format_datetime(datetime(5, 1, 1, tzinfo=UTC)) == "0005-01-01T00:00:00Z"


# -- reading --------------------------------------------------------------------------------


class TestParseUTC:
    """The one reader of the times the stores accept and callers give."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-01-02", "2026-01-02T00:00:00Z"),
            ("2026-01-02T12:00:00Z", "2026-01-02T12:00:00Z"),
            ("2026-01-02T12:00", "2026-01-02T12:00:00Z"),
            ("2026-01-02T01:30:00+02:00", "2026-01-01T23:30:00Z"),
            ("2026-01-02 12:00:00.999", "2026-01-02T12:00:00Z"),
            ("0005-01-01", "0005-01-01T00:00:00Z"),
        ],
    )
    def test_vectors(self, text: str, expected: str) -> None:
        """Dates and times become UTC text to the second."""
        assert parse_utc(text) == expected

    @pytest.mark.parametrize(
        "text",
        ["", "2026-02-30", "tomorrow", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59-01:00"],
    )
    def test_refused(self, text: str) -> None:
        """Impossible and out-of-range times are ValueError."""
        with pytest.raises(ValueError, match="ISO 8601"):
            parse_utc(text)

    @given(st.one_of(st.text(), st.binary(), st.none(), st.integers()))
    def test_any_input(self, value: Any) -> None:
        """No input makes parse_utc raise anything but ValueError; what it returns reads back."""
        try:
            parsed = parse_utc(value)
        except ValueError:
            return
        assert _ISO.fullmatch(parsed), parsed
        assert parse_utc(parsed) == parsed

    @given(st.datetimes(timezones=st.timezones()))
    def test_any_datetime(self, moment: Any) -> None:
        """Every ISO 8601 rendering of a time reads (or is refused as out of range)."""
        try:
            parsed = parse_utc(moment.isoformat())
        except ValueError:
            return
        assert parse_utc(parsed) == parsed


# -- both ways ------------------------------------------------------------------------------


@given(st.integers(min_value=FIRST, max_value=LAST))
def test_round_trip(seconds: int) -> None:
    """
    Every second from year 1 to 9999 is written as C{YYYY-MM-DDTHH:MM:SSZ},
    reads back unchanged, and names that same second.
    """
    written = format_utc(seconds)
    assert _ISO.fullmatch(written), written
    assert parse_utc(written) == written
    assert datetime.fromisoformat(written).timestamp() == seconds


@given(st.datetimes(timezones=st.just(UTC)))
def test_datetime_agrees_with_seconds(moment: datetime) -> None:
    """A UTC datetime and its seconds since 1970 are written alike."""
    # Whole seconds counted exactly: a float timestamp of a far-off moment a
    # hair before a second rounds up into the next one.
    seconds = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(seconds=1)
    assert format_datetime(moment) == format_utc(seconds)
