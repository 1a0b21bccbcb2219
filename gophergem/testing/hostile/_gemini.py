# -*- test-case-name: tests.test_hostile,tests.test_testing_hostile -*-
"""
The catalogue of hostile Gemini behaviours (L{GEMINI_BEHAVIOURS}).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote_to_bytes

from gophergem.testing.hostile._engine import (
    BIDI_AND_ANSI,
    BINARY,
    Behaviour,
    HostileExchange,
    Respond,
    answer,
    by_request,
    close,
    flood,
    gemini_path,
    hold,
    robots,
    robots_huge,
    trickle,
)
from gophergem.testing.hostile._tls import cert, old_tls_only, rotating_cert

#: A well-formed answer: a short gemtext page.
GOOD_GEMTEXT = b"20 text/gemini; charset=utf-8\r\n# Welcome\nAll is well here.\n"


def _gemini_query(request: bytes) -> bytes | None:
    text = request.decode("utf-8", "replace")
    if "?" not in text:
        return None
    return unquote_to_bytes(text.split("?", 1)[1].split("#", 1)[0])


_DAY = 86_400.0

# A TLS 1.2 fatal alert record: handshake_failure (40).
_FATAL_ALERT = b"\x15\x03\x03\x00\x02\x02\x28"


def _raw_alert(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(_FATAL_ALERT)
    exchange.close()


def _not_tls(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(b"20 text/gemini\r\n# I do not speak TLS\n")
    exchange.close()


def _no_close_notify(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(b"20 text/gemini\r\n# The end?\nThis body may or may not be complete.\n")
    exchange.cut()


def _sensitive(echo: bool) -> Respond:
    def respond(exchange: HostileExchange, request: bytes) -> None:
        answer = _gemini_query(request)
        if answer is None:
            exchange.send(b"11 Enter your password\r\n")
        elif echo:
            # Echo the secret everywhere a server can: a redirect target.
            exchange.send(b"30 /welcome?token=" + request.split(b"?", 1)[1] + b"\r\n")
        else:
            exchange.send(b"20 text/gemini\r\n# Logged in\nWelcome back.\n")
        exchange.close()

    return respond


def _sensitive_echo_body(exchange: HostileExchange, request: bytes) -> None:
    answer = _gemini_query(request)
    if answer is None:
        exchange.send(b"11 Enter your password\r\n")
    else:
        exchange.send(b"20 text/plain\r\nYou said: " + answer + b"\n")
    exchange.close()


_HOSTILE_LINKS = (
    b"20 text/gemini\r\n"
    b"# Links to nowhere good\n"
    b"=> file:///etc/passwd The password file\n"
    b"=> data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg== A data URL\n"
    b"=> javascript:alert(1) Script\n"
    b"=> gemini://169.254.169.254/latest/meta-data/ Metadata service\n"
    b"=> gemini://10.0.0.1/ Private network\n"
    b"=> //[::1]:1965/ Loopback, scheme-relative\n"
    b"=> \x1b[31mgemini://localhost/\x1b[0m ANSI in a link\n"
)


def _redirect(target: bytes) -> Respond:
    return answer(b"30 " + target + b"\r\n")


GEMINI_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "gemini",
            "Sends its response header one byte per second.",
            trickle(GOOD_GEMTEXT * 20),
            tls=cert(),
        ),
        Behaviour(
            "silent",
            "gemini",
            "Completes the TLS handshake, reads the request, then never answers or closes.",
            hold,
            tls=cert(),
        ),
        Behaviour(
            "handshake-stall",
            "gemini",
            "Accepts the TCP connection and never answers the TLS ClientHello.",
            hold,
            raw=True,
        ),
        Behaviour(
            "never-close",
            "gemini",
            "Sends a complete response and keeps the connection open.",
            answer(GOOD_GEMTEXT, then="hold"),
            tls=cert(),
        ),
        Behaviour(
            "header-then-hold",
            "gemini",
            "Sends a success header (20 text/gemini) and no body, and keeps the connection open.",
            answer(b"20 text/gemini\r\n", then="hold"),
            tls=cert(),
        ),
        Behaviour(
            "status-then-hold",
            "gemini",
            "Answers 51 (a status with no body) and keeps the connection open.",
            answer(b"51 Not here\r\n", then="hold"),
            tls=cert(),
        ),
        Behaviour(
            "send-forever",
            "gemini",
            "Answers 20 text/plain and streams the body without end.",
            flood(b"All work and no play.\n" * 512, prefix=b"20 text/plain\r\n"),
            tls=cert(),
        ),
        Behaviour(
            "send-forever-utf8",
            "gemini",
            "Answers 20 text/plain; charset=utf-8 and streams two-byte characters without "
            "end, so that any byte cap falls inside a character sooner or later.",
            flood("café\n".encode() * 2048, prefix=b"20 text/plain; charset=utf-8\r\n"),
            tls=cert(),
        ),
        Behaviour(
            "header-no-crlf",
            "gemini",
            "Sends a header without its CRLF, then closes.",
            answer(b"20 text/gemini"),
            tls=cert(),
        ),
        Behaviour(
            "header-lf-only",
            "gemini",
            "Ends its header with a bare LF.",
            answer(b"20 text/gemini\n# Hello\n"),
            tls=cert(),
        ),
        Behaviour(
            "status-non-numeric",
            "gemini",
            "Answers with a status that is not a number.",
            answer(b"OK text/gemini\r\n# Hello\n"),
            tls=cert(),
        ),
        Behaviour(
            "status-one-digit",
            "gemini",
            "Answers with a one-digit status.",
            answer(b"2 text/gemini\r\n# Hello\n"),
            tls=cert(),
        ),
        Behaviour(
            "status-three-digit",
            "gemini",
            "Answers with a three-digit status.",
            answer(b"200 text/gemini\r\n# Hello\n"),
            tls=cert(),
        ),
        Behaviour(
            "status-27",
            "gemini",
            "Answers 27, a status the specification leaves undefined in the success family.",
            answer(b"27 text/gemini\r\n# Undefined success\n"),
            tls=cert(),
        ),
        Behaviour(
            "status-99",
            "gemini",
            "Answers 99, outside every status family.",
            answer(b"99 Whatever this means\r\n"),
            tls=cert(),
        ),
        Behaviour(
            "meta-too-long",
            "gemini",
            "Sends a 2048-byte META.",
            answer(b"20 text/gemini; x=" + b"a" * 2048 + b"\r\n# Hello\n"),
            tls=cert(),
        ),
        Behaviour(
            "meta-invalid-utf8",
            "gemini",
            "Sends a META that is not UTF-8.",
            answer(b"51 Not found \xff\xfe here\r\n"),
            tls=cert(),
        ),
        Behaviour(
            "header-spaces-forever",
            "gemini",
            "Sends '20 ' and then spaces without end: a header that never finishes.",
            flood(b" " * 1024, prefix=b"20 "),
            tls=cert(),
        ),
        Behaviour(
            "no-close-notify",
            "gemini",
            "Sends a whole response, then closes TCP without TLS close_notify.",
            _no_close_notify,
            tls=cert(),
        ),
        Behaviour(
            "tls-alert",
            "gemini",
            "Answers the TLS ClientHello with a fatal handshake_failure alert.",
            _raw_alert,
            raw=True,
        ),
        Behaviour(
            "tls-old-version",
            "gemini",
            "Speaks only TLS 1.1 and older, which a Gemini client must refuse.",
            answer(GOOD_GEMTEXT),
            tls=old_tls_only,
        ),
        Behaviour(
            "not-tls",
            "gemini",
            "Answers in plain text, without TLS.",
            _not_tls,
            raw=True,
        ),
        Behaviour(
            "cert-not-yet-valid",
            "gemini",
            "Presents a certificate valid only from tomorrow.",
            answer(GOOD_GEMTEXT),
            tls=cert(start=_DAY, end=365 * _DAY),
        ),
        Behaviour(
            "cert-expired",
            "gemini",
            "Presents a certificate that expired yesterday.",
            answer(GOOD_GEMTEXT),
            tls=cert(start=-365 * _DAY, end=-_DAY),
        ),
        Behaviour(
            "cert-other-name",
            "gemini",
            "Presents a certificate for another host name (other.example).",
            answer(GOOD_GEMTEXT),
            tls=cert(name="other.example"),
        ),
        Behaviour(
            "cert-new-key-every-time",
            "gemini",
            "Presents a certificate with a new key on every connection.",
            answer(GOOD_GEMTEXT),
            tls=rotating_cert,
        ),
        Behaviour(
            "redirect-private",
            "gemini",
            "Redirects to a private address (gemini://10.0.0.1/).",
            _redirect(b"gemini://10.0.0.1/"),
            tls=cert(),
        ),
        Behaviour(
            "redirect-metadata",
            "gemini",
            "Redirects to the cloud metadata address (gemini://169.254.169.254/).",
            _redirect(b"gemini://169.254.169.254/latest/meta-data/"),
            tls=cert(),
        ),
        Behaviour(
            "redirect-other-scheme",
            "gemini",
            "Redirects to file:///etc/passwd.",
            _redirect(b"file:///etc/passwd"),
            tls=cert(),
        ),
        Behaviour(
            "redirect-self",
            "gemini",
            "Redirects to the URL that was asked for (a loop).",
            lambda exchange, request: _redirect(request)(exchange, request),
            tls=cert(),
        ),
        Behaviour(
            "slow-down-absurd",
            "gemini",
            "Answers 44 asking for a wait of 999,999,999 seconds.",
            answer(b"44 999999999\r\n"),
            tls=cert(),
        ),
        Behaviour(
            "slow-down-text",
            "gemini",
            "Answers 44 with free text instead of a number of seconds.",
            answer(b"44 Please go away for a while\r\n"),
            tls=cert(),
        ),
        Behaviour(
            "robots-huge",
            "gemini",
            "Serves a robots.txt of two megabytes (its last rule, past any sane cap, "
            "disallows everything); everything else is a normal page.",
            robots("gemini", answer(lambda: b"20 text/plain\r\n" + robots_huge()), GOOD_GEMTEXT),
            tls=cert(),
        ),
        Behaviour(
            "robots-binary",
            "gemini",
            "Serves binary garbage as robots.txt; everything else is a normal page.",
            robots("gemini", answer(b"20 image/png\r\n" + BINARY), GOOD_GEMTEXT),
            tls=cert(),
        ),
        Behaviour(
            "robots-redirect",
            "gemini",
            "Redirects robots.txt to a private address; everything else is a normal page.",
            robots("gemini", _redirect(b"gemini://10.0.0.1/robots.txt"), GOOD_GEMTEXT),
            tls=cert(),
        ),
        Behaviour(
            "hostile-links",
            "gemini",
            "Serves gemtext linking to file:///etc/passwd, a data: URL, javascript:, the "
            "metadata service, a private network and loopback.",
            answer(_HOSTILE_LINKS),
            tls=cert(),
        ),
        Behaviour(
            "nul-invalid-utf8",
            "gemini",
            "Serves gemtext declared UTF-8 holding NUL bytes and invalid UTF-8.",
            answer(
                b"20 text/gemini; charset=utf-8\r\n# NUL\x00here\nbad \xff\xfe \xe2\x82 bytes\n"
            ),
            tls=cert(),
        ),
        Behaviour(
            "ansi-bidi",
            "gemini",
            "Puts ANSI escapes and bidi overrides in an input prompt (/prompt), an error "
            "META (/error) and a page.",
            by_request(
                lambda r: (
                    b"10 " + BIDI_AND_ANSI + b"\r\n"
                    if gemini_path(r) == "/prompt"
                    else b"51 " + BIDI_AND_ANSI + b"\r\n"
                    if gemini_path(r) == "/error"
                    else b"20 text/gemini\r\n# " + BIDI_AND_ANSI + b"\n"
                ),
                close,
            ),
            tls=cert(),
        ),
        Behaviour(
            "huge-line",
            "gemini",
            "Serves gemtext that is one line of a million bytes.",
            answer(lambda: b"20 text/gemini\r\n=> gemini://localhost/ " + b"A" * 1_000_000),
            tls=cert(),
        ),
        Behaviour(
            "bogus-charset",
            "gemini",
            "Declares a charset that does not exist.",
            answer(b"20 text/plain; charset=x-no-such-charset\r\nplain caf\xe9\n"),
            tls=cert(),
        ),
        Behaviour(
            "sensitive-input",
            "gemini",
            "Asks for a password with 11, then answers a polite page without echoing it.",
            _sensitive(echo=False),
            tls=cert(),
        ),
        Behaviour(
            "sensitive-echo",
            "gemini",
            "Asks for a password with 11, then echoes it back in a redirect target.",
            _sensitive(echo=True),
            tls=cert(),
        ),
        Behaviour(
            "sensitive-echo-body",
            "gemini",
            "Asks for a password with 11, then echoes it back in a text/plain body.",
            _sensitive_echo_body,
            tls=cert(),
        ),
    )
}
