"""
Tests for L{gophergem.feeds.parse} and L{gophergem.feeds.dates}: reading a
followed page as a feed.  Example pages shaped like real gemlogs, phlogs
and feeds, plus hypothesis properties: no input makes a reader raise.
"""

from __future__ import annotations

import calendar
import html
import io
import re
import time
from typing import Any

import attrs
import feedparser  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gophergem._time import parse_utc
from gophergem.feeds.dates import (
    EARLIEST_YEAR,
    is_future,
    iso_from_struct_time,
    parse_date,
    selector_date,
)
from gophergem.feeds.parse import (
    FEED_TYPES,
    MAX_ENTRIES,
    NO_PLAN,
    PLAN_DIGEST_CHARS,
    Entry,
    Feed,
    canonical_url,
    clip_title,
    cut_entries,
    detect_feed,
    parse_gemtext_feed,
    parse_menu_feed,
    parse_plan_feed,
    parse_xml_feed,
    plan_of,
    plan_version,
    resolve_link,
    sniff_xml_feed,
)
from gophergem.feeds.subscriptions import MAX_ENTRIES_PER_FEED
from gophergem.wire.gopher import MAX_TITLE_CHARS, MenuItem, parse_menu

#: 2026-12-03T12:00:00Z: "now" in every test that needs one.
NOW = float(calendar.timegm((2026, 12, 3, 12, 0, 0)))

GEMLOG = "gemini://example.org/gemlog/"

_FORBIDDEN = tuple(chr(c) for c in (*range(0x20), 0x7F, 0x85, 0x202E, 0x2028, 0xE000))


def urls(feed: Feed) -> list[str]:
    return [entry.url for entry in feed.entries]


# --- dates -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-02", "2026-01-02T12:00:00Z"),
        ("2026-01-02 - Notes", "2026-01-02T12:00:00Z"),
        ("2024-02-29: leap day", "2024-02-29T12:00:00Z"),
        ("2026-13-01 month 13", None),
        ("2026-02-30 February 30", None),
        ("2023-02-29 not a leap year", None),
        ("2026-01-021", None),
        ("0001-01-01 too old", None),
        (" 2026-01-02 leading space", None),
        ("Notes 2026-01-02", None),
        ("2026-1-2", None),
        ("\u0662\u0660\u0662\u0666-\u0660\u0661-\u0660\u0662 Arabic-Indic digits", None),
        ("", None),
    ],
)
def test_parse_date(text: str, expected: str | None) -> None:
    """A leading real YYYY-MM-DD day is noon UTC that day; anything else is no date."""
    assert parse_date(text) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (b"/phlog/20260102-slug", "2026-01-02T12:00:00Z"),
        (b"phlog/2025-12-30-notes.txt", "2025-12-30T12:00:00Z"),
        (b"fs20180818.txt", "2018-08-18T12:00:00Z"),
        (b"/photos/12345678", None),
        (b"/2026-0102", None),
        (b"/id/120260102", None),
        (b"/x/99999999/20260102", "2026-01-02T12:00:00Z"),
        (b"/phlog/", None),
        (b"\xff\xfe", None),
    ],
)
def test_selector_date(selector: bytes, expected: str | None) -> None:
    """A selector's first YYYYMMDD or YYYY-MM-DD that is a real day is its date."""
    assert selector_date(selector) == expected


@pytest.mark.parametrize(
    ("iso", "future"),
    [
        ("2026-12-03T12:00:00Z", False),
        ("2026-12-04T12:00:00Z", False),
        ("2026-12-05T12:00:00Z", True),
        ("2918-08-18T12:00:00Z", True),
        ("1999-01-01T12:00:00Z", False),
        ("junk", False),
    ],
)
def test_is_future(iso: str, future: bool) -> None:
    """Only a day more than one day after today is in the future."""
    assert is_future(iso, NOW) is future


def test_iso_from_struct_time() -> None:
    """A UTC struct_time prints as ISO 8601; anything else is no date."""
    assert iso_from_struct_time(time.gmtime(0)) == "1970-01-01T00:00:00Z"
    assert iso_from_struct_time("2026-01-02") is None
    assert iso_from_struct_time(None) is None
    huge = time.struct_time((99999, 1, 1, 0, 0, 0, 0, 1, 0))
    assert iso_from_struct_time(huge) is None


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        ((999, 6, 1, 0, 0, 0), None),
        ((1, 1, 1, 0, 0, 0), None),
        ((0, 12, 31, 23, 0, 0), None),
        ((1969, 12, 31, 23, 59, 59), None),
        ((1970, 1, 1, 0, 0, 0), "1970-01-01T00:00:00Z"),
        ((9999, 12, 31, 23, 59, 59), "9999-12-31T23:59:59Z"),
        ((10000, 1, 1, 4, 59, 59), None),
        ((2026, 13, 1, 0, 0, 0), None),
        ((2026, 1, 1, 0, 0, 61), "2026-01-01T00:01:01Z"),
    ],
)
def test_iso_from_struct_time_range(
    moment: tuple[int, int, int, int, int, int], expected: str | None
) -> None:
    """
    Only 1970 to 9999 is a date (issue 21): an older one (0999, or 0001, the
    zero time of many feed generators) is no date rather than a
    three-digit year the stores refuse.
    """
    assert iso_from_struct_time(time.struct_time((*moment, 0, 1, 0))) == expected


# --- helpers ------------------------------------------------------------------------------


def test_clip_title() -> None:
    """Titles are sanitised, stripped, clipped with an ellipsis, and None when empty."""
    assert clip_title("  Hello\x1b[31m red\x00 ") == "Hello red"
    assert clip_title(" \t\n") is None
    long = clip_title("x" * 10_000)
    assert long is not None and len(long) == MAX_TITLE_CHARS and long.endswith("…")


@pytest.mark.parametrize(
    ("base", "reference", "expected"),
    [
        (GEMLOG, "post.gmi", "gemini://example.org/gemlog/post.gmi"),
        (GEMLOG, "../about.gmi", "gemini://example.org/about.gmi"),
        (GEMLOG, "gemini://EXAMPLE.org:1965/a", "gemini://example.org/a"),
        (GEMLOG, "gopher://Example.org:70/1/", "gopher://example.org/1/"),
        (GEMLOG, "https://example.org/x", "https://example.org/x"),
        ("gopher://example.org/1/phlog/", "a.txt", "gopher://example.org/1/phlog/a.txt"),
        (GEMLOG, "   ", None),
        ("not a url", "relative.gmi", None),
        ("gemini://", "relative.gmi", None),
        ("spartan://example.org/log/", "post.gmi", "spartan://example.org/log/post.gmi"),
        ("spartan://example.org/log/", "/x?a b", "spartan://example.org/x?a%20b"),
        ("nex://EXAMPLE.org:1900/dir/", "../a.txt", "nex://example.org/a.txt"),
        ("nex://example.org/dir/", "spartan://Example.org:300/", "spartan://example.org/"),
        ("finger://example.org/alice", "bob", None),
    ],
)
def test_resolve_link(base: str, reference: str, expected: str | None) -> None:
    """Links become absolute and canonical; a relative link without a usable base is lost."""
    assert resolve_link(base, reference) == expected


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("finger://alice@Example.org", "finger://example.org/alice"),
        ("finger://example.org:79/alice", "finger://example.org/alice"),
        ("nex://EXAMPLE.org:1900/./a/../b/", "nex://example.org/b/"),
        ("spartan://example.org:300", "spartan://example.org/"),
        (
            "finger://example.org/alice@elsewhere.example",
            "finger://example.org/alice@elsewhere.example",
        ),
        ("titan://example.org/x;size=1", "titan://example.org/x;size=1"),
    ],
)
def test_canonical_small_web_urls(url: str, canonical: str) -> None:
    """Finger, Nex and Spartan URLs get one spelling; what cannot be fetched stays as it is."""
    assert canonical_url(url) == canonical


def test_canonical_url_leaves_other_text() -> None:
    """Only Gemini and Gopher URLs are rewritten; anything else stays as it is."""
    assert canonical_url("gemini://EXAMPLE.org/./a/../b") == "gemini://example.org/b"
    assert canonical_url("mailto:me@example.org") == "mailto:me@example.org"
    assert canonical_url("gemini://") == "gemini://"


# --- gemtext --------------------------------------------------------------------------------

# The shape of a real gemlog index: a heading, a subtitle, navigation links,
# dated posts (with and without a separator), a bare date and a bad date.
GEMSUB = """\
# Solderpunk's gemlog
## Musings from a small corner of Geminispace

=> / Home
=> gemini://example.org/about.gmi About me

```
=> 2026-01-01-in-preformat.gmi 2026-01-01 Not a link
```
=> 2026-01-03-thoughts.gmi 2026-01-03 - Some thoughts
=> /gemlog/2026-01-02-notes.gmi 2026-01-02: Notes
=> ./2026-01-02-notes.gmi 2026-01-02 The same post again
=> gopher://example.org/0/phlog/x.txt 2025-12-31 A gopher post
=> bare.gmi 2026-01-04
=> bad.gmi 2026-02-30 Not a day
=> glued.gmi 2026-01-0512 Digits glued to the date
=> spaced.gmi 2026-01-05 \x1b[1mBold\x1b[0m\u202e title
"""


def test_gemsub() -> None:
    """Dated link lines are the entries, titled without their date, published at noon UTC."""
    feed = parse_gemtext_feed(GEMLOG + "index.gmi", GEMSUB)
    assert feed == Feed(
        "gemsub",
        "Solderpunk's gemlog",
        (
            Entry(GEMLOG + "2026-01-03-thoughts.gmi", "Some thoughts", "2026-01-03T12:00:00Z"),
            Entry(GEMLOG + "2026-01-02-notes.gmi", "Notes", "2026-01-02T12:00:00Z"),
            Entry("gopher://example.org/0/phlog/x.txt", "A gopher post", "2025-12-31T12:00:00Z"),
            Entry(GEMLOG + "spaced.gmi", "Bold title", "2026-01-05T12:00:00Z"),
        ),
    )


def test_gemsub_needs_something_after_the_date() -> None:
    """A label that is only a date (or a date and one character) is no entry."""
    assert parse_gemtext_feed(GEMLOG, "=> a.gmi 2026-01-02\n").feed_type == "page"
    assert parse_gemtext_feed(GEMLOG, "=> a.gmi 2026-01-02 \n").feed_type == "page"
    feed = parse_gemtext_feed(GEMLOG, "=> a.gmi 2026-01-02 -\n")
    assert feed.feed_type == "gemsub"
    assert feed.entries == (Entry(GEMLOG + "a.gmi", GEMLOG + "a.gmi", "2026-01-02T12:00:00Z"),)


def test_gemsub_title_is_the_first_level_one_heading() -> None:
    """The feed title is the first # heading, not a ## or ### one; None without one."""
    text = "## Sub\n### Subsub\n# First\n# Second\n=> a 2026-01-02 x\n"
    assert parse_gemtext_feed(GEMLOG, text).title == "First"
    assert parse_gemtext_feed(GEMLOG, "=> a 2026-01-02 x\n").title is None


def test_page_links() -> None:
    """A page without dated links follows every link, resolved, once, undated."""
    text = "# Bookmarks\n=> a.gmi\n=> b.gmi Bee\n=> a.gmi A again\n=> https://example.com/ Web\n"
    feed = parse_gemtext_feed(GEMLOG, text)
    assert feed == Feed(
        "page",
        "Bookmarks",
        (
            Entry(GEMLOG + "a.gmi", GEMLOG + "a.gmi", None),
            Entry(GEMLOG + "b.gmi", "Bee", None),
            Entry("https://example.com/", "Web", None),
        ),
    )


def test_gemtext_over_gopher() -> None:
    """Gemtext served over Gopher has its relative links resolved against the gopher URL."""
    feed = parse_gemtext_feed("gopher://example.org/0/log/index.gmi", "=> a.gmi 2026-01-02 A\n")
    assert urls(feed) == ["gopher://example.org/0/log/a.gmi"]


def test_gemtext_entry_titles_are_clipped() -> None:
    """A hostile overlong label is clipped like every title."""
    feed = parse_gemtext_feed(GEMLOG, "=> a 2026-01-02 " + "x" * 5000 + "\n")
    assert len(feed.entries[0].title) == MAX_TITLE_CHARS


# --- Gopher menus ----------------------------------------------------------------------------

# Shapes from capsules.md 1.3: burrow's, baud.baby's (no host, a typo year)
# and pez-gopher's phlog menus, and a year archive.
PHLOG_MENU = (
    b"i~~ gopher.black phlog ~~\tfake\t(NULL)\t0\r\n"
    b"i\tfake\t(NULL)\t0\r\n"
    b"1Back to the hole\t/\texample.org\t70\r\n"
    b"12025 archive\t/phlog/2025\texample.org\t70\r\n"
    b"12026-01-03 - Tuning my radio\t/phlog/20260103-radio\texample.org\t70\r\n"
    b"02026-01-02   Cold mornings\tfs20260102.txt\t\t\r\n"
    b"02918-08-18   A typo year\tfs29180818.txt\t\t\r\n"
    b"02025-12-30: Notes\tphlog/2025-12-30-notes.txt\texample.org\r\n"
    b"0Untitled by date\t/phlog/20251224-eve.txt\texample.org\t70\r\n"
    b"02026-02-30 Bad day\t/phlog/x.txt\texample.org\t70\r\n"
    b"32026-01-01 an error line\t\terror.host\t1\r\n"
    b".\r\n"
)


def menu(data: bytes) -> tuple[MenuItem, ...]:
    return parse_menu(data, "example.org", 70).items


def test_phlog() -> None:
    """Items dated in their display text or selector are posts; the rest are left out."""
    feed = parse_menu_feed("gopher://example.org/1/phlog", menu(PHLOG_MENU), now=NOW)
    assert feed == Feed(
        "phlog",
        "~~ gopher.black phlog ~~",
        (
            Entry(
                "gopher://example.org/1/phlog/20260103-radio",
                "Tuning my radio",
                "2026-01-03T12:00:00Z",
            ),
            Entry("gopher://example.org/0fs20260102.txt", "Cold mornings", "2026-01-02T12:00:00Z"),
            Entry(
                "gopher://example.org/0phlog/2025-12-30-notes.txt",
                "Notes",
                "2025-12-30T12:00:00Z",
            ),
            Entry(
                "gopher://example.org/0/phlog/20251224-eve.txt",
                "Untitled by date",
                "2025-12-24T12:00:00Z",
            ),
        ),
    )


def test_phlog_future_dates_depend_on_now() -> None:
    """A date more than one day after now is no date; the same date later is."""
    items = menu(b"02027-01-01 New year\t/ny.txt\texample.org\t70\r\n")
    assert parse_menu_feed("gopher://example.org/1/", items, now=NOW).feed_type == "page"
    later = NOW + 40 * 86400
    assert parse_menu_feed("gopher://example.org/1/", items, now=later).feed_type == "phlog"


def test_phlog_title_date_falls_back_to_selector() -> None:
    """An impossible date in the display text gives way to the selector's date."""
    items = menu(b"02026-02-30 Typo\t/phlog/20260228.txt\texample.org\t70\r\n")
    feed = parse_menu_feed("gopher://example.org/1/", items, now=NOW)
    assert feed.entries == (
        Entry(
            "gopher://example.org/0/phlog/20260228.txt", "2026-02-30 Typo", "2026-02-28T12:00:00Z"
        ),
    )


def test_menu_page() -> None:
    """A menu without dates follows every item that links somewhere, once."""
    data = (
        b"# October 21st, 2019\tfake\t(NULL)\t0\r\n"
        b"iWelcome\tfake\t(NULL)\t0\r\n"
        b"1Phlog\t/phlog\texample.org\t70\r\n"
        b"0About\t/about.txt\texample.org\t70\r\n"
        b"1Phlog again\t/phlog\texample.org\t70\r\n"
        b"hWeb\tURL:https://example.com/\texample.org\t70\r\n"
        b"3Oops\t\terror.host\t1\r\n"
        b"1\t\texample.org\t70\r\n"
    )
    feed = parse_menu_feed("gopher://example.org/1/", menu(data), now=NOW)
    assert feed == Feed(
        "page",
        "Welcome",
        (
            Entry("gopher://example.org/1/phlog", "Phlog", None),
            Entry("gopher://example.org/0/about.txt", "About", None),
            Entry("https://example.com/", "Web", None),
            Entry("gopher://example.org/1", "gopher://example.org/1", None),
        ),
    )


@pytest.mark.parametrize("next_url", ["", " ", "\x00", "\u2028\t"])
def test_menu_item_linking_nowhere(next_url: str) -> None:
    """An item whose URL has nothing printable is no entry (hypothesis found ' ' and NUL)."""
    item = MenuItem("0", "", b"", "h", 70, next_url)
    assert parse_menu_feed("gopher://h/1/", [item], now=NOW) == Feed("page", None, ())


def test_menu_without_info_line_has_no_title() -> None:
    """Without an info line a menu has no title."""
    feed = parse_menu_feed("gopher://example.org/1/", menu(b"0A\t/a\texample.org\t70\r\n"), now=NOW)
    assert feed.title is None


def test_menu_now_defaults_to_the_clock() -> None:
    """Without now, today's clock decides what is in the future."""
    items = menu(b"02026-01-02 A\t/a\texample.org\t70\r\n")
    assert parse_menu_feed("gopher://example.org/1/", items).feed_type == "phlog"


# --- Atom, RSS, RDF --------------------------------------------------------------------------

ATOM = b"""\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?>
<?xml-stylesheet href="style.xsl"?>
<!-- generated by a gemlog tool -->
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Gemlog of &lt;Alice&gt;</title>
  <link href="gemini://example.org/gemlog/"/>
  <id>gemini://example.org/gemlog/</id>
  <updated>2026-01-03T10:00:00Z</updated>
  <entry>
    <title type="html">Hello &lt;b&gt;bold&lt;/b&gt; &amp;amp; world</title>
    <link href="2026-01-03-hello.gmi" rel="alternate"/>
    <id>urn:x:1</id>
    <published>2026-01-03T10:00:00+02:00</published>
    <updated>2026-01-04T00:00:00Z</updated>
  </entry>
  <entry>
    <title>Only updated</title>
    <link href="gemini://EXAMPLE.org:1965/gemlog/b.gmi"/>
    <updated>2026-01-02T09:30:00Z</updated>
  </entry>
  <entry>
    <title>No link at all</title>
    <id>urn:x:3</id>
  </entry>
  <entry>
    <link href="gopher://example.org/0/c.txt"/>
  </entry>
  <entry>
    <title>Duplicate</title>
    <link href="gemini://example.org/gemlog/b.gmi"/>
  </entry>
</feed>
"""

RSS = b"""<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"
  "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="2.0">
  <channel>
    <title>Caf\xe9 phlog</title>
    <link>gopher://example.org/1/phlog</link>
    <item>
      <title>Caf\xe9 &amp; cr\xe8me</title>
      <link>gopher://example.org/0/phlog/cafe.txt</link>
      <pubDate>Fri, 02 Jan 2026 10:00:00 +0100</pubDate>
    </item>
    <item>
      <title>Relative</title>
      <link>notes.txt</link>
    </item>
    <item>
      <title>No link</title>
      <description>just words</description>
    </item>
  </channel>
</rss>
"""

RDF = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="gemini://example.org/">
    <title>An RDF channel</title>
    <link>gemini://example.org/</link>
  </channel>
  <item rdf:about="gemini://example.org/one.gmi">
    <title>One</title>
    <link>gemini://example.org/one.gmi</link>
    <dc:date>2026-01-02T03:04:05Z</dc:date>
  </item>
</rdf:RDF>
"""


def test_atom() -> None:
    """Atom entries: markup stripped, links resolved, published else updated, no link left out."""
    feed = parse_xml_feed(GEMLOG + "atom.xml", ATOM)
    assert feed == Feed(
        "atom",
        "Gemlog of <Alice>",
        (
            Entry(GEMLOG + "2026-01-03-hello.gmi", "Hello bold & world", "2026-01-03T08:00:00Z"),
            Entry(GEMLOG + "b.gmi", "Only updated", "2026-01-02T09:30:00Z"),
            Entry("gopher://example.org/0/c.txt", "gopher://example.org/0/c.txt", None),
        ),
    )


def test_rss() -> None:
    """RSS 2.0 items in a declared charset, with a DOCTYPE; relative links resolved."""
    feed = parse_xml_feed("gopher://example.org/0/phlog/rss.xml", RSS)
    assert feed == Feed(
        "rss",
        "Café phlog",
        (
            Entry("gopher://example.org/0/phlog/cafe.txt", "Café & crème", "2026-01-02T09:00:00Z"),
            Entry("gopher://example.org/0/phlog/notes.txt", "Relative", None),
        ),
    )


def test_rdf_is_rss() -> None:
    """An RSS 1.0 (RDF) document counts as rss."""
    feed = parse_xml_feed("gemini://example.org/rdf.xml", RDF)
    assert feed == Feed(
        "rss",
        "An RDF channel",
        (Entry("gemini://example.org/one.gmi", "One", "2026-01-02T03:04:05Z"),),
    )


def test_bozo_xml_is_read_as_far_as_it_goes() -> None:
    """Ill-formed XML is read leniently; what has a link is kept."""
    body = b"<rss><channel><title>Broken & co</title><item><title>A <b></title>"
    body += b"<link>gemini://example.org/a</link></item><item><title>B"
    feed = parse_xml_feed(GEMLOG, body)
    assert feed is not None and feed.feed_type == "rss"
    assert urls(feed) == ["gemini://example.org/a"]


def test_not_a_feed() -> None:
    """XML whose root is not feed, rss or rdf:RDF is not a feed."""
    assert parse_xml_feed(GEMLOG, b"<?xml version='1.0'?><html><body/></html>") is None
    assert parse_xml_feed(GEMLOG, b"# a gemtext page\n") is None
    assert parse_xml_feed(GEMLOG, b"") is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<feed xmlns='http://www.w3.org/2005/Atom'>", "atom"),
        (b"<atom:feed xmlns:atom='http://www.w3.org/2005/Atom'>", "atom"),
        (b"\xef\xbb\xbf  \n<?xml version='1.0'?>\n<!-- x -->\n<rss version='2.0'>", "rss"),
        (b"<!DOCTYPE rss [<!ENTITY a 'b'>]><rss>", "rss"),
        ("<rss>".encode("utf-16"), "rss"),
        (b"<rdf:RDF xmlns:rdf='x'>", "rss"),
        (b"<feedback>", None),
        (b"<html><feed>", None),
        (b"text <rss>", None),
        (b"<!-- unclosed comment <rss>", None),
    ],
)
def test_sniff(body: bytes, expected: str | None) -> None:
    """The root element, after any prologue, decides whether a body is a feed."""
    assert sniff_xml_feed(body) == expected


def test_feedparser_only_ever_gets_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """feedparser is handed a stream of the body, never a URL or path it could open."""
    seen: list[Any] = []
    real = feedparser.parse

    def spy(source: Any, **kwargs: Any) -> Any:
        seen.append(source)
        return real(source, **kwargs)

    monkeypatch.setattr(feedparser, "parse", spy)
    parse_xml_feed("file:///etc/passwd", b"<rss><channel><item><link>/etc/passwd</link></item>")
    detect_feed("http://example.com/feed", mime="application/rss+xml", body=b"<rss/>")
    assert seen and all(isinstance(source, io.BytesIO) for source in seen)


def test_feedparser_failure_is_an_empty_feed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should feedparser itself fail, the sniffed feed comes back empty instead."""

    def broken(source: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(feedparser, "parse", broken)
    assert parse_xml_feed(GEMLOG, b"<feed>") == Feed("atom", None, ())


def test_entity_bomb_is_harmless() -> None:
    """A billion-laughs document neither hangs nor expands."""
    entities = b"".join(b'<!ENTITY e%d "%s">' % (i + 1, b"&e%d;" % i * 10) for i in range(9))
    body = b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY e0 "lol">' + entities + b"]>"
    body += b"<rss><channel><title>&e9;</title><item><title>&e9;</title>"
    body += b"<link>gemini://example.org/a</link></item></channel></rss>"
    feed = parse_xml_feed(GEMLOG, body)
    assert feed is not None
    assert all(len(entry.title) <= MAX_TITLE_CHARS for entry in feed.entries)


# --- detect_feed ----------------------------------------------------------------------------


def test_detect_menu() -> None:
    """Menu items go to the menu reader, whatever else is given."""
    feed = detect_feed("gopher://example.org/1/phlog", mime=None, items=menu(PHLOG_MENU), now=NOW)
    assert feed.feed_type == "phlog"


@pytest.mark.parametrize(
    "mime",
    ["application/atom+xml", "application/xml; charset=utf-8", "text/xml", "text/gemini", None],
)
def test_detect_xml(mime: str | None) -> None:
    """An Atom body is read as Atom, under an XML type or any other (sniffed)."""
    assert detect_feed(GEMLOG + "atom.xml", mime=mime, body=ATOM).feed_type == "atom"


def test_detect_xml_from_text() -> None:
    """A decoded body is sniffed too (a Gopher text item holding RSS)."""
    text = RDF.decode()
    assert detect_feed("gopher://example.org/0/rdf", mime=None, text=text).feed_type == "rss"


def test_detect_gemtext() -> None:
    """text/gemini is read as gemtext, from the text or from the body in its charset."""
    assert detect_feed(GEMLOG, mime="text/gemini", text=GEMSUB).feed_type == "gemsub"
    body = "# Caf\xe9\n=> a.gmi 2026-01-02 Caf\xe9\n".encode("latin-1")
    feed = detect_feed(GEMLOG, mime="text/gemini; charset=iso-8859-1", body=body)
    assert feed.title == "Café" and feed.entries[0].title == "Café"
    assert detect_feed(GEMLOG, mime="TEXT/GEMINI; lang=en").feed_type == "page"


def test_detect_other() -> None:
    """Non-feed XML and other types are pages without entries."""
    empty = Feed("page", None, ())
    assert detect_feed(GEMLOG, mime="application/xml", body=b"<html/>") == empty
    assert detect_feed(GEMLOG, mime="text/plain", body=b"=> a.gmi 2026-01-02 x") == empty
    assert detect_feed(GEMLOG, mime="image/png", body=b"\x89PNG") == empty
    assert detect_feed(GEMLOG, mime=None) == empty


# --- properties -----------------------------------------------------------------------------

_LINE_PIECES = st.sampled_from(
    [
        "=> ",
        "=>",
        "# ",
        "```",
        "2026-01-02",
        "2026-02-30",
        " - ",
        ": ",
        "gemini://example.org/",
        "gopher://h/1/",
        "../",
        "\n",
        "\r\n",
        "\t",
        "<",
        ">",
    ]
)
_TEXT = st.lists(st.one_of(_LINE_PIECES, st.text(max_size=8)), max_size=40).map("".join)
_BASES = st.one_of(
    st.sampled_from(
        [
            GEMLOG,
            "gopher://example.org/1/",
            "gemini://[::1]/",
            "spartan://example.org/log/",
            "nex://example.org/dir/",
            "finger://example.org/alice",
            "",
            "x:y",
        ]
    ),
    st.text(max_size=20),
)


def _check(feed: Feed) -> None:
    assert feed.feed_type in FEED_TYPES
    seen = [entry.url for entry in feed.entries]
    assert len(seen) == len(set(seen))
    titles = [entry.title for entry in feed.entries]
    if feed.title is not None:
        titles.append(feed.title)
    for title in titles:
        assert title and title == title.strip() and len(title) <= MAX_TITLE_CHARS
        assert not any(char in title for char in _FORBIDDEN)
    for entry in feed.entries:
        assert entry.url
        assert entry.published is None or len(entry.published) == 20


@given(url=_BASES, text=_TEXT)
@settings(max_examples=300)
def test_gemtext_feed_never_raises(url: str, text: str) -> None:
    """Any text read as gemtext gives a well-formed feed."""
    feed = parse_gemtext_feed(url, text)
    assert feed.feed_type in ("gemsub", "page")
    _check(feed)


_XML_PIECES = st.sampled_from(
    [
        b"<?xml version='1.0'?>",
        b"<?xml version='1.0' encoding='bogus'?>",
        b"<feed>",
        b"<rss>",
        b"<rdf:RDF>",
        b"<channel>",
        b"<entry>",
        b"<item>",
        b"<title>",
        b"</title>",
        b"<link>",
        b"</link>",
        b"<link href='../a'/>",
        b"<link href='gemini://x/'/>",
        b"<published>",
        b"2026-01-02T00:00:00Z",
        b"<pubDate>",
        b"&amp;",
        b"&bogus;",
        b"<![CDATA[",
        b"]]>",
        b"<!DOCTYPE x [<!ENTITY a 'b'>]>",
        b"\xef\xbb\xbf",
        b"\x00",
        b"\xff",
    ]
)
_XML = st.lists(st.one_of(_XML_PIECES, st.binary(max_size=8)), max_size=30).map(b"".join)


@given(url=_BASES, body=st.one_of(_XML, st.binary(max_size=200)))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_xml_feed_never_raises(url: str, body: bytes) -> None:
    """Any bytes read as XML give a feed or None."""
    feed = parse_xml_feed(url, body)
    if feed is not None:
        assert feed.feed_type in ("atom", "rss")
        _check(feed)


_ITEMS = st.builds(
    MenuItem,
    item_type=st.sampled_from(["0", "1", "i", "3", "h", "7", "+", "9", "?"]),
    title=st.one_of(_TEXT, st.sampled_from(["2026-01-02 x", "2918-01-01 y", "2026-02-30"])),
    selector=st.one_of(
        st.binary(max_size=30), st.sampled_from([b"/20260102", b"/2026-01-02/x", b"99999999"])
    ),
    host=st.text(max_size=10),
    port=st.integers(min_value=0, max_value=70000),
    next_url=st.one_of(st.just(""), _BASES, st.just("gopher://h/0/x")),
)


@given(url=_BASES, items=st.lists(_ITEMS, max_size=10), now=st.floats(allow_nan=True))
@settings(max_examples=300, deadline=None)
def test_menu_feed_never_raises(url: str, items: list[MenuItem], now: float) -> None:
    """Any menu items, at any time (even a nonsense one), give a well-formed feed."""
    feed = parse_menu_feed(url, items, now=now)
    assert feed.feed_type in ("phlog", "page")
    _check(feed)


@given(
    url=_BASES,
    mime=st.one_of(
        st.none(),
        st.text(max_size=30),
        st.sampled_from(["text/gemini; charset=bogus", "application/xml", "text/gemini"]),
    ),
    body=st.one_of(st.none(), _XML, st.binary(max_size=100)),
    text=st.one_of(st.none(), _TEXT),
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_detect_feed_never_raises(
    url: str, mime: str | None, body: bytes | None, text: str | None
) -> None:
    """Whatever a fetch returned, detect_feed gives a well-formed feed."""
    _check(detect_feed(url, mime=mime, body=body, text=text, now=NOW))


@given(text=st.text(max_size=30))
def test_parse_date_never_raises(text: str) -> None:
    """parse_date answers a noon UTC time or None for any text."""
    result = parse_date(text)
    assert result is None or (result.endswith("T12:00:00Z") and text.startswith(result[:10]))


@given(selector=st.binary(max_size=40))
def test_selector_date_never_raises(selector: bytes) -> None:
    """selector_date answers a noon UTC time or None for any bytes."""
    result = selector_date(selector)
    assert result is None or result.endswith("T12:00:00Z")


_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def _canonical_or_none(result: str | None) -> None:
    """
    A feed date is None or C{YYYY-MM-DDTHH:MM:SSZ} from 1970 on that reads
    back as the same moment (what the stores accept, see L{parse_utc}).
    """
    if result is None:
        return
    assert _ISO.fullmatch(result), result
    assert parse_utc(result) == result
    assert int(result[:4]) >= EARLIEST_YEAR


_FIELD = st.one_of(
    st.integers(min_value=-3, max_value=70),
    st.integers(),
    st.sampled_from([0, 1, 999, 1969, 1970, 9999, 10000]),
)


@given(fields=st.tuples(*[_FIELD] * 9))
@settings(max_examples=500)
def test_iso_from_struct_time_property(fields: tuple[int, ...]) -> None:
    """Any struct_time at all gives None or a canonical time that round-trips."""
    _canonical_or_none(iso_from_struct_time(time.struct_time(fields)))


@given(
    year=st.integers(min_value=0, max_value=10000),
    rest=st.tuples(
        st.integers(1, 12),
        st.integers(1, 28),
        st.integers(0, 23),
        st.integers(0, 59),
        st.integers(0, 59),
    ),
    offset=st.sampled_from(["Z", "+01:00", "-05:00", "+14:00"]),
    element=st.sampled_from(["updated", "published"]),
)
@settings(max_examples=100, deadline=None)
def test_atom_dates_property(year: int, rest: tuple[int, ...], offset: str, element: str) -> None:
    """
    Whatever year an Atom entry names (0000 to 10000, any offset), the entry
    is kept with a canonical date or none (issue 21: 0999 and 0001 broke
    every feed tool).
    """
    month, day, hour, minute, second = rest
    stamp = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{offset}"
    body = (
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>Old</title>'
        f'<link href="gemini://example.org/old"/><{element}>{stamp}</{element}></entry></feed>'
    ).encode()
    feed = parse_xml_feed(GEMLOG, body)
    assert feed is not None
    (entry,) = feed.entries
    _canonical_or_none(entry.published)
    if year < EARLIEST_YEAR - 1:  # (feedparser reads a five-digit year its own way)
        assert entry.published is None


@given(text=st.one_of(st.text(max_size=30), st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}.*")))
def test_parse_date_property(text: str) -> None:
    """A gemsub day is None or a canonical time."""
    _canonical_or_none(parse_date(text))


@given(
    selector=st.one_of(
        st.binary(max_size=40), st.from_regex(rb"/[0-9]{4}-?[0-9]{2}-?[0-9]{2}[a-z./]*")
    )
)
def test_selector_date_property(selector: bytes) -> None:
    """A phlog selector's day is None or a canonical time."""
    _canonical_or_none(selector_date(selector))


def test_id_as_link() -> None:
    """An id or guid stands for a missing link only when it is a gemini or gopher URL."""
    atom = b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>urn:x:3</id></entry>'
    atom += b"<entry><title>A</title><id>gemini://example.org/a</id></entry></feed>"
    assert urls(parse_xml_feed(GEMLOG, atom) or Feed("page", None, ())) == [
        "gemini://example.org/a"
    ]
    rss = b"<rss version='2.0'><channel><item><guid>gopher://example.org/0/b</guid></item>"
    rss += b"<item><guid isPermaLink='false'>gemini://example.org/c</guid></item>"
    rss += b"<item><guid>abc</guid></item></channel></rss>"
    assert urls(parse_xml_feed(GEMLOG, rss) or Feed("page", None, ())) == [
        "gopher://example.org/0/b"
    ]


# --- the entry cap (issue 21) ---------------------------------------------------------------


def _rss(count: int, start: int = 0) -> bytes:
    items = "".join(
        f"<item><title>Post {n}</title><link>gemini://example.org/{n}</link></item>"
        for n in range(start, start + count)
    )
    channel = f"<channel><title>Big</title>{items}</channel>"
    return f'<?xml version="1.0"?><rss version="2.0">{channel}</rss>'.encode()


def test_feedparser_reads_at_most_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    Issue 21: a feed of MAX_ENTRIES + 500 items is read for its first
    MAX_ENTRIES; feedparser is never handed the others.
    """
    seen: list[bytes] = []
    real = feedparser.parse

    def spy(source: Any, **kwargs: Any) -> Any:
        data = source.read()
        seen.append(data)
        return real(io.BytesIO(data), **kwargs)

    monkeypatch.setattr(feedparser, "parse", spy)
    feed = parse_xml_feed(GEMLOG, _rss(MAX_ENTRIES + 500))
    assert feed is not None
    assert urls(feed) == [f"gemini://example.org/{n}" for n in range(MAX_ENTRIES)]
    assert feed.title == "Big"
    (handed,) = seen
    assert handed.count(b"<item>") == MAX_ENTRIES
    assert handed.endswith(b"</channel></rss>")


def test_feedparser_does_not_sanitise(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    Issue 21: feedparser's HTML sanitiser is off (it took half the parse, on
    content that is thrown away); an HTML title still comes out plain text,
    without what script, style or applet elements hold.
    """
    options: list[dict[str, Any]] = []
    real = feedparser.parse

    def spy(source: Any, **kwargs: Any) -> Any:
        options.append(kwargs)
        return real(source, **kwargs)

    monkeypatch.setattr(feedparser, "parse", spy)
    title = (
        "&lt;script&gt;alert(1)&lt;/script&gt;Hi &lt;STYLE type='x'&gt;p{}&lt;/style&gt;"
        "&lt;i&gt;there&lt;/i&gt; &amp;amp; a &lt; b&lt;applet&gt;x&lt;/applet&gt;"
    )
    body = (
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry>'
        f'<title type="html">{title}</title><link href="gemini://example.org/a"/>'
        '<content type="html">&lt;script&gt;x&lt;/script&gt;</content></entry></feed>'
    ).encode()
    feed = parse_xml_feed(GEMLOG, body)
    assert feed is not None
    assert [entry.title for entry in feed.entries] == ["Hi there & a < b"]
    assert options == [{"resolve_relative_uris": False, "sanitize_html": False}]


def test_the_cap_is_what_a_store_keeps() -> None:
    """A feed is read for as many entries as a store remembers of it."""
    assert MAX_ENTRIES == MAX_ENTRIES_PER_FEED


ATOM_TRICKS = b"""<?xml version="1.0" encoding="windows-1252"?>
<a:feed xmlns:a="http://www.w3.org/2005/Atom">
  <a:title>Tricks \xe9</a:title>
  <!-- <a:entry> in a comment is none -->
  <a:entry><a:title><![CDATA[<a:entry> in CDATA]]></a:title>
    <a:link href="gemini://example.org/1"/>
    <a:content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><entry/><item/></div></a:content>
  </a:entry>
  <a:entry><a:title>Two</a:title><a:link href="gemini://example.org/2"/></a:entry>
  <a:entry><a:title>Three</a:title><a:link href="gemini://example.org/3"/></a:entry>
</a:feed>
"""


@pytest.mark.parametrize(
    ("body", "cut_at"),
    [
        (_rss(3), b"<item><title>Post 2"),
        (ATOM_TRICKS, b"<a:entry><a:title>Three"),
        (
            RDF.replace(b"</rdf:RDF>", b"<item><link>gemini://x/2</link></item></rdf:RDF>"),
            b"<item><link>gemini://x/2",
        ),
    ],
)
def test_cut_entries(body: bytes, cut_at: bytes) -> None:
    """The cut falls where the entry after the cap starts; the open elements are closed."""
    cut = cut_entries(body, 2 if cut_at != b"<item><link>gemini://x/2" else 1)
    assert cut.startswith(body[: body.index(cut_at)])
    assert cut_at not in cut
    assert cut_entries(body, 10) == body


def test_cut_keeps_what_it_cannot_read() -> None:
    """
    A document expat cannot read up to the cut (ill-formed before it,
    UTF-16, an internal DTD subset) is left whole, for feedparser to read
    leniently as before.
    """
    broken = _rss(3).replace(b"<title>Post 0</title>", b"<title>Post 0</oops>")
    assert cut_entries(broken, 1) == broken
    wide = _rss(3).decode().replace('<?xml version="1.0"?>', "").encode("utf-16")
    assert cut_entries(wide, 1) == wide
    subset = _rss(3).replace(b"<rss", b"<!DOCTYPE rss [<!ENTITY e 'x'>]><rss", 1)
    assert cut_entries(subset, 1) == subset
    assert cut_entries(b"", 1) == b""


def test_cut_entries_windows_1252() -> None:
    """A document in a one-byte encoding other than Latin-1 is cut too, and read as before."""
    cut = cut_entries(ATOM_TRICKS, 2)
    assert cut.endswith(b"</a:feed>")
    feed = parse_xml_feed(GEMLOG, ATOM_TRICKS, max_entries=2)
    assert feed is not None
    assert (feed.title, urls(feed)) == (
        "Tricks é",
        ["gemini://example.org/1", "gemini://example.org/2"],
    )
    assert feed.entries[0].title == "<a:entry> in CDATA"


def test_gemtext_and_menus_read_at_most_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemtext links and menu items past the cap are neither dated nor kept."""
    import gophergem.feeds.parse

    dated: list[str] = []
    real = gophergem.feeds.parse.parse_date

    def count(text: str) -> str | None:
        dated.append(text)
        return real(text)

    monkeypatch.setattr(gophergem.feeds.parse, "parse_date", count)
    lines = "".join(f"=> /{n}.gmi 2026-01-02 Post {n}\n" for n in range(50))
    feed = parse_gemtext_feed(GEMLOG, lines, max_entries=20)
    assert (feed.feed_type, len(feed.entries), len(dated)) == ("gemsub", 20, 20)
    dated.clear()
    items = [
        MenuItem("0", f"2026-01-02 Post {n}", f"/{n}".encode(), "h", 70, f"gopher://h/0/{n}")
        for n in range(50)
    ]
    feed = parse_menu_feed("gopher://h/1/", items, now=NOW, max_entries=20)
    assert (feed.feed_type, len(feed.entries), len(dated)) == ("phlog", 20, 20)


_POST = st.builds(
    lambda title, kind: (title, kind),
    st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=12),
    st.sampled_from(["plain", "cdata", "comment", "nested"]),
)


def _item(n: int, post: tuple[str, str], atom: bool) -> str:
    title, kind = post
    text = html.escape(title)
    if kind == "cdata":
        text = "<![CDATA[<item><entry>" + title.replace("]]>", "") + "]]>"
    extra = {
        "comment": "<!-- <item><entry> -->",
        "nested": '<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><item/></div></content>'
        if atom
        else "<description>&lt;item&gt;</description>",
    }.get(kind, "")
    if atom:
        return f'<entry><title>{text}</title><link href="gemini://example.org/{n}"/>{extra}</entry>'
    return f"<item><title>{text}</title><link>gemini://example.org/{n}</link>{extra}</item>"


@given(
    posts=st.lists(_POST, max_size=8),
    atom=st.booleans(),
    cap=st.integers(min_value=1, max_value=6),
)
@settings(max_examples=100, deadline=None)
def test_cutting_changes_nothing_but_the_count(
    posts: list[tuple[str, str]], atom: bool, cap: int
) -> None:
    """A well-formed feed read up to a cap gives exactly the first entries of the whole."""
    items = "".join(_item(n, post, atom) for n, post in enumerate(posts))
    if atom:
        body = f'<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>{items}</feed>'
    else:
        body = f'<rss version="2.0"><channel><title>T</title>{items}</channel></rss>'
    whole = parse_xml_feed(GEMLOG, body.encode(), max_entries=100)
    capped = parse_xml_feed(GEMLOG, body.encode(), max_entries=cap)
    assert whole is not None and capped is not None
    assert capped == attrs.evolve(whole, entries=whole.entries[:cap])


@given(body=st.one_of(_XML, st.binary(max_size=200)), cap=st.integers(min_value=0, max_value=3))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_cut_entries_never_raises(body: bytes, cap: int) -> None:
    """Any bytes: the cut is a prefix plus closing tags, or the body itself."""
    cut = cut_entries(body, cap)
    parts = re.fullmatch(rb"(.*?)((?:</[^<>]+>)*)", cut, re.DOTALL)
    assert parts is not None and body.startswith(parts.group(1))
    feed = parse_xml_feed(GEMLOG, body, max_entries=cap)
    if feed is not None:
        assert len(feed.entries) <= cap
        _check(feed)


# --- Finger plans ---------------------------------------------------------------------


BSD_ANSWER = """\
Login: alice          \t\t\tName: Alice
Directory: /home/alice                 Shell: /bin/sh
On since Fri Dec  4 09:00 (UTC) on pts/0, idle 0:03
No mail.
Plan:

Climbing.\t\x20
More later.

"""


@pytest.mark.parametrize(
    ("answer", "plan"),
    [
        ("Reading.\r\nWriting.\r\n", "Reading.\nWriting."),
        ("\n\n  Indented first line\n\n", "  Indented first line"),
        (BSD_ANSWER, "Climbing.\nMore later."),
        ("Login: bob\nNo mail.\nNo Plan.\n", ""),
        ("Login: bob\nPlan: inline plan\nsecond\n", "inline plan\nsecond"),
        ("", ""),
    ],
)
def test_plan_of(answer: str, plan: str) -> None:
    """The plan is what follows "Plan:" when the account is described first, else the answer."""
    assert plan_of(answer) == plan


def test_plan_feed() -> None:
    """One entry: the URL with the plan's digest, titled by its first line, undated."""
    feed = parse_plan_feed("finger://example.org/alice", BSD_ANSWER)
    assert (feed.feed_type, feed.title) == ("plan", "alice@example.org")
    (entry,) = feed.entries
    url, _, digest = entry.url.partition("#")
    assert url == "finger://example.org/alice"
    assert len(digest) == PLAN_DIGEST_CHARS and int(digest, 16) >= 0
    assert (entry.title, entry.published) == ("Climbing.", None)
    # Only the plan counts: the idle time is not part of it.
    later = parse_plan_feed("finger://example.org/alice", BSD_ANSWER.replace("0:03", "2:10"))
    assert later.entries == feed.entries
    other = parse_plan_feed("finger://example.org/alice", BSD_ANSWER.replace("More", "Much"))
    assert other.entries[0].url != entry.url


def test_plan_feed_empty_and_user_list() -> None:
    """No plan has a title of its own; the user list of a host is titled by the host."""
    feed = parse_plan_feed("finger://example.org/", "No Plan.\n")
    assert feed.title == "example.org"
    assert feed.entries[0].title == NO_PLAN


def test_plan_version() -> None:
    """The kept entry while the plan reads as last seen; a new one for every change."""
    now = parse_plan_feed("finger://h/a", "B").entries[0]
    old = parse_plan_feed("finger://h/a", "A").entries[0]
    assert plan_version(now, []) == now
    assert plan_version(now, [(now.url, "2026-12-01T00:00:00Z")]) == now
    # Changed from A: B is new.
    assert plan_version(now, [(old.url, "2026-12-01T00:00:00Z")]) == now
    # Back to A after B: a new entry, numbered.
    kept = [(old.url, "2026-12-01T00:00:00Z"), (now.url, "2026-12-02T00:00:00Z")]
    again = plan_version(old, kept)
    assert again.url == old.url + ".2" and again.title == old.title
    # A again later, after B again: .3; while A reads as last seen, .3 is kept.
    kept += [(again.url, "2026-12-03T00:00:00Z"), (now.url + ".2", "2026-12-04T00:00:00Z")]
    third = plan_version(old, kept)
    assert third.url == old.url + ".3"
    kept.append((third.url, "2026-12-05T00:00:00Z"))
    assert plan_version(old, kept) == third


@given(url=_BASES, text=_TEXT)
def test_plan_feed_never_raises(url: str, text: str) -> None:
    """Any answer read as a plan gives one well-formed entry."""
    feed = parse_plan_feed(url, text)
    _check(feed)
    assert len(feed.entries) == 1
    assert "#" in feed.entries[0].url
