# -*- test-case-name: tests.test_wire_smolurl -*-
"""
What the small web's URLs (C{finger://}, C{nex://}, C{spartan://},
C{titan://}) share, free of I/O: splitting a URL into its parts, refusing
what cannot be sent, and normalising a path or query.  A link is resolved
against a page by L{gophergem.url.resolve_reference}, which Gemini's URLs
use too.

Each scheme's own URL value lives beside its wire format
(L{gophergem.wire.finger.FingerURL}, L{gophergem.wire.nex.NexURL},
L{gophergem.wire.spartan.SpartanURL}, L{gophergem.wire.titan.TitanURL});
L{gophergem.wire.smolweb.parse_url} reads any of them.  Every failure is an
L{InvalidRequest}.
"""

from __future__ import annotations

import re

import attrs

from gophergem.errors import InvalidRequest
from gophergem.url import (
    normalise_component,
    parse_host,
    remove_dot_segments,
    scheme_of,
)

__all__ = [
    "SplitURL",
    "host_and_port",
    "normalise_path",
    "normalise_query",
    "split_url",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@attrs.frozen
class SplitURL:
    """
    A URL of a known scheme, cut into its parts (nothing decoded yet).

    @ivar authority: What sits between C{//} and the path (may hold C{user@}).
    @ivar path: The path as written (C{""} when there is none).
    @ivar query: The query without its C{?}, or C{None} when there is none.
    """

    authority: str
    path: str
    query: str | None


def split_url(text: object, scheme: str) -> SplitURL:
    """
    Check that C{text} is a C{scheme://} URL of sendable text and cut it
    into authority, path and query; the fragment is dropped.

    @raise InvalidRequest: On an empty URL, another scheme, control
        characters or text that is not valid Unicode.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest(message="The URL is empty.")
    text = text.strip()
    if _CONTROL.search(text):
        raise InvalidRequest(message="The URL contains control characters.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(message="The URL is not valid Unicode text.") from None
    prefix = f"{scheme}://"
    if scheme_of(text) != scheme or text[len(scheme) + 1 : len(prefix)] != "//":
        raise InvalidRequest(message=f"Expected a {scheme}:// URL, written with its scheme.")
    rest = text[len(prefix) :].partition("#")[0]
    rest, has_query, query = rest.partition("?")
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    return SplitURL(authority, path, query if has_query else None)


def host_and_port(authority: str, default_port: int, scheme: str) -> tuple[str, int]:
    """
    The normalised host and the port of an authority without user info
    (L{gophergem.url.parse_host}).

    @raise InvalidRequest: On an empty host, user info or a bad port.
    """
    return parse_host(authority, default_port, scheme)


def normalise_path(path: str) -> str:
    """
    One spelling of a path: never empty (C{/}), dot-segments removed, and
    what may not appear raw in a URL percent-encoded (existing C{%XX}
    escapes kept).
    """
    return normalise_component(remove_dot_segments(path or "/"), errors="surrogatepass")


def normalise_query(query: str | None) -> str | None:
    """L{normalise_path}'s encoding for a query (C{None} stays C{None})."""
    return None if query is None else normalise_component(query, query=True, errors="surrogatepass")
