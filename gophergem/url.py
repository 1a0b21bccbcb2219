# -*- test-case-name: tests.test_url -*-
"""
Gopher URLs (RFC 4266), parsed and printed without I/O.

A L{GopherURL} keeps the selector and the search terms as the exact bytes
that go on the wire: a menu's selector may be Latin-1, or hold C{?}, C{#} or
C{%}, and following it must send precisely what the server named.
"""

from __future__ import annotations

import string
from urllib.parse import unquote_to_bytes

import attrs
import idna

from gophergem.errors import InvalidRequest

__all__ = ["GOPHER_DEFAULT_PORT", "GopherURL", "quote_bytes", "safe_echo", "scheme_of"]

GOPHER_DEFAULT_PORT = 70

# Bytes that stay literal in a printed selector; everything else is %XX.
_SELECTOR_SAFE = frozenset((string.ascii_letters + string.digits + "-._~/!$&'()*+,;=:@").encode())
_HOST_ALLOWED = frozenset(string.ascii_letters + string.digits + "-._")


def quote_bytes(raw: bytes) -> str:
    """Percent-encode C{raw} for a URL path, keeping unreserved characters and C{/}."""
    return "".join(chr(b) if b in _SELECTOR_SAFE else f"%{b:02X}" for b in raw)


def safe_echo(text: str, limit: int = 2048) -> str:
    """
    Make caller-supplied text safe to quote back in a result or message.

    Control characters, bidi and other format characters are percent-encoded,
    so a URL copied from a hostile page cannot reorder or hide what we print.
    Overlong input is cut with an ellipsis.
    """
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
            message=f"This is a {scheme}:// URL; use the {scheme}_fetch tool for it.",
            next_step=f"Call {scheme}_fetch with the same URL.",
        )
    if scheme in ("http", "https"):
        return InvalidRequest(
            message="Only gopher:// and gemini:// URLs are fetched; http(s) is out of scope.",
        )
    return InvalidRequest(message=f"Expected a {expected}:// URL.")


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
        if not host or not all(c in string.hexdigits + ":.%" or c.isalnum() for c in host):
            raise InvalidRequest(message="The IPv6 host in the URL is malformed.")
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
        if not isinstance(text, str) or not text.strip():
            raise InvalidRequest(message="The URL is empty.")
        text = text.strip()
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
            raise InvalidRequest(message="The URL contains control characters.")
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
        item_type = path[1]
        if not item_type.isascii() or ord(item_type) < 0x21:
            raise InvalidRequest(message="The item type in the URL is not a printable character.")
        raw_path = path[2:]
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
        text = f"gopher://{authority}/{self.item_type}{quote_bytes(self.selector)}"
        if self.search is not None:
            text += "%09" + quote_bytes(self.search)
        return text

    def with_search(self, search: bytes | None) -> GopherURL:
        """Return a copy whose search terms are C{search}."""
        return attrs.evolve(self, search=search)
