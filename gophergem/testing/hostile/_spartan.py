# -*- test-case-name: tests.test_hostile_smolweb,tests.test_testing_hostile -*-
"""
The catalogue of hostile Spartan behaviours (L{SPARTAN_BEHAVIOURS}): the
usual abuse, and headers in every shape Spartan does not have.
"""

from __future__ import annotations

from collections.abc import Mapping

from gophergem.testing.hostile._engine import (
    BIDI_AND_ANSI,
    BINARY,
    Behaviour,
    HostileExchange,
    Respond,
    answer,
    close,
    flood,
    hold,
    trickle,
)

#: A well-formed answer: a short gemtext page with an input link.
GOOD_PAGE = b"2 text/gemini\r\n# Welcome\n=: /search Search\nAll is well here.\n"


def _robots_forever() -> Respond:
    def respond(exchange: HostileExchange, request: bytes) -> None:
        if request.split(b" ")[1:2] == [b"/robots.txt"]:
            exchange.flood(b"# never ending\r\n" * 1024, prefix=b"2 text/plain\r\n")
        else:
            exchange.send(GOOD_PAGE)
            exchange.close()

    return respond


def _shape(name: str, header: bytes, summary: str) -> Behaviour:
    return Behaviour(name, "spartan", summary, answer(header + b"# Body\n"))


SPARTAN_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "spartan",
            "Answers one byte per second (the header too) and only closes when it is done.",
            trickle(GOOD_PAGE * 20),
        ),
        Behaviour(
            "silent", "spartan", "Reads the request, then never sends a byte or closes.", hold
        ),
        Behaviour(
            "never-close",
            "spartan",
            "Sends a complete page and keeps the connection open.",
            answer(GOOD_PAGE, then="hold"),
        ),
        Behaviour(
            "hold-mid-body",
            "spartan",
            "Sends a success header and part of the body, and keeps the connection open.",
            answer(b"2 text/gemini\r\n# The first half of a pa", then="hold"),
        ),
        Behaviour(
            "send-forever",
            "spartan",
            "Sends a success header, then a body without end.",
            flood(b"All work and no play.\n" * 512, prefix=b"2 text/plain\r\n"),
        ),
        Behaviour(
            "huge-header",
            "spartan",
            "Sends a header of a million bytes without a line end.",
            answer(lambda: b"2 " + b"a" * 1_000_000),
        ),
        Behaviour(
            "binary-as-gemtext",
            "spartan",
            "Declares text/gemini and sends binary garbage.",
            answer(b"2 text/gemini\r\n" + BINARY),
        ),
        Behaviour(
            "binary-header",
            "spartan",
            "Answers with binary garbage where the header belongs.",
            answer(BINARY),
        ),
        Behaviour(
            "close-silently",
            "spartan",
            "Reads the request and closes without sending a single byte.",
            close,
        ),
        Behaviour(
            "close-mid-header",
            "spartan",
            "Sends part of a header and closes.",
            answer(b"2 text/gem"),
        ),
        Behaviour(
            "reset-mid-body",
            "spartan",
            "Sends a header and half a body and aborts (a reset on a real socket).",
            answer(b"2 text/gemini\r\n# Half a pa", then="cut"),
        ),
        Behaviour(
            "ansi-bidi",
            "spartan",
            "Puts ANSI escape sequences and bidi overrides in the error message and page.",
            answer(b"4 Not here " + BIDI_AND_ANSI + b"\r\n"),
        ),
        _shape(
            "gemini-status",
            b"20 text/gemini\r\n",
            "Answers with a Gemini header (two status digits).",
        ),
        _shape("status-1", b"1 Enter a query\r\n", "Answers with status 1, which Spartan lacks."),
        _shape("status-9", b"9 What\r\n", "Answers with status 9, which Spartan lacks."),
        _shape("no-space", b"2text/gemini\r\n", "Writes no space after the status."),
        _shape("redirect-empty", b"3\r\n", "Redirects without a target."),
        _shape(
            "redirect-cross-host",
            b"3 spartan://169.254.169.254/\r\n",
            "Redirects to another host (Spartan redirects are paths on the same host).",
        ),
        _shape("redirect-self", b"3 /\r\n", "Redirects every path to itself: a loop."),
        _shape("bom-header", b"\xef\xbb\xbf2 text/gemini\r\n", "Starts the header with a BOM."),
        Behaviour(
            "robots-forever",
            "spartan",
            "Streams /robots.txt without end; everything else is a normal page.",
            _robots_forever(),
        ),
    )
}
