# -*- test-case-name: tests.test_wire_text -*-
"""
Decoding and sanitising text that came from a server, free of I/O.

Two jobs, both applied to every server-controlled string before it leaves
gophergem:

  - L{decode_body} turns bytes into text without ever producing a wall of
    U+FFFD: the declared charset when the bytes are in it, else UTF-8 when
    they are UTF-8, otherwise the 8-bit charset that fits them best
    (Latin-1, Windows-1252 or the IBM PC's CP437); it says how sure it is
    (L{DECODINGS}).  L{decode_text} is the same, giving text and charset.
  - L{sanitise} removes what a model must never be handed as text: control,
    format, surrogate and private-use characters, line and paragraph
    separators, and ANSI escape sequences (whole, not just their ESC byte).
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata

import attrs

__all__ = [
    "DECODINGS",
    "DecodedText",
    "decode_body",
    "decode_text",
    "is_plain_ascii",
    "sanitise",
    "sanitise_line",
]

_UTF8_BOM = b"\xef\xbb\xbf"

#: How a body was decoded: C{clean} (in the charset it declared, or UTF-8),
#: C{guessed} (no usable declaration, or one the bytes do not fit, and not
#: UTF-8: every byte has a character in the 8-bit charset picked, but which
#: charset is a guess), C{lossy} (no candidate decodes every byte; those
#: that do not fit the declared charset became U+FFFD).
DECODINGS = ("clean", "guessed", "lossy")


@attrs.frozen
class DecodedText:
    """
    A decoded body.

    @ivar text: The text (not yet sanitised).
    @ivar charset: The lower-case name of the charset used (C{"utf-8"},
        C{"iso-8859-1"}, C{"cp273"}...).
    @ivar decoding: One of L{DECODINGS}.
    """

    text: str
    charset: str
    decoding: str = "clean"


# Charset names servers use that Python does not know, and the codec that
# reads them.  EBCDIC-AT-DE is the IANA name of the Austrian/German EBCDIC
# page that IBM numbers 273.
_ALIASES = {
    "ebcdic-at-de": "cp273",
    "ebcdic-de": "cp273",
    "ibm-273": "cp273",
    "ibm-037": "cp037",
    "ibm-500": "cp500",
    "ebcdic-us": "cp037",
    "windows-874": "cp874",
    "x-mac-roman": "mac-roman",
    "x-sjis": "shift_jis",
    "x-euc-jp": "euc_jp",
    "iso-8859-8-i": "iso-8859-8",
    "iso-8859-6-i": "iso-8859-6",
}

#: The same aliases by their letters and digits only (for names Python does
#: not know as written), with IANA's C{cs} alias of EBCDIC-AT-DE: servers
#: write C{ebcdicatde}, C{EBCDIC_AT_DE}...
_COMPACT_ALIASES = {
    **{"".join(filter(str.isalnum, name)): codec for name, codec in _ALIASES.items()},
    "csebcdicatde": "cp273",
}

# UTF-16 and UTF-32 without a byte order mark are big-endian (RFC 2781
# section 4.3; the Unicode standard says the same of UTF-32), whatever
# Python's own codec would assume on this machine.
_BOM_DEFAULT = {
    "utf-16": ((codecs.BOM_UTF16_LE, "utf-16le"), (codecs.BOM_UTF16_BE, "utf-16be"), "utf-16be"),
    "utf-32": ((codecs.BOM_UTF32_LE, "utf-32le"), (codecs.BOM_UTF32_BE, "utf-32be"), "utf-32be"),
}

# Bytes 0x80-0x9f are C1 controls in Latin-1, so real Latin-1 text never uses
# them.  Windows-1252 puts typographic punctuation there; CP437 puts accented
# letters there.  These are the Windows-1252 ones that show up in prose.
_CP1252_PROSE = frozenset(b"\x80\x85\x91\x92\x93\x94\x96\x97\x99")
_ASCII_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


#: Plain ASCII text: printable characters, tabs and line ends.
_PLAIN_BYTES = re.compile(rb"[\t\n\r\x20-\x7e]*")


def is_plain_ascii(data: bytes | bytearray) -> bool:
    """
    Whether C{data} is plain ASCII text (printable characters, tabs and
    line ends only): a body that decodes and sanitises in linear time, in
    C, with nothing to guess and nothing to drop.  About a millisecond per
    MiB, and no copy.
    """
    return _PLAIN_BYTES.fullmatch(data) is not None


def decode_text(
    data: bytes | bytearray, declared: str | None = None, *, truncated: bool = False
) -> tuple[str, str]:
    """
    Decode a text body: L{decode_body}'s text and charset.  Never raises.
    """
    decoded = decode_body(data, declared, truncated=truncated)
    return decoded.text, decoded.charset


def decode_body(
    data: bytes | bytearray, declared: str | None = None, *, truncated: bool = False
) -> DecodedText:
    """
    Decode a text body, and say how sure the decoding is.

    The candidates, in order: the declared charset, when Python has a codec
    for it and the bytes fit it; UTF-8, when the bytes are UTF-8; the 8-bit
    charset that best explains the bytes (only without a usable
    declaration).  When a declared charset is known but neither it nor UTF-8
    fits, the declared charset is used anyway and the bytes that do not fit
    become U+FFFD: the result is C{lossy}.

    @param data: The raw bytes.
    @param declared: A charset the server declared (Gemini C{charset=}), if
        any, in any case, quoted or not.  UTF-16 and UTF-32 without a byte
        order mark are read big-endian.
    @param truncated: The body was cut at the size cap, so a character cut
        in half at the very end is dropped rather than taken as an error.
    @return: The text, the name of the charset used (lower case, e.g.
        C{"utf-8"}, C{"iso-8859-1"}, C{"windows-1252"}, C{"cp437"},
        C{"cp273"}) and how it was decoded (L{DECODINGS}).  Never raises.
    """
    name = _usable_charset(declared) if declared else None
    if name is not None and name not in ("utf-8", "utf8"):
        name, body = _resolve_bom(name, data)
        text = _strict(body, name, truncated)
        if text is not None:
            return DecodedText(text, name)
        utf8 = _utf8(data, truncated)
        if utf8 is not None and "\x00" not in utf8:
            # Declared wrongly, but UTF-8 (a NUL says UTF-16 or UTF-32 gone wrong).
            return DecodedText(utf8, "utf-8", "guessed")
        return DecodedText(_lossy(body, name, truncated), name, "lossy")
    text = _utf8(data, truncated)
    if text is not None:
        return DecodedText(text, "utf-8")
    charset = _guess_8bit(data)
    return DecodedText(data.decode(charset, errors="replace"), charset, "guessed")


def _usable_charset(declared: str) -> str | None:
    """The lower-case name of a declared charset we can decode, or C{None}."""
    name = declared.strip().strip('"').strip().lower()
    name = _ALIASES.get(name, name)
    if not _is_text_charset(name):
        name = _COMPACT_ALIASES.get("".join(filter(str.isalnum, name)), name)
    if not _is_text_charset(name) or codecs.lookup(name).name == "ascii":
        # ASCII is what a server declares when it has not thought about it:
        # bytes beyond it are better explained by detection than by U+FFFD.
        return None
    return name


def _resolve_bom(name: str, data: bytes | bytearray) -> tuple[str, bytes | bytearray]:
    """
    For C{utf-16} and C{utf-32}: the byte order its BOM names (the BOM
    removed), else big-endian.  Any other charset is returned as it is.
    """
    rule = _BOM_DEFAULT.get(codecs.lookup(name).name)
    if rule is None:
        return name, data
    (le_bom, le), (be_bom, be), default = rule
    if data.startswith(le_bom):
        return le, data[len(le_bom) :]
    if data.startswith(be_bom):
        return be, data[len(be_bom) :]
    return default, data


def _strict(data: bytes | bytearray, name: str, truncated: bool) -> str | None:
    """Decode C{data} as C{name}, or C{None} when any byte does not fit."""
    try:
        decoder = codecs.getincrementaldecoder(name)(errors="strict")
        return str(decoder.decode(data, final=not truncated))
    except Exception:  # UnicodeError, or a codec failing its own way: no fit
        return None


def _lossy(data: bytes | bytearray, name: str, truncated: bool) -> str:
    """Decode C{data} as C{name}, with U+FFFD for what does not fit."""
    try:
        decoder = codecs.getincrementaldecoder(name)(errors="replace")
        return str(decoder.decode(data, final=not truncated))
    except Exception:  # a codec that cannot even replace: read it as Latin-1
        return data.decode("iso-8859-1")


def _is_text_charset(name: str) -> bool:
    """Whether C{name} is a real text encoding (not, say, C{rot13} or C{zlib})."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError, TypeError):
        return False
    return getattr(info, "_is_text_encoding", True) and info.name not in _NOT_CHARSETS


# Text codecs that are not charsets, or that cannot decode at all.
_NOT_CHARSETS = frozenset({"unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined"})


def _utf8(data: bytes | bytearray, truncated: bool) -> str | None:
    """
    Decode UTF-8 (a BOM dropped), or C{None} when the bytes are not UTF-8.
    The bytes are read in place (a view, never a copy).
    """
    with memoryview(data) as whole:
        view = whole[len(_UTF8_BOM) :] if data.startswith(_UTF8_BOM) else whole
        try:
            return str(view, "utf-8")
        except UnicodeDecodeError as error:
            if truncated and error.reason == "unexpected end of data" and error.end == len(view):
                try:
                    return str(view[: error.start], "utf-8")
                except UnicodeDecodeError:
                    return None
            return None
        finally:
            view.release()


def _guess_8bit(data: bytes | bytearray) -> str:
    """
    Pick the 8-bit charset that best explains C{data}, which is not UTF-8.

    Latin-1 text puts its high bytes next to ASCII letters (accented letters
    inside words); CP437 art puts them in runs, next to other high bytes or
    spaces (box drawing and shading).  Bytes in 0x80-0x9f rule Latin-1 out.
    """
    c1 = [b for b in data if 0x80 <= b <= 0x9F]
    if c1:
        if all(b in _CP1252_PROSE for b in c1):
            return "windows-1252"
        return "cp437"
    latin_votes = art_votes = 0
    size = len(data)
    for index, byte in enumerate(data):
        if byte < 0x80:
            continue
        before = data[index - 1] if index > 0 else 0x20
        after = data[index + 1] if index + 1 < size else 0x20
        if before in _ASCII_LETTERS or after in _ASCII_LETTERS:
            latin_votes += 1
        elif 0xB0 <= byte <= 0xDF:
            art_votes += 1
    return "cp437" if art_votes > latin_votes else "iso-8859-1"


# --- sanitising -----------------------------------------------------------

_KEEP_FORMAT = {"\u200c", "\u200d"}  # ZWNJ and ZWJ carry meaning in many scripts
_DROP_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}

# An ANSI escape sequence, removed whole: CSI (ESC [ or the C1 CSI), OSC and
# other string sequences up to their terminator, and two-byte ESC sequences.
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)

# Fast path: printable ASCII plus tab and newline needs no work at all.
_PLAIN = re.compile(r"[\x20-\x7e\t\n]*\Z")


# Where a character of a dropped category can be: the planes that hold
# assigned characters other than private use (0-3 and 14), scanned, and the
# private-use planes 15 and 16, which are all Co but for their last two
# code points (noncharacters).  Planes 4-13 hold no assigned character.
# tests/test_wire_text.py checks the result against a scan of every code
# point, so a later Unicode that breaks this assumption fails a test.
_SCANNED = ((0x0, 0x3FFFF), (0xE0000, 0xEFFFF))
_PRIVATE_PLANES = ((0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def _dropped_ranges(first: int, last: int) -> list[tuple[int, int]]:
    """The runs of code points in C{first..last} whose category is dropped."""
    ranges: list[tuple[int, int]] = []
    category = unicodedata.category
    for code in range(first, last + 1):
        if category(chr(code)) in _DROP_CATEGORIES:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return ranges


@functools.cache
def dropped_ranges() -> tuple[tuple[int, int], ...]:
    """Every run of code points in a dropped category, in order (computed once)."""
    ranges = [run for first, last in _SCANNED for run in _dropped_ranges(first, last)]
    return tuple(ranges + list(_PRIVATE_PLANES))


@functools.cache
def _dropped_class(keep_newlines: bool) -> re.Pattern[str]:
    """Build (once per flag) a regular expression matching every character to drop."""
    keep = sorted(ord(c) for c in _KEEP_FORMAT | ({"\t", "\n"} if keep_newlines else set()))
    parts = []
    for start, end in dropped_ranges():
        for kept in keep:
            if start <= kept <= end:
                if start < kept:
                    parts.append((start, kept - 1))
                start = kept + 1
        if start <= end:
            parts.append((start, end))
    pattern = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in parts
    )
    return re.compile(f"[{pattern}]+")


def sanitise(text: str, *, keep_newlines: bool = True) -> str:
    """
    Remove characters a model must not receive from server text.

    Drops control (Cc), format (Cf, except ZWJ and ZWNJ), surrogate (Cs),
    private-use (Co) and line/paragraph separator (Zl, Zp) characters, and
    removes ANSI escape sequences whole.  Every space separator is kept.

    @param keep_newlines: Keep C{\\n} and C{\\t} (bodies); when false, a tab
        becomes a space and a newline is dropped (titles, labels).
    """
    if _PLAIN.match(text):
        return text if keep_newlines else text.replace("\t", " ").replace("\n", "")
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    if keep_newlines:
        return _dropped_class(True).sub("", text)
    return _dropped_class(False).sub("", text.replace("\t", " "))


def sanitise_line(text: str) -> str:
    """Sanitise a one-line string (a title, a label, a prompt)."""
    return sanitise(text, keep_newlines=False)
