# -*- test-case-name: tests.test_time -*-
"""
The one way gophergem writes and reads a moment: ISO 8601 in UTC, to the
second, with a C{Z} (C{2026-01-02T12:00:00Z}).

Every time shown to a caller (MCP results, the CLI, feed entries) and every
time the stores write is this text, made here.  Pure: the standard library
only, no I/O, no clock.

The times that can be written run from C{0001-01-01T00:00:00Z} to
C{9999-12-31T23:59:59Z}; the year is always four digits (not C{strftime},
which writes year 999 as C{999} on some C libraries).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime

__all__ = ["format_datetime", "format_utc", "parse_utc"]


def format_datetime(moment: datetime) -> str:
    """
    Write C{moment} as C{YYYY-MM-DDTHH:MM:SSZ}, dropping any fraction of a
    second.

    @param moment: A time in UTC: an aware one in another zone is turned to
        UTC first; a naive one is taken to be UTC already.
    @raise OverflowError: When turning an aware C{moment} to UTC leaves
        years 1 to 9999.
    """
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


@functools.lru_cache(maxsize=256)
def format_utc(seconds: float) -> str:
    """
    Write a POSIX time (seconds since 1970 UTC) as C{YYYY-MM-DDTHH:MM:SSZ}.

    A fraction is first rounded to the microsecond (half to even, as
    C{datetime.fromtimestamp} does) and then dropped.  The last few hundred
    answers are remembered: a cached download's time is written on every hit.

    @raise OverflowError: When C{seconds} is out of the platform's range
        (or not finite).
    @raise OSError: Likewise, on some platforms.
    @raise ValueError: When C{seconds} falls outside years 1 to 9999
        (or is NaN).
    """
    return format_datetime(datetime.fromtimestamp(seconds, UTC))


def parse_utc(text: str) -> str:
    """
    Read an ISO 8601 date, or date and time, and write it back as
    L{format_utc} does: UTC, to the second.

    Anything C{datetime.fromisoformat} reads is accepted (C{2026-01-02},
    C{2026-01-02T12:00}, C{2026-01-02 12:00:00.999},
    C{2026-01-02T01:30:00+02:00}, C{2026-01-02T12:00:00Z}).  A time
    without an offset is taken as UTC; a date alone means its midnight; a
    fraction of a second is dropped.  Whatever this returns reads back to
    itself.

    @param text: The text to read; anything that is not a C{str} is refused.
    @return: The time as C{YYYY-MM-DDTHH:MM:SSZ}.
    @raise ValueError: When C{text} is not text, not such a date or time, or
        names a moment outside years 1 to 9999 in UTC; nothing else is
        raised, whatever C{text} is.
    """
    if not isinstance(text, str):
        raise ValueError("a time must be text")
    try:
        moment = datetime.fromisoformat(text)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"not an ISO 8601 date or time: {text[:40]!r}") from None
    return format_datetime(moment)
