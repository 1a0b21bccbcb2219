"""
Tests for L{gophergem.wire.spartan}: the URL, the request with its data
block, the four statuses and everything else refused, and pages whose C{=:}
lines are links that take input.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import GophergemError, InvalidRequest, InvalidStatus, ProtocolError
from gophergem.wire.spartan import (
    MAX_HEADER_BYTES,
    MAX_META_BYTES,
    HeaderParser,
    ResponseHeader,
    SpartanStatus,
    SpartanURL,
    encode_request,
    parse_header,
    parse_page,
)


def test_url_and_request() -> None:
    """host SP path SP length CRLF: no port in the host, the path percent-encoded."""
    url = SpartanURL.from_text("spartan://Example.org:3000/a b/./c.gmi")
    assert url == SpartanURL("example.org", 3000, "/a%20b/c.gmi")
    assert url.to_text() == "spartan://example.org:3000/a%20b/c.gmi"
    assert url.request() == b"example.org /a%20b/c.gmi 0\r\n"
    assert encode_request(SpartanURL("::1"), b"xy") == b"[::1] / 2\r\nxy"


def test_query_and_input_are_the_data_block() -> None:
    """A URL's query is sent decoded as the data block; so is a =: link's input."""
    url = SpartanURL.from_text("spartan://h/search?caf%C3%A9%20au%20lait")
    assert url.request() == "h /search 13\r\ncafé au lait".encode()
    answered = SpartanURL.from_text("spartan://h/search?old").with_input("new words")
    assert answered.query == "new%20words"
    assert answered.request() == b"h /search 9\r\nnew words"
    assert answered.without_query().request() == b"h /search 0\r\n"
    assert url.request(b"given") == b"h /search 5\r\ngiven"
    with pytest.raises(InvalidRequest):
        url.with_input("\ud800")


@pytest.mark.parametrize(
    ("data", "status", "meta", "rest"),
    [
        (b"2 text/gemini\r\n# Hi\r\n", SpartanStatus.SUCCESS, "text/gemini", b"# Hi\r\n"),
        (b"2\r\nbody", SpartanStatus.SUCCESS, "text/gemini", b"body"),
        (b"2 text/plain\nLF only", SpartanStatus.SUCCESS, "text/plain", b"LF only"),
        (b"3 /elsewhere\r\n", SpartanStatus.REDIRECT, "/elsewhere", b""),
        (b"4 File not found\r\n", SpartanStatus.CLIENT_ERROR, "File not found", b""),
        (b"4\r\n", SpartanStatus.CLIENT_ERROR, "", b""),
        (b"5 Oops\r\n", SpartanStatus.SERVER_ERROR, "Oops", b""),
    ],
)
def test_the_four_statuses(data: bytes, status: SpartanStatus, meta: str, rest: bytes) -> None:
    """2, 3, 4 and 5, with their META, and the body bytes after the header."""
    parser = HeaderParser()
    assert parser.feed(data) == ResponseHeader(status, meta)
    assert parser.rest == rest


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"20 text/gemini", ProtocolError),  # a Gemini header
        (b"1 prompt", InvalidStatus),
        (b"6 cert", InvalidStatus),
        (b"0 zero", InvalidStatus),
        (b"9", InvalidStatus),
        (b"2text/gemini", ProtocolError),
        (b"x 2", ProtocolError),
        (b"", ProtocolError),
        (b"\xef\xbb\xbf2 text/gemini", ProtocolError),
        (b"3", ProtocolError),  # a redirect without a target
        (b"3  ", ProtocolError),
        (b"2 \xff", ProtocolError),
        (b"2 a\rb", ProtocolError),
        (b"4 " + b"x" * (MAX_META_BYTES + 1), ProtocolError),
    ],
)
def test_other_shapes_are_refused(line: bytes, error: type[GophergemError]) -> None:
    """Anything but the four statuses in their shape is a wire error of its own kind."""
    with pytest.raises(error):
        parse_header(line)


def test_status_of_an_undefined_digit() -> None:
    """An undefined status is reported with its number."""
    with pytest.raises(InvalidStatus) as info:
        parse_header(b"7 what")
    assert info.value.status == 7


def test_huge_header_is_refused_without_buffering_it() -> None:
    """A header that never ends is refused once it passes the cap, and stays refused."""
    parser = HeaderParser()
    assert parser.feed(b"2 " + b"a" * 100) is None
    with pytest.raises(ProtocolError):
        parser.feed(b"a" * MAX_HEADER_BYTES)
    with pytest.raises(ProtocolError):
        parser.feed(b"\r\n")


def test_eof() -> None:
    """A stream that ends before a whole header is a protocol error."""
    with pytest.raises(ProtocolError, match="before any response"):
        HeaderParser().eof()
    parser = HeaderParser()
    parser.feed(b"2 text")
    with pytest.raises(ProtocolError, match="middle"):
        parser.eof()
    done = HeaderParser()
    done.feed(b"4 no\r\n")
    done.eof()


def test_page_input_links() -> None:
    """=: lines are links that take input; => lines are not; links are absolute."""
    page = "# Title\n=> other.gmi Other\n=: /search Search the capsule\n=:\n=> gopher://g/ G\n"
    document = parse_page(page, SpartanURL.from_text("spartan://h:3000/dir/index.gmi"))
    assert [(link.url, link.text, link.takes_input) for link in document.links] == [
        ("spartan://h:3000/dir/other.gmi", "Other", False),
        ("spartan://h:3000/search", "Search the capsule", True),
        ("gopher://g/", "G", False),
    ]
    assert document.lines[3].type == "text"  # "=:" with no target


def test_redirect_target_resolves_on_the_same_host() -> None:
    """A redirect's path becomes a spartan:// URL on the same host and port."""
    assert SpartanURL("h", 3000, "/a/b").resolve("/c") == "spartan://h:3000/c"


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=80)
    | st.builds(
        lambda d, m: d + b" " + m + b"\r\n",
        st.sampled_from([b"2", b"3", b"4", b"5", b"1", b"20"]),
        st.binary(max_size=40),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=5),
)
def test_any_bytes_in_any_chunks(data: bytes, cuts: list[int]) -> None:
    """Any bytes, cut anywhere, give the same header (or error class), and only our errors."""

    def read(chunks: list[bytes]) -> object:
        parser = HeaderParser()
        try:
            for chunk in chunks:
                header = parser.feed(chunk)
            parser.eof()
        except GophergemError as error:
            return type(error)
        return header, parser.rest

    points = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert read(chunks) == read([data])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_page_parses(text: str) -> None:
    """Any text parses as a Spartan page."""
    parse_page(text, SpartanURL("h"))
