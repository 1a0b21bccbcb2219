# -*- test-case-name: tests.test_hostile,tests.test_testing_hostile -*-
"""
The catalogue of hostile Gopher behaviours (L{GOPHER_BEHAVIOURS}).
"""

from __future__ import annotations

from collections.abc import Mapping

from gophergem.testing.hostile._engine import (
    BIDI_AND_ANSI,
    BINARY,
    Behaviour,
    HostileExchange,
    answer,
    by_request,
    close,
    flood,
    hold,
    robots,
    robots_huge,
    trickle,
)

#: A well-formed answer: a short, terminated menu.
GOOD_MENU = (
    b"iWelcome to a well-behaved corner\t\tlocalhost\t70\r\n0About\t/about\tlocalhost\t70\r\n.\r\n"
)
_MENU_LINES = [
    b"iPlain info line",
    b"0A text\t/text\tlocalhost\t70",
    b"1A menu\t/menu\tlocalhost\t70",
]


def _never_close(request: bytes) -> bytes:
    if request == b"/text":
        return b"The whole text arrived.\r\n.\r\n"
    return GOOD_MENU


def _gopher_never_close(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(_never_close(request))
    exchange.hold()


def _hold_mid_answer(exchange: HostileExchange, request: bytes) -> None:
    if request == b"/text":
        exchange.send(b"The first half of a text, and then noth")
    elif request == b"/binary":
        exchange.send(BINARY[:1000])
    else:
        exchange.send(b"\r\n".join(_MENU_LINES) + b"\r\n")  # no "." line
    exchange.hold()


def _control_selectors() -> bytes:
    lines = [
        b"0NUL in selector\t/a\x00b\tlocalhost\t70",
        b"0ESC in selector\t/\x1b[31mred\tlocalhost\t70",
        b"0DEL and BEL\t/x\x7f\x07y\tlocalhost\t70",
        b"0C1 control\t/c1\xc2\x9bz\tlocalhost\t70",
        b"\x01Control type byte\t/junk\terror.host\t1",
        b"0Form feed host\t/ok\tlocal\x0chost\t70",
    ]
    return b"\r\n".join(lines) + b"\r\n.\r\n"


def _menu_ssrf_links() -> bytes:
    lines = [
        b"0Metadata service\t/latest/meta-data/\t169.254.169.254\t80",
        b"1Private network\t/\t10.0.0.1\t70",
        b"1Loopback, decimal\t/\t2130706433\t70",
        b"hScript\tURL:javascript:alert(1)\tlocalhost\t70",
        b"hLocal file\tURL:file:///etc/passwd\tlocalhost\t70",
        b"hData URL\tURL:data:text/html,<script>alert(1)</script>\tlocalhost\t70",
    ]
    return b"\r\n".join(lines) + b"\r\n.\r\n"


def _nul_invalid_utf8(request: bytes) -> bytes:
    if request == b"/text":
        return b"Before\x00after \xff\xfe\xc3( broken \xe2\x82 UTF-8\r\nline two\x00\r\n.\r\n"
    return (
        b"iNUL\x00in title\t\tlocalhost\t70\r\n"
        b"0Bad \xff\xfe UTF-8\t/t\xfe\tlocalhost\t70\r\n"
        b"0Half \xe2\x82 a euro\t/text\tlocalhost\t70\r\n.\r\n"
    )


def _ansi(request: bytes) -> bytes:
    if request == b"/text":
        return b"Text: " + BIDI_AND_ANSI + b"\r\n.\r\n"
    return b"0Title: " + BIDI_AND_ANSI + b"\t/text\tlocalhost\t70\r\n.\r\n"


def _huge_line(request: bytes) -> bytes:
    return b"i" + b"A" * 1_000_000  # one line, no line break anywhere, no terminator


def _many_items() -> bytes:
    return b"1\t\t\t\r\n" * 200_000 + b".\r\n"


GOPHER_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "gopher",
            "Answers a menu one byte per second and only closes when it is done.",
            trickle(GOOD_MENU * 50),
        ),
        Behaviour(
            "silent",
            "gopher",
            "Reads the request, then never sends a byte and never closes.",
            hold,
        ),
        Behaviour(
            "never-close",
            "gopher",
            "Sends a complete answer (a terminated menu, or a terminated text at /text) "
            "and keeps the connection open.",
            _gopher_never_close,
        ),
        Behaviour(
            "hold-mid-answer",
            "gopher",
            "Sends part of an answer (a menu without its '.' line; part of a text at "
            "/text; 1000 binary bytes at /binary) and keeps the connection open.",
            _hold_mid_answer,
        ),
        Behaviour(
            "send-forever",
            "gopher",
            "Streams text without end until the client cuts the connection.",
            flood(b"All work and no play makes Jack a dull boy.\r\n" * 256),
        ),
        Behaviour(
            "send-forever-utf8",
            "gopher",
            "Streams UTF-8 text with two-byte characters without end, so that any byte "
            "cap falls inside a character sooner or later.",
            flood("café\n".encode() * 2048),
        ),
        Behaviour(
            "close-silently",
            "gopher",
            "Reads the request and closes without sending a single byte.",
            close,
        ),
        Behaviour(
            "reset-mid-menu",
            "gopher",
            "Sends half a menu and aborts the connection (a reset on a real socket).",
            answer(b"\r\n".join(_MENU_LINES) + b"\r\n1Half a li", then="cut"),
        ),
        Behaviour(
            "no-terminator",
            "gopher",
            "Sends a menu without the closing '.' line, then closes.",
            answer(b"\r\n".join(_MENU_LINES) + b"\r\n"),
        ),
        Behaviour(
            "lf-only",
            "gopher",
            "Ends menu lines with a bare LF.",
            answer(b"\n".join([*_MENU_LINES, b"."]) + b"\n"),
        ),
        Behaviour(
            "cr-only",
            "gopher",
            "Ends menu lines with a bare CR.",
            answer(b"\r".join([*_MENU_LINES, b"."]) + b"\r"),
        ),
        Behaviour(
            "huge-line",
            "gopher",
            "Answers with one line of a million bytes: no line break, no terminator.",
            by_request(_huge_line, close),
        ),
        Behaviour(
            "many-items",
            "gopher",
            "Answers with a menu of 200,000 tiny items.",
            answer(_many_items),
        ),
        Behaviour(
            "nul-invalid-utf8",
            "gopher",
            "Puts NUL bytes and invalid UTF-8 in menu titles, selectors and text (/text).",
            by_request(_nul_invalid_utf8, close),
        ),
        Behaviour(
            "control-selectors",
            "gopher",
            "Serves a menu whose selectors, type bytes and hosts carry control bytes.",
            by_request(
                lambda r: _control_selectors() if r == b"" else b"Followed.\r\n.\r\n", close
            ),
        ),
        Behaviour(
            "ansi-bidi",
            "gopher",
            "Puts ANSI escape sequences, bidi overrides, zero-width, separator, private-use "
            "and bell characters in titles and text (/text).",
            by_request(_ansi, close),
        ),
        Behaviour(
            "menu-ssrf-links",
            "gopher",
            "Serves menu items pointing at a metadata service, a private network, a "
            "loopback spelling, javascript:, file: and data: URLs.",
            answer(_menu_ssrf_links()),
        ),
        Behaviour(
            "robots-huge",
            "gopher",
            "Serves a robots.txt of two megabytes (its last rule, past any sane cap, "
            "disallows everything); everything else is a normal menu.",
            robots("gopher", answer(robots_huge), GOOD_MENU),
        ),
        Behaviour(
            "robots-binary",
            "gopher",
            "Serves binary garbage as robots.txt; everything else is a normal menu.",
            robots("gopher", answer(BINARY), GOOD_MENU),
        ),
        Behaviour(
            "robots-forever",
            "gopher",
            "Streams robots.txt without end; everything else is a normal menu.",
            robots("gopher", flood(b"# never ending\r\n" * 1024), GOOD_MENU),
        ),
    )
}
