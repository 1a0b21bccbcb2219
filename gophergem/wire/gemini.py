# -*- test-case-name: tests.test_wire_gemini -*-
"""
The Gemini response header and MIME types, free of I/O.

Bytes in, frozen values out:

  - L{HeaderParser} reads the header incrementally, never holding more
    than a header may be long, and hands back the body bytes that came
    with it.
  - L{parse_header} checks one header line (without its CRLF).
  - L{status_class} says which family (1 to 6) a status belongs to.
  - L{parse_mime} reads the MIME type of a success header; it never fails.
  - L{is_denied} matches a MIME type against a deny list.

META is kept exactly as the server sent it (decoded, not sanitised): it is
untrusted text, and whoever shows it sanitises it.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

import attrs

from gophergem.errors import InvalidStatus, ProtocolError
from gophergem.wire.headerline import HeaderLineParser, decode_meta
from gophergem.wire.text import sanitise_line

__all__ = [
    "DEFAULT_SUCCESS_META",
    "MAX_HEADER_BYTES",
    "MAX_META_BYTES",
    "HeaderParser",
    "MimeType",
    "ResponseHeader",
    "is_denied",
    "parse_header",
    "parse_mime",
    "status_class",
]

MAX_META_BYTES = 1024

# Two status digits, a space, META and CRLF.
MAX_HEADER_BYTES = 2 + 1 + MAX_META_BYTES + 2

# What an empty META on a success means (spec v0.14.1, and what clients do).
DEFAULT_SUCCESS_META = "text/gemini; charset=utf-8"

_DIGITS = frozenset(b"0123456789")
_UTF8_BOM = b"\xef\xbb\xbf"


@attrs.frozen
class ResponseHeader:
    """
    A Gemini response header.

    @ivar status: The two-digit status, between 10 and 69.
    @ivar meta: META as the server sent it: a prompt, a MIME type, a URL or
        an error message.  Untrusted and not sanitised.  C{""} when a
        4x/5x/6x header had none; a 2x header without one gets
        L{DEFAULT_SUCCESS_META}.
    """

    status: int
    meta: str

    @property
    def status_class(self) -> int:
        """The status family: 1 input, 2 success, 3 redirect, 4/5 failure, 6 certificate."""
        return self.status // 10


def status_class(status: int) -> int:
    """
    Return the family of C{status}, 1 to 6, from its first digit.  A status
    the specification leaves undefined (19, 29, 58...) belongs to the family
    of its first digit.

    @raise InvalidStatus: If C{status} is outside 10-69.
    """
    if not 10 <= status <= 69:
        raise InvalidStatus(
            message=f"The server answered with status {status}, which Gemini does not define.",
            status=status,
        )
    return status // 10


def parse_header(line: bytes) -> ResponseHeader:
    """
    Parse a response header line, given without its CRLF.

    The line is two ASCII digits, then either nothing or a single space and
    META.  META is required for 1x, 2x and 3x (an empty 2x META means
    L{DEFAULT_SUCCESS_META}) and optional for 4x, 5x and 6x; it is at most
    1024 bytes of UTF-8 without a byte order mark.

    @raise ProtocolError: If the line is not a Gemini header.
    @raise InvalidStatus: If the status is two digits outside 10-69.
    """
    if line.startswith(_UTF8_BOM):
        raise ProtocolError(message="The response header starts with a byte order mark.")
    if not line.strip():
        raise ProtocolError(message="The server sent a blank line instead of a response header.")
    if len(line) < 2 or line[0] not in _DIGITS or line[1] not in _DIGITS:
        raise ProtocolError(message="The response header does not start with a two-digit status.")
    after = line[2:3]
    if after and after[0] in _DIGITS:
        raise ProtocolError(message="The response status has more than two digits.")
    if after and after != b" ":
        raise ProtocolError(message="The response status is not followed by a space.")
    if b"\r" in line or b"\n" in line:
        raise ProtocolError(message="The response header holds a stray line break.")
    status = int(line[:2])
    status_class(status)
    meta = decode_meta(line[3:], status, MAX_META_BYTES, "response")
    if not meta.strip():
        if status // 10 == 2:
            meta = DEFAULT_SUCCESS_META
        elif status // 10 in (1, 3):
            what = "prompt" if status < 20 else "redirect target"
            raise ProtocolError(
                message=f"The server sent status {status} without the {what} it requires.",
                status=status,
            )
    return ResponseHeader(status, meta)


@attrs.define
class HeaderParser(HeaderLineParser[ResponseHeader]):
    """
    Read a response header from a stream of bytes.

    Feed it data as it arrives; once the CRLF-terminated header is complete
    L{feed} returns it, and L{rest} holds the body bytes that arrived with
    it.  A header longer than L{MAX_HEADER_BYTES} is refused as soon as it is
    seen to be too long, without buffering more of it.  A header ended by a
    bare LF is refused.
    """

    max_bytes = MAX_HEADER_BYTES
    too_long = f"The response header is longer than the {MAX_HEADER_BYTES} bytes Gemini allows."
    cut_short = "The connection closed in the middle of the response header."
    bare_lf = "The response header ends in a bare LF, not CRLF."

    def _parse(self, line: bytes) -> ResponseHeader:
        return parse_header(line)


# --- MIME types -------------------------------------------------------------

# RFC 2045 token characters: printable ASCII except space and tspecials.
_TOKEN = frozenset(set(string.ascii_letters + string.digits + "!#$%&'*+-.^_`{|}~"))


@attrs.frozen
class MimeType:
    """
    A MIME type as declared in a success header.

    @ivar type: Lower-case top-level type (C{"text"}).
    @ivar subtype: Lower-case subtype (C{"gemini"}).
    @ivar params: Every parameter, names lower-case, values unquoted and
        sanitised; the first of a repeated name wins.  Parameters other
        than C{charset} and C{lang} carry no meaning for us.
    @ivar charset: The lower-case C{charset} parameter, if any.
    @ivar lang: The C{lang} parameter (comma-separated language tags), if any.
    """

    type: str
    subtype: str
    params: dict[str, str] = attrs.field(factory=dict, hash=False)
    charset: str | None = None
    lang: str | None = None

    @property
    def essence(self) -> str:
        """C{type/subtype}, without parameters."""
        return f"{self.type}/{self.subtype}"

    @property
    def is_text(self) -> bool:
        """Whether this is a C{text/*} type."""
        return self.type == "text"

    @property
    def is_gemtext(self) -> bool:
        """Whether this is C{text/gemini}."""
        return self.essence == "text/gemini"


_OCTET_STREAM = MimeType("application", "octet-stream")


def _is_token(text: str) -> bool:
    return bool(text) and all(c in _TOKEN for c in text)


def _split_params(text: str) -> list[str]:
    """Split on C{;} outside double quotes (a backslash escapes inside quotes)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == ";" and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _unquote(value: str) -> str:
    """Remove the quotes of a quoted-string; an unclosed quote runs to the end."""
    if not value.startswith('"'):
        return value
    out: list[str] = []
    escaped = False
    for char in value[1:]:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            break
        else:
            out.append(char)
    return "".join(out)


def parse_mime(meta: str) -> MimeType:
    """
    Parse the MIME type of a success header.  Never raises.

    Type, subtype and parameter names are case-insensitive (returned in
    lower case); values may be quoted (C{lang="en,fr"}).  Malformed
    parameters are skipped.  META that is not a MIME type at all yields
    C{application/octet-stream}; an empty META yields
    L{DEFAULT_SUCCESS_META}.
    """
    if not meta.strip():
        meta = DEFAULT_SUCCESS_META
    head, *rest = _split_params(meta)
    kind, slash, subtype = head.strip(" \t").lower().partition("/")
    if not slash or not _is_token(kind) or not _is_token(subtype):
        return _OCTET_STREAM
    params: dict[str, str] = {}
    for part in rest:
        name, equals, value = part.partition("=")
        name = name.strip(" \t").lower()
        if not equals or not _is_token(name) or name in params:
            continue
        params[name] = sanitise_line(_unquote(value.strip(" \t"))).strip()
    charset = params.get("charset", "").lower() or None
    lang = params.get("lang") or None
    return MimeType(kind, subtype, params, charset, lang)


def is_denied(mime: MimeType, patterns: Iterable[str]) -> bool:
    """
    Whether C{mime} matches a deny-list pattern: C{type/subtype} exactly,
    C{type/*} for a whole type, or C{*} / C{*/*} for everything.  Patterns
    are case-insensitive; parameters in a pattern are ignored.
    """
    for pattern in patterns:
        wanted = pattern.partition(";")[0].strip().lower()
        kind, _, subtype = wanted.partition("/")
        if wanted in ("*", "*/*"):
            return True
        if kind == mime.type and subtype in ("*", mime.subtype):
            return True
    return False
