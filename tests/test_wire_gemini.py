"""
Tests for L{gophergem.wire.gemini}: response headers and MIME types.

Vector tables (including the header cases of the egsam suite and the
torture test) plus hypothesis properties.  Pure functions only.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import GophergemError, InvalidStatus, ProtocolError
from gophergem.wire.gemini import (
    DEFAULT_SUCCESS_META,
    MAX_HEADER_BYTES,
    MAX_META_BYTES,
    HeaderParser,
    MimeType,
    ResponseHeader,
    is_denied,
    parse_header,
    parse_mime,
    status_class,
)


def _read(data: bytes) -> tuple[ResponseHeader | None, bytes]:
    parser = HeaderParser()
    header = parser.feed(data)
    return header, parser.rest


# --- good headers -----------------------------------------------------------------

GOOD = [
    (b"20 text/gemini\r\n", 20, "text/gemini", b""),
    (b"20 text/gemini; charset=utf-8\r\n# Hi\r\n", 20, "text/gemini; charset=utf-8", b"# Hi\r\n"),
    # An empty success META means gemtext in UTF-8.
    (b"20\r\n", 20, DEFAULT_SUCCESS_META, b""),
    (b"20 \r\n", 20, DEFAULT_SUCCESS_META, b""),
    (b"10 What is your name?\r\n", 10, "What is your name?", b""),
    (b"11 Password\r\n", 11, "Password", b""),
    (b"30 /elsewhere\r\n", 30, "/elsewhere", b""),
    (b"31 gemini://example.org/\r\n", 31, "gemini://example.org/", b""),
    (b"44 1\r\n", 44, "1", b""),
    # 4x, 5x and 6x may come without META, with or without the space.
    (b"40\r\n", 40, "", b""),
    (b"51 \r\n", 51, "", b""),
    (b"51 Not found\r\n", 51, "Not found", b""),
    (b"60\r\n", 60, "", b""),
    (b"62 Expired\r\n", 62, "Expired", b""),
    # Undefined statuses inside 10-69 are kept; the caller goes by the first digit.
    (b"19 Say something\r\n", 19, "Say something", b""),
    (b"29 text/plain\r\nbody", 29, "text/plain", b"body"),
    (b"22 \r\nbody", 22, DEFAULT_SUCCESS_META, b"body"),
    (b"39 /x\r\n", 39, "/x", b""),
    (b"49 If you see this, client Passed\r\n", 49, "If you see this, client Passed", b""),
    (b"58\r\n", 58, "", b""),
    (b"69 no\r\n", 69, "no", b""),
    # META is UTF-8 and kept raw: not sanitised, leading space kept.
    (b"51 caf\xc3\xa9\r\n", 51, "café", b""),
    (b"51 \x1b[31mred\r\n", 51, "\x1b[31mred", b""),
    (b"20  text/gemini\r\n", 20, " text/gemini", b""),
    (b"20 " + b"x" * MAX_META_BYTES + b"\r\n", 20, "x" * MAX_META_BYTES, b""),
]


@pytest.mark.parametrize(("data", "status", "meta", "rest"), GOOD)
def test_good_headers(data: bytes, status: int, meta: str, rest: bytes) -> None:
    """Each well-formed header gives its status and META; the body bytes are kept in rest."""
    header, after = _read(data)
    assert header == ResponseHeader(status, meta)
    assert after == rest


@pytest.mark.parametrize(("data", "status", "meta", "rest"), GOOD)
def test_good_headers_byte_by_byte(data: bytes, status: int, meta: str, rest: bytes) -> None:
    """A header dribbled one byte at a time parses exactly as one sent at once."""
    parser = HeaderParser()
    results = [parser.feed(data[i : i + 1]) for i in range(len(data))]
    first = next(i for i, r in enumerate(results) if r is not None)
    assert data[first : first + 1] == b"\n"
    assert results[first] == ResponseHeader(status, meta)
    assert parser.rest == rest


# --- bad headers ------------------------------------------------------------------

PROTOCOL_ERRORS = [
    # egsam 3.1: LF only, non-numeric, no space, 1 and 3 digits.
    (b"20 text/gemini\n", "bare LF"),
    (b"hi text/gemini\r\n", "two-digit"),
    (b"20text/gemini\r\n", "space"),
    (b"2 text/gemini\r\n", "two-digit"),
    (b"222 text/gemini\r\n", "more than two digits"),
    # Torture 0039 (one digit) and 0040 (a blank line).
    (b"2\r\n", "two-digit"),
    (b"\r\n", "blank"),
    (b"   \r\n", "blank"),
    (b"\xef\xbb\xbf20 text/gemini\r\n", "byte order mark"),
    (b"20 \xff\xfe\r\n", "UTF-8"),
    (b"20 a\rb\r\n", "line break"),
    (b"20\ttext/gemini\r\n", "space"),
    (b"\xd9\xa220 x\r\n", "two-digit"),
    # 1x and 3x need their META.
    (b"10\r\n", "prompt"),
    (b"11 \r\n", "prompt"),
    (b"30\r\n", "redirect target"),
    (b"31   \r\n", "redirect target"),
]


@pytest.mark.parametrize(("data", "fragment"), PROTOCOL_ERRORS)
def test_protocol_errors(data: bytes, fragment: str) -> None:
    """Each malformed header is a PROTOCOL_ERROR whose message says what is wrong."""
    with pytest.raises(ProtocolError) as info:
        _read(data)
    assert fragment in info.value.message


@pytest.mark.parametrize("data", [b"99\r\n", b"99 x\r\n", b"00 x\r\n", b"09\r\n", b"70 x\r\n"])
def test_status_outside_range(data: bytes) -> None:
    """A two-digit status outside 10-69 is INVALID_STATUS, carrying the status."""
    with pytest.raises(InvalidStatus) as info:
        _read(data)
    assert info.value.status == int(data[:2])


def test_meta_too_long() -> None:
    """META of 1025 bytes is refused."""
    with pytest.raises(ProtocolError) as info:
        _read(b"20 " + b"x" * (MAX_META_BYTES + 1) + b"\r\n")
    assert "longer" in info.value.message


def test_endless_spaces_are_refused_without_buffering() -> None:
    """egsam's 2000 spaces of META fail as soon as the cap is passed, before any CRLF."""
    parser = HeaderParser()
    assert parser.feed(b"20 ") is None
    assert parser.feed(b" " * (MAX_HEADER_BYTES - 4)) is None
    with pytest.raises(ProtocolError):
        parser.feed(b" " * 2000)


def test_huge_chunk_is_refused() -> None:
    """A many-megabyte first chunk without a line end is refused at once."""
    with pytest.raises(ProtocolError):
        HeaderParser().feed(b"2" * 10_000_000)


def test_header_at_the_cap() -> None:
    """A header of exactly the cap (1024 bytes of META) is accepted, sent in any split."""
    data = b"20 " + b"m" * MAX_META_BYTES + b"\r\n"
    assert len(data) == MAX_HEADER_BYTES
    parser = HeaderParser()
    assert parser.feed(data[:-1]) is None
    assert parser.feed(data[-1:] + b"body") == ResponseHeader(20, "m" * MAX_META_BYTES)
    assert parser.rest == b"body"


def test_failure_sticks() -> None:
    """After a failure every later feed raises the same error."""
    parser = HeaderParser()
    with pytest.raises(ProtocolError) as first:
        parser.feed(b"hi\r\n")
    with pytest.raises(ProtocolError) as second:
        parser.feed(b"20 text/gemini\r\n")
    assert first.value is second.value


def test_data_after_the_header_joins_rest() -> None:
    """Feeding after the header returns it again and appends to rest."""
    parser = HeaderParser()
    header = parser.feed(b"20 text/plain\r\nab")
    assert parser.feed(b"cd") == header
    assert parser.rest == b"abcd"


def test_eof_before_the_header() -> None:
    """A connection closed before any byte is a PROTOCOL_ERROR."""
    with pytest.raises(ProtocolError) as info:
        HeaderParser().eof()
    assert "before any response" in info.value.message


def test_eof_in_the_middle_of_the_header() -> None:
    """A connection closed mid-header is a PROTOCOL_ERROR."""
    parser = HeaderParser()
    parser.feed(b"20 text/gem")
    with pytest.raises(ProtocolError) as info:
        parser.eof()
    assert "middle" in info.value.message


def test_eof_after_the_header() -> None:
    """Closing after a complete header is fine (a 5x has no body)."""
    parser = HeaderParser()
    parser.feed(b"51\r\n")
    parser.eof()


def test_parse_header_directly() -> None:
    """parse_header reads a line given without its CRLF."""
    assert parse_header(b"31 /moved") == ResponseHeader(31, "/moved")
    assert parse_header(b"20") == ResponseHeader(20, DEFAULT_SUCCESS_META)


# --- status_class -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "family"),
    [
        *[(10, 1), (11, 1), (19, 1), (20, 2), (29, 2), (30, 3), (39, 3), (44, 4), (49, 4)],
        *[(53, 5), (58, 5), (59, 5), (60, 6), (62, 6), (69, 6)],
    ],
)
def test_status_class(status: int, family: int) -> None:
    """A status belongs to the family of its first digit, defined or not."""
    assert status_class(status) == family
    assert ResponseHeader(status, "x").status_class == family


@pytest.mark.parametrize("status", [-1, 0, 9, 70, 99, 100])
def test_status_class_refuses(status: int) -> None:
    """A status outside 10-69 has no family: INVALID_STATUS."""
    with pytest.raises(InvalidStatus):
        status_class(status)


# --- properties -------------------------------------------------------------------


def _outcome(chunks: list[bytes]) -> tuple[object, bytes]:
    parser = HeaderParser()
    header = None
    try:
        for chunk in chunks:
            header = parser.feed(chunk)
            if header is not None:
                break
        else:
            parser.eof()
    except GophergemError as failure:
        return type(failure), b""
    index = chunks.index(chunk)
    return header, parser.rest + b"".join(chunks[index + 1 :])


_HEADERISH = st.builds(
    lambda status, sep, meta, end, body: status + sep + meta + end + body,
    st.sampled_from([b"20", b"10", b"30", b"51", b"99", b"2", b"x1", b""]),
    st.sampled_from([b" ", b"", b"  ", b"\t"]),
    st.binary(max_size=30),
    st.sampled_from([b"\r\n", b"\n", b"\r", b""]),
    st.binary(max_size=10),
)


@settings(max_examples=200, deadline=None)
@given(
    data=st.one_of(st.binary(max_size=120), _HEADERISH),
    cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=6),
)
def test_any_split_gives_the_same_outcome(data: bytes, cuts: list[int]) -> None:
    """
    Any byte string, cut into any chunks, yields the header and body bytes (or
    the error class) it yields in one piece, and only gophergem errors.
    """
    points = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert _outcome(chunks) == _outcome([data])


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2000))
def test_parse_header_only_raises_gophergem_errors(data: bytes) -> None:
    """parse_header raises only PROTOCOL_ERROR or INVALID_STATUS, whatever the bytes."""
    try:
        header = parse_header(data)
    except (ProtocolError, InvalidStatus):
        return
    assert 10 <= header.status <= 69
    assert len(header.meta.encode()) <= MAX_META_BYTES


_META = st.text(max_size=60).filter(
    lambda s: "\r" not in s and "\n" not in s and not any(0xD800 <= ord(c) < 0xE000 for c in s)
)


@settings(max_examples=200, deadline=None)
@given(status=st.integers(min_value=10, max_value=69), meta=_META)
def test_header_round_trip(status: int, meta: str) -> None:
    """A header built from a status and META parses back to them."""
    line = f"{status} {meta}".encode()
    family = status // 10
    if not meta.strip() and family in (1, 3):
        with pytest.raises(ProtocolError):
            parse_header(line)
        return
    expected = DEFAULT_SUCCESS_META if not meta.strip() and family == 2 else meta
    assert parse_header(line) == ResponseHeader(status, expected)
    assert _read(line + b"\r\nrest") == (ResponseHeader(status, expected), b"rest")


# --- MIME types -------------------------------------------------------------------

MIME_VECTORS = [
    ("text/gemini", "text", "gemini", {}, None, None),
    ("text/gemini; charset=utf-8", "text", "gemini", {"charset": "utf-8"}, "utf-8", None),
    # Torture 0012-0019: charsets, unknown parameters, upper-case names.
    (
        "text/gemini; charset=iso-8859-1",
        "text",
        "gemini",
        {"charset": "iso-8859-1"},
        "iso-8859-1",
        None,
    ),
    ("text/gemini; charset=us-ascii", "text", "gemini", {"charset": "us-ascii"}, "us-ascii", None),
    ("text/gemini; format=flowed", "text", "gemini", {"format": "flowed"}, None, None),
    ("text/gemini; foo=bar", "text", "gemini", {"foo": "bar"}, None, None),
    (
        "text/gemini; format=flowed; foo=bar",
        "text",
        "gemini",
        {"format": "flowed", "foo": "bar"},
        None,
        None,
    ),
    ("TEXT/Gemini; CHARSET=UTF-8", "text", "gemini", {"charset": "UTF-8"}, "utf-8", None),
    ("text/gemini;charset=utf-8", "text", "gemini", {"charset": "utf-8"}, "utf-8", None),
    # lang, quoted when it holds a comma.
    ("text/gemini; lang=en", "text", "gemini", {"lang": "en"}, None, "en"),
    ('text/gemini; lang="en,fr"', "text", "gemini", {"lang": "en,fr"}, None, "en,fr"),
    ('text/plain; charset="UTF-8"', "text", "plain", {"charset": "UTF-8"}, "utf-8", None),
    (
        'text/gemini; title="a;b"; lang=en',
        "text",
        "gemini",
        {"title": "a;b", "lang": "en"},
        None,
        "en",
    ),
    ('text/gemini; q="a\\"b"', "text", "gemini", {"q": 'a"b'}, None, None),
    ('text/gemini; lang="unclosed', "text", "gemini", {"lang": "unclosed"}, None, "unclosed"),
    # The first of a repeated parameter wins; malformed ones are skipped.
    (
        "text/gemini; charset=utf-8; charset=latin1",
        "text",
        "gemini",
        {"charset": "utf-8"},
        "utf-8",
        None,
    ),
    ("text/gemini; charset; ;=x; lang=en;", "text", "gemini", {"lang": "en"}, None, "en"),
    ("text/gemini; charset=", "text", "gemini", {"charset": ""}, None, None),
    ("text/gemini; bad name=x", "text", "gemini", {}, None, None),
    ("  image/PNG  ", "image", "png", {}, None, None),
    ("text/garbage", "text", "garbage", {}, None, None),
    ("application/vnd.api+json", "application", "vnd.api+json", {}, None, None),
    # Not a MIME type at all.
    ("jpeg", "application", "octet-stream", {}, None, None),
    ("text/", "application", "octet-stream", {}, None, None),
    ("/gemini", "application", "octet-stream", {}, None, None),
    ("text/gem ini", "application", "octet-stream", {}, None, None),
    ("text/gemini/x", "application", "octet-stream", {}, None, None),
    ("tëxt/gemini", "application", "octet-stream", {}, None, None),
    ("; charset=utf-8", "application", "octet-stream", {}, None, None),
    # Empty META means gemtext in UTF-8.
    ("", "text", "gemini", {"charset": "utf-8"}, "utf-8", None),
]


@pytest.mark.parametrize(("meta", "kind", "subtype", "params", "charset", "lang"), MIME_VECTORS)
def test_parse_mime(
    meta: str,
    kind: str,
    subtype: str,
    params: dict[str, str],
    charset: str | None,
    lang: str | None,
) -> None:
    """Each META parses to its type, parameters, charset and lang."""
    mime = parse_mime(meta)
    assert (mime.type, mime.subtype, mime.params, mime.charset, mime.lang) == (
        kind,
        subtype,
        params,
        charset,
        lang,
    )


def test_mime_helpers() -> None:
    """essence, is_text and is_gemtext describe the type without its parameters."""
    mime = parse_mime("Text/Gemini; lang=en")
    assert mime.essence == "text/gemini"
    assert mime.is_text and mime.is_gemtext
    assert not parse_mime("image/png").is_text
    assert hash(mime) == hash(parse_mime("text/gemini; lang=en"))


def test_mime_values_are_sanitised() -> None:
    """Control and bidi characters in a parameter value are removed."""
    mime = parse_mime('text/gemini; lang="en\x1b[31m\u202e"')
    assert mime.lang == "en"


@settings(max_examples=200, deadline=None)
@given(
    meta=st.one_of(
        st.text(max_size=80), st.text(st.sampled_from('text/gemini;=" \\,'), max_size=40)
    )
)
def test_parse_mime_never_raises(meta: str) -> None:
    """parse_mime returns a lower-case MIME type made of token characters, whatever META is."""
    mime = parse_mime(meta)
    assert isinstance(mime, MimeType)
    for part in (mime.type, mime.subtype):
        assert part and part.isascii() and part == part.lower()
        assert not any(c in ' \t()<>@,;:\\"/[]?=' for c in part)
    assert all(name == name.lower() for name in mime.params)
    if mime.charset is not None:
        assert mime.charset == mime.charset.lower()


# --- is_denied --------------------------------------------------------------------

DENY_VECTORS = [
    ("image/png", ["image/*"], True),
    ("image/png", ["image/png"], True),
    ("image/png", ["IMAGE/PNG"], True),
    ("image/png", ["image/jpeg"], False),
    ("image/png", ["text/*", "application/pdf"], False),
    ("text/gemini; charset=utf-8", ["text/gemini"], True),
    ("text/gemini", ["text/gemini; charset=utf-8"], True),
    ("text/plain", [], False),
    ("application/octet-stream", ["*/*"], True),
    ("application/x-image", ["image/*"], False),
    ("jpeg", ["application/octet-stream"], True),
]


@pytest.mark.parametrize(("meta", "patterns", "denied"), DENY_VECTORS)
def test_is_denied(meta: str, patterns: list[str], denied: bool) -> None:
    """A type is denied by its exact name or its type/* pattern, case-insensitively."""
    assert is_denied(parse_mime(meta), patterns) is denied
