"""
Tests for L{gophergem.fetcher.gemini}: the whole Gemini pipeline on an
in-memory network with real OpenSSL at both ends (iosim), no sockets and no
real time.  Every status row of SPEC section 5, trust on first use, client
identities, windows and the cache; each test three times, with the stores,
the cache and the 44 board answering at once, with Deferreds, and with
Deferreds that fire only when the clock moves (L{tests.helpers.deferring}).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from OpenSSL import SSL
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol

from gophergem.errors import CertificateStoreUnavailable, InvalidRequest
from gophergem.fetcher import _textwindow as textwindow
from gophergem.fetcher import gemini as gemini_pipeline
from gophergem.mcp.schemas import GeminiPayload
from gophergem.render.payloads import payload
from gophergem.results import (
    CertificateResult,
    FetchFailure,
    GeminiBinaryResult,
    GemtextResult,
    InputResult,
    PartialLineResult,
    RedirectResult,
    SuccessResult,
)
from gophergem.state.memory import MemoryPinStore
from gophergem.testing import EPOCH, FakeGeminiServer, MemoryNetwork, ServerTLS, make_certificate
from gophergem.trust import Pin
from gophergem.trust import operations as ops
from tests.helpers.deferring import answers
from tests.helpers.fetcher import fingerprint_of
from tests.helpers.tls import RecordingServerTLS

#: Every test runs with the stores, the cache and the 44 board answering
#: plainly, with Deferreds, and with Deferreds that wait for the clock.
pytestmark = pytest.mark.usefixtures("answers")
__all__ = ["answers"]

HOST_IP = "192.0.2.20"  # memory reactor only: never dialled
OTHER_IP = "192.0.2.21"
URL = "gemini://localhost/"
DAY = 86400.0


def network(
    routes: dict[str, Any] | None = None, *, tls: Any = None, **server: Any
) -> tuple[MemoryNetwork, FakeGeminiServer]:
    """A network where localhost serves C{routes} over TLS."""
    net = MemoryNetwork()
    net.resolver.add("localhost", HOST_IP)
    net.resolver.add("other.example", OTHER_IP)
    fake = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer(routes or {}, **server), tls)
    return net, fake


def fetcher(net: MemoryNetwork, **gemini: Any) -> Any:
    """A fetcher on C{net}; robots and pacing off unless a test turns them on."""
    gemini.setdefault("respect_robots_txt", False)
    gemini.setdefault("requests_per_minute", 0)
    return net.fetcher(gemini=gemini)


def fetch(net: MemoryNetwork, url: str = URL, *, via: Any = None, **options: Any) -> Any:
    return net.run((via or fetcher(net)).gemini(url, **options))


def code(result: Any) -> str:
    assert isinstance(result, FetchFailure), result
    return result.error.code


def certificate(**options: Any) -> ServerTLS:
    options.setdefault("now", EPOCH)
    return ServerTLS(*make_certificate(options.pop("hostname", "localhost"), **options))


# --- status rows ---------------------------------------------------------------------


@pytest.mark.parametrize(("status", "sensitive"), [(10, False), (11, True)])
def test_input(status: int, sensitive: bool) -> None:
    """10 and 11 are input results with the prompt; 11 is marked sensitive."""
    net, _ = network({"/": f"{status} Your name?\r\n".encode()})
    result = fetch(net)
    assert isinstance(result, InputResult)
    assert (result.prompt, result.sensitive) == ("Your name?", sensitive)


GEMTEXT = (
    b"# Title\n"
    b"=> /abs Absolute\n"
    b"=> rel.gmi Relative\n"
    b"=> //other.example/x Elsewhere\n"
    b"=> gopher://g.example/1/ A hole\n"
    b"* item\n"
)


def test_gemtext_links_absolute() -> None:
    """text/gemini comes back as lines whose links are absolute URLs, with lang from META."""
    net, _ = network({"/dir/page.gmi": b"20 text/gemini; lang=fr\r\n" + GEMTEXT})
    result = fetch(net, "gemini://localhost/dir/page.gmi")
    assert isinstance(result, GemtextResult)
    assert [line.type for line in result.lines] == [
        "heading1",
        "link",
        "link",
        "link",
        "link",
        "list",
    ]
    assert [link.url for link in result.links] == [
        "gemini://localhost/abs",
        "gemini://localhost/dir/rel.gmi",
        "gemini://other.example/x",
        "gopher://g.example/1/",
    ]
    assert (result.lang, result.charset, result.size) == ("fr", "utf-8", len(GEMTEXT))
    assert result.feed_entries == ()
    data = payload(result)
    assert "feed_entries" not in data and data["lang"] == "fr"


GEMLOG = (
    "# My gemlog\n"
    "=> atom.xml Atom feed\n"
    "=> 2024-04-01-fools.gmi 2024-04-01 April fools\n"
    "=> 2024-05-02-spring.gmi 2024-05-02 - Spring is here\n"
    "=> 2023-12-31.gmi 2023-12-31 \u2014 New year\n"
).encode()


def test_gemlog_feed_entries() -> None:
    """A gemlog index gets feed entries (date, title, absolute URL), newest first."""
    net, _ = network({"/log/": b"20 text/gemini\r\n" + GEMLOG})
    result = fetch(net, "gemini://localhost/log/")
    assert isinstance(result, GemtextResult)
    assert [(e.date, e.title, e.url) for e in result.feed_entries] == [
        ("2024-05-02", "Spring is here", "gemini://localhost/log/2024-05-02-spring.gmi"),
        ("2024-04-01", "April fools", "gemini://localhost/log/2024-04-01-fools.gmi"),
        ("2023-12-31", "New year", "gemini://localhost/log/2023-12-31.gmi"),
    ]
    assert len(payload(result)["feed_entries"]) == 3


def test_plain_text_in_declared_charset() -> None:
    """20 text/plain with charset=iso-8859-1 is a success result decoded with that charset."""
    net, _ = network({"/": b"20 text/plain; charset=iso-8859-1\r\ncaf\xe9 cr\xe8me\r\n"})
    result = fetch(net)
    assert isinstance(result, SuccessResult)
    assert result.content == "caf\u00e9 cr\u00e8me\n"
    assert (result.mime.essence, result.mime.charset) == ("text/plain", "iso-8859-1")
    assert result.size == 12
    assert "decoding" not in payload(result)


def test_ebcdic_273_named_in_the_header() -> None:
    """A body in EBCDIC 273 declared as EBCDIC-AT-DE decodes with cp273, and says so."""
    text = "Grüße aus Österreich\n"
    net, _ = network({"/": b"20 text/plain; charset=EBCDIC-AT-DE\r\n" + text.encode("cp273")})
    result = fetch(net)
    assert isinstance(result, SuccessResult)
    assert (result.content, result.mime.charset, result.decoding) == (text, "cp273", "clean")


def test_utf16_without_bom_is_big_endian() -> None:
    """A gemtext page in UTF-16 without a byte order mark is read big-endian (RFC 2781)."""
    page = "# Über\n=> /x Weiter\n"
    net, _ = network({"/": b"20 text/gemini; charset=utf-16\r\n" + page.encode("utf-16-be")})
    result = fetch(net)
    assert isinstance(result, GemtextResult)
    assert [line.content for line in result.lines] == ["# Über", "=> /x Weiter"]
    assert result.charset == "utf-16be"


@pytest.mark.parametrize(
    ("response", "decoding"),
    [
        (b"20 text/plain; charset=shift_jis\r\nok \xa0\xfd\n", "lossy"),
        (b"20 text/plain\r\ncaf\xe9\n", "guessed"),
        (b"20 text/gemini; charset=x-no-such\r\ncaf\xe9\n", "guessed"),
    ],
)
def test_uncertain_decoding_is_labelled(response: bytes, decoding: str) -> None:
    """A body no candidate decodes cleanly, or decoded by a guess, says so in the payload."""
    net, _ = network({"/": response})
    result = payload(fetch(net))
    assert result["decoding"] == decoding


def test_binary_is_described_only() -> None:
    """20 image/png is a binary result with its size and type, never the bytes."""
    body = b"\x89PNG\r\n\x1a\nSECRET-PIXELS"
    net, _ = network({"/i.png": b"20 image/png\r\n" + body})
    result = fetch(net, "gemini://localhost/i.png")
    assert isinstance(result, GeminiBinaryResult)
    assert (result.size, result.mime_type) == (len(body), "image/png")
    assert "SECRET-PIXELS" not in json.dumps(payload(result))


@pytest.mark.parametrize(
    ("meta", "new_url", "permanent", "cross_host", "scheme"),
    [
        ("30 next.gmi", "gemini://localhost/dir/next.gmi", False, False, "gemini"),
        ("31 /moved", "gemini://localhost/moved", True, False, "gemini"),
        ("31 gemini://other.example/x", "gemini://other.example/x", True, True, "gemini"),
        ("30 gopher://localhost/1/", "gopher://localhost/1/", False, True, "gopher"),
        ("39 /odd", "gemini://localhost/odd", False, False, "gemini"),
    ],
)
def test_redirect_not_followed(
    meta: str, new_url: str, permanent: bool, cross_host: bool, scheme: str
) -> None:
    """30/31 (and undefined 3x) are reported with target, permanence, cross_host and scheme."""
    net, server = network({"/dir/page": meta.encode() + b"\r\n"})
    result = fetch(net, "gemini://localhost/dir/page")
    assert isinstance(result, RedirectResult)
    assert (result.new_url, result.permanent, result.cross_host, result.scheme) == (
        new_url,
        permanent,
        cross_host,
        scheme,
    )
    assert len(server.requests) == 1 and net.attempts == [(HOST_IP, 1965)]


@pytest.mark.parametrize("status", [40, 41, 42, 43, 49])
def test_temporary_errors(status: int) -> None:
    """40-43 (and undefined 4x) are TEMPORARY_ERROR with status, meta and next_step."""
    net, _ = network({"/": f"{status} Try later\r\n".encode()})
    result = fetch(net)
    assert code(result) == "TEMPORARY_ERROR"
    error = result.error
    assert (error.status, error.temporary, error.meta) == (status, True, "Try later")
    assert error.next_step and error.retry_after_seconds is None


@pytest.mark.parametrize("status", [50, 51, 52, 53, 59, 58])
def test_permanent_errors(status: int) -> None:
    """50-59 (including undefined ones) are PERMANENT_ERROR with status, meta, not temporary."""
    net, _ = network({"/": f"{status} Nope\r\n".encode()})
    result = fetch(net)
    assert code(result) == "PERMANENT_ERROR"
    assert (result.error.status, result.error.temporary, result.error.meta) == (
        status,
        False,
        "Nope",
    )
    assert result.error.next_step


@pytest.mark.parametrize(
    ("status", "required"), [(60, True), (61, False), (62, False), (69, False)]
)
def test_certificate_statuses(status: int, required: bool) -> None:
    """60, 61, 62 (and undefined 6x) are certificate results; only 60 says one is required."""
    net, _ = network({"/": f"{status} Identify yourself\r\n".encode()})
    result = fetch(net)
    assert isinstance(result, CertificateResult)
    assert (result.status, result.required, result.message) == (
        status,
        required,
        "Identify yourself",
    )
    assert result.next_step
    assert net.identities.all() == []  # the fetch path never creates an identity


@pytest.mark.parametrize("status", [60, 61, 62, 63, 65, 69])
@pytest.mark.parametrize("presented", [False, True])
def test_certificate_advice_follows_what_was_presented(status: int, presented: bool) -> None:
    """
    6x advice speaks of "the identity presented" only when one was; 63-69
    never suggest creating an identity.
    """
    net, server = network({"/": f"{status} Who?\r\n".encode()})
    if presented:
        net.run(Deferred.fromCoroutine(ops.create_identity(net.identities, URL, EPOCH)))
    result = fetch(net)
    assert isinstance(result, CertificateResult)
    assert (server.client_certificates[0] is not None) is presented
    advice = result.next_step.lower()
    if status in (61, 62):
        assert ("identity presented" in advice) is presented
        assert ("none was presented" in advice) is not presented
    if status == 60:
        assert ("none was presented" in advice) is not presented
    if status > 62:
        assert "create" not in advice and "gemini_client_cert_update" not in advice
        assert str(status) in advice
    if not presented and status <= 62:
        assert "gemini_client_cert_update create" in advice
    if presented:
        assert "gemini_client_cert_update create" not in advice


@pytest.mark.parametrize(
    ("response", "kind"),
    [(b"19 Undefined input\r\n", InputResult), (b"29 text/plain\r\nhi", SuccessResult)],
)
def test_undefined_statuses_take_their_family(response: bytes, kind: type) -> None:
    """An undefined status in range is handled as its first digit's family."""
    net, _ = network({"/": response})
    assert isinstance(fetch(net), kind)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (b"00 zero\r\n", "INVALID_STATUS"),
        (b"70 seventy\r\n", "INVALID_STATUS"),
        (b"99\r\n", "INVALID_STATUS"),
        (b"HTTP/1.0 200 OK\r\n\r\n", "PROTOCOL_ERROR"),
        (b"2 text/gemini\r\n", "PROTOCOL_ERROR"),
        (b"200 text/gemini\r\n", "PROTOCOL_ERROR"),
        (b"20\ttext/gemini\r\n", "PROTOCOL_ERROR"),
        (b"30\r\n", "PROTOCOL_ERROR"),
        (b"20 text/gemini\n# bare LF\n", "PROTOCOL_ERROR"),
        (b"20 " + b"m" * 1025 + b"\r\n", "PROTOCOL_ERROR"),
        (b"20 " + b"m" * 5000, "PROTOCOL_ERROR"),
        (b"\xef\xbb\xbf20 text/gemini\r\n", "PROTOCOL_ERROR"),
        (b"", "PROTOCOL_ERROR"),
        (b"20 text/gem", "PROTOCOL_ERROR"),
    ],
    ids=[
        "00",
        "70",
        "99",
        "http",
        "one-digit",
        "three-digits",
        "tab",
        "redirect-without-target",
        "bare-lf",
        "meta-1025",
        "endless-header",
        "bom",
        "empty",
        "cut-header",
    ],
)
def test_bad_headers(response: bytes, expected: str) -> None:
    """Out-of-range statuses are INVALID_STATUS; any other malformed header is PROTOCOL_ERROR."""
    net, _ = network({"/": response})
    assert code(fetch(net)) == expected


def test_meta_of_1024_bytes_accepted() -> None:
    """META of exactly 1024 bytes is within the limit."""
    net, _ = network({"/": b"51 " + b"m" * 1024 + b"\r\n"})
    result = fetch(net)
    assert code(result) == "PERMANENT_ERROR" and result.error.meta == "m" * 1024


def test_meta_sanitised() -> None:
    """ANSI escapes are removed whole and bidi controls dropped from META and prompts."""
    hostile = "\x1b[31mred\x1b[0m \u202eevil\u202c\u2066!\u2069"
    net, _ = network(
        {
            "/err": f"51 {hostile}\r\n".encode(),
            "/ask": f"10 {hostile}\r\n".encode(),
            "/cert": f"60 {hostile}\r\n".encode(),
        }
    )
    error = fetch(net, "gemini://localhost/err")
    assert error.error.meta == "red evil!"
    assert fetch(net, "gemini://localhost/ask").prompt == "red evil!"
    assert fetch(net, "gemini://localhost/cert").message == "red evil!"


def test_denied_mime_filtered() -> None:
    """A MIME type on the deny list is CONTENT_FILTERED; other types pass."""
    net, _ = network({"/i": b"20 image/png\r\n\x89PNG", "/t": b"20 text/gemini\r\n# ok\n"})
    strict = fetcher(net, denied_mime_types=("image/*",))
    assert code(fetch(net, "gemini://localhost/i", via=strict)) == "CONTENT_FILTERED"
    assert isinstance(fetch(net, "gemini://localhost/t", via=strict), GemtextResult)


# --- 44: slow down ---------------------------------------------------------------------


def test_slow_down_with_seconds() -> None:
    """A 44 with a number backs the host off that long: nothing is sent, then fetching resumes."""
    net, server = network({"/busy": b"44 30\r\n", "/ok": b"20 text/gemini\r\n# ok\n"})
    via = fetcher(net)
    first = fetch(net, "gemini://localhost/busy", via=via)
    assert code(first) == "TEMPORARY_ERROR"
    assert (first.error.status, first.error.retry_after_seconds) == (44, 30)
    second = fetch(net, "gemini://localhost/ok", via=via)
    assert code(second) == "SLOW_DOWN"
    assert second.error.retry_after_seconds == 30
    assert second.request_info.timestamp is None
    assert server.requests == [b"gemini://localhost/busy"]
    net.reactor.advance(29)
    assert code(fetch(net, "gemini://localhost/ok", via=via)) == "SLOW_DOWN"
    net.reactor.advance(2)
    assert isinstance(fetch(net, "gemini://localhost/ok", via=via), GemtextResult)
    assert len(server.requests) == 2


def test_slow_down_free_text_backs_off_exponentially() -> None:
    """A 44 with free text backs off a moment, then twice as long on a repeat."""
    net, server = network({"/": b"44 Please slow down\r\n"})
    via = fetcher(net)
    first = fetch(net, via=via).error.retry_after_seconds
    assert first and first > 0
    assert code(fetch(net, via=via)) == "SLOW_DOWN"
    net.reactor.advance(first + 0.5)
    assert fetch(net, via=via).error.retry_after_seconds == 2 * first
    assert len(server.requests) == 2


def test_slow_down_is_per_host() -> None:
    """A 44 from one host does not hold back another."""
    net, _ = network({"/": b"44 60\r\n"})
    net.listen_gemini(OTHER_IP, 1965, FakeGeminiServer({"/": b"20 text/gemini\r\n# hi\n"}))
    via = fetcher(net)
    fetch(net, via=via)
    assert isinstance(fetch(net, "gemini://other.example/", via=via), GemtextResult)


# --- robots.txt: the cause first ----------------------------------------------------


class _Plaintext(Protocol):
    """A server that answers a TLS ClientHello with plain text."""

    def dataReceived(self, data: bytes) -> None:
        self.transport.write(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        self.transport.loseConnection()


def test_host_down_reports_connection_failed_first() -> None:
    """
    A host that refuses connections is CONNECTION_FAILED (not ROBOTS_UNAVAILABLE),
    saying robots.txt could not be read, with the back-off; while it lasts the
    answer is the same and nothing is dialled.
    """
    net, _ = network({})
    net.resolver.add("down.example", "192.0.2.99")  # nothing listens there
    via = fetcher(net, respect_robots_txt=True)
    first = fetch(net, "gemini://down.example/", via=via)
    assert code(first) == "CONNECTION_FAILED"
    assert "robots.txt" in first.error.message
    assert first.error.retry_after_seconds == 60 and first.error.temporary is True
    assert "60" in first.error.next_step
    attempts = len(net.attempts)
    net.reactor.advance(20)
    again = fetch(net, "gemini://down.example/other", via=via)
    assert code(again) == "CONNECTION_FAILED"
    assert "robots.txt" in again.error.message and again.error.retry_after_seconds == 40
    assert len(net.attempts) == attempts


def test_failed_handshake_on_robots_is_tls_error() -> None:
    """A host that cannot complete a TLS handshake is TLS_ERROR first, robots.txt named."""
    net, _ = network({})
    net.listen(HOST_IP, 1965, Factory.forProtocol(_Plaintext))
    result = fetch(net, via=fetcher(net, respect_robots_txt=True))
    assert code(result) == "TLS_ERROR"
    assert "robots.txt" in result.error.message and result.error.retry_after_seconds == 60


def test_robots_answering_4x_stays_robots_unavailable() -> None:
    """A reachable capsule whose robots.txt answers 40 is ROBOTS_UNAVAILABLE naming the 40."""
    net, server = network({"/robots.txt": b"40 busy\r\n", "/": PAGE})
    result = fetch(net, via=fetcher(net, respect_robots_txt=True))
    assert code(result) == "ROBOTS_UNAVAILABLE"
    assert "40" in result.error.message and result.error.retry_after_seconds == 60
    assert server.requests == [b"gemini://localhost/robots.txt"]


# --- the request --------------------------------------------------------------------


class _RawProtocol(Protocol):
    factory: RawServer

    def dataReceived(self, data: bytes) -> None:
        self.factory.received.append(data)
        if b"\n" in b"".join(self.factory.received):
            self.transport.write(self.factory.response)
            self.transport.loseConnection()


class RawServer(Factory):
    """Records the exact bytes a client sent; answers C{response}."""

    protocol = _RawProtocol

    def __init__(self, response: bytes = b"20 text/plain\r\nok") -> None:
        self.response = response
        self.received: list[bytes] = []


def test_request_line_is_url_and_crlf() -> None:
    """The server receives exactly the normalised URL followed by CRLF, and nothing else."""
    net, _ = network()
    raw = net.listen_gemini(HOST_IP, 1965, RawServer())  # type: ignore[arg-type]
    fetch(net, "gemini://LOCALHOST:1965/a/./b/../c?x=1#frag")
    assert b"".join(raw.received) == b"gemini://localhost/a/c?x=1\r\n"


def test_query_never_in_request_info() -> None:
    """A query is never echoed: request_info has the URL without it and has_query only."""
    net, _ = network({"/search": b"51 no\r\n", "/page": b"20 text/gemini\r\n# p\n"})
    for url in (
        "gemini://localhost/search?swordfish",
        "gemini://localhost/page?swordfish",
        "gemini://nowhere.example/x?swordfish",
        "gemini://bad host/?swordfish",
        "gemini://localhost:99999/?swordfish",
    ):
        result = fetch(net, url)
        text = json.dumps(payload(result))
        assert "swordfish" not in text, url
        assert "?" not in result.request_info.url
    result = fetch(net, "gemini://localhost/page?swordfish")
    assert result.request_info.has_query is True
    assert fetch(net, "gemini://localhost/page").request_info.has_query is False


def test_input_percent_encoded_into_query() -> None:
    """An input answer replaces the query, percent-encoded; it is never echoed back."""
    net, server = network({"/ask": lambda url: b"20 text/plain\r\nthanks"})
    result = fetch(net, "gemini://localhost/ask?old", input="a b&c/\u00e9?#")
    assert server.requests == [b"gemini://localhost/ask?a%20b%26c%2F%C3%A9%3F%23"]
    assert result.request_info.has_query is True
    assert result.request_info.url == "gemini://localhost/ask"
    assert "a%20b" not in json.dumps(payload(result))


def test_input_too_long_refused_without_echo() -> None:
    """An answer too long for a request is INVALID_REQUEST, never sent nor echoed."""
    net, server = network({"/ask": b"20 text/plain\r\nthanks"})
    answer = "hunter2" * 200
    result = fetch(net, "gemini://localhost/ask", input=answer)
    assert code(result) == "INVALID_REQUEST"
    assert server.requests == [] and "hunter2" not in json.dumps(payload(result))


@pytest.mark.parametrize(
    "response",
    [b"20 text/gemini\r\n# Welcome\n=> #top Back to top\n", b"30 #again\r\n"],
    ids=["link", "redirect"],
)
def test_input_answer_never_in_resolved_links(response: bytes) -> None:
    """A (possibly sensitive) input answer never appears in links or redirect targets."""
    net, _ = network({"/login": response})
    result = fetch(net, "gemini://localhost/login", input="hunter2")
    assert "hunter2" not in json.dumps(payload(result))


# --- a secret answer is scrubbed from everything that comes back ------------------------

SECRET = "Hunter 2é"


def _spellings_of(secret: str) -> list[str]:
    """Every form of C{secret} a test page echoes, and the test looks for afterwards."""
    from urllib.parse import quote, quote_plus

    return [
        secret,
        secret.upper(),
        secret.lower(),
        quote(secret, safe=""),
        quote(secret, safe="").lower(),
        quote_plus(secret),
        "".join(f"&#{ord(c)};" for c in secret),
    ]


def _echo_everywhere(url: str) -> bytes:
    """A page that echoes the answer (the URL's query) in every place a page can."""
    from urllib.parse import unquote

    query = url.partition("?")[2]
    answer = unquote(query)
    forms = [*_spellings_of(answer), query, query.lower()]
    lines = ["# Welcome back, " + answer]
    for n, form in enumerate(forms):
        lines += [
            f"Plain: {form}",
            f"=> /home?token={form} Home of {form}",
            f"=> gemini://other.example/{form}/x",
            f"* list {form}",
            f"> quote {form}",
            f"=> /log/2024-01-0{n + 1}.gmi 2024-01-0{n + 1} Post by {form}",
        ]
    lines += ["```" + answer, "pre " + answer, "```"]
    return ("20 text/gemini\r\n" + "\n".join(lines) + "\n").encode()


def _leaks(text: str, secret: str = SECRET) -> list[str]:
    from urllib.parse import quote

    found = [form for form in _spellings_of(secret) if form in text]
    # JSON escapes non-ASCII; look for the escaped forms too.
    escaped = json.dumps(secret)[1:-1]
    found += [
        form for form in (escaped, quote(secret, safe="").replace("%", "%25")) if form in text
    ]
    return found


def test_sensitive_answer_scrubbed_from_every_field() -> None:
    """
    A status-11 answer echoed in a page, in any case, percent-encoded in either
    hex case, form-encoded or as HTML references, in lines, links, labels,
    feed entries and preformatted text, is replaced by [redacted], and
    request_info.input_redacted counts the replacements.
    """
    net, server = network({"/login": _echo_everywhere})
    server.routes["/ask"] = b"11 Password?\r\n"
    via = fetcher(net)
    prompt = fetch(net, "gemini://localhost/login", via=via, input=SECRET)
    assert isinstance(prompt, GemtextResult)
    shown = json.dumps(payload(prompt), ensure_ascii=False)
    assert _leaks(shown) == [] and _leaks(json.dumps(payload(prompt))) == []
    assert "[redacted]" in shown
    assert prompt.request_info.input_redacted and prompt.request_info.input_redacted >= 60
    assert payload(prompt)["request_info"]["input_redacted"] == prompt.request_info.input_redacted
    assert prompt.feed_entries and all("[redacted]" in e.title for e in prompt.feed_entries)


def test_sensitive_answer_scrubbed_in_every_window() -> None:
    """
    The answer is scrubbed before the body is cut into windows: no window
    boundary can split it into two halves that pass one by one.
    """
    body = ("x" * 37 + " You said: " + SECRET + "\n") * 40
    net, _ = network({"/ask": b"20 text/plain; charset=utf-8\r\n" + body.encode()})
    via = fetcher(net, max_rendered_chars=100)
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = fetch(net, "gemini://localhost/ask", via=via, input=SECRET, offset=offset)
        assert isinstance(result, SuccessResult)
        pieces.append(result.content)
        offset = result.window.next_offset
    whole = "".join(pieces)
    assert _leaks(whole) == [] and whole.count("[redacted]") == 40
    assert SECRET[:4] not in whole.replace("[redacted]", "")


@pytest.mark.parametrize(
    "response",
    [
        lambda url: b"11 Wrong password " + url.partition("?")[2].encode() + b", again\r\n",
        lambda url: b"30 /home?t=" + url.partition("?")[2].upper().encode() + b"\r\n",
        lambda url: b"44 " + url.partition("?")[2].encode() + b"\r\n",
        lambda url: b"59 bad: " + url.partition("?")[2].encode() + b"\r\n",
        lambda url: b"61 not you, " + url.partition("?")[2].encode() + b"\r\n",
        lambda url: b"20 text/plain; lang=" + url.partition("?")[2].encode() + b"\r\nhi\n",
    ],
    ids=["re-prompt", "redirect", "slow-down", "permanent", "certificate", "mime-lang"],
)
def test_sensitive_answer_scrubbed_from_prompts_redirects_and_errors(response: Any) -> None:
    """An answer echoed in a prompt, a redirect, an error's META or a MIME lang is scrubbed."""
    net, _ = network({"/login": response})
    result = fetch(net, "gemini://localhost/login", input=SECRET)
    assert _leaks(json.dumps(payload(result), ensure_ascii=False)) == []
    assert result.request_info.input_redacted == 1


def test_answer_to_a_status_10_prompt_stays_readable() -> None:
    """
    Search terms answering a prompt seen as status 10 are not scrubbed (no
    input_redacted); an answer to a URL never seen prompting is scrubbed.
    """
    net, _ = network(
        {"/search": lambda url: b"10 Search\r\n" if "?" not in url else PAGE + b"gemini hits\n"}
    )
    via = fetcher(net)
    unseen = fetch(net, "gemini://localhost/search", via=via, input="gemini")
    assert "gemini" not in json.dumps(payload(unseen)["document"])
    assert unseen.request_info.input_redacted == 1
    assert isinstance(fetch(net, "gemini://localhost/search", via=via), InputResult)
    seen = fetch(net, "gemini://localhost/search", via=via, input="gemini")
    assert seen.lines[-1].content == "gemini hits"
    assert seen.request_info.input_redacted is None
    assert "input_redacted" not in payload(seen)["request_info"]


def test_query_to_a_sensitive_url_is_scrubbed_too() -> None:
    """A secret written into the URL's query of a URL known to ask with 11 is scrubbed as well."""
    routes = {"/login": lambda url: b"11 Password\r\n" if "?" not in url else _echo_everywhere(url)}
    net, _ = network(routes)
    via = fetcher(net)
    assert fetch(net, "gemini://localhost/login", via=via).sensitive is True
    result = fetch(net, "gemini://localhost/login?Hunter%202%C3%A9", via=via)
    assert _leaks(json.dumps(payload(result), ensure_ascii=False)) == []
    assert result.request_info.input_redacted


def test_one_letter_answer_is_scrubbed_anyway() -> None:
    """A one-character answer is scrubbed wherever it appears: safety over readability."""
    net, _ = network({"/pin": b"20 text/plain\r\nYour pin 7 is 7.\n"})
    result = fetch(net, "gemini://localhost/pin", input="7")
    assert result.content == "Your pin [redacted] is [redacted].\n"
    assert result.request_info.input_redacted == 2


def test_wrong_scheme_names_gopher_fetch() -> None:
    """A gopher:// URL is INVALID_REQUEST naming gopher_fetch; nothing is dialled."""
    net, _ = network()
    result = fetch(net, "gopher://localhost/1/")
    assert code(result) == "INVALID_REQUEST" and "gopher_fetch" in result.error.message
    assert net.attempts == []


def test_connection_failures_are_coded() -> None:
    """An unknown host is DNS_ERROR; a closed port CONNECTION_FAILED; a silent one TIMEOUT."""
    net, _ = network({"/silent": b""}, close=False)
    assert code(fetch(net, "gemini://nowhere.example/")) == "DNS_ERROR"
    assert code(fetch(net, "gemini://localhost:1966/")) == "CONNECTION_FAILED"
    result = net.run(fetcher(net).gemini("gemini://localhost/silent"), advance=1)
    assert code(result) == "TIMEOUT"


def test_allowlist_blocks_before_connecting() -> None:
    """A host off the allowlist is BLOCKED without a connection."""
    net, _ = network()
    result = fetch(net, via=fetcher(net, allowed_hosts=frozenset({"other.example"})))
    assert code(result) == "BLOCKED" and net.attempts == []


def test_local_addresses_refused_by_default() -> None:
    """Without allow_local_hosts a loopback target is BLOCKED and never dialled."""
    net, _ = network()
    net.resolver.add("sneaky.example", "127.0.0.1")
    result = fetch(net, "gemini://sneaky.example/", via=fetcher(net, allow_local_hosts=False))
    assert code(result) == "BLOCKED" and net.attempts == []


# --- TOFU ------------------------------------------------------------------------------

PAGE = b"20 text/gemini\r\n# Hello\n"


def test_first_fetch_pins() -> None:
    """The first fetch pins the certificate it was shown, with its key and dates."""
    tls = certificate()
    net, _ = network({"/": PAGE}, tls=tls)
    result = fetch(net)
    assert isinstance(result, GemtextResult)
    pin = net.pins.get("localhost", 1965)
    assert pin.fingerprint == fingerprint_of(tls.certificate_pem)
    assert pin.fingerprint == result.request_info.cert_fingerprint
    assert (pin.first_seen, pin.last_seen, pin.expires) == (EPOCH, EPOCH, EPOCH + 365 * DAY)
    assert pin.spki.startswith("sha256:")
    assert result.request_info.tofu_warning is None


def test_same_certificate_ok_and_last_seen_refreshed() -> None:
    """The same certificate again passes quietly; last_seen moves, first_seen stays."""
    net, server = network({"/": PAGE})
    via = fetcher(net)
    fetch(net, via=via)
    net.reactor.advance(100)
    result = fetch(net, via=via, refresh=True)
    assert isinstance(result, GemtextResult) and result.request_info.tofu_warning is None
    pin = net.pins.get("localhost", 1965)
    assert (pin.first_seen, pin.last_seen) == (EPOCH, EPOCH + 100)
    assert len(server.requests) == 2


def test_same_key_reissue_passes_with_warning() -> None:
    """A restarted server with a new certificate for the same key passes with a tofu_warning."""
    key = ec.generate_private_key(ec.SECP256R1())
    net, _ = network({"/": PAGE}, tls=certificate(key=key))
    fetch(net)
    reissued = certificate(key=key, now=EPOCH + 10)
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), reissued)
    net.reactor.advance(10)
    result = fetch(net)
    assert isinstance(result, GemtextResult)
    assert result.request_info.tofu_warning and "reissue" in result.request_info.tofu_warning
    pin = net.pins.get("localhost", 1965)
    assert pin.fingerprint == fingerprint_of(reissued.certificate_pem)
    assert pin.first_seen == EPOCH
    assert len(server.requests) == 1


def test_new_key_is_changed_and_nothing_sent() -> None:
    """A restarted server with a new key is CERTIFICATE_CHANGED and receives no request."""
    old = certificate()
    net, _ = network({"/": PAGE}, tls=old)
    fetch(net)
    before = net.pins.get("localhost", 1965)
    new = certificate()
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), new)
    result = fetch(net)
    assert code(result) == "CERTIFICATE_CHANGED"
    error = result.error
    assert error.pinned_fingerprint == fingerprint_of(old.certificate_pem)
    assert error.presented_fingerprint == fingerprint_of(new.certificate_pem)
    assert (error.pinned_expired, error.pinned_expires) == (False, "2028-01-15T08:00:00Z")
    assert server.requests == []
    assert net.pins.get("localhost", 1965) == before


def test_new_key_after_pinned_certificate_expired() -> None:
    """CERTIFICATE_CHANGED says when the pinned certificate had already expired."""
    net, _ = network({"/": PAGE}, tls=certificate(not_after=EPOCH + 100))
    fetch(net)
    net.reactor.advance(1000)
    net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), certificate(now=EPOCH + 1000))
    result = fetch(net)
    assert code(result) == "CERTIFICATE_CHANGED" and result.error.pinned_expired is True


def test_not_yet_valid_refused() -> None:
    """A certificate valid only from an hour ahead is CERTIFICATE_NOT_YET_VALID; nothing sent."""
    tls = certificate(not_before=EPOCH + 3600, not_after=EPOCH + 365 * DAY)
    net, server = network({"/": PAGE}, tls=tls)
    assert code(fetch(net)) == "CERTIFICATE_NOT_YET_VALID"
    assert server.requests == [] and net.pins.all() == []


def test_expired_accepted_with_warning() -> None:
    """An expired certificate is accepted, pinned, and warned about."""
    tls = certificate(not_before=EPOCH - 400 * DAY, not_after=EPOCH - DAY)
    net, _ = network({"/": PAGE}, tls=tls)
    result = fetch(net)
    assert isinstance(result, GemtextResult)
    assert "expired" in (result.request_info.tofu_warning or "")
    assert net.pins.get("localhost", 1965) is not None


def test_expired_refused_when_configured() -> None:
    """With tofu_reject_expired an expired certificate is CERTIFICATE_EXPIRED; nothing sent."""
    tls = certificate(not_before=EPOCH - 400 * DAY, not_after=EPOCH - DAY)
    net, server = network({"/": PAGE}, tls=tls)
    result = fetch(net, via=fetcher(net, tofu_reject_expired=True))
    assert code(result) == "CERTIFICATE_EXPIRED"
    assert server.requests == [] and net.pins.all() == []


def test_other_name_is_a_warning() -> None:
    """A self-signed certificate for another name passes with a tofu_warning."""
    net, _ = network({"/": PAGE}, tls=certificate(hostname="other.example"))
    result = fetch(net)
    assert isinstance(result, GemtextResult)
    assert "another name" in (result.request_info.tofu_warning or "")


def test_stores_seen_as_the_mode_has_them_answer(answers: str) -> None:
    """The fixture reaches the fetcher: in the Deferred modes the stores answer later."""
    net, _ = network({"/": PAGE})
    via = fetcher(net)
    assert (via.pins is net.pins) is (answers == "plain")
    assert isinstance(fetch(net, via=via), GemtextResult)
    if answers != "plain":
        assert "get" in via.pins.calls and "put_new" in via.pins.calls
        assert "find" in via.identities.calls
    assert net.pins.get("localhost", 1965) is not None


class WatchedPinStore(MemoryPinStore):
    """A pin store noting how many requests the server had seen at each first-use write."""

    server: FakeGeminiServer | None = None
    seen: list[int]

    def put_new(self, pin: Pin) -> Pin | None:
        assert self.server is not None
        self.seen.append(len(self.server.requests))
        return super().put_new(pin)


def test_request_waits_for_the_first_use_write() -> None:
    """The server sees the request only after the store has taken the first-use pin."""
    store = WatchedPinStore()
    store.seen = []
    net = MemoryNetwork(pins=store)
    net.resolver.add("localhost", HOST_IP)
    store.server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}))
    assert isinstance(fetch(net), GemtextResult)
    assert store.seen == [0] and store.server.requests == [b"gemini://localhost/"]


@attrs.define
class UnavailablePinStore(MemoryPinStore):
    """A pin store whose reads (or only its writes) fail as a locked store does."""

    fail_reads: bool = True

    def get(self, host: str, port: int) -> Pin | None:
        if self.fail_reads:
            raise CertificateStoreUnavailable(message="The pin store is locked.")
        return super().get(host, port)

    def put(self, pin: object) -> None:
        raise CertificateStoreUnavailable(message="The pin store is locked.")

    def put_new(self, pin: object) -> Pin | None:
        raise CertificateStoreUnavailable(message="The pin store is locked.")


@pytest.mark.parametrize("fail_reads", [True, False], ids=["read", "write"])
def test_store_unavailable_sends_nothing(fail_reads: bool) -> None:
    """A pin store that cannot be read or written is CERTIFICATE_STORE_UNAVAILABLE; nothing sent."""
    net = MemoryNetwork(pins=UnavailablePinStore(fail_reads=fail_reads))
    net.resolver.add("localhost", HOST_IP)
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}))
    assert code(fetch(net)) == "CERTIFICATE_STORE_UNAVAILABLE"
    assert server.requests == []


class RivalPinStore(MemoryPinStore):
    """
    A store shared with another process, which pins this host between our
    handshake's read of the store and our first-use write: with C{rival}, or
    (when C{same} is true) with the very certificate we are about to pin,
    first seen a day earlier.
    """

    rival: Pin | None = None
    same: bool = False

    def put_new(self, pin: object) -> Pin | None:
        assert isinstance(pin, Pin)
        if self.same:
            self.pins[pin.host, pin.port] = attrs.evolve(pin, first_seen=pin.first_seen - DAY)
        elif self.rival is not None:
            self.pins[self.rival.host, self.rival.port] = self.rival
        self.rival, self.same = None, False
        return super().put_new(pin)


def test_first_use_loses_to_a_concurrent_pin_of_another_key() -> None:
    """
    If another process pins another certificate while our first-use
    handshake runs, ours is not written over it: CERTIFICATE_CHANGED, and
    nothing is requested.
    """
    rival = Pin(
        host="localhost",
        port=1965,
        fingerprint="sha256:" + "a" * 64,
        spki="sha256:" + "b" * 64,
        first_seen=EPOCH,
        last_seen=EPOCH,
        not_before=EPOCH - DAY,
        expires=EPOCH + 365 * DAY,
    )
    store = RivalPinStore()
    store.rival = rival
    net = MemoryNetwork(pins=store)
    net.resolver.add("localhost", HOST_IP)
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}))
    result = fetch(net)
    assert code(result) == "CERTIFICATE_CHANGED"
    assert result.error.pinned_fingerprint == rival.fingerprint
    assert server.requests == []
    assert store.all() == [rival]


def test_first_use_agrees_with_a_concurrent_pin_of_the_same_certificate() -> None:
    """Another process pinning the same certificate meanwhile changes nothing for us."""
    store = RivalPinStore()
    store.same = True
    net = MemoryNetwork(pins=store)
    net.resolver.add("localhost", HOST_IP)
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}))
    result = fetch(net)
    assert isinstance(result, GemtextResult), result
    assert server.requests == [b"gemini://localhost/"]
    (pin,) = store.all()
    assert pin.fingerprint == result.request_info.cert_fingerprint
    assert pin.first_seen == net.reactor.seconds() - DAY  # the other process's pin, kept


def test_tofu_disabled_pins_nothing() -> None:
    """With TOFU off nothing is pinned and an old pin is not consulted."""
    net, _ = network({"/": PAGE})
    stale = Pin(
        host="localhost",
        port=1965,
        fingerprint="sha256:" + "a" * 64,
        spki="sha256:" + "b" * 64,
        first_seen=1.0,
        last_seen=1.0,
        not_before=0.0,
        expires=0.0,
    )
    net.pins.put(stale)
    result = fetch(net, via=fetcher(net, tofu_enabled=False))
    assert isinstance(result, GemtextResult)
    assert net.pins.all() == [stale]


# --- client identities ------------------------------------------------------------------


def test_identity_presented_inside_scope_only() -> None:
    """An identity for /app/ is presented for /app/x, and not for / nor /apple."""
    net, server = network({"/app/x": PAGE, "/": PAGE, "/apple": PAGE})
    identity = net.run(
        Deferred.fromCoroutine(
            ops.create_identity(net.identities, "gemini://localhost/app/", EPOCH)
        )
    )
    via = fetcher(net)
    for path in ("/app/x", "/", "/apple"):
        fetch(net, "gemini://localhost" + path, via=via)
    presented, none_1, none_2 = server.client_certificates
    assert fingerprint_of(presented) == identity.fingerprint
    assert (none_1, none_2) == (None, None)


def test_identity_on_other_port_not_presented() -> None:
    """An identity scoped to one port is not presented on another."""
    net, server = network({"/": PAGE})
    net.run(
        Deferred.fromCoroutine(
            ops.create_identity(net.identities, "gemini://localhost:1966/", EPOCH)
        )
    )
    fetch(net)
    assert server.client_certificates == [None]


def test_identities_disabled_present_nothing() -> None:
    """With client certificates off no identity is presented."""
    net, server = network({"/": PAGE})
    net.run(Deferred.fromCoroutine(ops.create_identity(net.identities, URL, EPOCH)))
    fetch(net, via=fetcher(net, client_certs_enabled=False))
    assert server.client_certificates == [None]


def test_identity_over_tls_1_2_warns() -> None:
    """An identity presented over TLS 1.2 carries a client_cert_warning; TLS 1.3 none."""
    tls = RecordingServerTLS(*make_certificate(now=EPOCH), max_version=SSL.TLS1_2_VERSION)
    net, _ = network({"/": PAGE}, tls=tls)
    net.run(Deferred.fromCoroutine(ops.create_identity(net.identities, URL, EPOCH)))
    result = fetch(net)
    assert result.request_info.tls_version == "TLSv1.2"
    assert result.request_info.client_cert_warning
    net.listen_gemini(
        HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), ServerTLS(tls.certificate_pem, tls.key_pem)
    )
    again = fetch(net, refresh=True)
    assert again.request_info.tls_version == "TLSv1.3"
    assert again.request_info.client_cert_warning is None


def test_cache_keyed_by_identity() -> None:
    """A page cached without an identity is fetched afresh once one covers it, and vice versa."""
    net, server = network({"/app/x": PAGE})
    via = fetcher(net)
    url = "gemini://localhost/app/x"
    assert fetch(net, url, via=via).cache.cached is False
    assert fetch(net, url, via=via).cache.cached is True
    identity = net.run(
        Deferred.fromCoroutine(
            ops.create_identity(net.identities, "gemini://localhost/app/", EPOCH)
        )
    )
    with_identity = fetch(net, url, via=via)
    assert with_identity.cache.cached is False
    assert fingerprint_of(server.client_certificates[-1]) == identity.fingerprint
    assert fetch(net, url, via=via).cache.cached is True
    net.run(
        Deferred.fromCoroutine(
            ops.remove_identity(net.identities, "gemini://localhost/app/", identity.fingerprint)
        )
    )
    assert fetch(net, url, via=via).cache.cached is True  # the anonymous copy again
    assert len(server.requests) == 2


# --- windows and cache -----------------------------------------------------------------


def read_all(net: MemoryNetwork, url: str, via: Any) -> list[Any]:
    """Read every window of C{url}, following next_offset."""
    windows, offset = [], 0
    while True:
        result = fetch(net, url, via=via, offset=offset)
        windows.append(result)
        if result.window.next_offset is None:
            return windows
        assert result.window.next_offset > offset
        offset = result.window.next_offset


def test_big_page_read_in_windows() -> None:
    """A 1.5 MB page read window by window gives back every line exactly; one request is sent."""
    lines = [f"line {i} " + "x" * (i % 70) for i in range(33_000)]
    lines[100], lines[20_000] = "```python", "```"
    body = ("\n".join(lines) + "\n").encode()
    assert len(body) > 1_500_000
    net, server = network({"/big": b"20 text/gemini\r\n" + body})
    via = fetcher(net, max_response_size=4 * 1024 * 1024)
    windows = read_all(net, "gemini://localhost/big", via)
    assert len(windows) > 20
    assert all(isinstance(w, GemtextResult) for w in windows)
    got = [line for w in windows for line in w.lines]
    assert [line.content for line in got] == lines
    assert {line.type for line in got[100:20_001]} == {"preformat"}
    assert got[20_001].type == "text"
    assert len(server.requests) == 1
    assert [w.cache.cached for w in windows[:2]] == [False, True]
    assert all(w.window.total == len(body) for w in windows)


def test_long_line_comes_in_partial_pieces() -> None:
    """A line longer than the window comes back as partial-line text pieces, then gemtext."""
    long_line = "=> gemini://localhost/" + "y" * 230
    body = f"{long_line}\n# After\n".encode()
    net, _ = network({"/": b"20 text/gemini\r\n" + body})
    windows = read_all(net, URL, fetcher(net, max_rendered_chars=100))
    *pieces, last = windows
    assert all(isinstance(p, PartialLineResult) for p in pieces) and len(pieces) == 3
    assert "".join(p.text for p in pieces) == long_line + "\n"
    assert isinstance(last, GemtextResult)
    assert [(line.type, line.content) for line in last.lines] == [("heading1", "# After")]
    data = payload(pieces[0])
    assert data["partial_line"] is True and "document" not in data


def test_preformat_block_spans_windows() -> None:
    """A preformatted block cut by a window boundary stays preformatted in the next window."""
    body = "# Code\n```sh\n" + "".join(f"# not a heading {i}\n" for i in range(20)) + "```\n# End\n"
    net, _ = network({"/": b"20 text/gemini\r\n" + body.encode()})
    windows = read_all(net, URL, fetcher(net, max_rendered_chars=120))
    assert len(windows) > 3
    lines = [line for w in windows for line in w.lines]
    assert [line.type for line in lines] == ["heading1"] + ["preformat"] * 22 + ["heading1"]
    assert lines[1].alt_text == "sh"
    assert [line.content for line in lines] == body.splitlines()


def test_success_windows_abut() -> None:
    """Windows of a text/plain body abut exactly and rebuild the content."""
    text = "".join(f"row {i}\n" for i in range(100))
    net, _ = network({"/": b"20 text/plain\r\n" + text.encode()})
    windows = read_all(net, URL, fetcher(net, max_rendered_chars=64))
    assert "".join(w.content for w in windows) == text


def test_offset_errors() -> None:
    """An offset past the end, or any offset on a binary, is INVALID_REQUEST."""
    net, _ = network({"/": PAGE, "/bin": b"20 image/png\r\n\x89PNG"})
    assert code(fetch(net, offset=10_000)) == "INVALID_REQUEST"
    assert code(fetch(net, "gemini://localhost/bin", offset=1)) == "INVALID_REQUEST"
    assert code(fetch(net, offset=-1)) == "INVALID_REQUEST"


def test_over_size_cap_returns_first_part() -> None:
    """A body over the size cap is not an error: the part that arrived, marked size_capped."""
    body = b"".join(b"line %d\n" % i for i in range(1000))
    net, _ = network({"/": b"20 text/gemini\r\n" + body})
    result = fetch(net, via=fetcher(net, max_response_size=1024))
    assert isinstance(result, GemtextResult)
    assert result.window.size_capped and result.window.truncated
    assert payload(result)["size_capped"] is True
    assert result.incomplete is False


def test_cached_second_fetch() -> None:
    """A second fetch is served from the cache; refresh fetches afresh."""
    net, server = network({"/": PAGE})
    via = fetcher(net)
    assert fetch(net, via=via).cache.cached is False
    net.reactor.advance(5)
    cached = fetch(net, via=via)
    assert (cached.cache.cached, cached.cache.cache_age_seconds) == (True, 5)
    assert cached.request_info.timestamp == "2027-01-15T08:00:00Z"
    fresh = fetch(net, via=via, refresh=True)
    assert fresh.cache.cached is False
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "response",
    [
        b"20 text/gemini\r\n# Hello\n=> /a A\n```\npre\n```\n",
        b"20 text/plain\r\nplain words\n",
    ],
    ids=["gemtext", "success"],
)
def test_cache_hit_parses_nothing(response: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache hit reuses the window cut from the download: nothing is decoded, parsed or cut."""
    calls: list[str] = []
    for module, name in [
        (gemini_pipeline, "_decode_body"),
        (textwindow, "gemtext_lines"),
        (textwindow, "cut_text"),
        (textwindow, "fitting_lines"),
    ]:
        real = getattr(module, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    net, server = network({"/": response})
    via = fetcher(net)
    first = fetch(net, via=via)
    assert calls and "_decode_body" in calls
    calls.clear()
    second = fetch(net, via=via)
    assert calls == [] and second.cache.cached is True and len(server.requests) == 1
    assert attrs.evolve(second, cache=first.cache) == first


def test_cache_hit_ages() -> None:
    """On a kept window only the age fields change from call to call, with the clock."""
    net, server = network({"/": PAGE})
    via = fetcher(net)
    first = fetch(net, via=via)
    ages = []
    for step in (3, 120):
        net.reactor.advance(step)
        hit = fetch(net, via=via)
        assert (hit.cache.cached, hit.cache.cached_at) == (True, first.cache.cached_at)
        assert hit.request_info == first.request_info
        ages.append(hit.cache.cache_age_seconds)
    assert ages == [3, 123] and len(server.requests) == 1


def test_refresh_discards_kept_windows() -> None:
    """After refresh, every window comes from the new download, kept ones included."""
    net, server = network({"/": PAGE})
    via = fetcher(net)
    fetch(net, via=via)
    server.routes["/"] = b"20 text/gemini\r\n# Again\n"
    fresh = fetch(net, via=via, refresh=True)
    hit = fetch(net, via=via)
    assert hit.cache.cached is True
    assert [line.content for line in hit.lines] == [line.content for line in fresh.lines]
    assert [line.content for line in hit.lines] == ["# Again"]


def test_second_walk_matches_the_first() -> None:
    """A second walk of a page (windows kept or cut afresh) gives the first walk's windows."""
    page = "".join(f"# {n}\n```py\n=> /not-a-link {n}\n```\n=> /p{n} {n}\n" for n in range(400))
    net, server = network({"/": b"20 text/gemini\r\n" + page.encode()})
    via = fetcher(net, max_rendered_chars=1_000)
    first = read_all(net, URL, via)
    second = read_all(net, URL, via)
    assert len(first) > 20 and len(server.requests) == 1
    assert [attrs.evolve(w, cache=first[0].cache) for w in second] == [
        attrs.evolve(w, cache=first[0].cache) for w in first
    ]
    assert not any(
        line.type == "link" and "not-a-link" in line.content for w in first for line in w.lines
    )


@pytest.mark.parametrize(
    "page",
    ["```\na\n```\nb\n", "a\n```x\n```\n```\nb\n", "a``` \n```\n\n```", "\n\n```\n"],
)
def test_toggle_index_agrees_with_counting(page: str) -> None:
    """The toggle index gives the preformatted state counting gives, at every line start."""
    index = textwindow.toggles_of(page)
    starts = [0] + [i + 1 for i, c in enumerate(page) if c == "\n" and i + 1 < len(page)]
    for offset in starts:
        state = textwindow._preformatted
        assert state(page, offset, index) == state(page, offset, None)


def test_query_urls_never_cached() -> None:
    """A URL with a query is fetched afresh every time, window by window."""
    body = "".join(f"row {i}\n" for i in range(40)).encode()
    net, server = network({"/q": b"20 text/gemini\r\n" + body})
    via = fetcher(net, max_rendered_chars=100)
    windows = read_all(net, "gemini://localhost/q?x", via)
    assert len(windows) > 1 and all(w.cache.cached is False for w in windows)
    assert len(server.requests) == len(windows)


@pytest.mark.parametrize(
    "response",
    [b"51 gone\r\n", b"40 later\r\n", b"30 /x\r\n", b"10 say\r\n", b"60 who\r\n"],
    ids=["error", "temporary", "redirect", "input", "certificate"],
)
def test_non_content_results_never_cached(response: bytes) -> None:
    """Errors, redirects, input and certificate results are fetched afresh every time."""
    net, server = network({"/": response})
    via = fetcher(net)
    fetch(net, via=via)
    fetch(net, via=via)
    assert len(server.requests) == 2


def test_truncated_body_is_incomplete() -> None:
    """
    A body cut by a TCP close without TLS close_notify is marked incomplete
    (no_close_notify).
    """
    protocols: list[Any] = []

    @attrs.define(eq=False)
    class Recorder(FakeGeminiServer):
        def buildProtocol(self, addr: Any) -> Any:
            protocol = super().buildProtocol(addr)
            protocols.append(protocol)
            return protocol

    tls = certificate()
    net, _ = network()
    net.listen_gemini(HOST_IP, 1965, Recorder({"/": PAGE}, close=False), tls)
    d = fetcher(net).gemini(URL)
    net.flush()
    assert not d.called
    (protocol,) = protocols
    protocol.transport.transport.loseConnection()  # the TCP under TLS: no close_notify
    result = net.run(d)
    assert isinstance(result, GemtextResult)
    assert result.incomplete is True
    data = payload(result)
    assert data["incomplete"] is True and "close_notify" in data["note"]
    assert data["incomplete_reason"] == "no_close_notify"
    net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), tls)
    clean = fetch(net, via=fetcher(net))
    assert clean.incomplete is False


def test_batch_in_order() -> None:
    """A batch comes back in input order, each with its own kind."""
    net, _ = network({"/a": PAGE, "/b": b"51 no\r\n", "/c": b"10 ask\r\n"})
    urls = ["gemini://localhost/c", "gemini://localhost/a", "gemini://localhost/b"]
    results = net.run(fetcher(net).gemini_batch(urls))
    assert [type(r) for r in results] == [InputResult, GemtextResult, FetchFailure]


@pytest.mark.parametrize("size", [0, 51])
def test_batch_size_refused(size: int) -> None:
    """
    A batch of zero or more than fifty URLs is refused as a whole: its
    Deferred fails with InvalidRequest (nothing is raised on the call).
    """
    net, _ = network()
    refused = fetcher(net).gemini_batch([URL] * size)
    with pytest.raises(InvalidRequest):
        net.run(refused)
    assert net.attempts == []


# --- partial content: the deadline ----------------------------------------------------


def _held(routes: dict[str, Any]) -> tuple[MemoryNetwork, FakeGeminiServer]:
    """A network whose server answers C{routes} and then holds the connection open."""
    return network(routes, close=False)


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (PAGE, GemtextResult),
        (b"20 text/plain\r\nplain words", SuccessResult),
        (b"20 image/png\r\n\x89PNG\r\n\x1a\n", GeminiBinaryResult),
    ],
    ids=["gemtext", "success", "binary"],
)
def test_deadline_after_body_bytes_returns_them(response: bytes, kind: type) -> None:
    """
    A server that sends a response and holds the connection (egsam's "no
    close"): at the deadline the body that arrived comes back as its kind,
    marked incomplete (deadline) in the result and the payload, and is not
    cached: the next call fetches again.
    """
    net, server = _held({"/": response})
    via = fetcher(net, timeout_seconds=5)
    start = net.reactor.seconds()
    d = via.gemini(URL)
    net.flush()
    net.reactor.advance(4.9)
    net.flush()
    assert not d.called
    result = net.run(d, advance=0.2)
    assert net.reactor.seconds() - start == pytest.approx(5.1)
    assert isinstance(result, kind), result
    assert result.incomplete and result.incomplete_reason == "deadline"
    data = payload(result)
    GeminiPayload.model_validate(data)
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    assert "deadline" in data["note"]
    net.run(via.gemini(URL), advance=1)
    assert len(server.requests) == 2


def test_deadline_keeps_the_lines_that_arrived() -> None:
    """The gemtext that arrived before the deadline is parsed as it stands."""
    net, _ = _held({"/": PAGE})
    result = net.run(fetcher(net, timeout_seconds=2).gemini(URL), advance=1)
    assert isinstance(result, GemtextResult)
    assert result.lines == fetch(*network({"/": PAGE})[:1]).lines


def test_success_header_without_body_is_a_timeout() -> None:
    """A 20 header with no body byte by the deadline is TIMEOUT, not an empty page."""
    net, _ = _held({"/": b"20 text/gemini\r\n"})
    result = net.run(fetcher(net, timeout_seconds=2).gemini(URL), advance=1)
    assert code(result) == "TIMEOUT"


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (b"10 Your name?\r\n", "input"),
        (b"30 /elsewhere\r\n", "redirect"),
        (b"51 Not here\r\n", "error"),
        (b"60 Who are you?\r\n", "certificate"),
    ],
)
def test_status_without_body_is_not_waited_on(response: bytes, kind: str) -> None:
    """A status other than a success is the whole response, even if the server holds on."""
    net, _ = _held({"/": response})
    start = net.reactor.seconds()
    result = net.run(fetcher(net, timeout_seconds=5).gemini(URL), advance=1)
    assert net.reactor.seconds() == start
    assert payload(result)["kind"] == kind
    assert "incomplete" not in payload(result)


def test_deadline_in_robots_probe_keeps_no_partial_policy() -> None:
    """A robots.txt that stalls halfway is never read as a policy: the fetch is TIMEOUT."""
    net, server = _held({"/robots.txt": b"20 text/plain\r\nUser-agent: *\nDisallow: /", "/": PAGE})
    via = fetcher(net, respect_robots_txt=True, timeout_seconds=3)
    result = net.run(via.gemini(URL), advance=0.5)
    assert code(result) == "TIMEOUT"
    assert [line.split(b"/", 3)[-1] for line in server.requests] == [b"robots.txt"]


@pytest.mark.parametrize(
    ("meta", "body"),
    [("text/gemini", b"# Hi\r\n=> /a A\r\n"), ("text/plain; charset=latin-1", b"caf\xe9\r\n")],
)
def test_decode_consumes_the_raw_body(meta: str, body: bytes) -> None:
    """Decoding empties the handed-over body: only the decoded text is kept."""
    from gophergem.client.gemini import GeminiResponse
    from gophergem.wire import gemini as wire

    response = GeminiResponse(wire.ResponseHeader(20, meta), bytearray(body), False, True)
    text, _, _, _ = gemini_pipeline._decode_body(response, wire.parse_mime(meta))
    assert response.body == b""
    assert "\r" not in text


# --- a capsule that refuses the host name it was asked by (status 53) ---------------------


@pytest.mark.parametrize("robots", [True, False])
def test_refused_host_name_names_the_certificates(robots: bool) -> None:
    """
    A capsule that answers only its own name answers 53 to a request for
    another (here its address): the error says the capsule refused that
    host name and which names its certificate carries, whether the 53 came
    to the robots.txt probe or to the page, and not that robots.txt is
    unavailable or to try again in a minute.
    """
    net = MemoryNetwork()
    tls = certificate(hostname="capsule.example")
    net.listen_gemini("127.0.0.1", 1965, FakeGeminiServer({}, missing=b"53 No proxying\r\n"), tls)
    result = fetch(
        net,
        "gemini://127.0.0.1/",
        via=fetcher(net, respect_robots_txt=robots, allow_local_hosts=True),
    )
    assert code(result) == "PERMANENT_ERROR"
    error = result.error
    assert error.status == 53
    assert "refused" in error.message and "127.0.0.1" in error.message
    assert "capsule.example" in error.message
    assert "robots.txt" not in error.message and error.retry_after_seconds is None
    assert "gemini://capsule.example/" in (error.next_step or "")


# --- an answer to a prompt this process never saw (the console script) --------------------


def _asking(status: int) -> dict[str, Any]:
    def ask(url: str) -> bytes:
        if "?" not in url:
            return f"{status} Your answer?\r\n".encode()
        return b"20 text/plain\r\nYou said: " + url.split("?", 1)[1].encode() + b"\n"

    return {"/ask": ask}


def test_learning_the_prompt_shows_an_answer_to_a_10() -> None:
    """
    With learn_prompt, an answer to a URL whose prompt was never seen asks
    the URL without the answer first: a 10 means the answer is shown as the
    capsule echoes it, for the price of one more request.
    """
    net, server = network(_asking(10))
    result = fetch(net, "gemini://localhost/ask", input="hello world", learn_prompt=True)
    assert result.content == "You said: hello%20world\n"
    assert result.request_info.input_redacted is None
    assert server.requests == [b"gemini://localhost/ask", b"gemini://localhost/ask?hello%20world"]


def test_learning_the_prompt_keeps_an_answer_to_an_11_secret() -> None:
    """With learn_prompt, an answer to an 11 stays a secret: scrubbed, never shown."""
    net, server = network(_asking(11))
    result = fetch(net, "gemini://localhost/ask", input="hunter2", learn_prompt=True)
    assert "hunter2" not in json.dumps(payload(result))
    assert result.request_info.input_redacted == 1
    assert len(server.requests) == 2


@pytest.mark.parametrize("first", [b"20 text/plain\r\nno prompt here\n", b"51 Not found\r\n"])
def test_learning_nothing_keeps_the_answer_secret(first: bytes) -> None:
    """A URL that does not prompt without the answer (a 20, a 51) leaves the answer a secret."""

    def page(url: str) -> bytes:
        return first if "?" not in url else b"20 text/plain\r\nYou said: hunter2\n"

    net, _ = network({"/ask": page})
    result = fetch(net, "gemini://localhost/ask", input="hunter2", learn_prompt=True)
    assert result.content == "You said: [redacted]\n"


def test_a_known_prompt_is_not_asked_again() -> None:
    """A prompt seen already (10 or 11) costs no second request, learn_prompt or not."""
    net, server = network(_asking(10))
    via = fetcher(net)
    assert isinstance(fetch(net, "gemini://localhost/ask", via=via), InputResult)
    result = fetch(net, "gemini://localhost/ask", via=via, input="hi", learn_prompt=True)
    assert result.content == "You said: hi\n"
    assert len(server.requests) == 2


def test_without_learning_an_unseen_prompt_stays_secret() -> None:
    """Without learn_prompt (the MCP tools), an answer to a prompt never seen is scrubbed."""
    net, server = network(_asking(10))
    result = fetch(net, "gemini://localhost/ask", input="hello")
    assert result.content == "You said: [redacted]\n"
    assert len(server.requests) == 1
