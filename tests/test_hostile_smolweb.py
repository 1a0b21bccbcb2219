"""
The small web's client protocols against every hostile Finger, Nex and
Spartan behaviour (L{gophergem.testing.hostile}), dialled through the
connect pinch point on a L{MemoryNetwork}: every exchange ends by its
deadline (fake time) with a clear outcome, no buffer grows past its cap,
and nothing is left open.
"""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import CancelledError, Deferred
from twisted.python.failure import Failure

from gophergem.client.connect import Connector
from gophergem.client.finger import FingerClientProtocol
from gophergem.client.gopher import RawResponse
from gophergem.client.nex import NexClientProtocol
from gophergem.client.spartan import SpartanClientProtocol, SpartanResponse
from gophergem.errors import GophergemError
from gophergem.policy.targets import AddressPolicy
from gophergem.testing import MemoryNetwork
from gophergem.testing.hostile import (
    FINGER_BEHAVIOURS,
    GOOD_PLAN,
    NEX_BEHAVIOURS,
    SPARTAN_BEHAVIOURS,
    HostilePlainServer,
    listen_hostile,
)
from gophergem.wire.finger import FingerURL, decode_answer
from gophergem.wire.nex import NexURL, decode_document, parse_directory
from gophergem.wire.spartan import SpartanStatus, SpartanURL

ADDRESS = "192.0.2.66"
DEADLINE = 5.0
STEP = 0.25
CAP = 64 * 1024

ALL = sorted(
    [("finger", n) for n in FINGER_BEHAVIOURS]
    + [("nex", n) for n in NEX_BEHAVIOURS]
    + [("spartan", n) for n in SPARTAN_BEHAVIOURS]
)


def exchange(
    protocol_name: str, name: str, path: str = "/"
) -> tuple[Any, HostilePlainServer, float]:
    """
    Run one request against the hostile server, cancelled at DEADLINE like a
    fetch; return the outcome (a response, or the failure's exception), the
    server and the fake time it took.
    """
    net = MemoryNetwork()
    net.resolver.add("bad.example", ADDRESS)
    port = {"finger": 79, "nex": 1900, "spartan": 300}[protocol_name]
    server = HostilePlainServer.playing(protocol_name, name, net.reactor)
    listen_hostile(net, ADDRESS, port, server)
    passed = [False]

    def keep() -> bool:
        return passed[0]

    url: Any
    protocol: Any
    if protocol_name == "finger":
        url = FingerURL("bad.example", user="alice")
        protocol = FingerClientProtocol(url, CAP, keep_partial=keep)
    elif protocol_name == "nex":
        url = NexURL("bad.example", path=path)
        protocol = NexClientProtocol(url, CAP, keep_partial=keep)
    else:
        url = SpartanURL("bad.example", path=path)
        protocol = SpartanClientProtocol.for_url(url, CAP, keep_partial=keep)
    connector = Connector(net.reactor, net.resolver, AddressPolicy(allow_local=True))
    started = net.reactor.seconds()
    d: Deferred[Any] = connector.connect(url, protocol).addCallback(lambda p: p.finished)

    def expire() -> None:
        passed[0] = True
        d.cancel()

    call = net.reactor.callLater(DEADLINE, expire)
    box: list[Any] = []
    d.addBoth(box.append)
    for _ in range(10_000):
        net.flush()
        if box:
            break
        net.reactor.advance(STEP)
    if call.active():
        call.cancel()
    elapsed = net.reactor.seconds() - started
    net.flush()
    assert server.open == 0, "a connection was left open"
    result = box[0]
    return (result.value if isinstance(result, Failure) else result), server, elapsed


def kind(result: Any) -> str:
    if isinstance(result, CancelledError):
        return "timeout"
    if isinstance(result, GophergemError):
        return f"error:{result.code}"
    if isinstance(result, SpartanResponse):
        return f"status:{int(result.header.status)}:{result.incomplete_reason}"
    assert isinstance(result, RawResponse)
    return f"text:{result.incomplete_reason}" + (":overflowed" if result.overflowed else "")


@pytest.mark.parametrize(("protocol", "name"), ALL, ids=[f"{p}:{n}" for p, n in ALL])
def test_every_behaviour_ends_by_the_deadline(protocol: str, name: str) -> None:
    """Every behaviour ends by the deadline, in a known kind, under the cap, nothing left open."""
    result, _, elapsed = exchange(protocol, name)
    assert elapsed <= DEADLINE + STEP
    assert isinstance(result, CancelledError | GophergemError | RawResponse | SpartanResponse)
    if isinstance(result, RawResponse):
        assert len(result.data) <= CAP
        text = (decode_answer if protocol == "finger" else decode_document)(result.data).text
        if protocol == "nex":
            parse_directory(text, NexURL("bad.example"))
    if isinstance(result, SpartanResponse):
        assert len(result.body) <= CAP


EXPECTED = {
    ("finger", "trickle"): "text:deadline",
    ("finger", "silent"): "timeout",
    ("finger", "never-close"): "text:deadline",
    ("finger", "send-forever"): "text:None:overflowed",
    ("finger", "binary"): "text:None",
    ("finger", "huge-line"): "text:None:overflowed",
    ("finger", "close-silently"): "text:None",  # a clean close: an empty answer
    ("finger", "reset-mid-answer"): "text:connection_reset",
    ("nex", "many-links"): "text:None:overflowed",
    ("nex", "hold-mid-answer"): "text:deadline",
    ("spartan", "trickle"): "timeout",  # still in its header at the deadline
    ("spartan", "never-close"): "status:2:deadline",
    ("spartan", "hold-mid-body"): "status:2:deadline",
    ("spartan", "send-forever"): "status:2:None",
    ("spartan", "huge-header"): "error:PROTOCOL_ERROR",
    ("spartan", "binary-header"): "error:PROTOCOL_ERROR",
    ("spartan", "binary-as-gemtext"): "status:2:None",
    ("spartan", "close-silently"): "error:PROTOCOL_ERROR",
    ("spartan", "close-mid-header"): "error:PROTOCOL_ERROR",
    ("spartan", "reset-mid-body"): "status:2:connection_reset",
    ("spartan", "ansi-bidi"): "status:4:None",
    ("spartan", "gemini-status"): "error:PROTOCOL_ERROR",
    ("spartan", "status-1"): "error:INVALID_STATUS",
    ("spartan", "status-9"): "error:INVALID_STATUS",
    ("spartan", "no-space"): "error:PROTOCOL_ERROR",
    ("spartan", "redirect-empty"): "error:PROTOCOL_ERROR",
    ("spartan", "redirect-cross-host"): "status:3:None",
    ("spartan", "redirect-self"): "status:3:None",
    ("spartan", "bom-header"): "error:PROTOCOL_ERROR",
}


@pytest.mark.parametrize(
    ("protocol", "name"), sorted(EXPECTED), ids=[f"{p}:{n}" for p, n in sorted(EXPECTED)]
)
def test_outcomes(protocol: str, name: str) -> None:
    """Each behaviour gives the outcome a careful client owes it."""
    result, _, _ = exchange(protocol, name)
    assert kind(result) == EXPECTED[(protocol, name)], result


def test_never_closing_finger_keeps_the_whole_plan() -> None:
    """A plan whose server never closes is all there at the deadline, marked so."""
    result, server, _ = exchange("finger", "never-close")
    assert bytes(result.data) == GOOD_PLAN
    assert server.requests == [b"alice"]


def test_binary_plan_is_sanitised() -> None:
    """Binary where text was promised decodes to text without control characters."""
    result, _, _ = exchange("finger", "binary")
    text = decode_answer(result.data).text
    assert not any(ord(c) < 0x20 and c not in "\t\n" for c in text)


def test_flood_is_cut_at_the_cap() -> None:
    """A flooding server is cut at the cap: the server wrote barely more than it."""
    result, server, _ = exchange("spartan", "send-forever")
    assert result.overflowed and len(result.body) == CAP
    assert server.bytes_sent < 4 * CAP


def test_ssrf_listing_links_are_only_data() -> None:
    """A listing's links to private places are absolute URLs; nothing follows them."""
    result, server, _ = exchange("nex", "ssrf-links")
    document = parse_directory(decode_document(result.data).text, NexURL("bad.example"))
    urls = [link.url for link in document.links]
    assert "nex://169.254.169.254/latest/meta-data/" in urls
    assert "nex://[::1]/" in urls
    assert "nex://bad.example/etc/passwd" in urls  # climbing stops at the root
    assert "javascript:alert(1)" in urls
    assert server.connections == 1


def test_redirect_is_reported_not_followed() -> None:
    """A redirect is a response: one connection, the target left to the caller."""
    result, server, _ = exchange("spartan", "redirect-cross-host")
    assert result.header.status is SpartanStatus.REDIRECT
    assert result.header.meta == "spartan://169.254.169.254/"
    assert server.connections == 1


# --- the harness's new catalogues -------------------------------------------------------


def test_registry_of_plain_behaviours() -> None:
    """Each plain-TCP behaviour is registered once, for its protocol, without TLS."""
    from gophergem.testing.hostile import BEHAVIOURS, PLAIN_BEHAVIOURS

    for protocol, table in PLAIN_BEHAVIOURS.items():
        for name, behaviour in table.items():
            assert BEHAVIOURS[(protocol, name)] is behaviour
            assert behaviour.protocol == protocol and behaviour.tls is None
            assert not behaviour.raw and behaviour.summary.endswith(".")


def test_unknown_protocol_or_behaviour() -> None:
    """An unknown protocol or name is a ValueError naming what is known."""
    from twisted.internet.task import Clock

    with pytest.raises(ValueError, match="huge-header"):
        HostilePlainServer.playing("spartan", "no-such-thing", Clock())
    with pytest.raises(ValueError):
        HostilePlainServer.playing("gopher", "trickle", Clock())


def test_command_line_lists_and_serves_the_new_protocols(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--list names the new protocols' behaviours; an unknown protocol is refused."""
    from gophergem.testing.hostile import main

    assert main(["--list"]) == 0
    protocols = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert {"finger", "nex", "spartan"} <= protocols
    with pytest.raises(SystemExit):
        main(["--protocol", "telnet", "--behaviour", "silent"])
