"""
Tests for L{gophergem.testing.titan}, the Titan test server, driven by the
Titan client protocol over TLS on a L{MemoryNetwork} (through the connect
pinch point), and its command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.x509.oid import NameOID
from twisted.internet.testing import MemoryReactor

from gophergem.client.connect import Connector
from gophergem.client.titan import GeminiResponse, TitanClientProtocol
from gophergem.policy.targets import AddressPolicy
from gophergem.testing import MemoryNetwork, make_certificate
from gophergem.testing.titan import TitanServer, main, serve_titan
from gophergem.tls import GeminiTLSCreator
from gophergem.trust.decision import decide
from gophergem.wire.titan import TitanURL

ADDRESS = "192.0.2.80"


def upload(
    net: MemoryNetwork,
    url: TitanURL,
    content: bytes,
    credentials: tuple[bytes, bytes] | None = None,
) -> GeminiResponse:
    now = net.reactor.seconds()
    creator = GeminiTLSCreator(
        url.host, lambda cert: decide(url.host, url.port, None, cert, now), credentials
    )
    protocol = TitanClientProtocol(url, content, 1024, lambda: None)
    connector = Connector(net.reactor, net.resolver, AddressPolicy(allow_local=True))
    d = connector.connect(url, protocol, creator).addCallback(lambda p: p.finished)
    return net.run(d)


def world(**options: Any) -> tuple[MemoryNetwork, TitanServer]:
    net = MemoryNetwork()
    net.resolver.add("localhost", ADDRESS)
    server = TitanServer(clock=net.reactor, **options)
    net.listen(ADDRESS, 1965, server.wire_factory())
    return net, server


def test_upload_is_stored_and_answered_with_a_redirect() -> None:
    """An upload is recorded exactly and answered 30 to the gemini:// page."""
    net, server = world()
    url = TitanURL.for_upload("titan://localhost/notes/a.gmi", 5, "text/gemini", "pw")
    response = upload(net, url, b"# Hi\n")
    assert (response.header.status, response.header.meta) == (
        30,
        "gemini://localhost/notes/a.gmi",
    )
    [received] = server.uploads
    assert (received.path, received.size, received.mime, received.token) == (
        "/notes/a.gmi",
        5,
        "text/gemini",
        "pw",
    )
    assert (received.content, received.accepted, received.client_certificate) == (
        b"# Hi\n",
        True,
        None,
    )
    assert server.pages["/notes/a.gmi"] == (b"# Hi\n", "text/gemini")


def test_client_certificate_is_recorded() -> None:
    """The identity a client presents is what the server records."""
    net, server = world()
    cert_pem, key_pem = make_certificate("me", now=net.reactor.seconds())
    upload(net, TitanURL.for_upload("titan://localhost/x", 1), b"x", (cert_pem, key_pem))
    presented = server.uploads[0].client_certificate
    assert presented is not None
    subject = presented.to_cryptography().subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "me"


def test_zero_bytes_delete(tmp_path: Path) -> None:
    """A zero-byte upload deletes the page, in memory and on disk."""
    net, server = world(root=tmp_path)
    upload(net, TitanURL.for_upload("titan://localhost/d/x.gmi", 3), b"abc")
    assert (tmp_path / "d" / "x.gmi").read_bytes() == b"abc"
    response = upload(net, TitanURL.for_upload("titan://localhost/d/x.gmi", 0), b"")
    assert response.header.status == 30
    assert not (tmp_path / "d" / "x.gmi").exists()
    assert "/d/x.gmi" not in server.pages


def test_refusals() -> None:
    """Too large, a wrong token: refused with 59, recorded as not accepted, nothing stored."""
    net, server = world(max_upload=4, tokens=frozenset({"good"}))
    big = upload(net, TitanURL.for_upload("titan://localhost/a", 5, token="good"), b"12345")
    assert big.header.status == 59
    wrong = upload(net, TitanURL.for_upload("titan://localhost/a", 1, token="bad"), b"1")
    assert wrong.header.status == 59
    assert [u.accepted for u in server.uploads] == [False, False]
    assert server.pages == {}


def test_root_keeps_uploads_inside(tmp_path: Path) -> None:
    """A path climbing out of the root (percent-encoded dots) is never written outside it."""
    root = tmp_path / "root"
    root.mkdir()
    server = TitanServer(root=root)
    server.store("/%2e%2e/escape", b"x", None)
    server.store("/../../escape2", b"x", None)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "escape2").exists()


def test_gemini_requests_read_what_was_stored() -> None:
    """The page a redirect names can be read with Gemini from the same server."""
    from gophergem.client.gemini import GeminiClientProtocol

    net, _ = world()
    upload(net, TitanURL.for_upload("titan://localhost/p.gmi", 4), b"# P\n")
    now = net.reactor.seconds()
    creator = GeminiTLSCreator("localhost", lambda c: decide("localhost", 1965, None, c, now))
    protocol = GeminiClientProtocol(b"gemini://localhost/p.gmi\r\n", 1024, lambda: None)
    connector = Connector(net.reactor, net.resolver, AddressPolicy(allow_local=True))
    url = TitanURL("localhost").gemini_url()
    response = net.run(connector.connect(url, protocol, creator).addCallback(lambda p: p.finished))
    assert (response.header.status, bytes(response.body)) == (20, b"# P\n")


@pytest.mark.parametrize("interface", ["0.0.0.0", "192.0.2.1", "localhost"])
def test_loopback_only(interface: str) -> None:
    """The server listens on loopback only."""
    reactor = MemoryReactor()
    with pytest.raises(ValueError):
        serve_titan(TitanServer(), reactor, 0, interface)
    assert reactor.tcpServers == []
    serve_titan(TitanServer(), reactor, 0, "::1")
    assert reactor.tcpServers[0][3] == "::1"


@pytest.mark.parametrize(
    "argv", [["--interface", "0.0.0.0"], ["--cert", "x"], ["--root", "/no/such/dir"]]
)
def test_command_line_refusals(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A bad interface, a certificate without its key, a missing root: one line, exit 2."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err
