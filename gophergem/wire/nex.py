# -*- test-case-name: tests.test_wire_nex -*-
"""
Nex (nightfall.city/nex), free of I/O: the URL, the request line and what a
path's answer is.

The client sends a path and CRLF; the server sends the document and
closes.  There is no status and no metadata: a path ending in C{/} is a
directory, whose listing is text in which C{=> } lines are links (read here
as gemtext, with every link made an absolute URL); any other path is typed
by its extension, as Gopher clients type selectors.
"""

from __future__ import annotations

import enum
import mimetypes
import posixpath
from urllib.parse import unquote_to_bytes

import attrs

from gophergem.errors import InvalidRequest
from gophergem.url import format_host, resolve_reference
from gophergem.wire.gemtext import GemtextDocument, parse_gemtext
from gophergem.wire.smolurl import (
    host_and_port,
    normalise_path,
    normalise_query,
    split_url,
)
from gophergem.wire.text import DecodedText, decode_body

__all__ = [
    "MAX_REQUEST_BYTES",
    "NEX_DEFAULT_PORT",
    "NexKind",
    "NexURL",
    "decode_document",
    "kind_of",
    "mime_type_of",
    "parse_directory",
]

NEX_DEFAULT_PORT = 1900

#: The longest path a request may carry, in bytes (the line end not counted).
MAX_REQUEST_BYTES = 1024


class NexKind(enum.Enum):
    """What the answer to a path is."""

    DIRECTORY = "directory"
    GEMTEXT = "gemtext"
    TEXT = "text"
    BINARY = "binary"


_GEMTEXT_EXTENSIONS = (".gmi", ".gemini")


@attrs.frozen
class NexURL:
    """
    A parsed C{nex://} URL.

    @ivar host: Lower-case host name, IDNA-encoded, or an IP literal.
    @ivar port: TCP port, 1900 by default.
    @ivar path: The percent-encoded, normalised path; never empty.
    @ivar query: The percent-encoded query, or C{None}.  Nex has no
        queries; a C{?} some servers give meaning to is sent as written.
    """

    host: str
    port: int = NEX_DEFAULT_PORT
    path: str = "/"
    query: str | None = None

    @classmethod
    def from_text(cls, text: str) -> NexURL:
        """
        Parse a C{nex://host[:port]/path} URL.

        @raise InvalidRequest: If C{text} is not a usable nex URL: another
            scheme, no host, user info, a bad port, or a path that decodes to
            a line break or NUL.
        """
        parts = split_url(text, "nex")
        host, port = host_and_port(parts.authority, NEX_DEFAULT_PORT, "nex")
        url = cls(host, port, normalise_path(parts.path), normalise_query(parts.query))
        url.request_line()  # refuse now what could never be sent
        return url

    def to_text(self) -> str:
        """Print the canonical URL, without the port when it is 1900."""
        authority = format_host(self.host, self.port, NEX_DEFAULT_PORT)
        text = f"nex://{authority}{self.path}"
        return text if self.query is None else f"{text}?{self.query}"

    @property
    def kind(self) -> NexKind:
        """What this path's answer is (L{kind_of})."""
        return kind_of(self.path)

    def request_line(self) -> bytes:
        """
        The request: the path, percent-decoded (the bytes the server names
        its files by), then the query when there is one, and CRLF.

        @raise InvalidRequest: If it holds a line break or NUL, or is
            longer than L{MAX_REQUEST_BYTES}.
        """
        raw = unquote_to_bytes(self.path)
        if self.query is not None:
            raw += b"?" + unquote_to_bytes(self.query)
        if any(b in raw for b in (b"\r", b"\n", b"\x00")):
            raise InvalidRequest(message="The nex:// path holds a line break or NUL byte.")
        if len(raw) > MAX_REQUEST_BYTES:
            raise InvalidRequest(
                message=f"The nex:// path is longer than the {MAX_REQUEST_BYTES} bytes sent."
            )
        return raw + b"\r\n"

    def resolve(self, reference: str) -> str:
        """
        Resolve a link of a directory listing against this URL: relative
        targets become absolute C{nex://} URLs; other schemes stay as
        written.  Never raises.
        """
        return resolve_reference(self, "nex", NEX_DEFAULT_PORT, reference, NexURL.from_text)


def kind_of(path: str) -> NexKind:
    """
    What the answer to C{path} (percent-encoded or not) is: a directory
    when it ends in C{/}, gemtext for C{.gmi} and C{.gemini}, text for
    C{text/*} extensions and for names without a known extension, else
    binary.
    """
    if path.endswith("/") or not path:
        return NexKind.DIRECTORY
    name = posixpath.basename(path).lower()
    if name.endswith(_GEMTEXT_EXTENSIONS):
        return NexKind.GEMTEXT
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed is None or guessed.startswith("text/"):
        return NexKind.TEXT
    return NexKind.BINARY


def mime_type_of(path: str) -> str:
    """
    The MIME type C{path} stands for: C{text/gemini} for a directory or a
    gemtext file, the extension's type, or C{text/plain} without one.
    """
    kind = kind_of(path)
    if kind in (NexKind.DIRECTORY, NexKind.GEMTEXT):
        return "text/gemini"
    guessed, _ = mimetypes.guess_type(posixpath.basename(path).lower(), strict=False)
    return guessed or "text/plain"


def decode_document(data: bytes | bytearray, *, truncated: bool = False) -> DecodedText:
    """
    Decode a text answer (a listing, gemtext or text; not yet sanitised:
    L{parse_directory} and the gemtext reader sanitise line by line).
    Never raises.
    """
    return decode_body(data, truncated=truncated)


def parse_directory(text: str, base: NexURL) -> GemtextDocument:
    """
    Read a decoded directory listing as gemtext: its C{=> } lines are
    links, resolved against C{base} to absolute C{nex://} URLs (a link to
    another scheme stays as written); every other line is kept, sanitised.
    Never raises.
    """
    return parse_gemtext(text, base)
