"""
Tests for L{gophergem.wire.smolurl} and L{gophergem.wire.smolweb}: the
small web's URLs (finger, nex, spartan, titan) as one family: default ports,
one dispatcher, and no text that makes a parser raise anything but
L{InvalidRequest}.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import InvalidRequest
from gophergem.wire.finger import FingerURL
from gophergem.wire.nex import NexURL
from gophergem.wire.smolurl import normalise_path, normalise_query, split_url
from gophergem.wire.smolweb import DEFAULT_PORTS, SMOLWEB_SCHEMES, parse_url
from gophergem.wire.spartan import SpartanURL
from gophergem.wire.titan import TitanURL


def test_default_ports() -> None:
    """Finger 79, Nex 1900, Spartan 300, Titan 1965 (Gemini's)."""
    assert DEFAULT_PORTS == {"finger": 79, "nex": 1900, "spartan": 300, "titan": 1965}
    assert parse_url("finger://h/u").port == 79
    assert parse_url("nex://h/").port == 1900
    assert parse_url("spartan://h/").port == 300
    assert parse_url("titan://h/x").port == 1965


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("finger://h/u", FingerURL),
        ("NEX://h/", NexURL),
        ("spartan://h/", SpartanURL),
        ("titan://h/x;size=1", TitanURL),
    ],
)
def test_parse_url_dispatches_on_the_scheme(text: str, kind: type) -> None:
    """parse_url hands each scheme to its own URL type, whatever the scheme's case."""
    assert isinstance(parse_url(text), kind)


@pytest.mark.parametrize(
    "text", ["", "  ", "gopher://h/", "gemini://h/", "https://h/", "h/x", "finger:h/u"]
)
def test_parse_url_refuses_other_schemes(text: str) -> None:
    """Other schemes, no scheme, and a scheme without // are refused as invalid requests."""
    with pytest.raises(InvalidRequest):
        parse_url(text)


@pytest.mark.parametrize("scheme", SMOLWEB_SCHEMES)
@pytest.mark.parametrize(
    "rest",
    [
        "h/\x00",
        "h/\x1b[31m",
        "h/a\u0085b",
        "h/\ud800",
        "user:pw@h/",
        "h:0/",
        "h:65536/",
        "h:x/",
        "",
    ],
)
def test_every_scheme_refuses_unsendable_urls(scheme: str, rest: str) -> None:
    """Control characters, lone surrogates, passwords, bad ports and no host: refused."""
    with pytest.raises(InvalidRequest):
        parse_url(f"{scheme}://{rest}")


def test_split_url_drops_the_fragment() -> None:
    """The fragment never reaches a server."""
    parts = split_url("nex://h/a?b#c", "nex")
    assert (parts.authority, parts.path, parts.query) == ("h", "/a", "b")


def test_normalise() -> None:
    """Dot-segments go, a space and non-ASCII are encoded, existing escapes stay."""
    assert normalise_path("") == "/"
    assert normalise_path("/a/./b/../c d/é%41%zz") == "/a/c%20d/%C3%A9%41%25zz"
    assert normalise_query(None) is None
    assert normalise_query("a b?c") == "a%20b?c"


_URLISH = st.text(alphabet="abc/.:;=@%?#[]0123456789 -_~\u00e9\t\x00", max_size=40)


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(max_size=60)
    | st.builds(lambda s, r: f"{s}://{r}", st.sampled_from(SMOLWEB_SCHEMES), st.text(max_size=50))
    | st.builds(lambda s, r: f"{s}://{r}", st.sampled_from(SMOLWEB_SCHEMES), _URLISH)
    | st.builds(lambda s, r: f"{s}://h/{r}", st.sampled_from(SMOLWEB_SCHEMES), _URLISH)
)
def test_parse_url_only_raises_invalid_request(text: str) -> None:
    """No text makes a small-web URL parser raise anything but InvalidRequest;
    a URL that parses prints to a URL that parses to the same value."""
    try:
        url = parse_url(text)
    except InvalidRequest:
        return
    assert (
        parse_url(url.to_text(show_token=True) if isinstance(url, TitanURL) else url.to_text())
        == url
    )


@settings(max_examples=200, deadline=None)
@given(
    base=st.sampled_from(["nex://h/a/b", "spartan://h:301/a/", "nex://[::1]/"]),
    reference=st.text(max_size=40) | _URLISH,
)
def test_resolve_never_raises(base: str, reference: str) -> None:
    """Resolving any link text against a page gives a string, never an exception."""
    url = parse_url(base)
    assert isinstance(url, NexURL | SpartanURL)
    assert isinstance(url.resolve(reference), str)
