"""
Tests for L{gophergem.wire.gopher}: vector tables and hypothesis properties.

Pure functions only: no reactor, no sockets.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.url import GopherURL
from gophergem.wire.gopher import (
    Category,
    Menu,
    MenuItem,
    ResponseBuffer,
    TextBody,
    category,
    encode_request,
    parse_menu,
    parse_text,
    selector_text,
    sniff_mime_type,
)

ORIGIN = "origin.example"
ORIGIN_PORT = 7070

_FORBIDDEN_IN_LINE = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
_KEPT_FORMAT = {"\u200c", "\u200d"}


def _menu(data: bytes) -> Menu:
    return parse_menu(data, ORIGIN, ORIGIN_PORT)


def _only(data: bytes) -> MenuItem:
    menu = _menu(data)
    assert len(menu.items) == 1, menu
    return menu.items[0]


def _is_clean_line(text: str) -> bool:
    return all(unicodedata.category(c) not in _FORBIDDEN_IN_LINE or c in _KEPT_FORMAT for c in text)


# --- category ---------------------------------------------------------------

CATEGORY_VECTORS = [
    *[(t, Category.MENU) for t in "17"],
    *[(t, Category.TEXT) for t in "0h3i"],
    *[(t, Category.BINARY) for t in "4569gIds;pP:M<"],
    *[(t, Category.INTERACTIVE) for t in "28T"],
    *[(t, Category.TEXT) for t in "+xZ!@"],
]


@pytest.mark.parametrize(("item_type", "expected"), CATEGORY_VECTORS)
def test_category_table(item_type: str, expected: Category) -> None:
    """Each item type of SPEC section 4 maps to its category; C{+} and unknown types are text."""
    assert category(item_type) is expected


# --- encode_request ---------------------------------------------------------


def test_encode_request_without_search() -> None:
    """A request without search terms is the selector followed by CRLF."""
    assert encode_request(b"/docs/a b\xe9") == b"/docs/a b\xe9\r\n"


def test_encode_request_with_search() -> None:
    """A request with search terms is selector, TAB, terms, CRLF."""
    assert encode_request(b"/search", b"gopher clients") == b"/search\tgopher clients\r\n"


def test_encode_request_with_empty_search() -> None:
    """An empty (but present) search still sends the TAB separator."""
    assert encode_request(b"/s", b"") == b"/s\t\r\n"


def test_encode_request_empty_selector() -> None:
    """The empty selector (the root menu) is a bare CRLF."""
    assert encode_request(b"") == b"\r\n"


# --- ResponseBuffer ---------------------------------------------------------


def test_response_buffer_under_cap() -> None:
    """Bytes under the cap are all kept, in order, and the buffer has not overflowed."""
    buf = ResponseBuffer(limit=10)
    assert buf.feed(b"abc") is False
    assert buf.feed(b"def") is False
    assert buf.value() == b"abcdef"
    assert buf.size == 6
    assert buf.overflowed is False


def test_response_buffer_exactly_at_cap_is_not_overflow() -> None:
    """Exactly C{limit} bytes fit without the buffer reporting an overflow."""
    buf = ResponseBuffer(limit=4)
    assert buf.feed(b"abcd") is False
    assert buf.value() == b"abcd"
    assert buf.overflowed is False


def test_response_buffer_cuts_at_cap() -> None:
    """Bytes past the cap are discarded and the overflowed flag is set."""
    buf = ResponseBuffer(limit=5)
    assert buf.feed(b"abc") is False
    assert buf.feed(b"defgh") is True
    assert buf.value() == b"abcde"
    assert buf.size == 5
    assert buf.overflowed is True
    assert buf.feed(b"more") is True
    assert buf.value() == b"abcde"


def test_response_buffer_ends_menu() -> None:
    """C{ends_menu} recognises a final lone C{.} line and nothing else."""
    done = ResponseBuffer(limit=100)
    done.feed(b"iHello\t\t\t\r\n.\r\n")
    assert done.ends_menu() is True
    going = ResponseBuffer(limit=100)
    going.feed(b"iHello\t\t\t\r\n")
    assert going.ends_menu() is False


@settings(max_examples=200, deadline=None)
@given(limit=st.integers(min_value=0, max_value=64), chunks=st.lists(st.binary(max_size=40)))
def test_response_buffer_never_exceeds_limit(limit: int, chunks: list[bytes]) -> None:
    """The buffer never holds more than its limit and keeps exactly the first C{limit} bytes."""
    buf = ResponseBuffer(limit=limit)
    for chunk in chunks:
        buf.feed(chunk)
        assert buf.size <= limit
        assert len(buf.value()) <= limit
    whole = b"".join(chunks)
    assert buf.value() == whole[:limit]
    assert buf.overflowed is (len(whole) > limit)


# --- parse_menu: line ends and the terminator --------------------------------

TWO_ITEMS = [
    ("crlf", b"1One\t/one\thost.example\t70\r\n0Two\t/two\thost.example\t70\r\n.\r\n"),
    ("lf", b"1One\t/one\thost.example\t70\n0Two\t/two\thost.example\t70\n.\n"),
    ("cr", b"1One\t/one\thost.example\t70\r0Two\t/two\thost.example\t70\r.\r"),
    ("mixed", b"1One\t/one\thost.example\t70\n0Two\t/two\thost.example\t70\r\n.\r"),
]


@pytest.mark.parametrize(("name", "data"), TWO_ITEMS, ids=[n for n, _ in TWO_ITEMS])
def test_menu_line_endings(name: str, data: bytes) -> None:
    """CRLF, LF-only, CR-only and mixed line ends all yield the same two items."""
    menu = _menu(data)
    assert menu.terminated is True
    assert [(i.item_type, i.title, i.selector) for i in menu.items] == [
        ("1", "One", b"/one"),
        ("0", "Two", b"/two"),
    ]


@pytest.mark.parametrize("terminator", [b".", b". ", b" .", b"  .  ", b".\t", b"\t."], ids=repr)
def test_menu_terminator_ends_menu(terminator: bytes) -> None:
    """A lone C{.} line, padding tolerated, ends the menu and later lines are ignored."""
    data = b"1One\t/one\th\t70\r\n" + terminator + b"\r\n1After\t/after\th\t70\r\n"
    menu = _menu(data)
    assert menu.terminated is True
    assert [i.title for i in menu.items] == ["One"]


def test_menu_terminator_without_final_newline() -> None:
    """A final C{.} with no line end after it still terminates the menu."""
    menu = _menu(b"1One\t/one\th\t70\r\n.")
    assert menu.terminated is True
    assert len(menu.items) == 1


def test_menu_missing_terminator_tolerated() -> None:
    """A menu without its C{.} line keeps every item and reports terminated False."""
    menu = _menu(b"1One\t/one\th\t70\r\n0Two\t/two\th\t70\r\n")
    assert menu.terminated is False
    assert [i.title for i in menu.items] == ["One", "Two"]


def test_menu_last_line_without_newline_kept() -> None:
    """An unterminated last line (connection cut mid-menu) is still an item."""
    menu = _menu(b"1One\t/one\th\t70\r\n0Two\t/two\th\t70")
    assert [i.title for i in menu.items] == ["One", "Two"]
    assert menu.items[1].port == 70


def test_menu_empty_input() -> None:
    """Empty input is an empty, unterminated menu."""
    menu = _menu(b"")
    assert menu.items == ()
    assert menu.terminated is False


def test_menu_dot_inside_title_is_not_terminator() -> None:
    """A line that merely starts with a dot is an item, not the terminator."""
    menu = _menu(b"i.hidden\t\t\t\r\n..\r\n.x\r\n")
    assert menu.terminated is False
    assert [i.title for i in menu.items] == [".hidden", "..", ".x"]


# --- parse_menu: odd lines ----------------------------------------------------


def test_menu_line_without_tab_is_display_text() -> None:
    """A line without a TAB becomes an C{i} item whose title is the whole line."""
    item = _only(b"0Just some text without tabs\r\n")
    assert item.item_type == "i"
    assert item.title == "0Just some text without tabs"
    assert item.selector == b""
    assert item.next_url == ""


def test_menu_blank_line_is_kept() -> None:
    """An empty line is kept as an empty display-only item, never dropped."""
    menu = _menu(b"1A\t/a\th\t70\r\n\r\n1B\t/b\th\t70\r\n")
    assert [(i.item_type, i.title) for i in menu.items] == [("1", "A"), ("i", ""), ("1", "B")]


def test_menu_line_starting_with_tab() -> None:
    """A line starting with a TAB has no type or title; its fields keep their positions."""
    item = _only(b"\t/sel\thost.example\t70\r\n")
    assert item.item_type == "i"
    assert item.title == ""
    assert item.selector == b"/sel"
    assert item.host == "host.example"
    assert item.next_url == ""


SHORT_LINES = [
    # (line, selector, host, port)
    (b"1Title\t/sel\thost.example", b"/sel", "host.example", 70),
    (b"1Title\t/sel", b"/sel", ORIGIN, ORIGIN_PORT),
    (b"1Title\t", b"", ORIGIN, ORIGIN_PORT),
    (b"1Title\t/sel\t\t71", b"/sel", ORIGIN, 71),
    (b"1Title\t/sel\thost.example\t", b"/sel", "host.example", 70),
]


@pytest.mark.parametrize(("line", "selector", "host", "port"), SHORT_LINES, ids=repr)
def test_menu_short_lines(line: bytes, selector: bytes, host: str, port: int) -> None:
    """Short lines keep their item; a missing host is the origin's and a missing port is 70."""
    item = _only(line + b"\r\n")
    assert item.item_type == "1"
    assert item.title == "Title"
    assert (item.selector, item.host, item.port) == (selector, host, port)
    assert GopherURL.from_text(item.next_url) == GopherURL(
        host=host, port=port, item_type="1", selector=selector
    )


def test_menu_empty_host_without_origin_has_no_url() -> None:
    """An item naming no host, parsed without an origin, is kept but has no next_url."""
    menu = parse_menu(b"1Title\t/sel\t\t70\r\n")
    assert len(menu.items) == 1
    assert menu.items[0].title == "Title"
    assert menu.items[0].next_url == ""


@pytest.mark.parametrize(
    "port_field", [b"abc", b"0", b"99999", b"65536", b"-1", b"7x", b"123456", b""], ids=repr
)
def test_menu_nonsense_port_becomes_70(port_field: bytes) -> None:
    """A nonsense port becomes 70 and the item is kept."""
    item = _only(b"1Title\t/sel\thost.example\t" + port_field + b"\r\n")
    assert item.title == "Title"
    assert item.port == 70
    assert item.next_url == "gopher://host.example/1/sel"


def test_menu_port_with_spaces() -> None:
    """A port padded with spaces is read as its number."""
    assert _only(b"1T\t/s\th\t 7070 \r\n").port == 7070


def test_menu_high_port() -> None:
    """A non-default port appears in next_url."""
    item = _only(b"1T\t/s\thost.example\t65535\r\n")
    assert item.port == 65535
    assert item.next_url == "gopher://host.example:65535/1/s"


def test_menu_gopher_plus_fields_ignored() -> None:
    """Fields after the port (Gopher+ C{+}, C{?} and more) are ignored."""
    item = _only(b"1Plus\t/p\thost.example\t70\t+\textra\tmore\r\n")
    assert (item.item_type, item.title, item.selector, item.host, item.port) == (
        "1",
        "Plus",
        b"/p",
        "host.example",
        70,
    )
    assert item.next_url == "gopher://host.example/1/p"


def test_menu_host_lower_cased() -> None:
    """Host names are lower-cased."""
    item = _only(b"1T\t/s\tHOST.Example\t70\r\n")
    assert item.host == "host.example"
    assert item.next_url == "gopher://host.example/1/s"


def test_menu_ipv6_host_bracketed_in_url() -> None:
    """An IPv6 host is bracketed in next_url."""
    item = _only(b"1T\t/s\t2001:db8::1\t70\r\n")
    assert item.next_url == "gopher://[2001:db8::1]/1/s"
    assert GopherURL.from_text(item.next_url).host == "2001:db8::1"


def test_menu_junk_host_has_no_url() -> None:
    """A host that cannot be a host name (space, slash) gives no next_url; the item is kept."""
    menu = _menu(b"1A\t/a\tbad host\t70\r\n1B\t/b\tevil/x\t70\r\n")
    assert [i.title for i in menu.items] == ["A", "B"]
    assert [i.next_url for i in menu.items] == ["", ""]


# --- parse_menu: next_url ---------------------------------------------------


def test_menu_info_line_has_no_url() -> None:
    """An C{i} line gets an empty next_url whatever junk host it names."""
    item = _only(b"iWelcome!\tfake\terror.host\t1\r\n")
    assert item.item_type == "i"
    assert item.title == "Welcome!"
    assert item.next_url == ""


def test_menu_error_line_has_no_url() -> None:
    """A C{3} (error) line gets an empty next_url."""
    item = _only(b"3Not found\t\terror.host\t1\r\n")
    assert item.item_type == "3"
    assert item.title == "Not found"
    assert item.next_url == ""


@pytest.mark.parametrize("type_byte", [*range(0x01, 0x09), *range(0x0B, 0x0D), 0x1B, 0x1F, 0x7F])
def test_menu_control_type_byte_has_no_url(type_byte: int) -> None:
    """A line whose type byte is a C0 control or DEL gets an empty next_url."""
    item = _only(bytes([type_byte]) + b"Title\t/sel\thost.example\t70\r\n")
    assert item.next_url == ""


def test_menu_nul_type_byte_has_no_url() -> None:
    """A NUL type byte gives an C{i} item without a next_url."""
    item = _only(b"\x00Title\t/sel\thost.example\t70\r\n")
    assert item.item_type == "i"
    assert item.next_url == ""


@pytest.mark.parametrize("type_byte", [0x85, 0x9B])
def test_menu_c1_control_type_byte_has_no_url(type_byte: int) -> None:
    """A line whose type byte is a C1 control (0x80-0x9f, Latin-1) gets an empty next_url."""
    item = _only(bytes([type_byte]) + b"Title\t/sel\thost.example\t70\r\n")
    assert item.next_url == ""


@pytest.mark.parametrize("type_byte", [0x7F, 0x85])
def test_menu_item_type_is_never_control(type_byte: int) -> None:
    """An item's type is never a control character, so results stay JSON- and display-safe."""
    item = _only(bytes([type_byte]) + b"Title\t/sel\thost.example\t70\r\n")
    assert unicodedata.category(item.item_type) != "Cc"


@pytest.mark.parametrize("type_byte", [0x20, 0xE9, 0xFF])
def test_menu_next_url_always_followable(type_byte: int) -> None:
    """Every non-empty next_url of a gopher item parses with GopherURL.from_text."""
    item = _only(bytes([type_byte]) + b"Title\t/sel\thost.example\t70\r\n")
    if item.next_url:
        GopherURL.from_text(item.next_url)


@settings(max_examples=200, deadline=None)
@given(
    item_type=st.characters(min_codepoint=0x21, max_codepoint=0x7E).filter(
        lambda c: c not in "i3+h#"
    ),
    selector=st.binary(max_size=30).map(lambda b: b.translate(None, delete=b"\t\r\n\x00")),
)
def test_menu_printable_type_round_trip(item_type: str, selector: bytes) -> None:
    """For a printable ASCII type byte, next_url fetches that same type and selector."""
    item = _only(item_type.encode() + b"T\t" + selector + b"\thost.example\t70\r\n")
    url = GopherURL.from_text(item.next_url)
    assert (url.item_type, url.selector) == (item_type, selector)


def test_menu_hash_type_round_trip() -> None:
    """Following the next_url of a C{#}-type item fetches that type and selector."""
    item = _only(b"#Odd type\t/sel\thost.example\t70\r\n")
    url = GopherURL.from_text(item.next_url)
    assert (url.item_type, url.selector) == ("#", b"/sel")


@pytest.mark.parametrize(
    ("selector", "target"),
    [
        (b"URL:https://example.com/page?x=1", "https://example.com/page?x=1"),
        (b"/URL:http://example.org/", "http://example.org/"),
        (b"URL:gemini://capsule.example/", "gemini://capsule.example/"),
        (b"URL:gopher://other.example/1/", "gopher://other.example/1/"),
    ],
    ids=repr,
)
def test_menu_h_url_item(selector: bytes, target: str) -> None:
    """An C{h} item whose selector is C{URL:} or C{/URL:} gets the stated target as next_url."""
    item = _only(b"hWeb link\t" + selector + b"\thost.example\t70\r\n")
    assert item.item_type == "h"
    assert item.selector == selector
    assert item.next_url == target


def test_menu_h_item_without_url_prefix_is_gopher() -> None:
    """An C{h} item with an ordinary selector gets its own gopher URL."""
    item = _only(b"hPage\t/page.html\thost.example\t70\r\n")
    assert item.next_url == "gopher://host.example/h/page.html"


def test_menu_plus_mirror_line() -> None:
    """A C{+} line is a mirror of the previous item, fetched with that item's type."""
    menu = _menu(b"1Docs\t/docs\tmain.example\t70\r\n+Mirror\t/docs\tmirror.example\t7071\r\n")
    mirror = menu.items[1]
    assert mirror.item_type == "+"
    assert mirror.title == "Mirror"
    assert mirror.host == "mirror.example"
    assert mirror.port == 7071
    assert mirror.next_url == "gopher://mirror.example:7071/1/docs"


def test_menu_plus_mirror_of_text() -> None:
    """A C{+} line after a text item is fetched as text."""
    menu = _menu(b"0Read me\t/r\ta.example\t70\r\n+\t/r\tb.example\t70\r\n")
    assert menu.items[1].next_url == "gopher://b.example/0/r"


# --- parse_menu: selectors ----------------------------------------------------

SELECTOR_VECTORS = [
    b"/plain",
    b"/caf\xe9/latin1",
    b"/query?x=1&y=2",
    b"/frag#ment",
    b"/100%",
    b"/with%20literal",
    b"/a b c",
    b"/tilde~and+plus",
    b"/%09not-a-tab",
    b"/\x7f\x01control",
    b"\xff\xfe",
    b"",
]


@pytest.mark.parametrize("selector", SELECTOR_VECTORS, ids=repr)
def test_menu_selector_exact_bytes_round_trip(selector: bytes) -> None:
    """The selector is kept as exact bytes and next_url percent-encodes it losslessly."""
    item = _only(b"0Item\t" + selector + b"\thost.example\t70\r\n")
    assert item.selector == selector
    url = GopherURL.from_text(item.next_url)
    assert url.selector == selector
    assert url.item_type == "0"
    assert url.search is None


def test_menu_selector_question_mark_on_search_item() -> None:
    """A C{?} in a type-7 selector stays in the selector when next_url is followed."""
    item = _only(b"7Search\t/cgi?mode=x\thost.example\t70\r\n")
    url = GopherURL.from_text(item.next_url)
    assert url.selector == b"/cgi?mode=x"
    assert url.search is None


_SELECTOR_BYTES = st.binary(max_size=60).map(lambda b: b.translate(None, delete=b"\t\r\n\x00"))


@settings(max_examples=200, deadline=None)
@given(selector=_SELECTOR_BYTES, item_type=st.sampled_from("01479gIh"))
def test_menu_selector_round_trip_property(selector: bytes, item_type: str) -> None:
    """For any selector bytes without TAB/CR/LF/NUL, following next_url sends the same bytes."""
    if item_type == "h" and (selector.startswith(b"URL:") or selector.startswith(b"/URL:")):
        selector = b"x" + selector
    item = _only(item_type.encode() + b"Title\t" + selector + b"\thost.example\t70\r\n")
    assert item.selector == selector
    url = GopherURL.from_text(item.next_url)
    assert url.selector == selector
    assert url.item_type == item_type
    assert url.search is None


# --- parse_menu: titles -------------------------------------------------------


def test_menu_latin1_titles() -> None:
    """A Latin-1 menu has its titles decoded without U+FFFD."""
    menu = _menu("1Café crème\t/c\th\t70\r\niNaïve façade\t\t\t\r\n".encode("latin-1"))
    assert [i.title for i in menu.items] == ["Café crème", "Naïve façade"]
    assert all("\ufffd" not in i.title for i in menu.items)


def test_menu_utf8_titles() -> None:
    """A UTF-8 menu has its titles decoded as UTF-8."""
    title = "\u0396\u03b5\u03cd\u03c2 \U0001f30d"
    menu = _menu(f"1{title}\t/z\th\t70\r\n".encode())
    assert menu.items[0].title == title
    assert menu.charset == "utf-8"


def test_menu_cp437_titles() -> None:
    """A CP437 box-art info line is decoded without U+FFFD."""
    menu = _menu("i╔════╗\t\t\t\r\ni║ hi ║\t\t\t\r\ni╚════╝\t\t\t\r\n".encode("cp437"))
    assert [i.title for i in menu.items] == ["╔════╗", "║ hi ║", "╚════╝"]


def test_menu_ansi_escapes_removed_from_title() -> None:
    """ANSI CSI and OSC sequences are removed whole from titles."""
    item = _only(b"1\x1b[1;31mRed\x1b[0m \x1b]0;pwned\x07Title\t/s\th\t70\r\n")
    assert item.title == "Red Title"


def test_menu_bidi_controls_removed_from_title() -> None:
    """Bidi overrides and isolates are removed from titles."""
    item = _only("1abc\u202efdp.exe\u2066x\u2069\t/s\th\t70\r\n".encode())
    assert item.title == "abcfdp.exex"


def test_menu_title_c0_controls_removed() -> None:
    """C0 control characters (bell, backspace, NUL) are removed from titles."""
    item = _only(b"1ab\x07c\x08d\x00e\t/s\th\t70\r\n")
    assert item.title == "abcde"


def test_menu_display_line_sanitised() -> None:
    """A display-only line (no TAB) is sanitised too."""
    item = _only(b"\x1b[5mBlink\x1b[0m\x07\r\n")
    assert item.title == "Blink"


# --- parse_menu / selector_text: properties --------------------------------


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400))
def test_parse_menu_never_raises(data: bytes) -> None:
    """parse_menu never raises on arbitrary bytes and returns a Menu."""
    menu = parse_menu(data, ORIGIN, ORIGIN_PORT)
    assert isinstance(menu, Menu)


_MENUISH = st.lists(
    st.sampled_from(
        [
            b"\t",
            b"\r\n",
            b"\n",
            b"\r",
            b".",
            b" ",
            b"1",
            b"i",
            b"h",
            b"+",
            b"URL:",
            b"70",
            b"\x1b[",
            b"\x1b]",
            b"\x07",
            b"\xe2\x80\xae",
            b"\xe9",
            b"\x85",
            b"\x00",
            b"host",
            b"/sel",
            b"?#%",
        ]
    )
    | st.binary(max_size=8),
    max_size=60,
).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(data=st.one_of(st.binary(max_size=400), _MENUISH))
def test_parse_menu_titles_single_line_and_clean(data: bytes) -> None:
    """Every title is one line without control, format, private-use or separator characters."""
    for item in parse_menu(data, ORIGIN, ORIGIN_PORT).items:
        assert "\n" not in item.title
        assert "\t" not in item.title
        assert "\r" not in item.title
        assert _is_clean_line(item.title), repr(item.title)
        assert _is_clean_line(item.host), repr(item.host)


@settings(max_examples=200, deadline=None)
@given(data=st.one_of(st.binary(max_size=400), _MENUISH))
def test_parse_menu_items_never_dropped(data: bytes) -> None:
    """An unterminated menu has exactly one item per line."""
    menu = parse_menu(data, ORIGIN, ORIGIN_PORT)
    if not menu.terminated:
        lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        assert len(menu.items) == len(lines)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_selector_text_never_raises_and_is_control_free(data: bytes) -> None:
    """selector_text turns any bytes into text without C0 or C1 control characters."""
    text = selector_text(data)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"/plain", "/plain"),
        ("/café".encode(), "/café"),
        (b"/caf\xe9", "/café"),
        (b"/a\x00b\x1b", "/a%00b%1B"),
        (b"/del\x7f", "/del%7F"),
        ("/c1\u0085".encode(), "/c1%85"),
        (b"/tab\there", "/tab%09here"),
    ],
    ids=repr,
)
def test_selector_text_vectors(raw: bytes, shown: str) -> None:
    """selector_text shows UTF-8 (else Latin-1) with control bytes percent-encoded."""
    assert selector_text(raw) == shown


# --- parse_text -----------------------------------------------------------------


def test_text_terminator_and_dot_stuffing_undone() -> None:
    """With the terminator present, it is removed and C{..} at a line start becomes C{.}."""
    body = parse_text(b"first\r\n..dotted\r\n...\r\n.\r\n")
    assert body == TextBody("first\n.dotted\n..\n", "utf-8", True)


def test_text_terminator_lf_only() -> None:
    """An LF-only body with its terminator is recognised as terminated."""
    body = parse_text(b"a\n..b\n.\n")
    assert body.terminated is True
    assert body.text == "a\n.b\n"


def test_text_terminator_padded_and_trailing_blank_lines() -> None:
    """A terminator padded with spaces and followed by blank lines still counts."""
    body = parse_text(b"a\r\n.  \r\n\r\n")
    assert body.terminated is True
    assert body.text == "a\n"


def test_text_terminator_only() -> None:
    """A body that is just the terminator is empty text."""
    body = parse_text(b".\r\n")
    assert body.text == ""
    assert body.terminated is True


def test_text_no_unstuffing_without_terminator() -> None:
    """Without the terminator, C{..} lines are left alone."""
    body = parse_text(b"a\r\n..b\r\n")
    assert body.terminated is False
    assert body.text == "a\n..b\n"


def test_text_crlf_becomes_lf() -> None:
    """CRLF line ends become LF."""
    assert parse_text(b"one\r\ntwo\r\nthree").text == "one\ntwo\nthree"


def test_text_dot_line_in_middle_of_unterminated_body_kept() -> None:
    """A lone C{.} line in the middle of an unterminated body is kept as text."""
    body = parse_text(b"before\n.\nafter\n")
    assert body.terminated is False
    assert body.text == "before\n.\nafter\n"


def test_text_empty() -> None:
    """An empty body is empty, unterminated UTF-8 text."""
    assert parse_text(b"") == TextBody("", "utf-8", False)


def test_text_latin1_body() -> None:
    """A Latin-1 body decodes without U+FFFD."""
    body = parse_text("Déjà vu, café.\r\n.\r\n".encode("latin-1"))
    assert body.text == "Déjà vu, café.\n"
    assert body.charset == "iso-8859-1"


def test_text_sanitised() -> None:
    """Text bodies lose ANSI sequences and bidi controls but keep tabs and newlines."""
    body = parse_text("\x1b[31mred\x1b[0m\tcol\n\u202eevil\n.\n".encode())
    assert body.text == "red\tcol\nevil\n"


def test_text_cr_only_line_ends_kept_as_lf() -> None:
    """A CR-only body (classic Mac) keeps its line breaks, as LF."""
    assert parse_text(b"one\rtwo\r").text == "one\ntwo\n"


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400))
def test_parse_text_never_raises(data: bytes) -> None:
    """parse_text turns any bytes into a TextBody whose text holds no CR."""
    body = parse_text(data)
    assert isinstance(body, TextBody)
    assert "\r" not in body.text


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab. ", max_size=6), max_size=10))
def test_parse_text_stuffing_round_trip(lines: list[str]) -> None:
    """Dot-stuffing a body and adding the terminator gives the body back."""
    body = "".join(line + "\n" for line in lines)
    stuffed = "".join(("." + line if line.startswith(".") else line) + "\r\n" for line in lines)
    result = parse_text(stuffed.encode() + b".\r\n")
    assert result.terminated is True
    assert result.text == body


# --- sniff_mime_type ----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
        (b"GIF87a\x01\x00", "image/gif"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"%PDF-1.7\n", "application/pdf"),
        (b"PK\x03\x04rest", "application/zip"),
        (b"\x1f\x8b\x08\x00", "application/gzip"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio/wav"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_sniff_by_magic(data: bytes, mime: str) -> None:
    """Magic bytes name the type, whatever the selector says."""
    assert sniff_mime_type(data, "9", b"/misleading.txt") == mime


@pytest.mark.parametrize(
    ("selector", "mime"),
    [
        (b"/pics/cat.png", "image/png"),
        (b"/pics/CAT.JPG", "image/jpeg"),
        (b"/docs/paper.pdf", "application/pdf"),
        (b"/pub/archive.zip", "application/zip"),
        (b"/snd/song.mp3", "audio/mpeg"),
    ],
    ids=repr,
)
def test_sniff_by_extension(selector: bytes, mime: str) -> None:
    """Without magic, the selector's file extension names the type."""
    assert sniff_mime_type(b"\x00\x01unknown", "9", selector) == mime


@pytest.mark.parametrize(
    ("item_type", "mime"),
    [("g", "image/gif"), ("I", "image/*"), ("s", "audio/*"), ("9", "application/octet-stream")],
)
def test_sniff_by_item_type(item_type: str, mime: str) -> None:
    """Without magic or extension, the item type decides, else application/octet-stream."""
    assert sniff_mime_type(b"\x00\x01", item_type, b"/blob") == mime


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40), item_type=st.characters(), selector=st.binary(max_size=40))
def test_sniff_never_raises(data: bytes, item_type: str, selector: bytes) -> None:
    """sniff_mime_type always names some type of the form type/subtype."""
    assert "/" in sniff_mime_type(data, item_type, selector)


# --- ownership of a body --------------------------------------------------


def test_buffer_take_hands_over() -> None:
    """take() gives the kept bytes away; the buffer holds none afterwards."""
    buf = ResponseBuffer(limit=10)
    buf.feed(b"abc")
    buf.feed(b"def")
    taken = buf.take()
    assert taken == b"abcdef"
    assert buf.value() == b""
    assert buf.size == 6


def test_ends_menu_on_whitespace_and_dot() -> None:
    """Only whitespace around one "." ends a menu, however long the whitespace."""
    buf = ResponseBuffer(limit=1000)
    buf.feed(b" \r\n" * 100 + b".")
    assert buf.ends_menu()
    other = ResponseBuffer(limit=1000)
    other.feed(b"x" + b" " * 100 + b".")
    assert not other.ends_menu()


def test_parse_text_clears_a_bytearray() -> None:
    """A bytearray handed to parse_text is cleared once decoded: no raw copy survives."""
    data = bytearray(b"first\r\n..dotted\r\n.\r\n")
    body = parse_text(data)
    assert body.text == "first\n.dotted\n"
    assert data == b""


@given(st.binary(max_size=200), st.booleans())
@settings(max_examples=300)
def test_parse_text_same_for_bytearray(data: bytes, truncated: bool) -> None:
    """A bytearray body parses exactly as the same bytes do."""
    assert parse_text(bytearray(data), truncated=truncated) == parse_text(data, truncated=truncated)


@pytest.mark.parametrize(
    ("data", "text", "terminated"),
    [
        (b"\xef\xbb\xbf..a\r\n.\r\n", "..a\n", True),
        (b"..a\n..b\n...\n.\n", ".a\n.b\n..\n", True),
        (b"a\r\rb\r\n. \t\r\n \r\n\t\n", "a\n\nb\n", True),
        (b"a\n .\n", "a\n .\n", False),
        (b"caf\xe9\r\n.\r\n", "caf\xe9\n", True),
        (b"", "", False),
        (b"\n\n", "\n\n", False),
    ],
)
def test_parse_text_vectors(data: bytes, text: str, terminated: bool) -> None:
    """Framing, dot-stuffing and line ends are read the same after decoding first."""
    body = parse_text(data)
    assert (body.text, body.terminated) == (text, terminated)
