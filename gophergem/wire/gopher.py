# -*- test-case-name: tests.test_wire_gopher -*-
"""
The Gopher wire format (RFC 1436 and what servers really send), free of I/O.

Bytes in, frozen values out:

  - L{category} says what kind of answer an item type gets.
  - L{encode_request} builds the request line.
  - L{ResponseBuffer} collects a response up to a byte cap, in one
    C{bytearray} it hands over whole (L{ResponseBuffer.take}).
  - L{parse_menu} reads a menu without ever dropping a line or raising.
  - L{parse_text} removes the C{.} terminator and undoes dot-stuffing; a
    C{bytearray} given to it is cleared once decoded, so a text's raw bytes
    never outlive its decoding.
  - L{sniff_mime_type} names a binary body.
"""

from __future__ import annotations

import enum
import mimetypes
import posixpath
import re

import attrs

from gophergem.url import GOPHER_DEFAULT_PORT, format_host, quote_bytes
from gophergem.wire.text import decode_body, decode_text, sanitise, sanitise_line

_UTF8_BOM = b"\xef\xbb\xbf"

__all__ = [
    "Category",
    "Menu",
    "MenuItem",
    "ResponseBuffer",
    "TextBody",
    "category",
    "encode_request",
    "parse_menu",
    "parse_text",
    "selector_text",
    "sniff_mime_type",
]


class Category(enum.Enum):
    """What a client does with an item type."""

    MENU = "menu"
    TEXT = "text"
    BINARY = "binary"
    INTERACTIVE = "interactive"


_CATEGORIES = {
    **dict.fromkeys("17", Category.MENU),
    **dict.fromkeys("0h3i", Category.TEXT),
    **dict.fromkeys("4569gIds;pP:M<", Category.BINARY),
    **dict.fromkeys("28T", Category.INTERACTIVE),
}


def category(item_type: str) -> Category:
    """Return the category of C{item_type}; C{+} and unknown types are text."""
    return _CATEGORIES.get(item_type, Category.TEXT)


def encode_request(selector: bytes, search: bytes | None = None) -> bytes:
    """
    Build the request line: the selector, a TAB and the search terms when
    there are any, then CRLF.
    """
    if search is not None:
        return selector + b"\t" + search + b"\r\n"
    return selector + b"\r\n"


@attrs.define
class ResponseBuffer:
    """
    Collect response bytes, keeping at most C{limit} of them, in one
    C{bytearray} (no chunk list, no join: one copy of the body at a time).

    @ivar overflowed: Whether the server sent more than C{limit} bytes; what
        went beyond the cap was discarded, never buffered.
    """

    limit: int
    _data: bytearray = attrs.field(factory=bytearray, init=False)
    _size: int = attrs.field(default=0, init=False)
    overflowed: bool = attrs.field(default=False, init=False)

    def feed(self, data: bytes) -> bool:
        """
        Add C{data}; return C{True} once the cap is reached (stop reading).
        """
        room = self.limit - self._size
        if len(data) > room:
            data = data[:room]
            self.overflowed = True
        if data:
            self._data += data
            self._size += len(data)
        return self.overflowed

    @property
    def size(self) -> int:
        """The number of bytes received and kept (still counted after L{take})."""
        return self._size

    def value(self) -> bytes:
        """A copy of everything kept so far."""
        return bytes(self._data)

    def take(self) -> bytearray:
        """
        Hand over the bytes kept so far: the caller owns them from now on
        (and may clear them once decoded); this buffer holds none after.
        """
        data, self._data = self._data, bytearray()
        return data

    def ends_menu(self) -> bool:
        """Whether what arrived ends with a menu's lone C{.} line."""
        tail = bytes(self._data[-8:])
        return tail.rstrip(b" \t\r\n").endswith(b"\n.") or (
            _LONE_DOT.fullmatch(self._data) is not None
        )


# Nothing but ASCII whitespace around one ".": what bytes.strip() leaves as b".".
_LONE_DOT = re.compile(rb"[ \t\r\n\x0b\x0c]*\.[ \t\r\n\x0b\x0c]*")


# --- menus ----------------------------------------------------------------


@attrs.frozen
class MenuItem:
    """
    One menu line.

    @ivar item_type: The type character (C{"i"} for a line that was not a link).
    @ivar title: The display string, sanitised.
    @ivar selector: The selector exactly as the server sent it.
    @ivar host: The host the item lives on (sanitised; may be junk on C{i} lines).
    @ivar port: Its port; 70 when missing or nonsense.
    @ivar next_url: The URL that fetches the item, the target of an C{h}
        C{URL:} item, or C{""} when the line is not a link.
    """

    item_type: str
    title: str
    selector: bytes
    host: str
    port: int
    next_url: str


@attrs.frozen
class Menu:
    """
    A parsed menu.

    @ivar items: Every line before the terminator, in order.
    @ivar terminated: Whether the lone C{.} line was present.
    """

    items: tuple[MenuItem, ...]
    terminated: bool
    charset: str


# A host a link may name: letters, digits and "-._:" (IPv6 literals), nothing else.
_LINK_HOST = re.compile(r"[A-Za-z0-9._:-]+")


# C0 controls, DEL and the C1 controls.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def selector_text(raw: bytes) -> str:
    """
    Show a selector as JSON-safe text: UTF-8 (else Latin-1) with any control
    byte percent-encoded.  The exact bytes travel in C{next_url}.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return _CONTROL.sub(lambda m: f"%{ord(m.group()):02X}", text)


#: Longest menu title kept; RFC 1436 suggests under 70 characters.
MAX_TITLE_CHARS = 500


def _clip(title: str) -> str:
    """Cut a hostile overlong title so one line cannot flood a window."""
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def _split_lines(data: bytes) -> list[bytes]:
    """Split on LF, CRLF or a lone CR; a final unterminated line is kept."""
    data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _decode_field(raw: bytes, charset: str) -> str:
    return raw.decode(charset, errors="replace")


def _parse_port(raw: bytes) -> int:
    digits = raw.strip()
    if digits.isdigit() and len(digits) <= 5:
        port = int(digits)
        if 1 <= port <= 65535:
            return port
    return GOPHER_DEFAULT_PORT


def _web_target(selector: bytes) -> str | None:
    """The destination of an C{h} item whose selector is C{URL:<target>}."""
    for prefix in (b"URL:", b"/URL:"):
        if selector.startswith(prefix):
            target = selector[len(prefix) :].decode("utf-8", errors="replace")
            return sanitise_line(target).strip()
    return None


def _item_url(item_type: str, selector: bytes, host: str, port: int) -> str:
    if not _LINK_HOST.fullmatch(host):
        return ""
    authority = format_host(host, port, GOPHER_DEFAULT_PORT)
    return f"gopher://{authority}/{quote_bytes(item_type.encode('latin-1'))}{quote_bytes(selector)}"


def parse_menu(data: bytes, origin_host: str = "", origin_port: int = GOPHER_DEFAULT_PORT) -> Menu:
    """
    Parse a Gopher menu.  Never raises and never drops a line.

    Lines may end in CRLF, LF or CR; a lone C{.} (padding tolerated) ends the
    menu and anything after it is ignored; its absence is tolerated.  A line
    without a TAB is kept as display-only text.  A missing host falls back to
    the menu's own server; a missing or nonsense port becomes 70.  Fields
    after the port (Gopher+) are ignored.

    @param origin_host: The host the menu came from (for items naming none).
    @param origin_port: Its port.
    """
    charset = _menu_charset(data)
    items: list[MenuItem] = []
    terminated = False
    previous_type = "1"
    for line in _split_lines(data):
        if line.strip(b" \t") == b".":
            terminated = True
            break
        if b"\t" not in line:
            # Display-only text: keep the whole line, type byte included.
            title = _clip(sanitise_line(_decode_field(line, charset)))
            items.append(MenuItem("i", title, b"", "", 0, ""))
            continue
        type_byte, rest = line[:1], line[1:]
        if type_byte == b"\t":
            type_byte, rest = b"", line
        item_type = type_byte.decode("latin-1")
        fields = rest.split(b"\t")
        title = _clip(sanitise_line(_decode_field(fields[0], charset)))
        selector = fields[1] if len(fields) > 1 else b""
        raw_host = fields[2] if len(fields) > 2 else b""
        host = sanitise_line(raw_host.decode("utf-8", errors="replace")).strip().lower()
        port = _parse_port(fields[3]) if len(fields) > 3 else GOPHER_DEFAULT_PORT
        if not raw_host.strip() and origin_host:
            host, port = origin_host, (port if len(fields) > 3 else origin_port)
        if not item_type or not 0x21 <= ord(item_type) <= 0x7E:
            # A control, space or 8-bit type byte: junk, shown as display-only text.
            next_url, item_type = "", "i"
        elif item_type in "i3":
            next_url = ""
        elif item_type == "h" and (target := _web_target(selector)) is not None:
            next_url = target
        else:
            fetch_type = previous_type if item_type == "+" else item_type
            next_url = _item_url(fetch_type, selector, host, port)
        if item_type != "+":
            previous_type = item_type
        items.append(MenuItem(item_type, title, selector, host, port, next_url))
    return Menu(tuple(items), terminated, charset)


def _menu_charset(data: bytes) -> str:
    """Menus are decoded as a whole: UTF-8 when they are, else the best 8-bit fit."""
    return decode_text(data)[1] if data else "utf-8"


# --- text -----------------------------------------------------------------


@attrs.frozen
class TextBody:
    """
    A text item's body.

    @ivar text: Decoded, sanitised text with LF line ends.
    @ivar charset: The charset used to decode it.
    @ivar terminated: Whether the server framed it with a C{.} line.
    @ivar decoding: How sure the charset is (see L{gophergem.wire.text.DECODINGS}).
    """

    text: str
    charset: str
    terminated: bool
    decoding: str = "clean"


def _ends_with_dot_line(data: bytes | bytearray) -> bool:
    """
    Whether the last line that is not blank (spaces and tabs) is a lone
    C{.} (trailing spaces and tabs allowed), read on the raw bytes.
    """
    end = len(data)
    while end and data[end - 1] in b" \t\r\n":
        end -= 1
    return end > 0 and data[end - 1] == 0x2E and (end == 1 or data[end - 2] in b"\r\n")


def parse_text(data: bytes | bytearray, *, truncated: bool = False) -> TextBody:
    """
    Read a text body: drop a final lone C{.} line and, only when that
    terminator was there, undo dot-stuffing (C{..} at a line start).  Line
    ends become LF.  Never raises.

    The body is decoded first and worked on as text (the framing is ASCII
    in every charset a Gopher text is read in), so at most one other copy
    of it is alive at a time.  A C{bytearray} is handed over: it is cleared
    as soon as it is decoded, so nothing keeps the raw bytes of a text.
    """
    bom = data.startswith(_UTF8_BOM)
    terminated = _ends_with_dot_line(data)
    decoded = decode_body(data, truncated=truncated)
    if isinstance(data, bytearray):
        data.clear()
    text, charset, decoding = decoded.text, decoded.charset, decoded.decoding
    del decoded
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if terminated:
        # Trailing blank lines (spaces and tabs only) come after the terminator.
        end = len(text.rstrip(" \t\n"))
        text = text[: text.rfind("\n", 0, end) + 1]
        if text.startswith("..") and not bom:
            text = text[1:]
        text = text.replace("\n..", "\n.")
    return TextBody(sanitise(text), charset, terminated, decoding)


# --- binary ---------------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"BZh", "application/x-bzip2"),
    (b"\xfd7zXZ\x00", "application/x-xz"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"fLaC", "audio/flac"),
    (b"BM", "image/bmp"),
    (b"%!PS", "application/postscript"),
    (b"{\\rtf", "application/rtf"),
)

_TYPE_DEFAULTS = {
    "g": "image/gif",
    "I": "image/*",
    ":": "image/*",
    "s": "audio/*",
    "<": "audio/*",
    ";": "video/*",
    "4": "application/mac-binhex40",
    "6": "text/x-uuencode",
    "d": "application/octet-stream",
    "P": "application/pdf",
    "M": "message/rfc822",
}


def sniff_mime_type(data: bytes, item_type: str, selector: bytes) -> str:
    """
    Name a binary body: by its magic bytes, else by the selector's file
    extension, else by the item type, else C{application/octet-stream}.
    """
    head = data[:16]
    for magic, mime in _MAGIC:
        if head.startswith(magic):
            return mime
    if head.startswith(b"RIFF") and data[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    name = posixpath.basename(selector.decode("latin-1"))
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed:
        return guessed
    return _TYPE_DEFAULTS.get(item_type, "application/octet-stream")


def decode_body_text(data: bytes) -> tuple[str, str]:
    """Decode and sanitise an unframed body (for types shown as text)."""
    text, charset = decode_text(data)
    return sanitise(text.replace("\r\n", "\n")), charset
