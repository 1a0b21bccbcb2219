"""
Tests for L{gophergem.url.GeminiURL}: parsing, printing, input and
reference resolution.  Vector tables plus hypothesis properties.
"""

from __future__ import annotations

import contextlib
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import GophergemError, InvalidRequest
from gophergem.url import (
    GEMINI_DEFAULT_PORT,
    GEMINI_MAX_URL_BYTES,
    GeminiURL,
    remove_dot_segments,
)

# --- from_text ----------------------------------------------------------------

PARSE_VECTORS = [
    ("gemini://example.org", "example.org", 1965, "/", None),
    ("gemini://example.org/", "example.org", 1965, "/", None),
    ("GEMINI://Example.ORG:1965/Page", "example.org", 1965, "/Page", None),
    ("gemini://example.org:1966/x?y", "example.org", 1966, "/x", "y"),
    ("gemini://[::1]:1966/", "::1", 1966, "/", None),
    ("gemini://[2001:DB8::1]/", "2001:db8::1", 1965, "/", None),
    ("gemini://[0:0:0:0:0:0:0:1]:1966/", "::1", 1966, "/", None),
    ("gemini://[::FFFF:127.0.0.1]/", "::ffff:127.0.0.1", 1965, "/", None),
    ("gemini://[::ffff:7f00:1]/", "::ffff:127.0.0.1", 1965, "/", None),
    ("gemini://127.0.0.1/", "127.0.0.1", 1965, "/", None),
    ("gemini://bücher.example/", "xn--bcher-kva.example", 1965, "/", None),
    ("gemini://example.org./", "example.org", 1965, "/", None),
    ("  gemini://example.org/a  ", "example.org", 1965, "/a", None),
    # Characters that may not appear raw are percent-encoded ...
    ("gemini://example.org/a b", "example.org", 1965, "/a%20b", None),
    ("gemini://example.org/café", "example.org", 1965, "/caf%C3%A9", None),
    ("gemini://example.org/<x>|{y}", "example.org", 1965, "/%3Cx%3E%7C%7By%7D", None),
    ("gemini://example.org/100%", "example.org", 1965, "/100%25", None),
    ("gemini://example.org/%zz%4", "example.org", 1965, "/%25zz%254", None),
    ("gemini://example.org/\u202egnp.exe", "example.org", 1965, "/%E2%80%AEgnp.exe", None),
    # ... while existing escapes and allowed characters stay as they are.
    ("gemini://example.org/%7Euser/%2F%2f", "example.org", 1965, "/%7Euser/%2F%2f", None),
    ("gemini://example.org/a;b=c,d!$&'()*+:@x", "example.org", 1965, "/a;b=c,d!$&'()*+:@x", None),
    # Dot-segments go; ".." stops at the root.
    ("gemini://example.org/a/./b/../c", "example.org", 1965, "/a/c", None),
    ("gemini://example.org/../../x", "example.org", 1965, "/x", None),
    ("gemini://example.org/a/..", "example.org", 1965, "/", None),
    ("gemini://example.org/a/b/.", "example.org", 1965, "/a/b/", None),
    # Queries keep "/" and "?" and get the same encoding.
    ("gemini://example.org?q", "example.org", 1965, "/", "q"),
    ("gemini://example.org/?", "example.org", 1965, "/", ""),
    ("gemini://example.org/?a b&c=d/e?f", "example.org", 1965, "/", "a%20b&c=d/e?f"),
    ("gemini://example.org/?x/../y", "example.org", 1965, "/", "x/../y"),
    ("gemini://example.org/?%41é", "example.org", 1965, "/", "%41%C3%A9"),
    # The fragment is dropped.
    ("gemini://example.org/p#frag", "example.org", 1965, "/p", None),
    ("gemini://example.org/?a#b?c", "example.org", 1965, "/", "a"),
    ("gemini://example.org#top", "example.org", 1965, "/", None),
]


@pytest.mark.parametrize(("text", "host", "port", "path", "query"), PARSE_VECTORS)
def test_from_text_table(text: str, host: str, port: int, path: str, query: str | None) -> None:
    """Each URL parses to its normalised host, port, path and query."""
    assert GeminiURL.from_text(text) == GeminiURL(host, port, path, query)


PRINT_VECTORS = [
    ("gemini://Example.org:1965", "gemini://example.org/"),
    ("gemini://example.org:1966/a b?c d#e", "gemini://example.org:1966/a%20b?c%20d"),
    ("gemini://[::1]:1965/x", "gemini://[::1]/x"),
    ("gemini://[::1]:7000/x", "gemini://[::1]:7000/x"),
    ("gemini://example.org/?", "gemini://example.org/?"),
]


@pytest.mark.parametrize(("text", "printed"), PRINT_VECTORS)
def test_to_text_table(text: str, printed: str) -> None:
    """The canonical form omits port 1965 and keeps an empty query's C{?}."""
    assert GeminiURL.from_text(text).to_text() == printed


REFUSED = [
    ("", "empty"),
    ("   ", "empty"),
    ("example.org/", "gemini://"),
    ("gemini:/example.org/", "gemini://"),
    ("gemini:example.org", "gemini://"),
    ("ftp://example.org/", "gemini://"),
    ("gemini://", "no host"),
    ("gemini:///path", "no host"),
    ("gemini://:1966/", "no host"),
    ("gemini://user@example.org/", "user name"),
    ("gemini://user:secret@example.org/", "user name"),
    ("gemini://example.org:0/", "1-65535"),
    ("gemini://example.org:65536/", "1-65535"),
    ("gemini://example.org:http/", "not a number"),
    ("gemini://example.org:-1/", "not a number"),
    ("gemini://[::1/", "unclosed"),
    ("gemini://[example.org]/", "IPv6"),
    ("gemini://[1.2.3.4]/", "IPv6"),
    ("gemini://[é]/", "IPv6"),
    ("gemini://[::1::2]/", "IPv6"),
    ("gemini://exa mple.org/", "host name"),
    ("gemini://example.org/a\r\nb", "control"),
    ("gemini://example.org/\x00", "control"),
    ("gemini://example.org/\x1b[31m", "control"),
    ("gemini://example.org/\x85x", "control"),
    ("gemini://example.org/\ud800", "Unicode"),
]


@pytest.mark.parametrize(("text", "fragment"), REFUSED)
def test_from_text_refuses(text: str, fragment: str) -> None:
    """Unusable URLs are refused with INVALID_REQUEST and a message saying why."""
    with pytest.raises(InvalidRequest) as info:
        GeminiURL.from_text(text)
    assert fragment in info.value.message


def test_gopher_url_names_the_gopher_tool() -> None:
    """A gopher:// URL is refused with advice to use gopher_fetch."""
    with pytest.raises(InvalidRequest) as info:
        GeminiURL.from_text("gopher://example.org/1/")
    assert "gopher_fetch" in info.value.message
    assert info.value.next_step is not None and "gopher_fetch" in info.value.next_step


@pytest.mark.parametrize("text", ["http://example.org/", "HTTPS://example.org/"])
def test_http_url_is_out_of_scope(text: str) -> None:
    """An http(s) URL is refused with a message that only gopher and gemini are fetched."""
    with pytest.raises(InvalidRequest) as info:
        GeminiURL.from_text(text)
    assert "Only gopher:// and gemini://" in info.value.message


def test_refusal_does_not_echo_the_url() -> None:
    """A refusal's message never quotes the (possibly hostile) URL back."""
    with pytest.raises(InvalidRequest) as info:
        GeminiURL.from_text("gemini://user:hunter2@example.org/")
    assert "hunter2" not in info.value.message


def test_default_port_constant() -> None:
    """The default Gemini port is 1965 and a URL without a port uses it."""
    assert GEMINI_DEFAULT_PORT == 1965
    assert GeminiURL("example.org").port == 1965


# --- request_line ---------------------------------------------------------------


def test_request_line() -> None:
    """The request line is the canonical URL followed by CRLF."""
    url = GeminiURL.from_text("gemini://Example.org:1965/a b?x")
    assert url.request_line() == b"gemini://example.org/a%20b?x\r\n"


def test_request_line_at_the_limit() -> None:
    """A URL of exactly 1024 bytes is sent."""
    prefix = "gemini://example.org/"
    url = GeminiURL.from_text(prefix + "a" * (GEMINI_MAX_URL_BYTES - len(prefix)))
    assert len(url.request_line()) == GEMINI_MAX_URL_BYTES + 2


def test_request_line_over_the_limit() -> None:
    """A URL of 1025 bytes is refused before anything is sent."""
    prefix = "gemini://example.org/"
    url = GeminiURL.from_text(prefix + "a" * (GEMINI_MAX_URL_BYTES + 1 - len(prefix)))
    with pytest.raises(InvalidRequest) as info:
        url.request_line()
    assert "1025" in info.value.message


def test_request_line_counts_bytes_not_characters() -> None:
    """The limit counts the encoded bytes: one "é" costs six."""
    prefix = "gemini://example.org/"
    url = GeminiURL.from_text(prefix + "é" * 200)
    with pytest.raises(InvalidRequest):
        url.request_line()


def test_request_line_refuses_injected_line_breaks() -> None:
    """A hand-built URL holding CRLF cannot smuggle a second line into the request."""
    with pytest.raises(InvalidRequest):
        GeminiURL("example.org", path="/\r\nsecond").request_line()


# --- without_query and with_input -------------------------------------------------


def test_without_query() -> None:
    """without_query drops the query and nothing else."""
    url = GeminiURL.from_text("gemini://example.org:1966/search?secret")
    assert url.without_query() == GeminiURL("example.org", 1966, "/search", None)


def test_with_input_round_trips_reserved_characters() -> None:
    """The egsam input string comes back intact after percent-decoding the query."""
    answer = "1% + #x = -1 & ?"
    url = GeminiURL.from_text("gemini://example.org/input").with_input(answer)
    assert url.query == "1%25%20%2B%20%23x%20%3D%20-1%20%26%20%3F"
    assert unquote(url.query) == answer
    assert url.to_text() == "gemini://example.org/input?" + url.query


def test_with_input_replaces_the_query() -> None:
    """An answer replaces any query the URL already had."""
    url = GeminiURL.from_text("gemini://example.org/q?old").with_input("new")
    assert url.query == "new"


def test_with_input_encodes_spaces_and_line_breaks() -> None:
    """A space is %20 (never +) and a line break is %0A."""
    url = GeminiURL.from_text("gemini://example.org/").with_input("a b\nc")
    assert url.query == "a%20b%0Ac"


def test_with_input_encodes_unicode_as_utf8() -> None:
    """Non-ASCII input is sent as percent-encoded UTF-8."""
    url = GeminiURL.from_text("gemini://example.org/").with_input("é/")
    assert url.query == "%C3%A9%2F"


def test_with_input_parses_back_unchanged() -> None:
    """The URL with an answer is already canonical."""
    url = GeminiURL.from_text("gemini://example.org/").with_input("what? 100% & more #1")
    assert GeminiURL.from_text(url.to_text()) == url


def test_with_input_too_long() -> None:
    """An answer that makes the URL longer than 1024 bytes is refused, without quoting it."""
    answer = "secret-" + "x" * 1300
    with pytest.raises(InvalidRequest) as info:
        GeminiURL.from_text("gemini://example.org/").with_input(answer)
    assert "secret" not in info.value.message
    assert "1024" in info.value.message


def test_with_input_refuses_lone_surrogates() -> None:
    """An answer that is not valid Unicode is refused with INVALID_REQUEST."""
    with pytest.raises(InvalidRequest):
        GeminiURL.from_text("gemini://example.org/").with_input("\udc80")


# --- resolve ----------------------------------------------------------------------

TORTURE = "gemini://gemini.conman.org/test/torture/"

TORTURE_VECTORS = [
    # 0001: a full URL.
    ("0001", "gemini://gemini.conman.org/test/torture/0002", TORTURE + "0002"),
    # 0002, 0003: scheme-relative.
    ("0002", "//gemini.conman.org/test/torture/0003", TORTURE + "0003"),
    ("0003", "//gemini.conman.org/test/torture/0004", TORTURE + "0004"),
    # 0004, 0005: absolute paths.
    ("0004", "/test/torture/0005", TORTURE + "0005"),
    ("0005", "/test/torture/0006", TORTURE + "0006"),
    # 0006, 0007: relative paths replace the last segment.
    ("0006", "0007", TORTURE + "0007"),
    ("0007", "0008", TORTURE + "0008"),
    # 0008-0010: dot segments, and more ".." than the path is deep.
    ("0008", "/test/../test/torture/0009", TORTURE + "0009"),
    ("0009", "/test/torture/../../test/./torture/0010", TORTURE + "0010"),
    ("0010", "../../../../test/./././torture/./0011", TORTURE + "0011"),
    # 0019, 0020: other schemes are left alone.
    ("0019", "gopher://gopher.conman.org/", "gopher://gopher.conman.org/"),
    ("0019", "http://www.conman.org/", "http://www.conman.org/"),
    ("0019", "about:blank", "about:blank"),
    ("0019", "example:test", "example:test"),
    ("0020", "https://example.org/a/../b", "https://example.org/a/../b"),
    # 0021: data: URLs are kept exactly.
    (
        "0021",
        "data:text/gemini;charset=utf-8,%3D%3E%200022%20next",
        "data:text/gemini;charset=utf-8,%3D%3E%200022%20next",
    ),
    ("0021", "data:text/gemini;base64,PT4gMDAyMg==", "data:text/gemini;base64,PT4gMDAyMg=="),
    # 0028: the first word is the target, even when it is a word.
    ("0028", "This", TORTURE + "This"),
    # 0031: angle brackets around the target.
    ("0031", "<0032>", TORTURE + "0032"),
]


@pytest.mark.parametrize(("page", "reference", "expected"), TORTURE_VECTORS)
def test_resolve_torture_links(page: str, reference: str, expected: str) -> None:
    """The link cases of the client torture test resolve as a correct client resolves them."""
    assert GeminiURL.from_text(TORTURE + page).resolve(reference) == expected


RFC_BASE = "gemini://a/b/c/d;p?q"

# RFC 3986 section 5.4, with "http" read as "gemini"; fragments are dropped
# and "//g" gains its "/".
RFC_VECTORS = [
    ("g:h", "g:h"),
    ("g", "gemini://a/b/c/g"),
    ("./g", "gemini://a/b/c/g"),
    ("g/", "gemini://a/b/c/g/"),
    ("/g", "gemini://a/g"),
    ("//g", "gemini://g/"),
    ("?y", "gemini://a/b/c/d;p?y"),
    ("g?y", "gemini://a/b/c/g?y"),
    ("#s", "gemini://a/b/c/d;p?q"),
    ("g#s", "gemini://a/b/c/g"),
    ("g?y#s", "gemini://a/b/c/g?y"),
    (";x", "gemini://a/b/c/;x"),
    ("g;x", "gemini://a/b/c/g;x"),
    ("g;x?y#s", "gemini://a/b/c/g;x?y"),
    ("", "gemini://a/b/c/d;p?q"),
    (".", "gemini://a/b/c/"),
    ("./", "gemini://a/b/c/"),
    ("..", "gemini://a/b/"),
    ("../", "gemini://a/b/"),
    ("../g", "gemini://a/b/g"),
    ("../..", "gemini://a/"),
    ("../../", "gemini://a/"),
    ("../../g", "gemini://a/g"),
    ("../../../g", "gemini://a/g"),
    ("../../../../g", "gemini://a/g"),
    ("/./g", "gemini://a/g"),
    ("/../g", "gemini://a/g"),
    ("g.", "gemini://a/b/c/g."),
    (".g", "gemini://a/b/c/.g"),
    ("g..", "gemini://a/b/c/g.."),
    ("..g", "gemini://a/b/c/..g"),
    ("./../g", "gemini://a/b/g"),
    ("./g/.", "gemini://a/b/c/g/"),
    ("g/./h", "gemini://a/b/c/g/h"),
    ("g/../h", "gemini://a/b/c/h"),
    ("g;x=1/./y", "gemini://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "gemini://a/b/c/y"),
    ("g?y/./x", "gemini://a/b/c/g?y/./x"),
    ("g?y/../x", "gemini://a/b/c/g?y/../x"),
    ("g#s/./x", "gemini://a/b/c/g"),
    ("g#s/../x", "gemini://a/b/c/g"),
    ("http:g", "http:g"),
]


@pytest.mark.parametrize(("reference", "expected"), RFC_VECTORS)
def test_resolve_rfc3986_examples(reference: str, expected: str) -> None:
    """The examples of RFC 3986 section 5.4 resolve as the RFC says."""
    assert GeminiURL.from_text(RFC_BASE).resolve(reference) == expected


MORE_VECTORS = [
    ("gemini://example.org:1966/dir/page", "other", "gemini://example.org:1966/dir/other"),
    ("gemini://[::1]:1966/dir/page", "/x", "gemini://[::1]:1966/x"),
    ("gemini://example.org/dir/", "", "gemini://example.org/dir/"),
    ("gemini://example.org/p?q", "?", "gemini://example.org/p?"),
    ("gemini://example.org/", "GEMINI://Other.Example:1965/x", "gemini://other.example/x"),
    ("gemini://example.org/", "gemini://other.example:1966", "gemini://other.example:1966/"),
    ("gemini://example.org/", "//other.example:7000/a/../b", "gemini://other.example:7000/b"),
    ("gemini://example.org/", "a b/ç", "gemini://example.org/a%20b/%C3%A7"),
    ("gemini://example.org/", "  x \t", "gemini://example.org/x"),
    ("gemini://example.org/", "<gopher://h/1/>", "gopher://h/1/"),
    ("gemini://example.org/", "mailto:someone@example.org", "mailto:someone@example.org"),
    ("gemini://example.org/", "file:///etc/passwd", "file:///etc/passwd"),
    ("gemini://example.org/", "javascript:alert(1)", "javascript:alert(1)"),
    ("gemini://example.org/", "titan://example.org/up", "titan://example.org/up"),
    # Not a scheme: a first segment with a colon after a slash or a bad start.
    ("gemini://example.org/d/", "a/b:c", "gemini://example.org/d/a/b:c"),
    ("gemini://example.org/d/", "1x:y", "gemini://example.org/d/1x:y"),
    # Unusable gemini targets come back resolved but untouched.
    ("gemini://example.org/", "//user@evil.example/", "gemini://user@evil.example/"),
    ("gemini://example.org/", "gemini:relative", "gemini:relative"),
    ("gemini://example.org/", "//", "gemini://"),
]


@pytest.mark.parametrize(("base", "reference", "expected"), MORE_VECTORS)
def test_resolve_more(base: str, reference: str, expected: str) -> None:
    """Ports, IPv6 hosts, other schemes and unusable targets resolve predictably."""
    assert GeminiURL.from_text(base).resolve(reference) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/a/b/c/./../../g", "/a/g"),
        ("/a//../b", "/a/b"),
        ("/..", "/"),
        ("/", "/"),
        ("", ""),
        ("relative/../x", "relative/../x"),
        ("/a/b/..", "/a/"),
    ],
)
def test_remove_dot_segments(path: str, expected: str) -> None:
    """remove_dot_segments follows RFC 3986 section 5.2.4 for absolute paths."""
    assert remove_dot_segments(path) == expected


# --- properties -------------------------------------------------------------------

_URL_CHARS = st.sampled_from(
    [*"abcXYZ019-._~!$&'()*+,;=:@/?#%[] \t\\\"<>^`{|}", "é", "\u202e", "\u200b", "日"]
)
_URLISH = st.builds(
    lambda prefix, rest: prefix + rest,
    st.sampled_from(["gemini://", "gemini://example.org", "gemini://[::1]:1966", "GEMINI://a"]),
    st.text(_URL_CHARS, max_size=40),
)
_BASES = st.sampled_from(
    [
        GeminiURL("example.org"),
        GeminiURL("example.org", 1966, "/a/b/c", "q"),
        GeminiURL("::1", 1965, "/dir/", None),
        GeminiURL("xn--bcher-kva.example", 1965, "/x%20y/z", ""),
    ]
)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(max_size=60), _URLISH))
def test_from_text_only_raises_invalid_request(text: str) -> None:
    """from_text either parses or raises INVALID_REQUEST, whatever the input."""
    with contextlib.suppress(InvalidRequest):
        GeminiURL.from_text(text)


@settings(max_examples=200, deadline=None)
@given(text=_URLISH)
def test_canonical_form_is_stable(text: str) -> None:
    """A parsed URL prints as ASCII without spaces and parses back to itself."""
    try:
        url = GeminiURL.from_text(text)
    except InvalidRequest:
        return
    printed = url.to_text()
    assert printed.isascii()
    assert not any(c.isspace() or ord(c) < 0x21 or c in '<>"{}|\\^`' for c in printed)
    assert "#" not in printed
    assert url.path.startswith("/")
    assert "/./" not in url.path + "/" and "/../" not in url.path + "/"
    assert GeminiURL.from_text(printed) == url


@settings(max_examples=200, deadline=None)
@given(answer=st.text(max_size=120).filter(lambda s: not any(0xD800 <= ord(c) < 0xE000 for c in s)))
def test_with_input_round_trips(answer: str) -> None:
    """Any answer is recovered exactly by percent-decoding the query."""
    url = GeminiURL.from_text("gemini://example.org/in").with_input(answer)
    assert url.query is not None
    assert unquote(url.query, errors="strict") == answer
    assert GeminiURL.from_text(url.to_text()) == url


@settings(max_examples=200, deadline=None)
@given(base=_BASES, reference=st.one_of(st.text(max_size=40), st.text(_URL_CHARS, max_size=40)))
def test_resolve_never_raises(base: GeminiURL, reference: str) -> None:
    """resolve returns a string for any reference, and a gemini result is canonical."""
    try:
        resolved = base.resolve(reference)
    except GophergemError as failure:  # pragma: no cover - reported by the assertion
        raise AssertionError(f"resolve raised {failure!r}") from failure
    assert isinstance(resolved, str)
    try:
        url = GeminiURL.from_text(resolved)
    except InvalidRequest:
        return
    if resolved.startswith("gemini://"):
        assert url.to_text() == resolved


@settings(max_examples=200, deadline=None)
@given(base=_BASES, reference=st.text(_URL_CHARS, max_size=40))
def test_resolve_of_resolved_is_itself(base: GeminiURL, reference: str) -> None:
    """Resolving an already resolved gemini URL changes nothing."""
    resolved = base.resolve(reference)
    if resolved.startswith("gemini://"):
        assert base.resolve(resolved) == resolved
