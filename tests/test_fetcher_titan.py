"""
Tests for L{gophergem.fetcher.titan} and L{gophergem.fetcher.Fetcher.titan_upload}:
uploads through the Gemini pipeline to L{gophergem.testing.titan.TitanServer}
on an in-memory network with real OpenSSL at both ends (no sockets, no real
time): off by default, capped before dialling, the exact bytes sent, Gemini's
pins (a changed key uploads nothing) and identities.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol
from twisted.protocols.tls import TLSMemoryBIOFactory

from gophergem.config import Config, TitanConfig
from gophergem.errors import BlockedError, InvalidRequest
from gophergem.fetcher.titan import TitanUpload, plan_upload
from gophergem.results import FetchFailure, RedirectResult
from gophergem.testing import EPOCH, MemoryNetwork, ServerTLS, make_certificate
from gophergem.testing.titan import TitanServer
from gophergem.trust import operations as ops
from gophergem.wire.titan import TitanURL

ADDRESS = "192.0.2.65"  # memory reactor only: never dialled
URL = "titan://localhost/notes/a.gmi"


def world(
    *, tls: ServerTLS | None = None, titan: TitanConfig | None = None, **gemini: Any
) -> tuple[MemoryNetwork, TitanServer, Any]:
    net = MemoryNetwork()
    net.resolver.add("localhost", ADDRESS)
    server = serve(net, tls)
    config = Config(titan=titan or TitanConfig(allowed_hosts=frozenset({"localhost"})))
    return net, server, net.fetcher(config, gemini=gemini)


def serve(net: MemoryNetwork, tls: ServerTLS | None = None) -> TitanServer:
    server = TitanServer(clock=net.reactor, tls=tls or certificate())
    net.listen(ADDRESS, 1965, server.wire_factory())
    return server


def certificate() -> ServerTLS:
    return ServerTLS(*make_certificate("localhost", now=EPOCH))


def upload(net: MemoryNetwork, fetcher: Any, content: bytes, **options: Any) -> Any:
    return net.run(fetcher.titan_upload(options.pop("url", URL), content, **options))


def code(result: Any) -> str:
    assert isinstance(result, FetchFailure), result
    return result.error.code


def test_upload_sends_exactly_the_bytes_size_mime_and_token() -> None:
    """The server receives the content, its size, the MIME type and the token."""
    net, server, fetcher = world()
    result = upload(net, fetcher, b"# Hello\n", mime="text/gemini", token="s3cret")
    [received] = server.uploads
    assert (received.path, received.size, received.mime, received.token) == (
        "/notes/a.gmi",
        8,
        "text/gemini",
        "s3cret",
    )
    assert received.content == b"# Hello\n"
    assert isinstance(result, RedirectResult)
    assert (result.new_url, result.cross_host) == ("gemini://localhost/notes/a.gmi", False)
    info = result.request_info
    assert (info.url, info.host, info.port, info.path) == (URL, "localhost", 1965, "/notes/a.gmi")
    assert "s3cret" not in repr(result)
    assert info.cert_fingerprint is not None  # pinned on first use, as Gemini


def test_parameters_on_the_url_are_replaced() -> None:
    """A link's own ;size/;mime/;token are dropped for the upload's."""
    net, server, fetcher = world()
    upload(net, fetcher, b"abc", url=URL + ";size=99;mime=image/png;token=theirs")
    [received] = server.uploads
    assert (received.size, received.mime, received.token) == (3, None, None)


def test_off_by_default_nothing_dialled() -> None:
    """Without TITAN_ALLOWED_HOSTS every upload is BLOCKED before any connection."""
    net, server, fetcher = world(titan=TitanConfig())
    result = upload(net, fetcher, b"x")
    assert code(result) == "BLOCKED"
    assert "TITAN_ALLOWED_HOSTS" in result.error.message
    assert (net.attempts, server.uploads) == ([], [])


def test_host_not_named_is_blocked() -> None:
    """A host TITAN_ALLOWED_HOSTS does not name is BLOCKED, nothing dialled."""
    net, _, fetcher = world(titan=TitanConfig(allowed_hosts=frozenset({"other.example"})))
    result = upload(net, fetcher, b"x")
    assert code(result) == "BLOCKED" and "does not name" in result.error.message
    assert net.attempts == []


def test_over_the_cap_refused_before_dialling() -> None:
    """An upload over TITAN_MAX_UPLOAD_BYTES is refused with nothing dialled; at the cap it goes."""
    titan = TitanConfig(allowed_hosts=frozenset({"localhost"}), max_upload_bytes=4)
    net, server, fetcher = world(titan=titan)
    result = upload(net, fetcher, b"12345")
    assert code(result) == "BLOCKED" and "TITAN_MAX_UPLOAD_BYTES" in result.error.message
    assert net.attempts == []
    assert isinstance(upload(net, fetcher, b"1234"), RedirectResult)
    assert [u.size for u in server.uploads] == [4]


def test_gemini_policy_of_the_host_applies() -> None:
    """GEMINI_ALLOWED_HOSTS and the address policy hold for uploads too."""
    net, _, fetcher = world(allowed_hosts=frozenset({"other.example"}))
    assert code(upload(net, fetcher, b"x")) == "BLOCKED"
    net, _, fetcher = world(allow_local_hosts=False)
    net.resolver.add("localhost", "127.0.0.1")
    assert code(upload(net, fetcher, b"x")) == "BLOCKED"
    assert net.attempts == []


def test_changed_key_is_certificate_changed_and_nothing_uploaded() -> None:
    """A new key at a pinned host: CERTIFICATE_CHANGED, and not one byte of the upload sent."""
    net, first, fetcher = world()
    upload(net, fetcher, b"one")
    pin = net.pins.get("localhost", 1965)
    second = serve(net)  # the same host, restarted with a new key
    result = upload(net, fetcher, b"two")
    assert code(result) == "CERTIFICATE_CHANGED"
    assert [u.content for u in first.uploads] == [b"one"]
    assert second.uploads == []
    assert net.pins.get("localhost", 1965) == pin


def test_identity_of_the_scope_is_presented() -> None:
    """The client identity for the page's gemini:// scope is presented to the Titan server."""
    net, server, fetcher = world()
    net.run(
        Deferred.fromCoroutine(
            ops.create_identity(net.identities, "gemini://localhost/notes/", EPOCH)
        )
    )
    upload(net, fetcher, b"mine")
    upload(net, fetcher, b"x", url="titan://localhost/elsewhere.gmi")
    assert [u.client_certificate is not None for u in server.uploads] == [True, False]


def test_invalid_urls_refused() -> None:
    """Not a titan:// URL, or content that is not bytes: INVALID_REQUEST, nothing dialled."""
    net, _, fetcher = world()
    assert code(upload(net, fetcher, b"x", url="gemini://localhost/")) == "INVALID_REQUEST"
    assert code(upload(net, fetcher, "text")) == "INVALID_REQUEST"
    assert net.attempts == []


def test_zero_bytes_is_a_delete_and_says_so() -> None:
    """A zero-byte upload is asked about as a delete, in those words."""
    titan = TitanConfig(allowed_hosts=frozenset({"localhost"}))
    planned = plan_upload(titan, URL, b"", mime="text/gemini", token="zz-token")
    assert planned.deletes
    question = planned.question()
    assert "DELETE the page /notes/a.gmi" in question and "delete the page" in question
    assert "Token: sent" in question and "zz-token" not in question
    assert question.endswith("Say yes only if you want this page deleted.")


def test_question_shows_the_facts_never_the_token() -> None:
    """Host, path, size, type, and whether a token is sent."""
    titan = TitanConfig(allowed_hosts=frozenset({"localhost"}))
    planned = plan_upload(titan, "titan://localhost:1966/a b.gmi", b"12345", token="hunter2")
    question = planned.question()
    for fact in ("Host: localhost:1966", "Path: /a%20b.gmi", "Size: 5 bytes", "Token: sent"):
        assert fact in question
    assert "hunter2" not in question and "hunter2" not in repr(planned)
    assert "servers assume text/gemini" in question


def test_plan_refusals_are_coded() -> None:
    """plan_upload raises BLOCKED or INVALID_REQUEST, never anything else."""
    with pytest.raises(BlockedError):
        plan_upload(TitanConfig(), URL, b"x")
    with pytest.raises(InvalidRequest):
        plan_upload(TitanConfig(allowed_hosts=frozenset({"localhost"})), URL, b"x", mime="a\nb")


def test_upload_built_by_hand_is_checked_again() -> None:
    """send_upload re-checks what it is given: a hand-made upload to a blocked host is refused."""
    from gophergem.fetcher.titan import send_upload

    net, _, fetcher = world()
    made = TitanUpload(TitanURL("localhost", path="/x"), b"x")
    result = net.run(send_upload(fetcher.gemini_pipeline, TitanConfig(), made))
    assert code(result) == "BLOCKED" and net.attempts == []
    result = net.run(send_upload(None, attrs.evolve(fetcher.titan), made))
    assert code(result) == "NOT_FETCHABLE"


# --- what reaches the wire, and hostile servers ----------------------------------------


class _Recording(Protocol):
    """A server side that records every byte that arrives and never answers."""

    def __init__(self, received: list[bytes]) -> None:
        self.received = received

    def dataReceived(self, data: bytes) -> None:
        self.received.append(data)


def _silent_server(net: MemoryNetwork, received: list[bytes], tls: ServerTLS) -> None:
    factory = Factory.forProtocol(lambda: _Recording(received))
    net.listen(ADDRESS, 1965, TLSMemoryBIOFactory(tls, False, factory, clock=net.reactor))


def test_changed_key_not_one_byte_reaches_the_server() -> None:
    """Under a new key the server's application side receives nothing at all (iosim TLS)."""
    net, _, fetcher = world()
    upload(net, fetcher, b"one")
    received: list[bytes] = []
    _silent_server(net, received, certificate())
    assert code(upload(net, fetcher, b"secret content")) == "CERTIFICATE_CHANGED"
    assert received == []


def test_server_that_never_answers_ends_by_the_deadline() -> None:
    """A server that reads the upload and never answers: TIMEOUT at GEMINI_TIMEOUT_SECONDS."""
    net, _, fetcher = world(timeout_seconds=5)
    received: list[bytes] = []
    _silent_server(net, received, certificate())
    result = net.run(fetcher.titan_upload(URL, b"abc"), advance=1)
    assert code(result) == "TIMEOUT"
    assert b"".join(received) == b"titan://localhost/notes/a.gmi;size=3\r\nabc"


def test_cached_page_dropped_after_an_upload() -> None:
    """Once the server has answered, the page's cached copy is gone (the next fetch is fresh)."""
    net, _, fetcher = world()
    cache = fetcher.gemini_pipeline._steps.cache_for()
    cache.put("gemini://localhost/notes/a.gmi", b"old")
    cache.put("gemini://localhost/other.gmi", b"kept")
    upload(net, fetcher, b"new")
    assert cache.get("gemini://localhost/notes/a.gmi") is None
    assert cache.get("gemini://localhost/other.gmi") is not None
