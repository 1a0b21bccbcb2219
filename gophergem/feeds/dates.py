# -*- test-case-name: tests.test_feeds_parse -*-
"""
Dates of feed entries, read without I/O.

Every date a feed gives is shown the same way: ISO 8601 in UTC to the
second, C{YYYY-MM-DDTHH:MM:SSZ}, written by L{gophergem._time}.  A day with
no time of its own (a gemsub link, a phlog item) stands for noon UTC of that
day, as the Gemini subscription convention says.  A string that is not a
real date is no date: the readers here answer C{None} rather than raise.

The dates that can be shown run from L{EARLIEST_YEAR} (1970) to 9999, for
every kind of feed alike: an older date (an Atom C{0001-01-01}, the zero
time of many feed generators, or a C{0999}) is no date, and so is one past
9999.  Each answer is therefore four digits of year and reads back as the
same moment.
"""

from __future__ import annotations

import calendar
import datetime
import re
import time

from gophergem._time import format_datetime

__all__ = [
    "is_future",
    "iso_from_struct_time",
    "parse_date",
    "selector_date",
]

# A day at the start of a text, not followed by another digit.
_LEADING_DAY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")
# A day inside a selector: YYYYMMDD or YYYY-MM-DD, not inside a longer number.
_SELECTOR_DAY = re.compile(rb"(?<![0-9])([0-9]{4})(-?)([0-9]{2})\2([0-9]{2})(?![0-9])")

#: The earliest year a feed date may name; anything older is a number that
#: looks like a date, or a generator's zero time (Gopher itself dates from
#: 1991, Atom and RSS from the years after).
EARLIEST_YEAR = 1970

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

_ONE_DAY = datetime.timedelta(days=1)

_NOON = datetime.time(12)


def _day(year: str | bytes, month: str | bytes, day: str | bytes) -> datetime.date | None:
    """The date these digits name, or C{None} when there is no such day."""
    try:
        date = datetime.date(int(year), int(month), int(day))
    except ValueError:
        return None
    return date if date.year >= EARLIEST_YEAR else None


def _noon(date: datetime.date) -> str:
    return format_datetime(datetime.datetime.combine(date, _NOON))


def parse_date(text: str) -> str | None:
    """
    Read the day that C{text} starts with, as noon UTC of that day.

    C{"2026-01-02 Notes"} gives C{"2026-01-02T12:00:00Z"}.  Never raises.

    @return: The ISO 8601 time, or C{None} when C{text} does not start with
        a C{YYYY-MM-DD} that is a real day (no month 13, no February 30, no
        year before L{EARLIEST_YEAR}) and is not followed by another digit.
    """
    match = _LEADING_DAY.match(text)
    if match is None:
        return None
    date = _day(*match.groups())
    return None if date is None else _noon(date)


def selector_date(selector: bytes) -> str | None:
    """
    Read the first day a Gopher selector names as C{YYYYMMDD} or
    C{YYYY-MM-DD} (C{/phlog/20260102-notes.txt}), as noon UTC.  Never raises.

    @return: The ISO 8601 time, or C{None} when no run of digits there is a
        real day.
    """
    for match in _SELECTOR_DAY.finditer(selector):
        year, _, month, day = match.groups()
        date = _day(year, month, day)
        if date is not None:
            return _noon(date)
    return None


def is_future(iso: str, now: float) -> bool:
    """
    Whether the day of C{iso} (as given by this module) is more than one day
    after the UTC day of C{now}: a typo (C{2918-08-18}) rather than a post.

    @param now: The current time, in seconds since the epoch.
    """
    try:
        today = datetime.datetime.fromtimestamp(now, datetime.UTC).date()
        day = datetime.date.fromisoformat(iso[:10])
    except (ValueError, OverflowError, OSError):
        return False
    return day - today > _ONE_DAY


def iso_from_struct_time(value: object) -> str | None:
    """
    Print a UTC C{time.struct_time} (what feedparser gives in
    C{published_parsed}) in ISO 8601; C{None} for anything else, a time that
    does not exist (month 13), or one outside years L{EARLIEST_YEAR} to
    9999.  Never raises.
    """
    if not isinstance(value, time.struct_time):
        return None
    try:
        seconds = calendar.timegm(value)
        moment = _EPOCH + datetime.timedelta(seconds=seconds)
    except (ArithmeticError, ValueError, TypeError):
        return None
    if moment.year < EARLIEST_YEAR:
        return None
    return format_datetime(moment)
