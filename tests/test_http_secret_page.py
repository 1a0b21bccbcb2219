"""
Tests for L{gophergem.http.secret_page}: the one-time page that takes a
capsule's sensitive input out of the model's sight.

HTTP goes through a real C{twisted.web} site over an in-memory transport;
time is a L{Clock}.  One test serves the page on a real loopback port.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet.address import IPv4Address, IPv6Address, UNIXAddress
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.interfaces import IListeningPort, IStreamServerEndpoint
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.web.server import Site
from zope.interface import implementer
from zope.interface.verify import verifyObject

from gophergem.errors import InputTimeout, UserDeclined
from gophergem.http.discovery import Directory
from gophergem.http.origin import transport_security
from gophergem.http.secret_page import (
    MAX_FORM_SIZE,
    FormError,
    LoopbackListener,
    SecretForm,
    SecretPages,
    parse_form,
)
from tests.helpers.web import http_exchange, loop_reactor, read_head, run

LOCAL = IPv4Address("TCP", "127.0.0.1", 8000)
PEER = IPv4Address("TCP", "127.0.0.1", 40000)
FORM = "application/x-www-form-urlencoded"


def counting_random() -> Callable[[int], bytes]:
    """A random source giving different, predictable bytes on every call."""
    counter = itertools.count(1)
    return lambda n: next(counter).to_bytes(n, "big")


@attrs.define
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def exchange(
    site: Site,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    peer: Any = PEER,
) -> Response:
    """Send one request to C{site} from C{peer}; return the answer."""
    transport = StringTransport(hostAddress=LOCAL, peerAddress=peer)
    channel = site.buildProtocol(peer)
    channel.makeConnection(transport)
    given_headers = {"Host": "127.0.0.1:8000", **(headers or {})}
    lines = [f"{method} {path} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in given_headers.items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    channel.dataReceived(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    head, _, rest = transport.value().partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    found = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    channel.connectionLost(Failure(ConnectionError("done")))
    return Response(int(status_line.split()[1]), found, rest)


@attrs.define
class Setup:
    clock: Clock
    pages: SecretPages
    site: Site

    def post(self, path: str, fields: dict[str, str], **kwargs: Any) -> Response:
        body = urlencode(fields).encode("ascii")
        headers = {"Content-Type": FORM, **kwargs.pop("headers", {})}
        return exchange(self.site, "POST", path, body, headers=headers, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Response:
        return exchange(self.site, "GET", path, **kwargs)


def setup(ttl: float = 300.0, **kwargs: Any) -> Setup:
    clock = Clock()
    pages = SecretPages(clock, ttl=ttl, random=counting_random(), **kwargs)
    return Setup(clock, pages, Site(pages.resource, reactor=clock))


def failure_of(d: Deferred[Any]) -> BaseException:
    box: list[Failure] = []
    d.addErrback(box.append)
    assert box, "the Deferred has not failed"
    return box[0].value


def result_of(d: Deferred[Any]) -> Any:
    box: list[Any] = []
    d.addCallback(box.append)
    assert box, "the Deferred has not fired"
    return box[0]


# --- SecretPages ------------------------------------------------------------------------


def test_token_is_32_random_bytes_in_urlsafe_base64() -> None:
    """A token is the random source's 32 bytes, URL-safe base64 without padding."""
    pages = SecretPages(Clock(), random=lambda n: b"\xfb" * n)
    token, _ = pages.open("Password?", "gemini://example.org/")
    assert token == base64.urlsafe_b64encode(b"\xfb" * 32).rstrip(b"=").decode()
    assert len(token) == 43 and "=" not in token
    assert pages.pending() == 1


def test_default_tokens_differ() -> None:
    """With the default random source, two pages get different tokens."""
    pages = SecretPages(Clock())
    first, _ = pages.open("p", "gemini://a/")
    second, _ = pages.open("p", "gemini://a/")
    assert first != second
    assert pages.pending() == 2


def test_a_repeating_random_source_is_refused() -> None:
    """A random source that repeats itself cannot make two pages share a token."""
    pages = SecretPages(Clock(), random=lambda n: b"\x00" * n)
    pages.open("p", "gemini://a/")
    with pytest.raises(RuntimeError):
        pages.open("p", "gemini://a/")
    assert pages.pending() == 1


def test_page_expires_with_input_timeout() -> None:
    """After ttl seconds the answer fails with INPUT_TIMEOUT and the page is gone."""
    s = setup(ttl=60)
    token, answer = s.pages.open("Password?", "gemini://example.org/")
    s.clock.advance(59)
    assert not answer.called
    s.clock.advance(1)
    error = failure_of(answer)
    assert isinstance(error, InputTimeout)
    assert error.code == "INPUT_TIMEOUT"
    assert "within 1 minute;" in error.message  # the count agrees with its noun
    assert s.pages.pending() == 0
    assert s.get(f"/{token}").status == 404


def test_cancel_declines() -> None:
    """cancel(token) fails the answer with USER_DECLINED and forgets the page."""
    s = setup()
    token, answer = s.pages.open("Password?", "gemini://example.org/")
    s.pages.cancel(token)
    error = failure_of(answer)
    assert isinstance(error, UserDeclined) and error.code == "USER_DECLINED"
    assert s.pages.pending() == 0
    assert s.clock.getDelayedCalls() == []
    s.pages.cancel(token)  # a second time, and unknown tokens, are ignored
    s.pages.cancel("nope")


def test_cancelling_the_deferred_forgets_the_page() -> None:
    """A caller that stops waiting (Deferred.cancel) leaves no page and no timer."""
    s = setup()
    token, answer = s.pages.open("Password?", "gemini://example.org/")
    answer.cancel()
    assert isinstance(failure_of(answer), CancelledError)
    assert s.pages.pending() == 0
    assert s.clock.getDelayedCalls() == []
    assert s.get(f"/{token}").status == 404


def test_resource_provides_iresource() -> None:
    """The pages' resource is an IResource, and a leaf."""
    from twisted.web.resource import IResource

    pages = SecretPages(Clock())
    assert verifyObject(IResource, pages.resource)
    assert pages.resource.isLeaf


# --- GET --------------------------------------------------------------------------------


def test_get_shows_the_form() -> None:
    """GET /<token> is a UTF-8 HTML page with the URL, the prompt and a password field."""
    s = setup()
    token, _ = s.pages.open("Your passphrase, s'il vous plaît", "gemini://example.org/login")
    response = s.get(f"/{token}")
    assert response.status == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    text = response.text
    assert "gemini://example.org/login" in text
    assert "Your passphrase, s&#x27;il vous plaît" in text
    assert '<input type="password" name="answer" autocomplete="off"' in text
    assert 'value="cancel"' in text and ">Cancel</button>" in text
    assert '<form method="post"' in text and "action=" not in text.split("<form")[1][:40]
    assert "<script" not in text.lower()


def test_get_headers_keep_the_page_private() -> None:
    """The form page is not cached, framed, sniffed, referred, and runs no script."""
    s = setup()
    token, _ = s.pages.open("p", "gemini://example.org/")
    headers = s.get(f"/{token}").headers
    assert headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    csp = [part.strip() for part in headers["content-security-policy"].split(";")]
    assert "default-src 'none'" in csp
    assert "form-action 'self'" in csp
    assert "style-src 'unsafe-inline'" in csp
    assert not any(part.startswith("script-src") for part in csp)


def test_everything_shown_is_html_escaped() -> None:
    """Markup in the prompt or the URL is shown as text, never run."""
    s = setup()
    token, _ = s.pages.open(
        '<script>alert(1)</script>"><img src=x>', 'gemini://e.org/"><script>x</script>'
    )
    text = s.get(f"/{token}").text
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x&gt;" in text


def test_get_does_not_use_the_page() -> None:
    """Showing the form (even twice) leaves the page pending."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    assert s.get(f"/{token}").status == 200
    assert s.get(f"/{token}").status == 200
    assert s.pages.pending() == 1 and not answer.called


# --- POST -------------------------------------------------------------------------------


def test_post_fires_the_answer_once() -> None:
    """POST answer=... fires the Deferred with the answer and forgets the token."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    response = s.post(f"/{token}", {"answer": "hünter2 & =;", "action": "send"})
    assert response.status == 200
    assert "Sent to the capsule. You can close this page." in response.text
    assert result_of(answer) == "hünter2 & =;"
    assert s.pages.pending() == 0
    assert s.clock.getDelayedCalls() == []
    assert s.post(f"/{token}", {"answer": "again"}).status == 404
    assert s.get(f"/{token}").status == 404


def test_enter_without_the_button_sends() -> None:
    """A form with only the answer field (no action) is a send."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    assert s.post(f"/{token}", {"answer": ""}).status == 200
    assert result_of(answer) == ""


def test_the_answer_is_not_echoed_or_kept() -> None:
    """The answer appears in no response and is held by nothing after firing."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    secret = "correct-horse-battery-staple"
    response = s.post(f"/{token}", {"answer": secret})
    assert secret.encode() not in response.body
    assert secret not in repr(s.pages)
    assert secret not in repr(parse_form(b"answer=" + secret.encode()))
    assert result_of(answer) == secret


def test_cancel_button_declines() -> None:
    """The Cancel button (action=cancel) declines, whatever was typed."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    response = s.post(f"/{token}", {"answer": "typed", "action": "cancel"})
    assert response.status == 200
    assert "Cancelled." in response.text
    assert isinstance(failure_of(answer), UserDeclined)
    assert s.pages.pending() == 0


@pytest.mark.parametrize(
    "body",
    [b"answer=a&answer=b", b"action=delete&answer=x", b"other=1", b"answer=%FF", "ä=1".encode()],
)
def test_malformed_form_is_400_and_keeps_the_page(body: bytes) -> None:
    """A form the page could not have sent gets 400; the page still waits."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    response = exchange(s.site, "POST", f"/{token}", body, headers={"Content-Type": FORM})
    assert response.status == 400
    assert not answer.called and s.pages.pending() == 1


def test_post_that_is_not_a_form_is_415() -> None:
    """A POST body that is not URL-encoded form data gets 415; the page still waits."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    response = exchange(
        s.site, "POST", f"/{token}", b'{"answer":"x"}', headers={"Content-Type": "application/json"}
    )
    assert response.status == 415
    assert not answer.called


def test_form_type_with_charset_is_accepted() -> None:
    """Content-Type parameters (a charset) do not matter."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    response = s.post(
        f"/{token}", {"answer": "x"}, headers={"Content-Type": FORM + "; charset=UTF-8"}
    )
    assert response.status == 200
    assert result_of(answer) == "x"


def test_oversize_body_is_413() -> None:
    """A body over 64 KiB gets 413 and does not use the page."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://example.org/")
    response = s.post(f"/{token}", {"answer": "x" * MAX_FORM_SIZE})
    assert response.status == 413
    assert not answer.called


# --- what is refused ------------------------------------------------------------------------


def test_unknown_tokens_all_look_alike() -> None:
    """Unknown, used, expired and malformed tokens get the same 404 page."""
    s = setup(ttl=10)
    used, _ = s.pages.open("p", "gemini://a/")
    s.post(f"/{used}", {"answer": "x"})
    expired, _ = s.pages.open("p", "gemini://a/")
    s.clock.advance(10)
    shaped = "A" * 43
    answers = [
        s.get(path)
        for path in (f"/{used}", f"/{expired}", f"/{shaped}", "/", "/short", f"/{used}/x", "/%00")
    ]
    assert {r.status for r in answers} == {404}
    assert len({r.body for r in answers}) == 1


@pytest.mark.parametrize(
    "peer",
    [
        IPv4Address("TCP", "127.0.0.1", 1),
        IPv4Address("TCP", "127.8.9.10", 1),
        IPv6Address("TCP", "::1", 1),
        IPv6Address("TCP", "::ffff:127.0.0.1", 1),
    ],
)
def test_loopback_peers_are_served(peer: Any) -> None:
    """Peers in 127.0.0.0/8 and ::1 (IPv4-mapped too) are served."""
    s = setup()
    token, _ = s.pages.open("p", "gemini://a/")
    assert s.get(f"/{token}", peer=peer).status == 200


@pytest.mark.parametrize(
    "peer",
    [
        IPv4Address("TCP", "192.168.1.2", 1),
        IPv4Address("TCP", "10.0.0.1", 1),
        IPv6Address("TCP", "::ffff:10.0.0.1", 1),
        IPv6Address("TCP", "2001:db8::1", 1),
        UNIXAddress(b"/tmp/socket"),
    ],
)
def test_other_peers_are_refused(peer: Any) -> None:
    """Any peer that is not loopback gets 403, and the page is untouched."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://a/")
    assert s.get(f"/{token}", peer=peer).status == 403
    assert s.post(f"/{token}", {"answer": "x"}, peer=peer).status == 403
    assert not answer.called


@pytest.mark.parametrize("host", ["evil.example:8000", "127.0.0.1:8001", "localhost:9", ""])
def test_foreign_host_is_421(host: str) -> None:
    """A Host other than the listener's address and port (DNS rebinding) gets 421."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://a/")
    assert s.get(f"/{token}", headers={"Host": host}).status == 421
    assert s.post(f"/{token}", {"answer": "x"}, headers={"Host": host}).status == 421
    assert not answer.called


def test_localhost_host_is_served() -> None:
    """Host: localhost:<port> is the listener's own too."""
    s = setup()
    token, _ = s.pages.open("p", "gemini://a/")
    assert s.get(f"/{token}", headers={"Host": "localhost:8000"}).status == 200


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://127.0.0.1:8001", "https://127.0.0.1:8000"]
)
def test_foreign_origin_is_403(origin: str) -> None:
    """A POST from another origin gets 403, and the page still waits."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://a/")
    response = s.post(f"/{token}", {"answer": "x"}, headers={"Origin": origin})
    assert response.status == 403
    assert not answer.called and s.pages.pending() == 1


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", "http://localhost:8000", "null"])
def test_own_origin_is_accepted(origin: str) -> None:
    """
    The page's own origin is accepted, and so is C{null}: what a browser
    sends for the page's form under C{Referrer-Policy: no-referrer}.
    """
    s = setup()
    token, answer = s.pages.open("p", "gemini://a/")
    assert s.post(f"/{token}", {"answer": "x"}, headers={"Origin": origin}).status == 200
    assert result_of(answer) == "x"


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_other_methods_are_405(method: str) -> None:
    """Methods other than GET and POST get 405 naming the two."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://a/")
    response = exchange(s.site, method, f"/{token}")
    assert response.status == 405
    assert response.headers["allow"] == "GET, POST"
    assert not answer.called


def test_refusals_carry_the_private_headers() -> None:
    """Error pages are HTML with the same no-store, no-frame headers."""
    s = setup()
    response = s.get("/nothing")
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-frame-options"] == "DENY"


def test_given_security_settings_are_used() -> None:
    """Mounted in a daemon, the site's own Host names are accepted."""
    s = setup(security=transport_security(8000, ["gophergem.example"]))
    token, _ = s.pages.open("p", "gemini://a/")
    assert s.get(f"/{token}", headers={"Host": "gophergem.example"}).status == 200
    assert s.get(f"/{token}", headers={"Host": "other.example"}).status == 421


def test_checks_stay_on_when_settings_switch_them_off() -> None:
    """Settings without DNS-rebinding protection do not switch the page's checks off."""
    security = transport_security(8000).model_copy(
        update={"enable_dns_rebinding_protection": False}
    )
    s = setup(security=security)
    token, _ = s.pages.open("p", "gemini://a/")
    assert s.get(f"/{token}", headers={"Host": "evil.example"}).status == 421


def test_works_mounted_under_a_path() -> None:
    """Mounted at /input, pages live at /input/<token>, and only there."""
    clock = Clock()
    pages = SecretPages(clock, random=counting_random())
    root = Directory()
    root.putChild(b"input", pages.resource)
    site = Site(root, reactor=clock)
    token, answer = pages.open("p", "gemini://a/")
    assert exchange(site, "GET", f"/input/{token}").status == 200
    assert exchange(site, "GET", f"/{token}").status == 404
    assert exchange(site, "GET", f"/input/{token}/more").status == 404
    body = urlencode({"answer": "x"}).encode()
    posted = exchange(site, "POST", f"/input/{token}", body, headers={"Content-Type": FORM})
    assert posted.status == 200
    assert result_of(answer) == "x"


# --- hypothesis -----------------------------------------------------------------------------


@given(st.binary(max_size=300))
def test_parse_form_raises_only_form_error(body: bytes) -> None:
    """Any body gives a SecretForm or a FormError, nothing else."""
    try:
        form = parse_form(body)
    except FormError:
        return
    assert form.cancel or isinstance(form.answer, str)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_parse_form_round_trips_any_answer(text: str) -> None:
    """Whatever the browser encodes as the answer comes back exactly."""
    form = parse_form(urlencode({"answer": text, "action": "send"}).encode("ascii"))
    assert form == SecretForm(cancel=False, answer=text)


_METHODS = st.sampled_from(["GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "BREW"])
_SAFE = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=":"),
    min_size=1,
    max_size=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    method=_METHODS,
    path=st.one_of(
        st.text(max_size=60).map(lambda t: "/" + quote(t, safe="/?&=%")),
        st.just("TOKEN"),
    ),
    body=st.binary(max_size=200),
    headers=st.dictionaries(
        st.sampled_from(["Content-Type", "Origin", "Host", "X-Other", "Content-Encoding"]),
        st.one_of(_SAFE, st.just(FORM), st.just("null"), st.just("127.0.0.1:8000")),
        max_size=4,
    ),
)
def test_no_request_makes_the_resource_fail(
    method: str, path: str, body: bytes, headers: dict[str, str]
) -> None:
    """Any request gets a 2xx or 4xx answer (never a 500): the resource never raises."""
    s = setup()
    token, answer = s.pages.open("p", "gemini://a/")
    if path == "TOKEN":
        path = f"/{token}"
    response = exchange(s.site, method, path, body, headers=headers)
    assert 200 <= response.status < 500, response
    if answer.called:
        assert (method, response.status) == ("POST", 200)
        answer.addErrback(lambda _: None)


# --- LoopbackListener ------------------------------------------------------------------------


@implementer(IListeningPort)
@attrs.define
class FakePort:
    address: IPv4Address
    stopped: bool = False

    def startListening(self) -> None:
        pass

    def stopListening(self) -> Deferred[None]:
        self.stopped = True
        return succeed(None)

    def getHost(self) -> IPv4Address:
        return self.address


@implementer(IStreamServerEndpoint)
@attrs.define
class FakeEndpoint:
    ports: list[FakePort] = attrs.Factory(list)
    factories: list[Any] = attrs.Factory(list)
    pending: list[Deferred[FakePort]] = attrs.Factory(list)
    hold: bool = False
    broken: bool = False

    def listen(self, factory: Any) -> Deferred[FakePort]:
        self.factories.append(factory)
        if self.broken:
            return fail(OSError("no port for you"))
        port = FakePort(IPv4Address("TCP", "127.0.0.1", 5000 + len(self.ports)))
        self.ports.append(port)
        if self.hold:
            d: Deferred[FakePort] = Deferred()
            self.pending.append(d)
            return d
        return succeed(port)


def listener_setup(**kwargs: Any) -> tuple[Clock, SecretPages, FakeEndpoint, LoopbackListener]:
    clock = Clock()
    pages = SecretPages(clock, ttl=30, random=counting_random())
    endpoint = FakeEndpoint(**kwargs)
    return clock, pages, endpoint, LoopbackListener(pages, clock, endpoint)  # type: ignore[arg-type]


def test_listener_gives_page_urls() -> None:
    """open() listens and gives base URL + token; a second page shares the listener."""
    _, pages, endpoint, listener = listener_setup()
    assert verifyObject(IStreamServerEndpoint, endpoint)
    url, _ = result_of(listener.open("p", "gemini://a/"))
    token = url.rsplit("/", 1)[1]
    assert url == f"http://127.0.0.1:5000/{token}"
    url2, _ = result_of(listener.open("p", "gemini://b/"))
    assert url2.startswith("http://127.0.0.1:5000/") and url2 != url
    assert len(endpoint.ports) == 1 and listener.listening
    assert endpoint.factories[0].resource is pages.resource


def test_listener_stops_when_nothing_is_pending_and_starts_again() -> None:
    """The port closes when the last page settles, and opens again on the next page."""
    clock, pages, endpoint, listener = listener_setup()
    _, first = result_of(listener.open("p", "gemini://a/"))
    url, second = result_of(listener.open("p", "gemini://b/"))
    pages.cancel(url.rsplit("/", 1)[1])
    failure_of(second)
    assert not endpoint.ports[0].stopped
    clock.advance(30)  # the first page expires
    assert isinstance(failure_of(first), InputTimeout)
    assert endpoint.ports[0].stopped and not listener.listening
    url3, _ = result_of(listener.open("p", "gemini://c/"))
    assert url3.startswith("http://127.0.0.1:5001/")
    assert listener.listening


def test_listener_waits_for_the_port() -> None:
    """Pages opened while the port is being opened share it, and get their URLs once it is."""
    _, _, endpoint, listener = listener_setup(hold=True)
    first = listener.open("p", "gemini://a/")
    second = listener.open("p", "gemini://b/")
    assert not first.called and len(endpoint.factories) == 1
    endpoint.pending[0].callback(endpoint.ports[0])
    assert result_of(first)[0].startswith("http://127.0.0.1:5000/")
    assert result_of(second)[0].startswith("http://127.0.0.1:5000/")


def test_listener_stops_at_once_when_pages_settled_while_opening() -> None:
    """A port that opens after every page settled is closed again."""
    _, pages, endpoint, listener = listener_setup(hold=True)
    opened = listener.open("p", "gemini://a/")
    token = next(iter(pages._pages))
    pages.cancel(token)
    endpoint.pending[0].callback(endpoint.ports[0])
    _, answer = result_of(opened)
    assert isinstance(failure_of(answer), UserDeclined)
    assert endpoint.ports[0].stopped and not listener.listening


def test_listener_failure_cancels_the_page() -> None:
    """When the port cannot open, open() fails and leaves no page behind."""
    _, pages, _, listener = listener_setup(broken=True)
    error = failure_of(listener.open("p", "gemini://a/"))
    assert isinstance(error, OSError)
    assert pages.pending() == 0


def test_listener_site_caps_bodies_while_they_arrive() -> None:
    """The listener's site refuses a body over 64 KiB before buffering it."""
    _, _, endpoint, listener = listener_setup()
    url, answer = result_of(listener.open("p", "gemini://a/"))
    site = endpoint.factories[0]
    token = url.rsplit("/", 1)[1]
    response = exchange(
        site,
        "POST",
        f"/{token}",
        b"answer=" + b"x" * MAX_FORM_SIZE,
        headers={"Content-Type": FORM, "Host": "127.0.0.1:8000"},
    )
    assert response.status == 413
    assert not answer.called


def test_real_listener_on_loopback() -> None:
    """On a real 127.0.0.1 port, the browser's GET and POST reach the waiting Deferred."""

    async def body() -> None:
        with loop_reactor() as reactor:
            pages = SecretPages(reactor)
            listener = LoopbackListener(pages, reactor)
            loop = asyncio.get_running_loop()
            url, answer = await listener.open("Password?", "gemini://a/").asFuture(loop)
            assert url.startswith("http://127.0.0.1:")
            port = int(url.split(":")[2].split("/")[0])
            path = "/" + url.rsplit("/", 1)[1]
            host = f"127.0.0.1:{port}"
            reader, writer = await http_exchange(
                port, f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
            )
            status, _ = await read_head(reader)
            assert status == 200
            assert b'type="password"' in await reader.read()
            writer.close()
            form = b"answer=s%C3%A9cret&action=send"
            reader, writer = await http_exchange(
                port,
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: null\r\n"
                f"Content-Type: {FORM}\r\nContent-Length: {len(form)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + form,
            )
            status, _ = await read_head(reader)
            assert status == 200
            await reader.read()
            writer.close()
            assert await answer.asFuture(loop) == "sécret"
            assert not listener.listening

    run(body)
