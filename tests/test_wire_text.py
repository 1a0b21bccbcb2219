"""
Tests for L{gophergem.wire.text}: decoding and sanitising server text.

Vector tables per SPEC section 7, plus hypothesis properties.
"""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.wire.text import (
    DECODINGS,
    DecodedText,
    decode_body,
    decode_text,
    dropped_ranges,
    is_plain_ascii,
    sanitise,
    sanitise_line,
)

_DROPPED = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}

# Any code point at all, lone surrogates included.
_ANY_CHAR = st.characters(codec=None) | st.characters(categories=["Cs"])
_ANY_TEXT = st.text(alphabet=_ANY_CHAR, max_size=200)
_ANSI_HEAVY = st.lists(
    st.sampled_from(
        [
            "\x1b",
            "[",
            "]",
            "\x07",
            "\\",
            "\x9b",
            "\x9c",
            "\x9d",
            "\x90",
            "P",
            ";",
            "0",
            "3",
            "1",
            "m",
            "\r",
            "\n",
            "\t",
            "\u200b",
            "\u200d",
            "\u202e",
            "a",
            " ",
            "\ufeff",
            "\u2028",
        ]
    )
    | _ANY_CHAR,
    max_size=60,
).map("".join)


def _allowed(char: str, keep_newlines: bool) -> bool:
    if char in "\n\t":
        return keep_newlines
    if char in "\u200c\u200d":
        return True
    return unicodedata.category(char) not in _DROPPED


# --- decode_text ----------------------------------------------------------------

DECODE_VECTORS = [
    # (name, data, declared, text, charset)
    ("utf-8", "café ☕ 🌍".encode(), None, "café ☕ 🌍", "utf-8"),
    ("ascii", b"plain ascii", None, "plain ascii", "utf-8"),
    ("empty", b"", None, "", "utf-8"),
    ("utf-8 bom", b"\xef\xbb\xbfhello", None, "hello", "utf-8"),
    ("latin-1 prose", "café".encode("latin-1"), None, "café", "iso-8859-1"),
    (
        "latin-1 sentence",
        "Le garçon a mangé à la crêperie.".encode("latin-1"),
        None,
        "Le garçon a mangé à la crêperie.",
        "iso-8859-1",
    ),
    (
        "windows-1252 quotes",
        "\u201cSmart\u201d quotes \u2014 it\u2019s \u2026".encode("cp1252"),
        None,
        "\u201cSmart\u201d quotes \u2014 it\u2019s \u2026",
        "windows-1252",
    ),
    (
        "cp437 box art",
        "╔══════╗\n║ BBS! ║\n╚══════╝\n░░▒▒▓▓██".encode("cp437"),
        None,
        "╔══════╗\n║ BBS! ║\n╚══════╝\n░░▒▒▓▓██",
        "cp437",
    ),
    ("declared latin-1", "café".encode("latin-1"), "ISO-8859-1", "café", "iso-8859-1"),
    ("declared koi8-r", "Привет".encode("koi8-r"), "koi8-r", "Привет", "koi8-r"),
    ("declared quoted", "Ωμέγα".encode("iso-8859-7"), '"iso-8859-7"', "Ωμέγα", "iso-8859-7"),
    ("declared utf-8 bom", b"\xef\xbb\xbfhi", "UTF-8", "hi", "utf-8"),
    ("unknown declared utf-8", "naïve".encode(), "x-no-such-charset", "naïve", "utf-8"),
    (
        "unknown declared latin-1",
        "café".encode("latin-1"),
        "x-no-such-charset",
        "café",
        "iso-8859-1",
    ),
    ("declared utf-8 but not", "café".encode("latin-1"), "utf-8", "café", "iso-8859-1"),
]


@pytest.mark.parametrize(
    ("name", "data", "declared", "text", "charset"),
    DECODE_VECTORS,
    ids=[v[0] for v in DECODE_VECTORS],
)
def test_decode_text_vectors(
    name: str, data: bytes, declared: str | None, text: str, charset: str
) -> None:
    """decode_text picks the charset that explains the bytes and names it."""
    assert decode_text(data, declared) == (text, charset)


def test_decode_text_cp437_no_replacement_characters() -> None:
    """CP437 art (high bytes in runs, shading in 0xb0-0xdf) never becomes U+FFFD."""
    art = bytes(range(0xB0, 0xE0)) * 3 + b"\r\n" + bytes(range(0x80, 0xB0))
    text, charset = decode_text(art)
    assert "\ufffd" not in text
    assert charset == "cp437"


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), declared=st.none() | st.text(max_size=20))
def test_decode_text_never_raises(data: bytes, declared: str | None) -> None:
    """decode_text never raises, whatever the bytes and whatever charset is declared."""
    text, charset = decode_text(data, declared)
    assert isinstance(text, str)
    assert charset == charset.lower()


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300))
def test_decode_text_undeclared_no_replacement(data: bytes) -> None:
    """Undeclared bytes decode to UTF-8 or to an 8-bit charset that is never lossy."""
    text, charset = decode_text(data)
    assert charset in ("utf-8", "iso-8859-1", "windows-1252", "cp437")
    if charset != "windows-1252":
        assert "\ufffd" not in text or "\ufffd".encode() in data


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=100))
def test_decode_text_utf8_round_trip(text: str) -> None:
    """Any UTF-8 encoded text (without a leading BOM) decodes back to itself."""
    text = text.lstrip("\ufeff")
    assert decode_text(text.encode()) == (text, "utf-8")


# --- sanitise: the table of dropped characters -------------------------------------


def test_dropped_ranges_match_a_scan_of_every_code_point() -> None:
    """
    The table, built from the planes that can hold dropped characters, is
    exactly what a scan of all 1,114,112 code points finds with this Python's
    Unicode database.
    """
    dropped = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
    expected: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code)) in dropped:
            if expected and expected[-1][1] == code - 1:
                expected[-1] = (expected[-1][0], code)
            else:
                expected.append((code, code))
    assert list(dropped_ranges()) == expected


# --- sanitise: vectors ------------------------------------------------------------

REMOVED = [
    ("NUL", "\x00"),
    ("bell", "\x07"),
    ("backspace", "\x08"),
    ("vertical tab", "\x0b"),
    ("form feed", "\x0c"),
    ("lone CR", "\r"),
    ("DEL", "\x7f"),
    ("C1 NEL", "\x85"),
    ("RLO U+202E", "\u202e"),
    ("LRO U+202D", "\u202d"),
    ("LRI U+2066", "\u2066"),
    ("RLI U+2067", "\u2067"),
    ("FSI U+2068", "\u2068"),
    ("PDI U+2069", "\u2069"),
    ("LRM U+200E", "\u200e"),
    ("ZWSP U+200B", "\u200b"),
    ("BOM U+FEFF", "\ufeff"),
    ("soft hyphen U+00AD", "\u00ad"),
    ("private use U+E000", "\ue000"),
    ("plane-15 private use", "\U000f0000"),
    ("lone surrogate", "\ud800"),
    ("LINE SEPARATOR U+2028", "\u2028"),
    ("PARAGRAPH SEPARATOR U+2029", "\u2029"),
    ("tag character U+E0041", "\U000e0041"),
]


@pytest.mark.parametrize(("name", "char"), REMOVED, ids=[n for n, _ in REMOVED])
def test_sanitise_removes(name: str, char: str) -> None:
    """Control, format, private-use, surrogate and separator characters are removed."""
    assert sanitise(f"a{char}b") == "ab"
    assert sanitise_line(f"a{char}b") == "ab"


KEPT = [
    ("ZWJ U+200D", "\u200d"),
    ("ZWNJ U+200C", "\u200c"),
    ("NBSP U+00A0", "\u00a0"),
    ("ideographic space U+3000", "\u3000"),
    ("em space U+2003", "\u2003"),
    ("narrow NBSP U+202F", "\u202f"),
    ("plain space", " "),
    ("combining acute", "\u0301"),
    ("emoji", "\U0001f600"),
]


@pytest.mark.parametrize(("name", "char"), KEPT, ids=[n for n, _ in KEPT])
def test_sanitise_keeps(name: str, char: str) -> None:
    """Joiners, every space separator and ordinary characters are kept."""
    assert sanitise(f"a{char}b") == f"a{char}b"
    assert sanitise_line(f"a{char}b") == f"a{char}b"


def test_sanitise_keeps_emoji_zwj_sequence() -> None:
    """An emoji ZWJ sequence survives intact."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert sanitise(family) == family


ANSI_VECTORS = [
    ("CSI colour", "a\x1b[1;31mred\x1b[0mb", "aredb"),
    ("CSI cursor", "a\x1b[2J\x1b[Hb", "ab"),
    ("CSI private", "a\x1b[?25lb", "ab"),
    ("C1 CSI", "a\x9b31mb", "ab"),
    ("OSC title BEL", "a\x1b]0;pwned\x07b", "ab"),
    ("OSC title ST", "a\x1b]2;pwned\x1b\\b", "ab"),
    ("OSC 8 hyperlink", "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),
    ("DCS", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),
    ("two-byte ESC", "a\x1b7b\x1b8c", "abc"),
    ("charset select", "a\x1b(Bb", "ab"),
]


@pytest.mark.parametrize(("name", "raw", "clean"), ANSI_VECTORS, ids=[v[0] for v in ANSI_VECTORS])
def test_sanitise_removes_ansi_whole(name: str, raw: str, clean: str) -> None:
    """An ANSI escape sequence is removed whole, not just its ESC byte."""
    assert sanitise(raw) == clean


@pytest.mark.parametrize("intro", ["\x1b", "\x9b"], ids=["ESC", "C1 CSI"])
def test_sanitise_removes_dangling_introducer(intro: str) -> None:
    """A lone ESC or C1 CSI that starts no complete sequence is removed; what follows stays."""
    assert sanitise(f"a{intro}") == "a"
    assert sanitise(f"a{intro}\u00e9") == "a\u00e9"


def test_sanitise_unterminated_string_sequence_is_bounded() -> None:
    """A stray C1 string introducer (mojibake of a curly quote) does not delete later lines."""
    # "it\u2018s" encoded UTF-8, mis-decoded as Latin-1 and re-encoded: U+00E2 U+0080 U+0098.
    body = "it\u00e2\u0080\u0098s fine\nsecond line\nthird line\n"
    cleaned = sanitise(body)
    assert "second line\nthird line\n" in cleaned


def test_sanitise_body_keeps_newlines_and_tabs() -> None:
    """In bodies, LF and TAB are kept and CRLF becomes LF."""
    assert sanitise("a\tb\r\nc\nd") == "a\tb\nc\nd"


def test_sanitise_line_drops_newlines_and_converts_tabs() -> None:
    """With keep_newlines false, a tab becomes a space and a newline is dropped."""
    assert sanitise("a\tb\nc", keep_newlines=False) == "a bc"
    assert sanitise_line("x\ty\r\nz\u2028w") == "x yzw"


def test_sanitise_line_non_ascii_path() -> None:
    """The slow path converts tabs and drops newlines the same way as the fast path."""
    assert sanitise_line("é\tb\nc\u200b") == "é bc"


def test_sanitise_plain_ascii_unchanged() -> None:
    """Printable ASCII with tabs and newlines comes back unchanged in a body."""
    text = "Hello, world!\n\tIndented ~ `code` {x}\n"
    assert sanitise(text) == text


# --- sanitise: properties -------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(text=_ANY_TEXT | _ANSI_HEAVY, keep_newlines=st.booleans())
def test_sanitise_output_has_no_forbidden_characters(text: str, keep_newlines: bool) -> None:
    """Output never holds Cc (but LF/TAB in bodies), Cf (but ZWJ/ZWNJ), Co, Cs, Zl or Zp."""
    out = sanitise(text, keep_newlines=keep_newlines)
    bad = [c for c in out if not _allowed(c, keep_newlines)]
    assert not bad, (text, out)


@settings(max_examples=200, deadline=None)
@given(text=_ANY_TEXT | _ANSI_HEAVY, keep_newlines=st.booleans())
def test_sanitise_idempotent(text: str, keep_newlines: bool) -> None:
    """Sanitising twice gives the same result as sanitising once."""
    once = sanitise(text, keep_newlines=keep_newlines)
    assert sanitise(once, keep_newlines=keep_newlines) == once


@settings(max_examples=200, deadline=None)
@given(text=_ANY_TEXT)
def test_sanitise_never_adds(text: str) -> None:
    """Sanitising never makes text longer."""
    assert len(sanitise(text)) <= len(text)
    assert len(sanitise_line(text)) <= len(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(categories=["L", "M", "N", "P", "S", "Zs"])))
def test_sanitise_keeps_ordinary_text(text: str) -> None:
    """Text made only of letters, marks, numbers, punctuation, symbols and spaces is unchanged."""
    assert sanitise(text) == text
    assert sanitise_line(text) == text


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), keep_newlines=st.booleans())
def test_decode_then_sanitise_never_raises(data: bytes, keep_newlines: bool) -> None:
    """Any bytes can be decoded and sanitised without raising."""
    text, _ = decode_text(data)
    out = sanitise(text, keep_newlines=keep_newlines)
    assert all(_allowed(c, keep_newlines) for c in out)


# --- decode_body: declared charsets, and how sure the decoding is ----------------------

_GRUSS = "Grüße aus Österreich: 10 § für die Bücher"

BODY_VECTORS = [
    # (name, data, declared, text, charset, decoding)
    ("cp273 by its IBM name", _GRUSS.encode("cp273"), "IBM273", _GRUSS, "ibm273", "clean"),
    ("cp273", _GRUSS.encode("cp273"), "cp273", _GRUSS, "cp273", "clean"),
    ("csIBM273", _GRUSS.encode("cp273"), "csIBM273", _GRUSS, "csibm273", "clean"),
    ("ebcdic-at-de", _GRUSS.encode("cp273"), "EBCDIC-AT-DE", _GRUSS, "cp273", "clean"),
    ("ebcdicatde", _GRUSS.encode("cp273"), "ebcdicatde", _GRUSS, "cp273", "clean"),
    ("csEBCDICATDE", _GRUSS.encode("cp273"), "csEBCDICATDE", _GRUSS, "cp273", "clean"),
    ("utf-16 without bom", "Hi ☕".encode("utf-16-be"), "utf-16", "Hi ☕", "utf-16be", "clean"),
    (
        "utf-16 le bom",
        b"\xff\xfe" + "Hi ☕".encode("utf-16-le"),
        "UTF-16",
        "Hi ☕",
        "utf-16le",
        "clean",
    ),
    (
        "utf-16 be bom",
        b"\xfe\xff" + "Hi ☕".encode("utf-16-be"),
        "utf-16",
        "Hi ☕",
        "utf-16be",
        "clean",
    ),
    ("utf-16le label", "Hi ☕".encode("utf-16-le"), "utf-16le", "Hi ☕", "utf-16le", "clean"),
    ("utf-32 without bom", "Hi".encode("utf-32-be"), "utf-32", "Hi", "utf-32be", "clean"),
    ("undeclared utf-8", "café".encode(), None, "café", "utf-8", "clean"),
    ("undeclared latin-1", "café".encode("latin-1"), None, "café", "iso-8859-1", "guessed"),
    ("bogus declared", "café".encode("latin-1"), "x-no-such", "café", "iso-8859-1", "guessed"),
    ("declared but utf-8", "café".encode(), "utf-16", "café", "utf-8", "guessed"),
    ("ascii but latin-1", "café".encode("latin-1"), "us-ascii", "café", "iso-8859-1", "guessed"),
    (
        "nothing fits",
        b"ok \x82\xa0 \xa0\xfd",
        "shift_jis",
        "ok \u3042 \ufffd\ufffd",
        "shift_jis",
        "lossy",
    ),
    ("utf-16 odd length", b"\x00H\x00i\x00", "utf-16", "Hi\ufffd", "utf-16be", "lossy"),
    ("undefined codec", b"abc", "undefined", "abc", "utf-8", "clean"),
]


@pytest.mark.parametrize(
    ("name", "data", "declared", "text", "charset", "decoding"),
    BODY_VECTORS,
    ids=[v[0] for v in BODY_VECTORS],
)
def test_decode_body_vectors(
    name: str, data: bytes, declared: str | None, text: str, charset: str, decoding: str
) -> None:
    """decode_body names the charset it used and whether it was sure, guessed or lossy."""
    assert decode_body(data, declared) == DecodedText(text, charset, decoding)


@settings(max_examples=200, deadline=None)
@given(
    cases=st.lists(st.booleans(), min_size=10, max_size=10),
    separators=st.lists(st.sampled_from(["", "-", "_", " "]), min_size=2, max_size=2),
    prefix=st.sampled_from(["", "cs", "CS"]),
)
def test_every_spelling_of_ebcdic_at_de_is_cp273(
    cases: list[bool], separators: list[str], prefix: str
) -> None:
    """
    However a server spells the IANA name EBCDIC-AT-DE (any case, with or
    without separators, its csEBCDICATDE alias), the body is read as cp273.
    """
    letters = "".join(
        c.upper() if up else c.lower() for c, up in zip("ebcdicatde", cases, strict=True)
    )
    declared = prefix + letters[:6] + separators[0] + letters[6:8] + separators[1] + letters[8:]
    assert decode_body(_GRUSS.encode("cp273"), declared) == DecodedText(_GRUSS, "cp273")


def test_decode_body_truncated_multibyte_end_is_not_lossy() -> None:
    """A declared multi-byte charset cut mid-character by the size cap loses only that character."""
    data = "日本語".encode("shift_jis")[:-1]
    assert decode_body(data, "shift_jis", truncated=True) == DecodedText("日本", "shift_jis")
    assert decode_body(data, "shift_jis").decoding == "lossy"


def _codec_names() -> list[str]:
    import encodings.aliases

    return sorted({*encodings.aliases.aliases, *encodings.aliases.aliases.values()})


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=200),
    declared=st.none() | st.sampled_from(_codec_names()) | st.text(max_size=20),
    truncated=st.booleans(),
)
def test_decode_body_never_raises(data: bytes, declared: str | None, truncated: bool) -> None:
    """decode_body never raises, whatever the bytes and whichever codec or junk is declared."""
    decoded = decode_body(data, declared, truncated=truncated)
    assert isinstance(decoded.text, str)
    assert decoded.charset == decoded.charset.lower()
    assert decoded.decoding in DECODINGS
    if decoded.decoding != "lossy" and "\ufffd".encode() not in data:
        assert "\ufffd" not in decoded.text or decoded.charset not in ("utf-8", "iso-8859-1")


@pytest.mark.parametrize(
    ("data", "plain"),
    [
        (b"", True),
        (b"Hello, world!\r\n\tIndented ~\n", True),
        (bytearray(b"line\n"), True),
        (b"caf\xc3\xa9\n", False),  # UTF-8, not ASCII
        (b"caf\xe9\n", False),  # an 8-bit charset to guess
        (b"bell\x07\n", False),  # a control character to drop
        (b"\x1b[1mbold\x1b[0m", False),
        (b"del\x7f", False),
        (b"nul\x00", False),
    ],
)
def test_is_plain_ascii(data: bytes, plain: bool) -> None:
    """Only printable ASCII, tabs, CR and LF make plain ASCII text."""
    assert is_plain_ascii(data) is plain


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_plain_ascii_decodes_to_itself(data: bytes) -> None:
    """Plain ASCII text decodes as UTF-8 to the same characters, and sanitising keeps them."""
    if is_plain_ascii(data):
        decoded = decode_body(data)
        assert (decoded.text, decoded.charset, decoded.decoding) == (
            data.decode(),
            "utf-8",
            "clean",
        )
        text = decoded.text.replace("\r\n", "\n").replace("\r", "")
        assert sanitise(text) == text
