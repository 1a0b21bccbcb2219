"""
Tests for L{gophergem.wire.gemtext}: the line model, links, gemlog entries
and windows.  Vector tables plus hypothesis properties.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import InvalidRequest
from gophergem.url import GeminiURL
from gophergem.wire.gemtext import (
    LINE_TYPES,
    FeedEntry,
    GemtextDocument,
    GemtextLine,
    Link,
    TextWindow,
    gemtext_lines,
    parse_gemtext,
    window_text,
)

BASE = GeminiURL.from_text("gemini://example.org/dir/page.gmi")
TORTURE = "gemini://gemini.conman.org/test/torture/"

_FORBIDDEN = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
_KEPT_FORMAT = {"\u200c", "\u200d"}


def _one(line: str, base: GeminiURL = BASE) -> GemtextLine:
    document = parse_gemtext(line, base)
    assert len(document.lines) == 1, document
    return document.lines[0]


def _fields(line: GemtextLine) -> dict[str, Any]:
    """The fields that are set, as the result layer will show them."""
    return {k: v for k, v in attrs.asdict(line, recurse=False).items() if v is not None}


# --- one line at a time -----------------------------------------------------------

LINE_VECTORS: list[tuple[str, dict[str, Any]]] = [
    ("plain text", {"type": "text", "content": "plain text"}),
    ("  indented", {"type": "text", "content": "  indented"}),
    # Links.
    (
        "=> gemini://example.org/x Label",
        {
            "type": "link",
            "content": "=> gemini://example.org/x Label",
            "link": Link("gemini://example.org/x", "Label"),
        },
    ),
    (
        "=>gemini://example.org/bar label",
        {
            "type": "link",
            "content": "=>gemini://example.org/bar label",
            "link": Link("gemini://example.org/bar", "label"),
        },
    ),
    (
        "=>  other   many  spaces  ",
        {
            "type": "link",
            "content": "=>  other   many  spaces  ",
            "link": Link("gemini://example.org/dir/other", "many  spaces"),
        },
    ),
    (
        "=>\tx\tTabbed\tlabel",
        {
            "type": "link",
            "content": "=> x Tabbed label",
            "link": Link("gemini://example.org/dir/x", "Tabbed label"),
        },
    ),
    ("=> /abs", {"type": "link", "content": "=> /abs", "link": Link("gemini://example.org/abs")}),
    ("=> ../up", {"type": "link", "content": "=> ../up", "link": Link("gemini://example.org/up")}),
    (
        "=> ?q",
        {"type": "link", "content": "=> ?q", "link": Link("gemini://example.org/dir/page.gmi?q")},
    ),
    # "=>" with nothing usable after it is text.
    ("=>", {"type": "text", "content": "=>"}),
    ("=>   ", {"type": "text", "content": "=>   "}),
    ("=>\t", {"type": "text", "content": "=> "}),
    ("= > x", {"type": "text", "content": "= > x"}),
    (" => x", {"type": "text", "content": " => x"}),
    # Headings; "####" is a level-3 heading whose text starts with "#".
    ("# Title", {"type": "heading1", "content": "# Title", "text": "Title", "level": 1}),
    ("#Title", {"type": "heading1", "content": "#Title", "text": "Title", "level": 1}),
    ("## Sub", {"type": "heading2", "content": "## Sub", "text": "Sub", "level": 2}),
    ("###\tThird", {"type": "heading3", "content": "### Third", "text": "Third", "level": 3}),
    ("#### Four", {"type": "heading3", "content": "#### Four", "text": "# Four", "level": 3}),
    ("#", {"type": "heading1", "content": "#", "text": "", "level": 1}),
    # Lists: "* " or "*" and a tab; "*emphasis*" is text.
    ("* item", {"type": "list", "content": "* item", "text": "item"}),
    ("*\titem", {"type": "list", "content": "* item", "text": "item"}),
    ("*   spaced", {"type": "list", "content": "*   spaced", "text": "spaced"}),
    ("*emphasis*", {"type": "text", "content": "*emphasis*"}),
    ("**bold**", {"type": "text", "content": "**bold**"}),
    ("*", {"type": "text", "content": "*"}),
    # Quotes, space optional.
    ("> quoted", {"type": "quote", "content": "> quoted", "text": "quoted"}),
    (">quoted", {"type": "quote", "content": ">quoted", "text": "quoted"}),
    (">", {"type": "quote", "content": ">", "text": ""}),
    # A lone toggle opens a block.
    ("```", {"type": "preformat", "content": "```"}),
    (
        "```python",
        {"type": "preformat", "content": "```python", "alt_text": "python", "language": "python"},
    ),
]


@pytest.mark.parametrize(("line", "expected"), LINE_VECTORS)
def test_line_table(line: str, expected: dict[str, Any]) -> None:
    """Each line gets its type, its sanitised content and only the fields that apply."""
    assert _fields(_one(line)) == expected


TORTURE_LINKS = [
    ("0001", "=> gemini://gemini.conman.org/test/torture/0002 Next", TORTURE + "0002", "Next"),
    ("0002", "=> //gemini.conman.org/test/torture/0003 Next", TORTURE + "0003", "Next"),
    ("0003", "=> //gemini.conman.org/test/torture/0004\tNext", TORTURE + "0004", "Next"),
    ("0004", "=> /test/torture/0005 Next", TORTURE + "0005", "Next"),
    ("0005", "=> /test/torture/0006", TORTURE + "0006", None),
    ("0006", "=> 0007 Next", TORTURE + "0007", "Next"),
    ("0007", "=> 0008", TORTURE + "0008", None),
    ("0008", "=> /test/../test/torture/0009 Next", TORTURE + "0009", "Next"),
    ("0009", "=> /test/torture/../../test/./torture/0010", TORTURE + "0010", None),
    ("0010", "=> ../../../../test/./././torture/./0011 Next", TORTURE + "0011", "Next"),
    ("0019", "=> gopher://gopher.conman.org/ Gopher", "gopher://gopher.conman.org/", "Gopher"),
    ("0019", "=> http://www.conman.org/ Web", "http://www.conman.org/", "Web"),
    ("0019", "=> about:blank About", "about:blank", "About"),
    ("0019", "=> example:test Example", "example:test", "Example"),
    ("0020", "=> gopher://gopher.conman.org/", "gopher://gopher.conman.org/", None),
    ("0020", "=> about:blank", "about:blank", None),
    ("0020", "=> example:test", "example:test", None),
    (
        "0021",
        "=> data:text/gemini;charset=utf-8,%3D%3E%200022%0A Data",
        "data:text/gemini;charset=utf-8,%3D%3E%200022%0A",
        "Data",
    ),
    (
        "0021",
        "=> data:text/gemini;base64,PT4gMDAyMgo= Base64",
        "data:text/gemini;base64,PT4gMDAyMgo=",
        "Base64",
    ),
    (
        "0028",
        "=> This is out of order gemini://gemini.conman.org/test/torture/0029",
        TORTURE + "This",
        "is out of order gemini://gemini.conman.org/test/torture/0029",
    ),
    ("0031", "=> <0032> Next", TORTURE + "0032", "Next"),
    ("0031", "=> file:///etc/passwd", "file:///etc/passwd", None),
]


@pytest.mark.parametrize(("page", "line", "url", "label"), TORTURE_LINKS)
def test_torture_links(page: str, line: str, url: str, label: str | None) -> None:
    """Links of the client torture test resolve correctly, other schemes kept as written."""
    parsed = _one(line, GeminiURL.from_text(TORTURE + page))
    assert parsed.type == "link"
    assert parsed.link == Link(url, label)


def test_torture_0032_empty_link() -> None:
    """Torture 0032: a bare "=>" is a text line, not a link to the page itself."""
    document = parse_gemtext("=>\r\n", GeminiURL.from_text(TORTURE + "0032"))
    assert document.lines == (GemtextLine("text", "=>"),)
    assert document.links == ()


# --- whole documents --------------------------------------------------------------

PAGE = """\
\ufeff# Welcome
Some text with a link below.
=> next.gmi Next page
```ascii-art of a => cat
=> not-a-link
# not a heading
* not a list
```ignored text after close
* item
> quote

=> gopher://example.org/1/ Gopher hole
"""


def test_document() -> None:
    """A page keeps every line once, in order; links are collected; posts are absent."""
    document = parse_gemtext(PAGE, BASE)
    assert [line.type for line in document.lines] == [
        "heading1",
        "text",
        "link",
        "preformat",
        "preformat",
        "preformat",
        "preformat",
        "preformat",
        "list",
        "quote",
        "text",
        "link",
    ]
    assert document.lines[0] == GemtextLine("heading1", "# Welcome", text="Welcome", level=1)
    assert document.links == (
        Link("gemini://example.org/dir/next.gmi", "Next page"),
        Link("gopher://example.org/1/", "Gopher hole"),
    )
    opening = document.lines[3]
    assert opening.alt_text == "ascii-art of a => cat"
    assert opening.language is None
    closing = document.lines[7]
    assert closing == GemtextLine("preformat", "```ignored text after close")
    assert document.lines[4] == GemtextLine("preformat", "=> not-a-link")
    assert document.feed_entries == ()


def test_crlf_and_lf_parse_alike() -> None:
    """CRLF and LF line ends give the same lines."""
    assert parse_gemtext(PAGE.replace("\n", "\r\n"), BASE) == parse_gemtext(PAGE, BASE)


def test_blank_lines_are_kept() -> None:
    """Blank lines are text lines of their own, never collapsed."""
    assert parse_gemtext("\n\r\n", BASE).lines == (GemtextLine("text", ""),) * 2


def test_unterminated_last_line() -> None:
    """A last line without a line end is still a line; a final newline adds none."""
    assert len(parse_gemtext("a\nb", BASE).lines) == 2
    assert len(parse_gemtext("a\nb\n", BASE).lines) == 2
    assert len(parse_gemtext("a\n\n", BASE).lines) == 2
    assert parse_gemtext("", BASE) == GemtextDocument((), (), ())


def test_bom_only_at_the_start() -> None:
    """A BOM at the start is ignored so the first line keeps its type."""
    assert _one("\ufeff=> x").type == "link"
    assert _one("\ufeff```").type == "preformat"


def test_unclosed_preformat_runs_to_the_end() -> None:
    """A block that is never closed makes every later line preformatted."""
    document = parse_gemtext("```\n=> a\n# b", BASE)
    assert [line.type for line in document.lines] == ["preformat"] * 3
    assert document.links == ()


def test_toggle_needs_column_one() -> None:
    """An indented ``` is text, not a toggle."""
    assert _one(" ```").type == "text"


def test_preformatted_lines_keep_tabs_and_spaces() -> None:
    """Preformatted text keeps its whitespace exactly, tabs included."""
    document = parse_gemtext("```\n\tindent  two\n```\n", BASE)
    assert document.lines[1].content == "\tindent  two"


LANGUAGE_VECTORS = [
    ("```python", "python", "python"),
    ("```  python  ", "python", "python"),
    ("```sh session", "sh session", "sh"),
    ("```c++", "c++", "c++"),
    ("```C#", "C#", "C#"),
    ("```objective-c", "objective-c", "objective-c"),
    ("```Go", "Go", "Go"),
    ("```json5 config", "json5 config", "json5"),
    ("```A cat sitting", "A cat sitting", None),
    ("```ASCII art of a rocket", "ASCII art of a rocket", None),
    ("```ascii art", "ascii art", None),
    ("```ascii-art of a cat", "ascii-art of a cat", None),
    ("```Mountain landscape", "Mountain landscape", None),
    ("```the output", "the output", None),
    ("```e.g.", "e.g.", None),
    ("```(diagram)", "(diagram)", None),
    ("```日本", "日本", None),
    ("```", None, None),
    ("```   ", None, None),
]


@pytest.mark.parametrize(("line", "alt_text", "language"), LANGUAGE_VECTORS)
def test_alt_text_and_language(line: str, alt_text: str | None, language: str | None) -> None:
    """An opening toggle carries its alt text, and a language when the first word names one."""
    parsed = _one(line)
    assert (parsed.alt_text, parsed.language) == (alt_text, language)


# --- sanitising -------------------------------------------------------------------


def test_server_text_is_sanitised() -> None:
    """ANSI escapes, bidi overrides and stray CRs never reach any field."""
    document = parse_gemtext(
        "# \x1b[31mRed\x1b[0m title\u202e\r\n"
        "=> x\x07 Label \x1b]0;pwn\x07here\u2028\n"
        "> a\rb\n"
        "```\x1b[1mpy\n"
        "\tcode\x00\u202e\n",
        BASE,
    )
    heading, link, quote, toggle, code = document.lines
    assert heading.text == "Red title"
    assert link.link == Link("gemini://example.org/dir/x", "Label here")
    assert quote.text == "ab"
    assert toggle.alt_text == "py" and toggle.language == "py"
    assert code.content == "\tcode"


def _clean(text: str, *, tabs: bool = False) -> bool:
    return all(
        (unicodedata.category(c) not in _FORBIDDEN or c in _KEPT_FORMAT or (tabs and c == "\t"))
        for c in text
    )


_GEMTEXT_CHARS = st.sampled_from(
    [
        *"=>#*` \t\r\nabc/.:?%-0123456789<>é",
        *("\x1b", "\x00", "\u202e", "\ufeff", "\u2028", "\x85", "\ud800"),
    ]
)
_GEMTEXT = st.one_of(st.text(max_size=200), st.text(_GEMTEXT_CHARS, max_size=200))
_BASES = st.sampled_from(
    [
        BASE,
        GeminiURL("example.org"),
        GeminiURL("::1", 1966, "/a/b", "q"),
        GeminiURL.from_text(TORTURE + "0010"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(text=_GEMTEXT, base=_BASES)
def test_parse_never_raises_and_keeps_every_line(text: str, base: GeminiURL) -> None:
    """
    Any text parses: one line per input line, known types only, every field
    sanitised, links gathered from link lines, posts taken from links.
    """
    document = parse_gemtext(text, base)
    body = text.removeprefix("\ufeff")
    expected = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    assert len(document.lines) == expected
    links = []
    for line in document.lines:
        assert line.type in LINE_TYPES
        assert _clean(line.content, tabs=line.type == "preformat")
        assert "\n" not in line.content
        for value in (line.text, line.alt_text, line.language):
            assert value is None or _clean(value)
        assert (line.level is not None) == line.type.startswith("heading")
        assert (line.link is not None) == (line.type == "link")
        if line.link is not None:
            assert line.link.url and _clean(line.link.url)
            assert " " not in line.link.url
            assert line.link.text is None or (line.link.text and _clean(line.link.text))
            links.append(line.link)
    assert list(document.links) == links
    urls = {link.url for link in links}
    assert all(entry.url in urls for entry in document.feed_entries)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(_GEMTEXT_CHARS.filter(lambda c: c not in "\r\n"), max_size=30)))
def test_line_ends_do_not_matter(lines: list[str]) -> None:
    """The same lines joined with LF or CRLF parse alike."""
    lf = parse_gemtext("\n".join(lines), BASE)
    crlf = parse_gemtext("\r\n".join(lines), BASE)
    assert lf == crlf


# --- gemlog feed entries ----------------------------------------------------------

GEMLOG = """\
# My gemlog
=> /about.gmi About me
=> 2024-03-01-spring.gmi 2024-03-01 - Spring is here
=> 2023-12-24.gmi 2023-12-24 \u2013 Holidays
=> /posts/b.gmi 2024-03-01: Second post that day
=> /posts/c.gmi 2024-05-17 Latest
=> /posts/d.gmi 2023-02-30 Not a real date
=> /posts/e.gmi 2024-1-5 Not padded
=> /posts/f.gmi 20240105 No dashes
=> /posts/g.gmi 2024-01-05T10:00 A timestamp, not a date
=> /posts/h.gmi Posted 2024-01-05
=> /posts/i.gmi 2022-07-01
=> gemini://friend.example/log/x.gmi 2024-04-01 \u2014 Friend's post
=> /posts/j.gmi \u0662\u0660\u0662\u0664-\u0660\u0661-\u0660\u0665 Arabic digits
"""


def test_feed_entries() -> None:
    """Dated link labels become posts, newest first, in page order within a day."""
    document = parse_gemtext(GEMLOG, GeminiURL.from_text("gemini://example.org/log/"))
    assert document.feed_entries == (
        FeedEntry("2024-05-17", "Latest", "gemini://example.org/posts/c.gmi"),
        FeedEntry("2024-04-01", "Friend's post", "gemini://friend.example/log/x.gmi"),
        FeedEntry("2024-03-01", "Spring is here", "gemini://example.org/log/2024-03-01-spring.gmi"),
        FeedEntry("2024-03-01", "Second post that day", "gemini://example.org/posts/b.gmi"),
        FeedEntry("2023-12-24", "Holidays", "gemini://example.org/log/2023-12-24.gmi"),
        FeedEntry("2022-07-01", "", "gemini://example.org/posts/i.gmi"),
    )


def test_no_feed_entries_on_an_ordinary_page() -> None:
    """A page without dated link labels has no posts."""
    assert parse_gemtext(PAGE, BASE).feed_entries == ()


def test_dates_outside_links_are_not_posts() -> None:
    """Dated headings, text and preformatted lines are not posts."""
    text = "# 2024-01-01 Title\n2024-01-01 text\n```\n=> x 2024-01-01 no\n```\n"
    assert parse_gemtext(text, BASE).feed_entries == ()


# --- windows ----------------------------------------------------------------------

WINDOW_VECTORS = [
    # text, offset, limit -> window text, next offset, partial
    ("ab\ncd\nef\n", 0, 100, "ab\ncd\nef\n", None, False),
    ("ab\ncd\nef\n", 0, 7, "ab\ncd\n", 6, False),
    ("ab\ncd\nef\n", 0, 6, "ab\ncd\n", 6, False),
    ("ab\ncd\nef\n", 0, 5, "ab\n", 3, False),
    ("ab\ncd\nef\n", 6, 3, "ef\n", None, False),
    ("ab\ncd\nef", 6, 2, "ef", None, False),
    ("ab\ncd\nef\n", 9, 5, "", None, False),
    ("ab\ncd\nef\n", 50, 5, "", None, False),
    ("", 0, 5, "", None, False),
    # A line longer than the window: its first part, then the rest of it.
    ("abcdefgh\nxy\n", 0, 3, "abc", 3, True),
    ("abcdefgh\nxy\n", 3, 3, "def", 6, True),
    ("abcdefgh\nxy\n", 6, 3, "gh\n", 9, True),
    ("abcdefgh\nxy\n", 6, 10, "gh\n", 9, True),
    ("abcdefgh\nxy\n", 9, 3, "xy\n", None, False),
    ("abcdefgh", 6, 3, "gh", None, True),
    # A line of exactly the window's size has no room for its line end.
    ("ab\ncd\n", 0, 2, "ab", 2, True),
    ("ab\ncd\n", 2, 2, "\n", 3, True),
]


@pytest.mark.parametrize(
    ("text", "offset", "limit", "window", "next_offset", "partial"), WINDOW_VECTORS
)
def test_window_table(
    text: str, offset: int, limit: int, window: str, next_offset: int | None, partial: bool
) -> None:
    """Windows end after the last whole line that fits; an overlong line is cut and marked."""
    assert window_text(text, offset, limit) == TextWindow(window, next_offset, partial)


@pytest.mark.parametrize(("offset", "limit"), [(-1, 10), (0, 0), (0, -5)])
def test_window_refuses_bad_arguments(offset: int, limit: int) -> None:
    """A negative offset or a window under one character is INVALID_REQUEST."""
    with pytest.raises(InvalidRequest):
        window_text("abc", offset, limit)


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(st.text(max_size=300), st.text(st.sampled_from("ab\n"), max_size=300)),
    limit=st.integers(min_value=1, max_value=40),
)
def test_windows_reassemble_the_text(text: str, limit: int) -> None:
    """
    Walking windows from 0 until next_offset is None gives back the text
    exactly; every window is non-empty and fits; a whole-line window starts
    at a line start and ends at a line end.
    """
    offset: int | None = 0
    pieces = []
    while offset is not None:
        window = window_text(text, offset, limit)
        assert len(window.text) <= limit
        if window.next_offset is not None:
            assert window.next_offset == offset + len(window.text)
            assert window.text
        if not window.partial_line and window.text:
            assert offset == 0 or text[offset - 1] == "\n"
            assert window.text.endswith("\n") or window.next_offset is None
        if window.partial_line:
            assert "\n" not in window.text[:-1]
        pieces.append(window.text)
        offset = window.next_offset
    assert "".join(pieces) == text


_PIECES = ("# h", "## h", "* i", "> q", "=> /a b", "=> /p 2024-01-02 t", "```py", "```", "x")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from((*_PIECES, "\ufeff", "\t=>", "")), st.sampled_from("\n\r")),
        max_size=12,
    ).map(lambda parts: "".join(a + ("\r\n" if b == "\r" else "\n") for a, b in parts)),
    st.booleans(),
    st.booleans(),
)
def test_gemtext_lines_are_the_parse_and_say_where_each_ends(
    page: str, unterminated: bool, preformatted: bool
) -> None:
    """
    gemtext_lines gives parse_gemtext's lines (a page that starts inside a
    block parses as one that opens it first), and each line's stop is where
    the next line starts: the stops cut the page into its lines exactly.
    """
    if unterminated:
        page = page.rstrip("\n")
    pairs = list(gemtext_lines(page, BASE, preformatted=preformatted))
    if preformatted:
        expected = parse_gemtext("```\n" + page, BASE).lines[1:]
    else:
        expected = parse_gemtext(page, BASE).lines
    assert tuple(line for line, _ in pairs) == expected
    stops = [stop for _, stop in pairs]
    assert stops == sorted(set(stops)) and (not stops or stops[-1] == len(page))
    starts = [0, *stops][: len(stops)]
    for start, stop in zip(starts, stops, strict=True):
        assert "\n" not in page[start : stop - 1]


def test_gemtext_lines_stop_where_the_reader_stops() -> None:
    """Lines are parsed only as they are asked for: a reader that stops early parses no more."""
    lines = gemtext_lines("# a\n=> /b\n", BASE)
    assert next(lines) == (GemtextLine("heading1", "# a", text="a", level=1), 4)
    assert next(lines)[1] == 10
    assert list(lines) == []


# --- Spartan's input links (issue 23) ------------------------------------------------


def test_input_lines_are_text_unless_asked() -> None:
    """
    A =: line is a text line in Gemini's gemtext (nothing changes for it) and
    a link that takes input when parsed with input_links (Spartan's).
    """
    base = GeminiURL.from_text("gemini://example.org/dir/")
    page = "=: /search Search\n=> a.gmi A\n"
    plain = parse_gemtext(page, base)
    assert [line.type for line in plain.lines] == ["text", "link"]
    assert plain.links == (Link("gemini://example.org/dir/a.gmi", "A"),)
    spartan = parse_gemtext(page, base, input_links=True)
    assert spartan.links == (
        Link("gemini://example.org/search", "Search", takes_input=True),
        Link("gemini://example.org/dir/a.gmi", "A"),
    )
    assert spartan.lines[0].content == "=: /search Search"
