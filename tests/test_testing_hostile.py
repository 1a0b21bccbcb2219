"""
Tests for the harness itself (L{gophergem.testing.hostile}): the registry,
the vocabulary behaviours are written in, and the loopback-only guard.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactor, StringTransport
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol

import gophergem.testing.hostile as hostile
from gophergem.testing import EPOCH, MemoryNetwork
from gophergem.testing.hostile import (
    BEHAVIOURS,
    CUT_DELAY,
    FLOOD_INTERVAL,
    GEMINI_BEHAVIOURS,
    GOPHER_BEHAVIOURS,
    TRICKLE_INTERVAL,
    HostileExchange,
    HostileGeminiServer,
    HostileGopherServer,
    HostileTLS,
    main,
    serve_loopback,
)


def connected(
    server: HostileGopherServer | HostileGeminiServer,
) -> tuple[HostileExchange, StringTransport]:
    exchange = server.buildProtocol(None)
    transport = StringTransport()
    exchange.makeConnection(transport)
    return exchange, transport


def test_registry() -> None:
    """At least 25 behaviours, each named once, described, and built for its protocol."""
    assert len(BEHAVIOURS) >= 25
    for (protocol, name), behaviour in BEHAVIOURS.items():
        assert behaviour.protocol == protocol and behaviour.name == name
        assert behaviour.summary.endswith(".")
        assert name == name.lower() and " " not in name
    for behaviour in GOPHER_BEHAVIOURS.values():
        assert behaviour.tls is None and not behaviour.raw
    for behaviour in GEMINI_BEHAVIOURS.values():
        assert (behaviour.tls is None) == behaviour.raw


def test_unknown_behaviour() -> None:
    """An unknown name is a ValueError naming the known ones."""
    with pytest.raises(ValueError, match="trickle"):
        HostileGopherServer.named("no-such-thing", Clock())


def test_trickle_one_byte_per_interval() -> None:
    """A trickle sends one byte per interval on the server's clock, then closes."""
    clock = Clock()
    server = HostileGopherServer.named("trickle", clock)
    exchange, transport = connected(server)
    exchange.dataReceived(b"\r\n")
    assert transport.value() == b"i"
    clock.advance(TRICKLE_INTERVAL)
    assert transport.value() == b"iW"
    clock.pump([TRICKLE_INTERVAL] * 3)
    assert transport.value() == b"iWelc"
    assert server.bytes_sent == 5 and server.requests == [b""]
    assert not transport.disconnecting


def test_timed_calls_stop_when_the_connection_goes() -> None:
    """Nothing more is written, and nothing stays scheduled, once the client is gone."""
    clock = Clock()
    server = HostileGopherServer.named("trickle", clock)
    exchange, transport = connected(server)
    exchange.dataReceived(b"\r\n")
    exchange.connectionLost(None)
    clock.advance(100)
    assert transport.value() == b"i" and clock.getDelayedCalls() == []
    assert (server.connections, server.open) == (1, 0)


def test_request_waits_for_its_line_end() -> None:
    """Nothing is answered before the request line is complete."""
    server = HostileGopherServer.named("lf-only", Clock())
    exchange, transport = connected(server)
    exchange.dataReceived(b"/sel")
    assert transport.value() == b""
    exchange.dataReceived(b"ector\r\n")
    assert server.requests == [b"/selector"] and transport.value().startswith(b"iPlain")
    assert transport.disconnecting


def test_flood_is_paced_and_pausable() -> None:
    """A flood writes a chunk per interval, stops while paused, resumes, and ends with the link."""
    clock = Clock()
    server = HostileGopherServer.named("send-forever", clock)
    exchange, transport = connected(server)
    exchange.dataReceived(b"/text\r\n")
    assert transport.value() == b"" and transport.streaming is True
    clock.advance(FLOOD_INTERVAL)
    one = len(transport.value())
    assert one > 0
    clock.advance(FLOOD_INTERVAL)
    assert len(transport.value()) == 2 * one
    transport.producer.pauseProducing()
    clock.advance(10 * FLOOD_INTERVAL)
    assert len(transport.value()) == 2 * one
    transport.producer.resumeProducing()
    clock.advance(FLOOD_INTERVAL)
    assert len(transport.value()) == 3 * one
    exchange.connectionLost(None)
    clock.advance(10 * FLOOD_INTERVAL)
    assert len(transport.value()) == 3 * one and clock.getDelayedCalls() == []


def test_flood_stops_at_its_limit() -> None:
    """A flood nobody cuts stops at the flood limit and holds the connection."""
    clock = Clock()
    server = HostileGopherServer.named("send-forever", clock, flood_limit=40_000)
    exchange, transport = connected(server)
    exchange.dataReceived(b"\r\n")
    clock.pump([FLOOD_INTERVAL] * 10)
    assert len(transport.value()) == server.bytes_sent == 40_000
    assert clock.getDelayedCalls() == [] and not transport.disconnecting


def test_cut_on_plain_tcp_aborts_once_written() -> None:
    """Cutting a plain connection aborts it (a reset), once the bytes written had time to go."""
    clock = Clock()
    server = HostileGopherServer.named("reset-mid-menu", clock)
    exchange, transport = connected(server)
    exchange.dataReceived(b"\r\n")
    assert transport.value().endswith(b"1Half a li")
    assert not transport.disconnecting
    clock.advance(CUT_DELAY)
    assert transport.disconnecting and transport.disconnected


def test_raw_behaviour_answers_the_first_bytes() -> None:
    """A raw Gemini behaviour answers whatever arrives first (a ClientHello) without TLS."""
    server = HostileGeminiServer.named("tls-alert", Clock())
    assert server.wire_factory() is server
    exchange, transport = connected(server)
    exchange.dataReceived(b"\x16\x03\x01\x02\x00 not really a hello")
    assert transport.value() == b"\x15\x03\x03\x00\x02\x02\x28"
    assert transport.disconnecting


def test_gemini_wire_factory_is_unbuffered_tls() -> None:
    """A TLS behaviour listens through TLS that writes through at once (for clean cuts)."""
    server = HostileGeminiServer.named("no-close-notify", Clock())
    factory = server.wire_factory()
    assert isinstance(factory, TLSMemoryBIOFactory)
    assert factory.protocol is TLSMemoryBIOProtocol
    assert factory.wrappedFactory is server
    gopher = HostileGopherServer.named("silent", Clock())
    assert gopher.wire_factory() is gopher


def test_application_behaviours_work_under_listen_gemini() -> None:
    """An application-level Gemini behaviour also runs under MemoryNetwork.listen_gemini."""
    net = MemoryNetwork()
    net.resolver.add("bad.example", "192.0.2.66")
    server = HostileGeminiServer.named("status-99", net.reactor, "bad.example")
    net.listen_gemini("192.0.2.66", 1965, server, server.tls())  # type: ignore[arg-type]
    result = net.run(net.fetcher().gemini("gemini://bad.example/"))
    assert result.error.code == "INVALID_STATUS"
    assert server.requests == [b"gemini://bad.example/"] and server.open == 0


def test_certificates_follow_the_clock() -> None:
    """Certificate validity is computed from the server's clock, not the wall clock."""
    from cryptography import x509

    clock = Clock()
    clock.advance(EPOCH)
    server = HostileGeminiServer.named("cert-not-yet-valid", clock, "bad.example")
    tls = server.tls()
    assert isinstance(tls, HostileTLS)
    cert = x509.load_pem_x509_certificate(tls.certificate_pem())
    assert cert.not_valid_before_utc.timestamp() == EPOCH + 86_400
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["bad.example"]
    assert server.tls() is tls  # built once


def test_rotating_certificate() -> None:
    """The new-key behaviour presents a different certificate on every connection."""
    server = HostileGeminiServer.named("cert-new-key-every-time", Clock())
    tls = server.tls()
    assert isinstance(tls, HostileTLS)
    first = tls.serverConnectionForTLS(None).get_certificate()
    second = tls.serverConnectionForTLS(None).get_certificate()
    assert first.to_cryptography() != second.to_cryptography()


@pytest.mark.parametrize("interface", ["0.0.0.0", "10.0.0.1", "192.0.2.1", "::", "localhost"])
def test_serve_loopback_refuses_other_interfaces(interface: str) -> None:
    """Only loopback addresses may be listened on; nothing is bound otherwise."""
    reactor = MemoryReactor()
    with pytest.raises(ValueError):
        serve_loopback(HostileGopherServer.named("silent", Clock()), reactor, 0, interface)
    assert reactor.tcpServers == []


@pytest.mark.parametrize("interface", ["127.0.0.1", "127.8.9.10", "::1"])
def test_serve_loopback(interface: str) -> None:
    """A loopback interface is listened on with the server's wire factory."""
    reactor = MemoryReactor()
    server = HostileGeminiServer.named("silent", Clock())
    serve_loopback(server, reactor, 0, interface)
    port, factory, _backlog, bound = reactor.tcpServers[0]
    assert (port, bound) == (0, interface)
    assert factory.wrappedFactory is server


def test_command_line_list(capsys: pytest.CaptureFixture[str]) -> None:
    """--list names every behaviour with its protocol and summary."""
    assert main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(BEHAVIOURS)
    assert any(line.split()[:2] == ["gemini", "no-close-notify"] for line in lines)


@pytest.mark.parametrize(
    "argv",
    [
        ["--protocol", "gopher", "--behaviour", "trickle", "--interface", "0.0.0.0"],
        ["--protocol", "gopher", "--behaviour", "no-such-thing"],
        ["--behaviour", "trickle"],
        ["--protocol", "gemini"],
    ],
)
def test_command_line_refusals(argv: list[str]) -> None:
    """A public interface, an unknown behaviour or a missing protocol stop before listening."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_package_exports() -> None:
    """Every name in the package's __all__ is importable from the package itself."""
    for name in hostile.__all__:
        assert getattr(hostile, name) is not None, name


def test_importing_does_not_run_the_command_line() -> None:
    """
    Importing the package leaves its __main__ unimported, so that
    C{python -m gophergem.testing.hostile} runs it once, without runpy's warning.
    """
    assert "gophergem.testing.hostile.__main__" not in sys.modules


def test_modules_stay_small() -> None:
    """No module of the package is over 500 lines."""
    for path in Path(hostile.__file__).parent.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 500, path.name
