# -*- test-case-name: tests.test_hostile_smolweb,tests.test_testing_hostile -*-
"""
The catalogue of hostile Nex behaviours (L{NEX_BEHAVIOURS}).  Directory
paths (ending in C{/}) get listings; other paths documents.
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

#: A well-formed answer: a short directory listing.
GOOD_LISTING = b"# Directory listing for /\n=> about.txt about\n=> posts/ posts\n"
#: A well-formed document.
GOOD_DOCUMENT = b"All is well here.\n"


def _good(request: bytes) -> bytes:
    return GOOD_LISTING if request.endswith(b"/") or not request else GOOD_DOCUMENT


def _never_close(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(_good(request))
    exchange.hold()


def _hold_mid_answer(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(_good(request)[:20])
    exchange.hold()


def _ssrf_links() -> bytes:
    lines = [
        b"# Directory listing for /",
        b"=> nex://169.254.169.254/latest/meta-data/ metadata service",
        b"=> nex://10.0.0.1/ private network",
        b"=> nex://2130706433/ loopback, decimal",
        b"=> //[::1]:1900/ loopback, IPv6, scheme-relative",
        b"=> javascript:alert(1) script",
        b"=> file:///etc/passwd local file",
        b"=> data:text/html,<script>alert(1)</script> data URL",
        b"=> ../../../../etc/passwd climbing",
    ]
    return b"\n".join(lines) + b"\n"


def _by_kind(directory: bytes | None, document: bytes | None) -> Respond:
    """Misbehave with C{directory} for listings and C{document} for files (C{None}: good)."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        is_directory = request.endswith(b"/") or not request
        data = directory if is_directory else document
        exchange.send(_good(request) if data is None else data)
        exchange.close()

    return respond


NEX_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "nex",
            "Answers one byte per second and only closes when it is done.",
            trickle(GOOD_LISTING * 20),
        ),
        Behaviour("silent", "nex", "Reads the path, then never sends a byte or closes.", hold),
        Behaviour(
            "never-close",
            "nex",
            "Sends a complete listing (or document) and keeps the connection open.",
            _never_close,
        ),
        Behaviour(
            "hold-mid-answer",
            "nex",
            "Sends part of a listing (or document) and keeps the connection open.",
            _hold_mid_answer,
        ),
        Behaviour(
            "send-forever",
            "nex",
            "Streams a listing without end until the client cuts the connection.",
            flood(b"=> again.txt again\n" * 1024, prefix=b"# Directory listing for /\n"),
        ),
        Behaviour(
            "binary",
            "nex",
            "Answers a directory and a .txt path with binary garbage.",
            _by_kind(BINARY, BINARY),
        ),
        Behaviour(
            "huge-line",
            "nex",
            "Answers with one line of a million bytes, no line break, then closes.",
            answer(lambda: b"=> " + b"a" * 1_000_000),
        ),
        Behaviour(
            "many-links",
            "nex",
            "Answers a directory with 200,000 links.",
            _by_kind(b"=> x\n" * 200_000, None),
        ),
        Behaviour(
            "close-silently",
            "nex",
            "Reads the path and closes without sending a single byte.",
            close,
        ),
        Behaviour(
            "reset-mid-answer",
            "nex",
            "Sends half a listing and aborts the connection (a reset on a real socket).",
            answer(GOOD_LISTING[:30], then="cut"),
        ),
        Behaviour(
            "ansi-bidi",
            "nex",
            "Puts ANSI escape sequences and bidi overrides in link labels and documents.",
            _by_kind(b"=> a.txt " + BIDI_AND_ANSI + b"\n", b"Text: " + BIDI_AND_ANSI + b"\n"),
        ),
        Behaviour(
            "ssrf-links",
            "nex",
            "Serves a listing linking to a metadata service, private and loopback "
            "addresses, javascript:, file: and data: URLs, and a path climbing above /.",
            _by_kind(_ssrf_links(), None),
        ),
    )
}
