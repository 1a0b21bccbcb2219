"""
Tests for L{gophergem.url}: parsing and printing gopher:// URLs (RFC 4266, SPEC section 4).
"""

from __future__ import annotations

import string
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import InvalidRequest
from gophergem.url import GeminiURL, GopherURL, ipv6_text, quote_bytes, safe_echo, scheme_of

# --- from_text: accepted URLs ----------------------------------------------------

PARSE_VECTORS = [
    # (url, host, port, item_type, selector, search)
    ("gopher://example.org", "example.org", 70, "1", b"", None),
    ("gopher://example.org/", "example.org", 70, "1", b"", None),
    ("gopher://example.org/1", "example.org", 70, "1", b"", None),
    ("gopher://example.org/1/", "example.org", 70, "1", b"/", None),
    ("gopher://example.org/11/foo", "example.org", 70, "1", b"1/foo", None),
    ("gopher://example.org/0/docs/readme.txt", "example.org", 70, "0", b"/docs/readme.txt", None),
    ("gopher://example.org:7070/1/x", "example.org", 7070, "1", b"/x", None),
    ("gopher://example.org:70/1/x", "example.org", 70, "1", b"/x", None),
    ("gopher://example.org:/1/x", "example.org", 70, "1", b"/x", None),
    ("gopher://example.org:65535/", "example.org", 65535, "1", b"", None),
    ("gopher://example.org:1/", "example.org", 1, "1", b"", None),
    # percent-decoding of the selector
    ("gopher://example.org/0/a%20b", "example.org", 70, "0", b"/a b", None),
    ("gopher://example.org/0/caf%E9", "example.org", 70, "0", b"/caf\xe9", None),
    ("gopher://example.org/0/caf%c3%a9", "example.org", 70, "0", b"/caf\xc3\xa9", None),
    ("gopher://example.org/0/100%25", "example.org", 70, "0", b"/100%", None),
    ("gopher://example.org/0/a%23b", "example.org", 70, "0", b"/a#b", None),
    ("gopher://example.org/0/a%3Fb", "example.org", 70, "0", b"/a?b", None),
    # %09 search (RFC 4266)
    ("gopher://example.org/7/find%09gopher", "example.org", 70, "7", b"/find", b"gopher"),
    ("gopher://example.org/7/find%09two%20words", "example.org", 70, "7", b"/find", b"two words"),
    ("gopher://example.org/7/find%09", "example.org", 70, "7", b"/find", b""),
    ("gopher://example.org/7/find%09q%09%2B", "example.org", 70, "7", b"/find", b"q"),
    ("gopher://example.org/1/menu%09ignored", "example.org", 70, "1", b"/menu", b"ignored"),
    # ?query: search for type 7 only
    ("gopher://example.org/7/find?gopher", "example.org", 70, "7", b"/find", b"gopher"),
    ("gopher://example.org/7/find?a%20b", "example.org", 70, "7", b"/find", b"a b"),
    ("gopher://example.org/0/cgi?x=1", "example.org", 70, "0", b"/cgi?x=1", None),
    ("gopher://example.org/1/cgi?x=1&y", "example.org", 70, "1", b"/cgi?x=1&y", None),
    ("gopher://example.org/7/a?b%09c", "example.org", 70, "7", b"/a?b", b"c"),
    # fragments are not part of the selector
    ("gopher://example.org/0/page#top", "example.org", 70, "0", b"/page", None),
    # IPv6 and IP literals
    ("gopher://[::1]/", "::1", 70, "1", b"", None),
    ("gopher://[2001:db8::1]:7070/0/x", "2001:db8::1", 7070, "0", b"/x", None),
    ("gopher://[fe80::1%25eth0]/", "fe80::1%25eth0", 70, "1", b"", None),
    ("gopher://192.0.2.7:71/", "192.0.2.7", 71, "1", b"", None),
    # IDNA, case and trailing dot
    ("gopher://bücher.example/", "xn--bcher-kva.example", 70, "1", b"", None),
    ("gopher://BÜCHER.example/", "xn--bcher-kva.example", 70, "1", b"", None),
    ("GOPHER://EXAMPLE.ORG/0/Case", "example.org", 70, "0", b"/Case", None),
    ("Gopher://Example.Org/", "example.org", 70, "1", b"", None),
    ("gopher://example.org./", "example.org", 70, "1", b"", None),
    # surrounding whitespace
    ("  gopher://example.org/0/x  ", "example.org", 70, "0", b"/x", None),
]


@pytest.mark.parametrize(
    ("url", "host", "port", "item_type", "selector", "search"), PARSE_VECTORS, ids=repr
)
def test_from_text_vectors(
    url: str, host: str, port: int, item_type: str, selector: bytes, search: bytes | None
) -> None:
    """from_text splits a URL into host, port, type, raw selector bytes and search bytes."""
    parsed = GopherURL.from_text(url)
    assert (parsed.host, parsed.port, parsed.item_type, parsed.selector, parsed.search) == (
        host,
        port,
        item_type,
        selector,
        search,
    )


def test_ipv6_host_case_kept_as_given() -> None:
    """An IPv6 literal loses its brackets; it is bracketed again when printed."""
    url = GopherURL.from_text("gopher://[2001:db8::1]:7070/0/x")
    assert url.host == "2001:db8::1"
    assert url.to_text() == "gopher://[2001:db8::1]:7070/0/x"


# --- to_text ----------------------------------------------------------------------

TO_TEXT_VECTORS = [
    (GopherURL(host="example.org"), "gopher://example.org/1"),
    (
        GopherURL(host="example.org", port=70, item_type="0", selector=b"/x"),
        "gopher://example.org/0/x",
    ),
    (GopherURL(host="example.org", port=7070), "gopher://example.org:7070/1"),
    (GopherURL(host="::1", port=70), "gopher://[::1]/1"),
    (GopherURL(host="::1", port=71), "gopher://[::1]:71/1"),
    (
        GopherURL(host="h.example", item_type="0", selector=b"/a b?c#d%e\xe9"),
        "gopher://h.example/0/a%20b%3Fc%23d%25e%E9",
    ),
    (
        GopherURL(host="h.example", item_type="7", selector=b"/s", search=b"two words"),
        "gopher://h.example/7/s%09two%20words",
    ),
    (
        GopherURL(host="h.example", item_type="7", selector=b"/s", search=b""),
        "gopher://h.example/7/s%09",
    ),
]


@pytest.mark.parametrize(("url", "text"), TO_TEXT_VECTORS, ids=repr)
def test_to_text_vectors(url: GopherURL, text: str) -> None:
    """to_text omits the default port, brackets IPv6 and percent-encodes selector and search."""
    assert url.to_text() == text


def test_to_text_normalises_parsed_url() -> None:
    """A parsed URL prints in canonical form: lower-case host, no default port."""
    assert (
        GopherURL.from_text("GOPHER://Example.ORG:70/0/Doc").to_text()
        == "gopher://example.org/0/Doc"
    )


def test_with_search() -> None:
    """with_search returns a copy with new search terms and leaves the original alone."""
    url = GopherURL(host="h.example", item_type="7", selector=b"/s")
    searched = url.with_search(b"terms")
    assert searched.search == b"terms"
    assert url.search is None
    assert searched.selector == b"/s"


# --- from_text: refused URLs ----------------------------------------------------------


def test_gemini_url_names_gemini_fetch() -> None:
    """A gemini:// URL is refused with a message naming the gemini_fetch tool."""
    with pytest.raises(InvalidRequest) as info:
        GopherURL.from_text("gemini://capsule.example/")
    assert "gemini_fetch" in info.value.message
    assert info.value.code == "INVALID_REQUEST"


@pytest.mark.parametrize(
    "url", ["http://example.org/", "https://example.org/", "HTTPS://x.example"]
)
def test_http_url_refused(url: str) -> None:
    """An http(s):// URL is refused saying only gopher:// and gemini:// are fetched."""
    with pytest.raises(InvalidRequest) as info:
        GopherURL.from_text(url)
    assert "gopher://" in info.value.message
    assert "gemini://" in info.value.message


@pytest.mark.parametrize(
    "url", ["ftp://example.org/", "file:///etc/passwd", "finger://x", "example.org/1/", "x:"]
)
@pytest.mark.parametrize("parse", [GopherURL.from_text, GeminiURL.from_text])
def test_unknown_scheme_names_the_working_ones(url: str, parse: Any) -> None:
    """Any other scheme (or none) is refused naming gopher:// and gemini://, the working ones."""
    with pytest.raises(InvalidRequest) as info:
        parse(url)
    assert "gopher://" in info.value.message and "gemini://" in info.value.message


REFUSED = [
    ("ftp scheme", "ftp://example.org/"),
    ("file scheme", "file:///etc/passwd"),
    ("no scheme", "example.org/1/"),
    ("gopher without slashes", "gopher:example.org/1"),
    ("gopher one slash", "gopher:/example.org/1"),
    ("empty", ""),
    ("blank", "   "),
    ("empty host", "gopher:///1/x"),
    ("empty host with port", "gopher://:70/"),
    ("empty brackets", "gopher://[]/"),
    ("unclosed bracket", "gopher://[::1/"),
    ("junk after bracket", "gopher://[::1]x/"),
    ("userinfo", "gopher://user@example.org/"),
    ("userinfo with password", "gopher://user:pw@example.org/"),
    ("port 0", "gopher://example.org:0/"),
    ("port 65536", "gopher://example.org:65536/"),
    ("port 99999", "gopher://example.org:99999/"),
    ("port letters", "gopher://example.org:7a/"),
    ("port negative", "gopher://example.org:-1/"),
    ("port huge", "gopher://example.org:0000000070/"),
    ("port unicode digits", "gopher://example.org:\u0667\u0660/"),
    ("CR in selector", "gopher://example.org/0/a%0Db"),
    ("LF in selector", "gopher://example.org/0/a%0ab"),
    ("NUL in selector", "gopher://example.org/0/a%00b"),
    ("CR in search", "gopher://example.org/7/s%09a%0Db"),
    ("LF in ?search", "gopher://example.org/7/s?a%0Ab"),
    ("NUL in search", "gopher://example.org/7/s%09%00"),
    ("raw LF", "gopher://example.org/0/a\nb"),
    ("raw CR", "gopher://example.org/0/a\rb"),
    ("raw NUL", "gopher://example.org/0/a\x00b"),
    ("raw tab", "gopher://example.org/0/a\tb"),
    ("raw ESC", "gopher://example.org/0/\x1b[31m"),
    ("raw DEL", "gopher://example.org/0/a\x7fb"),
    ("control in host", "gopher://exa\x01mple.org/"),
    ("space item type", "gopher://example.org/ x"),
    ("non-ASCII item type", "gopher://example.org/\u00e9x"),
    ("space in host", "gopher://exa mple.org/"),
    ("bad IDNA", "gopher://\u2603.example/"),
]


@pytest.mark.parametrize(("name", "url"), REFUSED, ids=[n for n, _ in REFUSED])
def test_from_text_refuses(name: str, url: str) -> None:
    """Unusable URLs raise InvalidRequest with a message written by us."""
    with pytest.raises(InvalidRequest) as info:
        GopherURL.from_text(url)
    assert info.value.code == "INVALID_REQUEST"
    assert info.value.message


def test_from_text_refuses_non_string() -> None:
    """A non-string URL raises InvalidRequest rather than TypeError."""
    with pytest.raises(InvalidRequest):
        GopherURL.from_text(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url", ["gopher://example.org/0/a\ud800", "gopher://example.org/7/s?\udfff"], ids=repr
)
def test_from_text_surrogate_refused(url: str) -> None:
    """A lone surrogate (legal in a JSON string) in the URL raises InvalidRequest."""
    with pytest.raises(InvalidRequest):
        GopherURL.from_text(url)


@pytest.mark.parametrize("char", ["\u0085", "\u009b"], ids=repr)
def test_from_text_c1_control_refused(char: str) -> None:
    """A C1 control character in the URL is refused like a C0 one."""
    with pytest.raises(InvalidRequest):
        GopherURL.from_text(f"gopher://example.org/0/a{char}b")


@pytest.mark.parametrize(
    "url", ["gopher://[example.org]/", "gopher://[\u00e9]/", "gopher://[1.2.3.4]/"], ids=repr
)
def test_from_text_bracketed_non_ipv6_refused(url: str) -> None:
    """Only an IPv6 literal may stand between brackets."""
    with pytest.raises(InvalidRequest):
        GopherURL.from_text(url)


def test_hash_item_type_round_trip() -> None:
    """A URL whose item type is C{#} survives to_text then from_text."""
    url = GopherURL(host="example.org", item_type="#", selector=b"/x")
    assert GopherURL.from_text(url.to_text()) == url


# --- helpers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scheme"),
    [
        ("gopher://h/", "gopher"),
        ("GEMINI://h/", "gemini"),
        ("svn+ssh://h", "svn+ssh"),
        ("no-scheme", ""),
        ("1abc://h", ""),
        (":x", ""),
        ("\u00e9://h", ""),
    ],
    ids=repr,
)
def test_scheme_of(text: str, scheme: str) -> None:
    """scheme_of returns the lower-cased scheme or the empty string."""
    assert scheme_of(text) == scheme


def test_quote_bytes_keeps_unreserved_and_slash() -> None:
    """quote_bytes keeps unreserved characters and C{/} and percent-encodes everything else."""
    assert quote_bytes(b"/a-b_c.d~e") == "/a-b_c.d~e"
    assert quote_bytes(b" ?#%\t\xff") == "%20%3F%23%25%09%FF"


@given(st.binary(max_size=200))
def test_quote_bytes_is_the_rfc_3986_path_encoding(raw: bytes) -> None:
    """
    Exactly the unreserved characters and the path's sub-delimiters, C{:},
    C{@} and C{/} stay; every other byte is C{%XX} in upper case; decoding
    gives the bytes back.
    """
    keep = set((string.ascii_letters + string.digits + "-._~/!$&'()*+,;=:@").encode())
    expected = "".join(chr(b) if b in keep else f"%{b:02X}" for b in raw)
    assert quote_bytes(raw) == expected
    assert unquote_to_bytes(quote_bytes(raw)) == raw


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("gopher://h/0x", "gopher://h/0x"),
        ("a\u202eb", "a%E2%80%AEb"),
        ("a\nb\x1b", "a%0Ab%1B"),
        ("a\u200bb", "a%E2%80%8Bb"),
        ("a\ud800b", "a%ED%A0%80b"),
        ("caf\u00e9", "caf\u00e9"),
    ],
    ids=repr,
)
def test_safe_echo_vectors(text: str, shown: str) -> None:
    """safe_echo percent-encodes control and bidi characters and keeps the rest."""
    assert safe_echo(text) == shown


def test_safe_echo_cuts_long_text() -> None:
    """safe_echo cuts text beyond its limit and adds an ellipsis."""
    assert safe_echo("x" * 10, limit=4) == "xxxx…"


# --- properties -------------------------------------------------------------------------

_URLISH = st.lists(
    st.sampled_from(
        [
            *(string.ascii_letters + string.digits + "/:?#%[]@.-_~!$&'()*+,;= \t\r\n\x00\x7f"),
            *("%09", "%0D", "%00", "%ZZ", "%", "\u00e9", "\u202e", "\u0085", "\u3002", "xn--"),
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=80)
    | st.builds(lambda s: "gopher://" + s, st.text(max_size=60))
    | st.builds(lambda s: "gopher://" + s, _URLISH)
    | st.builds(lambda s: "gopher://example.org/" + s, _URLISH)
)
def test_from_text_only_raises_invalid_request(text: str) -> None:
    """from_text returns a GopherURL or raises InvalidRequest, never anything else."""
    try:
        url = GopherURL.from_text(text)
    except InvalidRequest:
        return
    assert isinstance(url, GopherURL)
    assert b"\r" not in url.selector and b"\n" not in url.selector and b"\x00" not in url.selector
    assert 1 <= url.port <= 65535
    assert url.host


_LDH = "abcdefghijklmnopqrstuvwxyz0123456789"
_LABEL = st.builds(
    lambda first, middle, last: first + middle + last,
    st.sampled_from(_LDH),
    st.text(alphabet=_LDH + "-", max_size=8),
    st.sampled_from(_LDH),
)
_HOST = st.lists(_LABEL, min_size=1, max_size=4).map(".".join)
_WIRE_BYTES = st.binary(max_size=40).map(lambda b: b.translate(None, delete=b"\t\r\n\x00"))
_ITEM_TYPE = st.characters(min_codepoint=0x21, max_codepoint=0x7E).filter(lambda c: c != "#")


@settings(max_examples=200, deadline=None)
@given(
    host=_HOST,
    port=st.integers(min_value=1, max_value=65535),
    item_type=_ITEM_TYPE,
    selector=_WIRE_BYTES,
    search=st.none() | _WIRE_BYTES,
)
def test_to_text_from_text_round_trip(
    host: str, port: int, item_type: str, selector: bytes, search: bytes | None
) -> None:
    """Printing a GopherURL and parsing it back gives the same value."""
    url = GopherURL(host=host, port=port, item_type=item_type, selector=selector, search=search)
    text = url.to_text()
    assert GopherURL.from_text(text) == url
    assert text.isascii()
    assert GopherURL.from_text(text).to_text() == text


@settings(max_examples=100, deadline=None)
@given(host=_HOST, port=st.integers(min_value=1, max_value=65535))
def test_default_port_omitted(host: str, port: int) -> None:
    """to_text shows the port exactly when it is not 70."""
    text = GopherURL(host=host, port=port).to_text()
    assert (f":{port}/" in text) is (port != 70)


@pytest.mark.parametrize(
    ("given", "spelled"),
    [
        ("::FFFF:127.0.0.1", "::ffff:127.0.0.1"),
        ("::ffff:7f00:1", "::ffff:127.0.0.1"),
        ("0:0:0:0:0:ffff:a00:1", "::ffff:10.0.0.1"),
        ("::ffff:1.2.3.4%eth0", "::ffff:1.2.3.4%eth0"),
        ("2001:DB8:0::1", "2001:db8::1"),
        ("fe80::1%3", "fe80::1%3"),
    ],
)
def test_ipv6_text_is_the_same_on_every_python(given: str, spelled: str) -> None:
    """IPv6 hosts get one spelling (RFC 5952, dotted IPv4-mapped) whatever the interpreter."""
    assert ipv6_text(given) == spelled


@pytest.mark.parametrize(
    ("parse", "good", "bad"),
    [
        (GopherURL.from_text, "gopher://example.org/1/a", "gopher://"),
        (GeminiURL.from_text, "gemini://example.org/a", "gemini://"),
    ],
)
def test_parsed_urls_are_remembered(parse: Any, good: str, bad: str) -> None:
    """A URL text parsed again gives the same value; one that does not parse raises every time."""
    assert parse(good) is parse(good)
    for _ in range(2):
        with pytest.raises(InvalidRequest):
            parse(bad)
