# -*- test-case-name: tests.test_url -*-
"""
Gopher URLs (RFC 4266) and Gemini URLs, parsed and printed without I/O.

A L{GopherURL} keeps the selector and the search terms as the exact bytes
that go on the wire: a menu's selector may be Latin-1, or hold C{?}, C{#} or
C{%}, and following it must send precisely what the server named.

A L{GeminiURL} keeps its path and query percent-encoded, normalised so that
one resource has one spelling; it also resolves the relative references
found in gemtext links and redirects (RFC 3986 section 5.2).

Parsing is pure, and the values are frozen, so the last few hundred texts
parsed are remembered: a client reading a page window by window (or asking
for a cached menu again) names the same URL on every call.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import string
from collections.abc import Callable
from typing import Protocol
from urllib.parse import quote_from_bytes, unquote_to_bytes

import attrs
import idna

from gophergem import advice
from gophergem.errors import InvalidRequest

__all__ = [
    "GEMINI_DEFAULT_PORT",
    "GEMINI_MAX_URL_BYTES",
    "GOPHER_DEFAULT_PORT",
    "GeminiURL",
    "GopherURL",
    "Located",
    "normalise_component",
    "quote_bytes",
    "remove_dot_segments",
    "resolve_reference",
    "safe_echo",
    "scheme_of",
]

GOPHER_DEFAULT_PORT = 70

# Bytes that stay literal in a printed selector; everything else is %XX.
# Letters, digits and "-._~" are always kept by urllib.parse; these are added.
_SELECTOR_EXTRA_SAFE = "/!$&'()*+,;=:@"
_HOST_ALLOWED = frozenset(string.ascii_letters + string.digits + "-._")


def quote_bytes(raw: bytes) -> str:
    """Percent-encode C{raw} for a URL path, keeping unreserved characters and C{/}."""
    return quote_from_bytes(raw, safe=_SELECTOR_EXTRA_SAFE)


#: Text that L{safe_echo} gives back as it is (most URLs).
_PRINTABLE_ASCII = re.compile("[ -~]*")


def safe_echo(text: str, limit: int = 2048) -> str:
    """
    Make caller-supplied text safe to quote back in a result or message.

    Control characters, bidi and other format characters are percent-encoded,
    so a URL copied from a hostile page cannot reorder or hide what we print.
    Overlong input is cut with an ellipsis.
    """
    if _PRINTABLE_ASCII.fullmatch(text, 0, limit):
        return text if len(text) <= limit else text[:limit] + "…"  # nothing to encode
    import unicodedata

    out = []
    for char in text[:limit]:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append("".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass")))
        else:
            out.append(char)
    if len(text) > limit:
        out.append("…")
    return "".join(out)


def _check_text(text: str) -> None:
    """Refuse URL text holding control characters or unpaired surrogates."""
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        raise InvalidRequest(message="The URL contains control characters.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(message="The URL is not valid Unicode text.") from None


def scheme_of(text: str) -> str:
    """Return the lower-cased scheme of C{text}, or C{""} if it has none."""
    head, sep, _ = text.partition(":")
    if not sep or not head or not head[0].isascii() or not head[0].isalpha():
        return ""
    if all(c.isascii() and (c.isalnum() or c in "+-.") for c in head):
        return head.lower()
    return ""


def _wrong_scheme(text: str, expected: str) -> InvalidRequest:
    scheme = scheme_of(text)
    if scheme in ("gopher", "gemini") and scheme != expected:
        return InvalidRequest(
            message=f"This is a {scheme}:// URL; use {advice.the(advice.fetch(scheme))} for it.",
            next_step=f"{advice.call()} {advice.name(advice.fetch(scheme))} with the same URL.",
        )
    if scheme in ("http", "https"):
        return InvalidRequest(
            message="Only gopher:// and gemini:// URLs are fetched; http(s) is out of scope.",
        )
    if scheme and scheme != expected:
        return InvalidRequest(
            message=f"Only gopher:// and gemini:// URLs are fetched; {safe_echo(scheme, 32)}: "
            "is not one of them.",
        )
    return InvalidRequest(
        message=f"Expected a {expected}:// URL; gophergem reads gopher:// and gemini:// URLs, "
        "written with their scheme."
    )


def parse_host(authority: str, default_port: int, scheme: str) -> tuple[str, int]:
    """
    Split a URL authority into a normalised host and a port.

    Host names are lower-cased and IDNA-encoded; IPv6 literals lose their
    brackets.  Userinfo is refused.

    @raise InvalidRequest: On an empty host, userinfo or a bad port.
    """
    if "@" in authority:
        raise InvalidRequest(message=f"A {scheme}:// URL may not carry a user name or password.")
    port_text = ""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise InvalidRequest(message="The URL has an unclosed [ in its IPv6 host.")
        host = authority[1:end]
        rest = authority[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise InvalidRequest(message="Unexpected text after the IPv6 host.")
            port_text = rest[1:]
        address, percent, zone = host.partition("%")
        try:
            canonical = ipv6_text(address)
        except ValueError:
            raise InvalidRequest(message="The IPv6 host in the URL is malformed.") from None
        # One spelling per address, so pins and cache keys cannot be doubled.
        host = canonical + percent + zone.lower()
    else:
        host, sep, port_text = authority.rpartition(":")
        if not sep:
            host, port_text = authority, ""
        host = host.rstrip(".") if host.endswith(".") and host != "." else host
        if not host:
            raise InvalidRequest(message=f"The {scheme}:// URL has no host.")
        if not host.isascii():
            try:
                host = idna.encode(host, uts46=True).decode("ascii")
            except (idna.IDNAError, UnicodeError, ValueError):
                raise InvalidRequest(message="The host name is not a valid domain name.") from None
        host = host.lower()
        if not all(c in _HOST_ALLOWED for c in host):
            raise InvalidRequest(message="The host name holds characters a host name cannot.")
    port = default_port
    if port_text:
        if not port_text.isdigit() or not port_text.isascii() or len(port_text) > 5:
            raise InvalidRequest(message="The port in the URL is not a number.")
        port = int(port_text)
        if not 1 <= port <= 65535:
            raise InvalidRequest(message="The port in the URL is outside 1-65535.")
    return host, port


def ipv6_text(address: str) -> str:
    """
    The one spelling of an IPv6 address, the same on every Python version.

    RFC 5952 section 5 spells an IPv4-mapped address with its IPv4 part in
    dotted form (C{::ffff:127.0.0.1}); Python prints it that way from 3.13
    on, and in hex (C{::ffff:7f00:1}) before.  Pins and cache keys must not
    depend on the interpreter, so the RFC form is written here.

    @raise ValueError: When C{address} is not an IPv6 address.
    """
    parsed = ipaddress.IPv6Address(address)
    mapped = parsed.ipv4_mapped
    if mapped is None:
        return str(parsed)
    scope = f"%{parsed.scope_id}" if parsed.scope_id else ""
    return f"::ffff:{mapped}{scope}"


def format_host(host: str, port: int, default_port: int) -> str:
    """Print C{host} (bracketed when IPv6) and C{port} unless it is the default."""
    shown = f"[{host}]" if ":" in host else host
    return shown if port == default_port else f"{shown}:{port}"


@attrs.frozen
class GopherURL:
    """
    A parsed C{gopher://} URL.

    @ivar host: Lower-case host name, IDNA-encoded, or an IP literal.
    @ivar port: TCP port, 70 by default.
    @ivar item_type: The one-character item type (C{"1"} when the path is empty).
    @ivar selector: The selector as raw bytes, percent-decoded.
    @ivar search: Search terms as raw bytes when the URL carried any, else C{None}.
    """

    host: str
    port: int = GOPHER_DEFAULT_PORT
    item_type: str = "1"
    selector: bytes = b""
    search: bytes | None = None

    @classmethod
    def from_text(cls, text: str) -> GopherURL:
        """
        Parse a gopher URL.

        C{%09} separates the selector from search terms (RFC 4266).  For a
        type-7 URL without C{%09}, a C{?query} is taken as the search, the way
        most clients write it; for every other type C{?} is part of the
        selector, as CGI-style servers expect.

        @raise InvalidRequest: If C{text} is not a usable gopher URL.
        """
        if type(text) is str and cls is GopherURL:
            return _remembered_gopher(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> GopherURL:
        """L{from_text}, never remembered."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidRequest(message="The URL is empty.")
        text = text.strip()
        _check_text(text)
        if scheme_of(text) != "gopher" or text[len("gopher:") : len("gopher://")] != "//":
            raise _wrong_scheme(text, "gopher")
        rest = text[len("gopher://") :]
        slash = rest.find("/")
        authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
        # A "?" or "#" straight after the authority ends it; there is no path.
        cut = min((i for i in (authority.find("?"), authority.find("#")) if i >= 0), default=-1)
        if cut >= 0:
            authority, path = authority[:cut], ""
        host, port = parse_host(authority, GOPHER_DEFAULT_PORT, "gopher")
        path, _, _fragment = path.partition("#")
        if len(path) <= 1:
            return cls(host=host, port=port)
        item_type, raw_path = path[1], path[2:]
        if item_type == "%" and len(path) >= 4 and all(c in string.hexdigits for c in path[2:4]):
            # A type character that had to be escaped, such as "#" (%23).
            item_type, raw_path = chr(int(path[2:4], 16)), path[4:]
        if not 0x21 <= ord(item_type) <= 0x7E:
            raise InvalidRequest(message="The item type in the URL is not a printable character.")
        search: bytes | None = None
        if item_type == "7" and "%09" not in raw_path.lower() and "?" in raw_path:
            raw_path, _, query = raw_path.partition("?")
            search = unquote_to_bytes(query)
        decoded = unquote_to_bytes(raw_path)
        selector, tab, extra = decoded.partition(b"\t")
        if tab:
            # Anything after a second tab is a Gopher+ string; we never send it.
            search = extra.partition(b"\t")[0]
        if any(b in selector for b in (b"\r", b"\n", b"\x00")):
            raise InvalidRequest(message="The selector contains a line break or NUL byte.")
        if search is not None and any(b in search for b in (b"\r", b"\n", b"\x00")):
            raise InvalidRequest(message="The search terms contain a line break or NUL byte.")
        return cls(host=host, port=port, item_type=item_type, selector=selector, search=search)

    def to_text(self) -> str:
        """Print the canonical URL: default port omitted, selector percent-encoded."""
        authority = format_host(self.host, self.port, GOPHER_DEFAULT_PORT)
        item_type = quote_bytes(self.item_type.encode("latin-1"))
        text = f"gopher://{authority}/{item_type}{quote_bytes(self.selector)}"
        if self.search is not None:
            text += "%09" + quote_bytes(self.search)
        return text

    def with_search(self, search: bytes | None) -> GopherURL:
        """Return a copy whose search terms are C{search}."""
        return attrs.evolve(self, search=search)


# --- Gemini ----------------------------------------------------------------

GEMINI_DEFAULT_PORT = 1965

# The longest URL a Gemini request may carry, in bytes (the CRLF not counted).
GEMINI_MAX_URL_BYTES = 1024

_UNRESERVED = string.ascii_letters + string.digits + "-._~"
# Characters that may stay literal in a path (RFC 3986 pchar and "/") and in
# a query (the same plus "?"); "%" is kept only when it starts a %XX escape.
_PATH_SAFE = frozenset(_UNRESERVED + "!$&'()*+,;=" + ":@/")
_QUERY_SAFE = _PATH_SAFE | {"?"}
_HEX = frozenset(string.hexdigits)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# RFC 3986 appendix B, for a reference known to have no scheme.
_RELATIVE = re.compile(r"(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL)
# Whitespace trimmed from a link target or a redirect's META.
_EDGE_SPACE = " \t\r\n\f\v"


def remove_dot_segments(path: str) -> str:
    """
    Remove C{.} and C{..} segments from an absolute path (RFC 3986 section
    5.2.4).  A C{..} above the root stays at the root.  A path that does not
    start with C{/} is returned as it is.
    """
    if not path.startswith("/"):
        return path
    segments = path.split("/")[1:]
    if "." not in segments and ".." not in segments:
        return path
    out: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "..":
            if out:
                out.pop()
            if index == last:
                out.append("")
        elif segment == ".":
            if index == last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def normalise_component(text: str, *, query: bool = False, errors: str = "strict") -> str:
    """
    Percent-encode what may not appear raw in a URL path (or, with
    C{query}, a query): spaces, non-ASCII (as UTF-8), and a C{%} that does
    not start an escape.  Existing C{%XX} escapes are left exactly as they
    are.

    @param errors: How a character is encoded to UTF-8 (C{"surrogatepass"}
        encodes a lone surrogate instead of raising).
    """
    safe = _QUERY_SAFE if query else _PATH_SAFE
    if all(c in safe for c in text):
        return text
    out: list[str] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char in safe:
            out.append(char)
        elif char == "%" and index + 2 < size and _is_escape(text, index):
            out.append(text[index : index + 3])
            index += 3
            continue
        else:
            out.append("".join(f"%{b:02X}" for b in char.encode("utf-8", errors)))
        index += 1
    return "".join(out)


def _is_escape(text: str, index: int) -> bool:
    return text[index + 1] in _HEX and text[index + 2] in _HEX


def _merge(base_path: str, reference_path: str) -> str:
    """Merge a relative path with the base path (RFC 3986 section 5.2.3)."""
    return base_path[: base_path.rfind("/") + 1] + reference_path


class Located(Protocol):
    """A URL as L{resolve_reference} reads it: a page to resolve against."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def path(self) -> str: ...

    @property
    def query(self) -> str | None: ...

    def to_text(self) -> str: ...


def resolve_reference(
    base: Located,
    scheme: str,
    default_port: int,
    reference: str,
    parse: Callable[[str], Located],
    *,
    keep_fragment: bool = False,
) -> str:
    """
    Resolve a link target against a page at C{base}, a URL of C{scheme}
    (RFC 3986 section 5.2): relative references become absolute URLs of the
    page's scheme, printed canonically when C{parse} reads them (as they
    are when it raises L{InvalidRequest}); a reference with a scheme of its
    own is already absolute and comes back as written (made canonical only
    for the page's own scheme).  Angle brackets and surrounding whitespace
    are removed, the fragment dropped unless C{keep_fragment}.  Never
    raises.
    """

    def canonical(text: str) -> str:
        try:
            return parse(text).to_text()
        except InvalidRequest:
            return text

    ref = reference.strip(_EDGE_SPACE)
    if len(ref) >= 2 and ref[0] == "<" and ref[-1] == ">":
        ref = ref[1:-1].strip(_EDGE_SPACE)
    found = _SCHEME.match(ref)
    if found is not None:
        return canonical(ref) if found.group(1).lower() == scheme else ref
    match = _RELATIVE.match(ref)
    assert match is not None  # every group is optional
    authority, path, query, fragment = match.groups()
    if authority is not None:
        path = remove_dot_segments(path)
    else:
        authority = format_host(base.host, base.port, default_port)
        if not path:
            path = base.path
            query = base.query if query is None else query
        elif path.startswith("/"):
            path = remove_dot_segments(path)
        else:
            path = remove_dot_segments(_merge(base.path, path))
    target = f"{scheme}://{authority}{path}"
    if query is not None:
        target += f"?{query}"
    if keep_fragment and fragment is not None:
        target += f"#{fragment}"
    return canonical(target)


@attrs.frozen
class GeminiURL:
    """
    A parsed C{gemini://} URL.

    Path and query are kept percent-encoded and normalised: dot-segments
    removed, and every character that may not appear raw in a URL (a space,
    non-ASCII text, a stray C{%}) percent-encoded, while existing C{%XX}
    escapes are kept as they are.  The fragment is never kept: Gemini
    requests must not carry one.

    @ivar host: Lower-case host name, IDNA-encoded, or an IP literal
        (IPv6 without brackets).
    @ivar port: TCP port, 1965 by default.
    @ivar path: The percent-encoded path; never empty (at least C{/}).
    @ivar query: The percent-encoded query without its C{?}, or C{None} when
        the URL has none (C{""} for a URL ending in a bare C{?}).
    """

    host: str
    port: int = GEMINI_DEFAULT_PORT
    path: str = "/"
    query: str | None = None

    @classmethod
    def from_text(cls, text: str) -> GeminiURL:
        """
        Parse a gemini URL.

        @raise InvalidRequest: If C{text} is not a usable gemini URL: another
            scheme, no host, a user name or password, a bad port, control
            characters.
        """
        if type(text) is str and cls is GeminiURL:
            return _remembered_gemini(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> GeminiURL:
        """L{from_text}, never remembered."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidRequest(message="The URL is empty.")
        text = text.strip()
        if _CONTROL.search(text):
            raise InvalidRequest(message="The URL contains control characters.")
        if _SURROGATE.search(text):
            raise InvalidRequest(message="The URL is not valid Unicode text.")
        if scheme_of(text) != "gemini" or text[len("gemini:") : len("gemini://")] != "//":
            raise _wrong_scheme(text, "gemini")
        rest, _, _fragment = text[len("gemini://") :].partition("#")
        rest, has_query, query = rest.partition("?")
        slash = rest.find("/")
        authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
        host, port = parse_host(authority, GEMINI_DEFAULT_PORT, "gemini")
        if authority.startswith("["):
            # One address, one spelling: "[0:0::1]" and "[::1]" are the same host.
            try:
                host = ipv6_text(host)
            except ValueError:
                raise InvalidRequest(
                    message="The host in brackets is not an IPv6 address."
                ) from None
        path = normalise_component(remove_dot_segments(path or "/"))
        return cls(
            host=host,
            port=port,
            path=path,
            query=normalise_component(query, query=True) if has_query else None,
        )

    def to_text(self) -> str:
        """Print the canonical URL, without the port when it is 1965."""
        authority = format_host(self.host, self.port, GEMINI_DEFAULT_PORT)
        text = f"gemini://{authority}{self.path}"
        return text if self.query is None else f"{text}?{self.query}"

    def request_line(self) -> bytes:
        """
        Build the request: the URL and CRLF.

        @raise InvalidRequest: If the URL is longer than 1024 bytes, the
            most a Gemini server accepts, or holds characters that cannot be
            sent.
        """
        text = self.to_text()
        if _CONTROL.search(text) or _SURROGATE.search(text):
            raise InvalidRequest(message="The URL holds characters that cannot be sent.")
        url = text.encode("utf-8")
        if len(url) > GEMINI_MAX_URL_BYTES:
            raise InvalidRequest(
                message=(
                    f"The URL is {len(url)} bytes long; Gemini requests are limited "
                    f"to {GEMINI_MAX_URL_BYTES} bytes."
                ),
            )
        return url + b"\r\n"

    def without_query(self) -> GeminiURL:
        """Return a copy without the query (safe to show: it may hold an answer)."""
        return attrs.evolve(self, query=None)

    def with_input(self, answer: str) -> GeminiURL:
        """
        Return a copy whose query is C{answer}, the reply to a status 10/11
        prompt, replacing any query the URL had.

        Everything but unreserved characters is percent-encoded (a space is
        C{%20}, never C{+}), so the server decodes exactly C{answer}.  No
        error message ever includes the answer.

        @raise InvalidRequest: If C{answer} is not valid Unicode text or the
            URL it makes is longer than 1024 bytes.
        """
        try:
            raw = answer.encode("utf-8")
        except (UnicodeEncodeError, AttributeError):
            raise InvalidRequest(message="The input is not valid Unicode text.") from None
        url = attrs.evolve(self, query=quote_from_bytes(raw, safe=""))
        size = len(url.to_text().encode("utf-8", "surrogatepass"))
        if size > GEMINI_MAX_URL_BYTES:
            raise InvalidRequest(
                message=(
                    f"The input is too long: sent as a URL it takes {size} bytes, "
                    f"and Gemini allows {GEMINI_MAX_URL_BYTES}."
                ),
                next_step="Shorten the input and send it again.",
            )
        return url

    def resolve(self, reference: str) -> str:
        """
        Resolve a link target or redirect location against this URL (RFC
        3986 section 5.2).

        Relative references (C{//host/x}, C{/x}, C{x}, C{../x}, C{?q}) become
        absolute gemini URLs in canonical form, with dot-segments removed
        (C{..} never climbs above the root) and the fragment dropped.  A
        reference with another scheme (C{gopher:}, C{https:}, C{mailto:},
        C{data:}, ...) is already absolute and comes back unchanged.  Angle
        brackets around the reference and surrounding whitespace are removed.
        Never raises: a target that is not a usable gemini URL comes back
        resolved but unnormalised, and fetching it will say why it fails.
        """
        # The targets are not remembered: a page's many links would crowd
        # out the URLs clients name again and again.
        return resolve_reference(
            self, "gemini", GEMINI_DEFAULT_PORT, reference, GeminiURL._parse, keep_fragment=True
        )


#: How many parsed URLs of each scheme are remembered (texts that failed to
#: parse are not: they raise every time).
_REMEMBERED_URLS = 256


@functools.lru_cache(maxsize=_REMEMBERED_URLS)
def _remembered_gopher(text: str) -> GopherURL:
    return GopherURL._parse(text)


@functools.lru_cache(maxsize=_REMEMBERED_URLS)
def _remembered_gemini(text: str) -> GeminiURL:
    return GeminiURL._parse(text)
