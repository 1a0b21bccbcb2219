# -*- test-case-name: tests.test_wire_titan -*-
"""
Titan (transjovian.org/titan), Gemini's upload companion, free of I/O: the
URL with its parameters and the request.

Over the Gemini host's TLS (port 1965 by default), the client sends
C{titan://host[:port]/path;size=N;mime=TYPE;token=T} and CRLF, then exactly
N bytes; the server answers with an ordinary Gemini response, read with
L{gophergem.wire.gemini.HeaderParser}.  The C{;key=value} parameters are
path parameters, not a query: C{size} is required, C{mime} and C{token}
are optional.  A client following a Titan link ignores the parameters
already on it (L{TitanURL.for_upload}) and sends its own.  A zero-byte
upload is a delete by convention.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

import attrs

from gophergem.errors import InvalidRequest
from gophergem.url import GEMINI_DEFAULT_PORT, GEMINI_MAX_URL_BYTES, GeminiURL, format_host
from gophergem.wire.gemini import HeaderParser, ResponseHeader
from gophergem.wire.smolurl import host_and_port, normalise_path, split_url

__all__ = [
    "MAX_REQUEST_LINE_BYTES",
    "TITAN_DEFAULT_PORT",
    "HeaderParser",
    "ResponseHeader",
    "TitanURL",
    "encode_request",
]

TITAN_DEFAULT_PORT = GEMINI_DEFAULT_PORT

#: The longest request line (without CRLF), in bytes: Gemini's URL limit.
MAX_REQUEST_LINE_BYTES = GEMINI_MAX_URL_BYTES

# What may stay literal in a parameter value; ";" and "=" never do.
_VALUE_SAFE = "/+-._~!$&'()*,:@"


def _parameters(text: str) -> dict[str, str]:
    """Read C{;key=value} parameters (names lower-cased; the first of a name wins)."""
    found: dict[str, str] = {}
    for part in text.split(";"):
        name, equals, value = part.partition("=")
        name = name.strip().lower()
        if not name or not equals or name in found:
            continue
        try:
            found[name] = unquote(value, errors="strict")
        except UnicodeDecodeError:
            raise InvalidRequest(
                message=f"The Titan parameter {name!r} is not valid UTF-8."
            ) from None
    return found


def _check_value(name: str, value: str) -> None:
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        raise InvalidRequest(message=f"The Titan {name} holds control characters.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(message=f"The Titan {name} is not valid Unicode text.") from None


@attrs.frozen
class TitanURL:
    """
    A parsed C{titan://} URL.

    @ivar host: Lower-case host name, IDNA-encoded, or an IP literal.
    @ivar port: TCP port, 1965 by default (Gemini's).
    @ivar path: The percent-encoded, normalised path, without parameters.
    @ivar size: The upload's size in bytes, or C{None} when not (yet) given.
    @ivar mime: Its MIME type, or C{None} (servers then assume C{text/gemini}).
    @ivar token: The shared password, or C{None}.  Never shown: see
        L{to_text}'s C{show_token}.
    """

    host: str
    port: int = TITAN_DEFAULT_PORT
    path: str = "/"
    size: int | None = None
    mime: str | None = None
    token: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_text(cls, text: str) -> TitanURL:
        """
        Parse C{titan://host[:port]/path[;size=N][;mime=M][;token=T]}.
        Unknown parameters are ignored; a query is refused (Titan has none).

        @raise InvalidRequest: If C{text} is not a usable titan URL, or a
            parameter is malformed (a size that is not a whole number).
        """
        parts = split_url(text, "titan")
        if parts.query is not None:
            raise InvalidRequest(message="A titan:// URL has no query.")
        host, port = host_and_port(parts.authority, TITAN_DEFAULT_PORT, "titan")
        path, _, parameters = parts.path.partition(";")
        found = _parameters(parameters)
        size: int | None = None
        if "size" in found:
            digits = found["size"].strip()
            if not digits.isascii() or not digits.isdigit() or len(digits) > 15:
                raise InvalidRequest(message="The Titan size is not a whole number of bytes.")
            size = int(digits)
        mime, token = found.get("mime") or None, found.get("token")
        for name, value in (("mime", mime), ("token", token)):
            if value is not None:
                _check_value(name, value)
        return cls(host, port, normalise_path(path), size, mime, token)

    @classmethod
    def for_upload(
        cls, url: str | TitanURL, size: int, mime: str | None = None, token: str | None = None
    ) -> TitanURL:
        """
        The URL to upload C{size} bytes to C{url}: any parameters already on
        C{url} (a link's) are dropped for these.

        @raise InvalidRequest: If C{url} is not a usable titan URL, C{size}
            is negative, or C{mime} or C{token} hold control characters.
        """
        parsed = cls.from_text(url) if isinstance(url, str) else url
        if not isinstance(size, int) or size < 0:
            raise InvalidRequest(message="The upload size must be zero or more bytes.")
        for name, value in (("mime", mime), ("token", token)):
            if value is not None:
                _check_value(name, value)
        return attrs.evolve(parsed, size=size, mime=mime or None, token=token)

    def to_text(self, *, show_token: bool = False) -> str:
        """
        Print the URL with its parameters (C{size}, C{mime}, C{token}, in
        that order, values percent-encoded), default port omitted.  The
        token is printed as C{token=***} unless C{show_token}: only the
        request line carries it.
        """
        authority = format_host(self.host, self.port, TITAN_DEFAULT_PORT)
        text = f"titan://{authority}{self.path}"
        if self.size is not None:
            text += f";size={self.size}"
        if self.mime is not None:
            text += f";mime={quote(self.mime, safe=_VALUE_SAFE)}"
        if self.token is not None:
            shown = quote(self.token, safe=_VALUE_SAFE) if show_token else "***"
            text += f";token={shown}"
        return text

    def without_parameters(self) -> TitanURL:
        """A copy without size, mime and token (the page the upload is for)."""
        return attrs.evolve(self, size=None, mime=None, token=None)

    def gemini_url(self) -> GeminiURL:
        """The C{gemini://} URL of the same page (where servers redirect after an upload)."""
        return GeminiURL(self.host, self.port, self.path)

    def request_line(self) -> bytes:
        """
        The request line, token included, and CRLF.

        @raise InvalidRequest: Without a size, or when the line is longer
            than L{MAX_REQUEST_LINE_BYTES}.
        """
        if self.size is None:
            raise InvalidRequest(message="A Titan request needs the size of the upload.")
        line = self.to_text(show_token=True).encode("utf-8")
        if len(line) > MAX_REQUEST_LINE_BYTES:
            raise InvalidRequest(
                message=f"The Titan request line is {len(line)} bytes long; at most "
                f"{MAX_REQUEST_LINE_BYTES} are sent."
            )
        return line + b"\r\n"


def encode_request(url: TitanURL, content: bytes) -> bytes:
    """
    The whole request: C{url}'s line (its size set to C{len(content)} when
    it has none) and exactly C{content}.

    @raise InvalidRequest: If C{url} names another size than C{content}'s,
        or the line cannot be sent (L{TitanURL.request_line}).
    """
    if url.size is None:
        url = attrs.evolve(url, size=len(content))
    if url.size != len(content):
        raise InvalidRequest(
            message=f"The Titan URL says {url.size} bytes but the upload is {len(content)}."
        )
    return url.request_line() + content
