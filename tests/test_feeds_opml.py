"""
Tests for L{gophergem.feeds.opml}: subscription lists read and written as
OPML 2.0.  Example documents, refusals, and hypothesis properties: only
L{OPMLError} is ever raised, and what is written reads back the same.
"""

from __future__ import annotations

import calendar
import contextlib
import email.utils
import xml.etree.ElementTree as ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.feeds.opml import MAX_OPML_BYTES, OPMLError, Outline, parse_opml, write_opml
from gophergem.feeds.parse import canonical_url
from gophergem.wire.gopher import MAX_TITLE_CHARS

# The shape Astronomo exports (capsules.md 1.5): folders as outlines without
# an xmlUrl, feeds nested in them, title and text on every feed.
ASTRONOMO = b"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0">
  <head>
    <title>Astronomo Feeds</title>
    <dateCreated>Wed, 03 Dec 2026 12:00:00 GMT</dateCreated>
  </head>
  <body>
    <outline type="rss" text="Top" title="Top level" xmlUrl="gemini://example.org/gemlog/"/>
    <outline text="Friends">
      <outline type="rss" text="Alice" title="Alice's log" xmlUrl="gemini://alice.example/"/>
      <outline text="Deeper">
        <outline type="rss" text="Bob" xmlUrl="gopher://bob.example:70/1/phlog"/>
      </outline>
    </outline>
    <outline type="rss" text="Web feed" xmlUrl="https://example.com/feed.xml"/>
    <outline type="rss" text="Again" title="Top again" xmlUrl="gemini://EXAMPLE.org:1965/gemlog/"/>
    <outline type="link" text="No feed" url="gemini://example.org/"/>
    <outline type="rss" text="Empty" xmlUrl="  "/>
  </body>
</opml>
"""


def test_parse_astronomo() -> None:
    """Every outline with an xmlUrl, folders flattened, in order, each URL once."""
    assert parse_opml(ASTRONOMO) == [
        Outline("gemini://example.org/gemlog/", "Top level"),
        Outline("gemini://alice.example/", "Alice's log"),
        Outline("gopher://bob.example/1/phlog", "Bob"),
        Outline("https://example.com/feed.xml", "Web feed"),
    ]


def test_parse_titles() -> None:
    """A title falls back to the text; text that only repeats the URL is no title."""
    data = b"""<opml version="1.0"><body>
      <outline xmlurl="gemini://a.example/" TEXT="lower-case names"/>
      <outline xmlUrl="gemini://b.example/" text="gemini://b.example/"/>
      <outline xmlUrl="gemini://c.example/" title="  Red&#x202e;&#x200b;  "/>
      <outline xmlUrl="gemini://d.example/" title="%s"/>
    </body></opml>""" % (b"x" * 2000)
    outlines = parse_opml(data)
    assert outlines[:3] == [
        Outline("gemini://a.example/", "lower-case names"),
        Outline("gemini://b.example/", None),
        Outline("gemini://c.example/", "Red"),
    ]
    title = outlines[3].title
    assert title is not None and len(title) == MAX_TITLE_CHARS


def test_parse_empty_list() -> None:
    """An OPML document without feeds is an empty list."""
    assert parse_opml(b"<opml version='2.0'><head/><body/></opml>") == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not XML: no element found: line 1, column 0"),
        (b"<html><body/></html>", "not OPML: root element is <html>"),
        (b"<?xml version='1.0'?><rss/>", "not OPML: root element is <rss>"),
        (b"<opml><body>", "not XML: no element found: line 1, column 12"),
        (b"\xff\xfe\x00", "not XML: unclosed token: line 1, column 1"),
        (b"<?xml version='1.0' encoding='bogus'?><opml/>", "not XML: unknown encoding: bogus"),
        (
            b'<!DOCTYPE opml [<!ENTITY a "aaaa">]><opml>&a;</opml>',
            "refused: the document declares entities",
        ),
        (
            b'<!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]><opml>&x;</opml>',
            "refused: the document declares entities",
        ),
    ],
)
def test_refused(data: bytes, message: str) -> None:
    """What is not OPML, or is unsafe XML, is one OPMLError saying why."""
    with pytest.raises(OPMLError) as caught:
        parse_opml(data)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_too_large() -> None:
    """A document over the size cap is refused before it is parsed."""
    data = b"<opml>" + b" " * MAX_OPML_BYTES + b"</opml>"
    with pytest.raises(OPMLError, match=r"^too large: "):
        parse_opml(data)


def test_deep_nesting() -> None:
    """Folders nested as deep as the size cap allows are still flattened."""
    depth = 200_000
    data = b"<opml><body>" + b"<outline>" * depth
    data += (
        b'<outline xmlUrl="gemini://deep.example/"/>' + b"</outline>" * depth + b"</body></opml>"
    )
    assert len(data) < MAX_OPML_BYTES
    assert parse_opml(data) == [Outline("gemini://deep.example/", None)]


def test_write() -> None:
    """write_opml writes OPML 2.0 with a head, an RFC 822 date and one rss outline per feed."""
    created = float(calendar.timegm((2026, 12, 3, 12, 0, 0)))
    data = write_opml(
        [
            Outline("gemini://example.org/gemlog/", 'Alice <&> "quotes"'),
            Outline("gopher://example.org/1/phlog", None),
            Outline("gemini://EXAMPLE.org:1965/gemlog/", "duplicate"),
            Outline("  ", "no URL"),
        ],
        title="My list",
        created=created,
    )
    assert data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ElementTree.fromstring(data)
    assert root.tag == "opml" and root.get("version") == "2.0"
    assert root.findtext("head/title") == "My list"
    date = root.findtext("head/dateCreated")
    assert date == "Thu, 03 Dec 2026 12:00:00 GMT"
    assert email.utils.parsedate_to_datetime(date).timestamp() == created
    outlines = [dict(o.attrib) for o in root.iter("outline")]
    assert outlines == [
        {
            "type": "rss",
            "text": 'Alice <&> "quotes"',
            "title": 'Alice <&> "quotes"',
            "xmlUrl": "gemini://example.org/gemlog/",
        },
        {
            "type": "rss",
            "text": "gopher://example.org/1/phlog",
            "xmlUrl": "gopher://example.org/1/phlog",
        },
    ]


def test_write_defaults() -> None:
    """By default the list is titled for gophergem and dated now."""
    root = ElementTree.fromstring(write_opml([]))
    assert root.findtext("head/title") == "gophergem subscriptions"
    date = root.findtext("head/dateCreated")
    assert date is not None and email.utils.parsedate_to_datetime(date).year >= 2026
    assert parse_opml(write_opml([])) == []


def test_write_what_xml_cannot_carry() -> None:
    """Characters XML 1.0 cannot hold are left out rather than written broken."""
    data = write_opml([Outline("gemini://a.example/\x00", "A\x01\ufffe\uffff\ud800 B")])
    assert parse_opml(data) == [Outline("gemini://a.example/", "A B")]


# --- properties -----------------------------------------------------------------------------

_PRINTABLE = st.characters(blacklist_categories=("Cc", "Cs"), codec="utf-8")
_HOSTS = st.sampled_from(["example.org", "EXAMPLE.org", "b\u00fccher.example", "[::1]", "10.0.0.1"])
_PATHS = st.text(alphabet=st.characters(codec="utf-8"), max_size=15)
_URLS = st.one_of(
    st.builds(lambda h, p: f"gemini://{h}/{p}", _HOSTS, _PATHS),
    st.builds(lambda h, p: f"gopher://{h}/1{p}", _HOSTS, _PATHS),
    st.text(max_size=20),
)
_OUTLINES = st.lists(
    st.builds(Outline, url=_URLS, title=st.one_of(st.none(), st.text(max_size=30))), max_size=8
)


@given(outlines=_OUTLINES, title=st.text(max_size=20), created=st.integers(0, 2**33))
@settings(max_examples=300)
def test_round_trip(outlines: list[Outline], title: str, created: int) -> None:
    """Whatever is written reads back, and reading it back again changes nothing."""
    once = parse_opml(write_opml(outlines, title=title, created=created))
    assert parse_opml(write_opml(once)) == once
    assert len(once) <= len(outlines)


_CLEAN_TITLES = st.one_of(
    st.none(),
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cf", "Cs", "Co", "Zl", "Zp", "Cn"), codec="utf-8"
        ),
        min_size=1,
        max_size=30,
    ).filter(lambda t: t == t.strip() and t.strip() != ""),
)


@given(
    outlines=st.lists(
        st.builds(
            Outline,
            url=st.builds(
                lambda h, p: canonical_url(f"gemini://{h}/{p}"),
                _HOSTS,
                st.text(alphabet=_PRINTABLE, max_size=15),
            ),
            title=_CLEAN_TITLES,
        ),
        max_size=8,
        unique_by=lambda o: o.url,
    )
)
@settings(max_examples=300)
def test_round_trip_exact(outlines: list[Outline]) -> None:
    """Canonical URLs with clean titles read back exactly as written, in order."""
    assert parse_opml(write_opml(outlines)) == outlines


_XML_PIECES = st.sampled_from(
    [
        b"<?xml version='1.0'?>",
        b"<opml version='2.0'>",
        b"</opml>",
        b"<body>",
        b"</body>",
        b"<outline ",
        b"xmlUrl='gemini://x/'",
        b"xmlUrl=''",
        b"text='&amp;'",
        b"title='&#0;'",
        b"/>",
        b">",
        b"</outline>",
        b"<!DOCTYPE opml>",
        b"<!ENTITY a 'b'>",
        b"&a;",
        b"\xef\xbb\xbf",
        b"\x00",
    ]
)


@given(data=st.one_of(st.binary(max_size=200), st.lists(_XML_PIECES, max_size=30).map(b"".join)))
@settings(max_examples=400)
def test_parse_raises_only_opml_error(data: bytes) -> None:
    """Any bytes give a list of outlines or an OPMLError with a one-line message."""
    try:
        outlines = parse_opml(data)
    except OPMLError as error:
        message = str(error)
        assert message and "\n" not in message
    else:
        assert len({o.url for o in outlines}) == len(outlines)
        assert all(o.url and (o.title is None or o.title) for o in outlines)


@given(text=st.text(max_size=200))
def test_parse_text_raises_only_opml_error(text: str) -> None:
    """Text of any kind, encoded, gives outlines or an OPMLError."""
    with contextlib.suppress(OPMLError):
        parse_opml(text.encode("utf-8", "surrogatepass"))
