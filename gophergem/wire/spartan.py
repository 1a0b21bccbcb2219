# -*- test-case-name: tests.test_wire_spartan -*-
"""
Spartan (spartan.mozz.us/specification.gmi), free of I/O: the URL, the
request and the response header.

Plain TCP.  The request is C{host SP path SP content-length CRLF} and then
exactly content-length bytes of data (the answer to an input link, or a
URL's query).  The response header is C{status SP meta CRLF}, with one of
four statuses: 2 success (meta: a MIME type; the body follows), 3 redirect
(meta: an absolute path on the same host), 4 client error and 5 server
error (meta: a message).  Anything else is refused: a malformed header as
a L{ProtocolError}, a status digit Spartan does not define as an
L{InvalidStatus}.

Spartan pages are gemtext with one more line type, C{=: URL label}: a link
that asks the reader for input (L{gophergem.wire.gemtext.Link.takes_input}).
"""

from __future__ import annotations

import enum
from urllib.parse import quote_from_bytes, unquote_to_bytes

import attrs

from gophergem.errors import InvalidRequest, InvalidStatus, ProtocolError
from gophergem.url import format_host, resolve_reference
from gophergem.wire.gemtext import GemtextDocument, parse_gemtext
from gophergem.wire.headerline import HeaderLineParser, decode_meta
from gophergem.wire.smolurl import (
    host_and_port,
    normalise_path,
    normalise_query,
    split_url,
)

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_META_BYTES",
    "SPARTAN_DEFAULT_PORT",
    "HeaderParser",
    "ResponseHeader",
    "SpartanStatus",
    "SpartanURL",
    "encode_request",
    "parse_header",
    "parse_page",
]

SPARTAN_DEFAULT_PORT = 300

#: The longest META kept, in bytes.
MAX_META_BYTES = 1024

#: One status digit, a space, META and CRLF.
MAX_HEADER_BYTES = 1 + 1 + MAX_META_BYTES + 2

#: What a success header without a MIME type means.
DEFAULT_SUCCESS_META = "text/gemini"

_UTF8_BOM = b"\xef\xbb\xbf"


class SpartanStatus(enum.IntEnum):
    """The four statuses of Spartan."""

    SUCCESS = 2
    REDIRECT = 3
    CLIENT_ERROR = 4
    SERVER_ERROR = 5


@attrs.frozen
class ResponseHeader:
    """
    A Spartan response header.

    @ivar status: One of L{SpartanStatus}.
    @ivar meta: As the server sent it (untrusted, not sanitised): the MIME
        type of a success, the path of a redirect, the message of an error.
    """

    status: SpartanStatus
    meta: str


def parse_header(line: bytes) -> ResponseHeader:
    """
    Parse a response header line, given without its CRLF.

    @raise ProtocolError: If the line is not a Spartan header (a Gemini
        header's two digits included), META is not UTF-8, too long, or
        missing from a redirect.
    @raise InvalidStatus: If the status is one digit Spartan does not
        define (only 2, 3, 4 and 5 are).
    """
    if line.startswith(_UTF8_BOM):
        raise ProtocolError(message="The Spartan response header starts with a byte order mark.")
    if not line[:1].isdigit():
        raise ProtocolError(message="The Spartan response header does not start with a status.")
    if line[1:2].isdigit():
        raise ProtocolError(
            message="The Spartan response status has more than one digit "
            "(a Gemini server on a Spartan port?)."
        )
    if line[1:2] not in (b"", b" "):
        raise ProtocolError(message="The Spartan response status is not followed by a space.")
    if b"\r" in line or b"\n" in line:
        raise ProtocolError(message="The Spartan response header holds a stray line break.")
    digit = line[0] - ord("0")
    if digit not in tuple(SpartanStatus):
        raise InvalidStatus(
            message=f"The server answered with status {digit}, which Spartan does not define.",
            status=digit,
        )
    status = SpartanStatus(digit)
    meta = decode_meta(line[2:], digit, MAX_META_BYTES, "Spartan response")
    if not meta.strip():
        if status is SpartanStatus.SUCCESS:
            meta = DEFAULT_SUCCESS_META
        elif status is SpartanStatus.REDIRECT:
            raise ProtocolError(
                message="The server sent a Spartan redirect without its target.", status=digit
            )
    return ResponseHeader(status, meta)


@attrs.define
class HeaderParser(HeaderLineParser[ResponseHeader]):
    """
    Read a Spartan response header from a stream of bytes, never holding
    more than L{MAX_HEADER_BYTES} of it.

    Feed it data as it arrives; once the header is complete L{feed} returns
    it and L{rest} holds the body bytes that came with it.  A header ended
    by a bare LF is accepted (the specification says CRLF; some servers
    write LF).
    """

    max_bytes = MAX_HEADER_BYTES
    too_long = f"The Spartan response header is longer than {MAX_HEADER_BYTES} bytes."
    cut_short = "The connection closed in the middle of the Spartan response header."

    def _parse(self, line: bytes) -> ResponseHeader:
        return parse_header(line)


@attrs.frozen
class SpartanURL:
    """
    A parsed C{spartan://} URL.

    @ivar host: Lower-case host name, IDNA-encoded, or an IP literal.
    @ivar port: TCP port, 300 by default.
    @ivar path: The percent-encoded, normalised path; never empty.
    @ivar query: The percent-encoded query, or C{None}: sent, decoded, as
        the request's data block.
    """

    host: str
    port: int = SPARTAN_DEFAULT_PORT
    path: str = "/"
    query: str | None = None

    @classmethod
    def from_text(cls, text: str) -> SpartanURL:
        """
        Parse a C{spartan://host[:port]/path[?query]} URL.

        @raise InvalidRequest: If C{text} is not a usable spartan URL.
        """
        parts = split_url(text, "spartan")
        host, port = host_and_port(parts.authority, SPARTAN_DEFAULT_PORT, "spartan")
        return cls(host, port, normalise_path(parts.path), normalise_query(parts.query))

    def to_text(self) -> str:
        """Print the canonical URL, without the port when it is 300."""
        authority = format_host(self.host, self.port, SPARTAN_DEFAULT_PORT)
        text = f"spartan://{authority}{self.path}"
        return text if self.query is None else f"{text}?{self.query}"

    def without_query(self) -> SpartanURL:
        """A copy without the query (safe to show: it may hold an answer)."""
        return attrs.evolve(self, query=None)

    def with_input(self, answer: str) -> SpartanURL:
        """
        A copy whose query is C{answer} (the input of a C{=:} link),
        percent-encoded, replacing any query the URL had.

        @raise InvalidRequest: If C{answer} is not valid Unicode text.
        """
        try:
            raw = answer.encode("utf-8")
        except (UnicodeEncodeError, AttributeError):
            raise InvalidRequest(message="The input is not valid Unicode text.") from None
        return attrs.evolve(self, query=quote_from_bytes(raw, safe=""))

    def data(self) -> bytes:
        """The data block this URL sends: its query, percent-decoded (or nothing)."""
        return b"" if self.query is None else unquote_to_bytes(self.query)

    def request(self, data: bytes | None = None) -> bytes:
        """
        The whole request: the request line and the data block (C{data},
        or the URL's query when C{data} is C{None}).
        """
        return encode_request(self, self.data() if data is None else data)

    def resolve(self, reference: str) -> str:
        """
        Resolve a link target or a redirect's path against this URL:
        relative targets become absolute C{spartan://} URLs; other schemes
        stay as written.  Never raises.
        """
        return resolve_reference(
            self, "spartan", SPARTAN_DEFAULT_PORT, reference, SpartanURL.from_text
        )


def encode_request(url: SpartanURL, data: bytes = b"") -> bytes:
    """
    C{host SP path SP length CRLF} and C{data}.  The host is sent without
    its port (IPv6 in brackets), the path percent-encoded (it holds no
    space).
    """
    host = format_host(url.host, SPARTAN_DEFAULT_PORT, SPARTAN_DEFAULT_PORT)
    line = f"{host} {url.path} {len(data)}\r\n".encode("ascii", "backslashreplace")
    return line + data


def parse_page(text: str, base: SpartanURL) -> GemtextDocument:
    """
    Read a decoded Spartan page (gemtext with C{=:} input links): every
    link resolved against C{base}, C{=:} links marked as taking input.
    Never raises.
    """
    return parse_gemtext(text, base, input_links=True)
