"""
Tests for L{gophergem.fetcher}: the thin L{Fetcher} façade, its named
constructor, batches, the per-host connection limit every fetch goes
through, and the pace and connection count each host shares across every
scheme (on an in-memory network: no sockets, no real time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock
from zope.interface.verify import verifyObject

from gophergem.client.connect import Connector
from gophergem.config import Config, GopherConfig, SmolwebConfig
from gophergem.errors import InvalidRequest
from gophergem.fetcher import MAX_BATCH, Fetcher
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.fetcher.gopher import GopherPipeline
from gophergem.fetcher.smolweb import SmolwebPipeline
from gophergem.interfaces import IFetcher
from gophergem.policy.local import LocalPolicy
from gophergem.policy.targets import AddressPolicy
from gophergem.state.files import FileIdentityStore, FilePinStore
from gophergem.state.memory import MemoryIdentityStore, MemoryPinStore
from gophergem.testing import (
    FakeGeminiServer,
    FakeGopherServer,
    FakeResolver,
    FakeSmolServer,
    MemoryNetwork,
)
from tests.helpers.fetcher import HOST_IP, MENU


@pytest.fixture
def net() -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("g.example", HOST_IP)
    return network


@pytest.fixture
def server(net: MemoryNetwork) -> FakeGopherServer:
    return net.listen(HOST_IP, 70, FakeGopherServer({b"": MENU, b"/about.txt": b"First\r\n.\r\n"}))


def test_batch_order(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A batch returns one result per URL, in input order, errors included."""
    urls = ["gopher://g.example/", "gopher://g.example/0/about.txt", "gopher://g.example/8"] * 16
    urls += ["http://nope/", "gopher://g.example/"]
    results = net.run(net.fetcher().gopher_batch(urls))
    assert len(results) == 50
    kinds = [type(r).__name__ for r in results]
    assert kinds[:3] == ["MenuResult", "TextResult", "FetchFailure"]
    assert results[48].error.code == "INVALID_REQUEST"


@pytest.mark.parametrize("count", [0, 51])
def test_batch_size_refused(net: MemoryNetwork, count: int) -> None:
    """
    A batch of zero or more than 50 URLs is refused as a whole: its Deferred
    fails with InvalidRequest (nothing is raised on the call) and nothing is
    dialled.
    """
    refused = net.fetcher().gopher_batch(["gopher://g.example/"] * count)
    with pytest.raises(InvalidRequest):
        net.run(refused)
    assert net.attempts == []


def test_fetcher_provides_ifetcher(net: MemoryNetwork) -> None:
    """The Fetcher is an IFetcher: the seam the tools, the CLI and a library user call."""

    fetcher = net.fetcher()
    assert verifyObject(IFetcher, fetcher)
    assert fetcher.gemini_enabled in (True, False)


def test_from_config_builds_both_pipelines(tmp_path: object) -> None:
    """
    from_config gives each protocol its pipeline and its configuration, with
    the file stores the configuration names when none are given.
    """
    environ = {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
    }
    config = Config()
    fetcher = Fetcher.from_config(config, MemoryReactorClock(), FakeResolver(), environ=environ)
    assert isinstance(fetcher.gopher_pipeline, GopherPipeline)
    assert isinstance(fetcher.gemini_pipeline, GeminiPipeline)
    assert fetcher.gopher_pipeline.config is config.gopher
    assert fetcher.gemini_pipeline.config is config.gemini
    assert isinstance(fetcher.pins, FilePinStore)
    assert isinstance(fetcher.identities, FileIdentityStore)
    assert fetcher.gemini_enabled is True


def test_from_config_keeps_given_stores_unless_switched_off() -> None:
    """Given stores are used; a store whose feature is off is not used at all."""
    pins, identities = MemoryPinStore(), MemoryIdentityStore()
    fetcher = Fetcher.from_config(
        Config(), MemoryReactorClock(), FakeResolver(), pins=pins, identities=identities
    )
    assert (fetcher.pins, fetcher.identities) == (pins, identities)
    off = attrs.evolve(
        Config(),
        gemini=attrs.evolve(Config().gemini, tofu_enabled=False, client_certs_enabled=False),
    )
    fetcher = Fetcher.from_config(
        off, MemoryReactorClock(), FakeResolver(), pins=pins, identities=identities
    )
    assert (fetcher.pins, fetcher.identities) == (None, None)


def test_from_config_caches_only_when_enabled() -> None:
    """A protocol gets a cache only when caching is on with a positive lifetime."""
    config = Config()
    no_cache = attrs.evolve(config, gopher=attrs.evolve(config.gopher, cache_ttl_seconds=0))
    fetcher = Fetcher.from_config(no_cache, MemoryReactorClock(), FakeResolver())
    assert fetcher.gopher_pipeline.cache is None
    assert fetcher.gemini_pipeline is not None and fetcher.gemini_pipeline.cache is not None


def test_without_gemini() -> None:
    """A fetcher built without a Gemini pipeline says so and refuses gemini:// at once."""
    full = Fetcher.from_config(Config(), MemoryReactorClock(), FakeResolver())
    fetcher = Fetcher(full.clock, full.gopher_pipeline)
    assert fetcher.gemini_enabled is False
    assert (fetcher.pins, fetcher.identities) == (None, None)
    with pytest.raises(RuntimeError):
        fetcher.gemini("gemini://capsule.example/")


def test_max_batch_is_fifty() -> None:
    """The batch limit the tools advertise is fifty URLs."""
    assert MAX_BATCH == 50


# --- the per-host connection limit ---------------------------------------------------


class _HeldProtocol(Protocol):
    factory: GatedServer

    def __init__(self) -> None:
        self._buffer = b""

    def dataReceived(self, data: bytes) -> None:
        if b"\n" in self._buffer:
            return
        self._buffer += data
        if b"\n" in self._buffer:
            line = self._buffer.split(b"\n", 1)[0].removesuffix(b"\r")
            self.factory.requests.append(line)
            self.factory.held.append((self, line))


class GatedServer(Factory):
    """
    A server that holds every request until L{release}: the connections it
    holds are the ones open at once.
    """

    protocol = _HeldProtocol

    def __init__(self, answer: Callable[[bytes], bytes]) -> None:
        self.answer = answer
        self.held: list[tuple[_HeldProtocol, bytes]] = []
        self.requests: list[bytes] = []
        self.peak = 0

    def release(self) -> None:
        """Answer and close every held connection."""
        held, self.held = self.held, []
        for protocol, line in held:
            assert protocol.transport is not None
            protocol.transport.write(self.answer(line))
            protocol.transport.loseConnection()


def gopher_answer(line: bytes) -> bytes:
    return MENU if line == b"" else b"First\r\n.\r\n"


def drive(net: MemoryNetwork, server: GatedServer, d: Deferred[Any]) -> Any:
    """Run C{d} to its end, releasing the server's held requests after each quiet moment."""
    box: list[Any] = []
    d.addBoth(box.append)
    for _ in range(1000):
        net.flush()
        server.peak = max(server.peak, len(server.held))
        if box:
            break
        server.release()
    assert box, "the Deferred never fired"
    return box[0]


def fifty(host: str = "g.example") -> list[str]:
    return [f"gopher://{host}/0/about.txt?{n}" for n in range(MAX_BATCH)]


@pytest.mark.parametrize("cap", [0, 5])
def test_fifty_urls_to_one_host_use_four_connections(net: MemoryNetwork, cap: int) -> None:
    """
    Fifty URLs to one host, with or without the global cap, never hold more
    than four connections open to it at once, and all fifty results arrive.
    """
    server = net.listen(HOST_IP, 70, GatedServer(gopher_answer))
    fetcher = net.fetcher(max_concurrent_requests=cap, cache_enabled=False)
    results = drive(net, server, fetcher.gopher_batch(fifty()))
    assert [type(r).__name__ for r in results] == ["TextResult"] * MAX_BATCH
    assert len(server.requests) == MAX_BATCH
    assert server.peak == 4


def test_the_counter_sees_simultaneous_connections(net: MemoryNetwork) -> None:
    """With room for all of them, fifty connects to one host are open together (the control)."""
    server = net.listen(HOST_IP, 70, GatedServer(gopher_answer))
    fetcher = net.fetcher(max_concurrent_requests=0, max_connections_per_host=64)
    drive(net, server, fetcher.gopher_batch(fifty()))
    assert server.peak == MAX_BATCH


def test_robots_probe_counts_and_cannot_deadlock(net: MemoryNetwork) -> None:
    """
    The robots.txt probe takes one of the host's places, and fetches wait
    for its verdict without holding one: with a single place, every fetch
    still ends, after the probe.
    """
    server = net.listen(HOST_IP, 70, GatedServer(gopher_answer))
    fetcher = net.fetcher(
        max_concurrent_requests=0, max_connections_per_host=1, respect_robots_txt=True
    )
    results = drive(net, server, fetcher.gopher_batch(fifty()[:10]))
    assert [type(r).__name__ for r in results] == ["TextResult"] * 10
    assert server.requests[0] == b"robots.txt"
    assert len(server.requests) == 11
    assert server.peak == 1


def test_probe_of_another_port_waits_for_a_place(net: MemoryNetwork) -> None:
    """
    A robots.txt probe of the same host on another port waits for a place
    held by a fetch already past its own robots.txt check, and then runs.
    """
    server = net.listen(HOST_IP, 70, GatedServer(gopher_answer))
    other = net.listen(HOST_IP, 7070, GatedServer(gopher_answer))
    fetcher = net.fetcher(max_connections_per_host=1, respect_robots_txt=True)
    # Port 70's robots.txt is known, so its fetch takes the one place at once.
    drive(net, server, fetcher.gopher("gopher://g.example/"))
    first = fetcher.gopher("gopher://g.example/0/about.txt")
    second = fetcher.gopher("gopher://g.example:7070/")
    net.flush()
    assert server.requests[-1] == b"/about.txt" and other.requests == []
    server.release()
    assert type(drive(net, other, second)).__name__ == "MenuResult"
    assert type(net.run(first)).__name__ == "TextResult"
    assert other.requests == [b"robots.txt", b""]


def test_different_hosts_do_not_wait_for_each_other(net: MemoryNetwork) -> None:
    """A host whose one place is held by a stalled fetch delays no other host."""
    net.resolver.add("slow.example", "192.0.2.99")
    net.listen("192.0.2.99", 70, FakeGopherServer({}, missing=b"", close=False))
    net.listen(HOST_IP, 70, FakeGopherServer({b"": MENU}))
    fetcher = net.fetcher(max_connections_per_host=1, max_concurrent_requests=0)
    stalled = [fetcher.gopher("gopher://slow.example/") for _ in range(2)]
    result = net.run(fetcher.gopher("gopher://g.example/"))
    assert type(result).__name__ == "MenuResult"
    assert not any(d.called for d in stalled)


def test_deadline_covers_the_wait_for_a_place(net: MemoryNetwork) -> None:
    """
    A fetch queued behind its host's busy place times out on its own
    deadline, counted from its start, without ever connecting; its place in
    the queue is given up, and the host is usable again afterwards.
    """
    net.listen(HOST_IP, 70, FakeGopherServer({}, missing=b"", close=False))
    fetcher = net.fetcher(max_connections_per_host=1, timeout_seconds=3, cache_enabled=False)
    start = net.reactor.seconds()
    ended: list[float] = []
    pending = [fetcher.gopher(f"gopher://g.example/0/{n}") for n in range(2)]
    for d in pending:
        d.addCallback(lambda r: (ended.append(net.reactor.seconds() - start), r)[1])
    results = [net.run(d, advance=0.5) for d in pending]
    assert [r.error.code for r in results] == ["TIMEOUT", "TIMEOUT"]
    assert ended == [3.0, 3.0]
    assert len(net.attempts) == 1  # the queued fetch never dialled
    net.listen(HOST_IP, 70, FakeGopherServer({b"": MENU}))  # the host answers now
    assert type(net.run(fetcher.gopher("gopher://g.example/"))).__name__ == "MenuResult"


def test_gemini_honours_its_own_limit() -> None:
    """Gemini fetches to one capsule hold at most GEMINI_MAX_CONNECTIONS_PER_HOST open."""
    net = MemoryNetwork()
    net.resolver.add("localhost", "192.0.2.20")
    server = GatedServer(lambda line: b"20 text/gemini\r\n# hi\n")
    net.listen_gemini("192.0.2.20", 1965, server)  # type: ignore[arg-type]
    fetcher = net.fetcher(
        gemini={
            "max_connections_per_host": 2,
            "max_concurrent_requests": 0,
            "cache_enabled": False,
        }
    )
    urls = [f"gemini://localhost/?{n}" for n in range(10)]
    results = drive(net, server, fetcher.gemini_batch(urls))
    assert [type(r).__name__ for r in results] == ["GemtextResult"] * 10
    assert server.peak == 2


# --- the policy backend and per-principal identities -----------------------------------


@attrs.frozen
class CountingPolicy(LocalPolicy):
    """A L{LocalPolicy} noting each factory call (scheme and what was asked for)."""

    asked: list[tuple[str, str]] = attrs.field(factory=list)

    def pacer(self, scheme: str, clock: Any, requests_per_minute: int) -> Any:
        self.asked.append(("pacer", scheme))
        return super().pacer(scheme, clock, requests_per_minute)

    def cap(self, scheme: str, limit: int) -> Any:
        self.asked.append(("cap", scheme))
        return super().cap(scheme, limit)

    def board(self, scheme: str, clock: Any) -> Any:
        self.asked.append(("board", scheme))
        return super().board(scheme, clock)

    def cache(self, scheme: str, clock: Any, ttl_seconds: float, max_entries: int) -> Any:
        self.asked.append(("cache", scheme))
        return super().cache(scheme, clock, ttl_seconds, max_entries)


def test_from_config_takes_its_policy_from_the_backend() -> None:
    """
    Each pipeline asks the policy backend once for its pacer, cap and cache
    (Gemini: a board); Finger, Nex and Spartan share one set (C{smolweb}).
    """
    policy = CountingPolicy()
    net = MemoryNetwork()
    fetcher = Fetcher.from_config(
        Config(), net.reactor, net.resolver, pins=net.pins, identities=net.identities, policy=policy
    )
    assert sorted(policy.asked) == sorted(
        [
            ("cache", "gemini"),
            ("cache", "gopher"),
            ("pacer", "gemini"),
            ("cap", "gemini"),
            ("board", "gemini"),
            ("pacer", "gopher"),
            ("cap", "gopher"),
            ("cache", "smolweb"),
            ("pacer", "smolweb"),
            ("cap", "smolweb"),
        ]
    )
    assert fetcher.gemini_pipeline is not None and fetcher.gemini_pipeline.policy is policy
    assert fetcher.smolweb_pipeline is not None and fetcher.smolweb_pipeline.policy is policy


def test_with_identities_shares_everything_else(net: MemoryNetwork) -> None:
    """A fetcher for another principal swaps the identity store and shares the rest."""
    fetcher = net.fetcher()
    theirs = MemoryIdentityStore()
    other = fetcher.with_identities(theirs)
    assert other.identities is theirs and fetcher.identities is net.identities
    assert other.pins is fetcher.pins
    assert other.gopher_pipeline is fetcher.gopher_pipeline
    assert other.smolweb_pipeline is fetcher.smolweb_pipeline
    mine, their = fetcher.gemini_pipeline, other.gemini_pipeline
    assert mine is not None and their is not None and mine is not their
    assert their.cache is mine.cache
    for private in ("_steps", "_tofu", "_board", "_prompts"):
        assert getattr(their, private) is getattr(mine, private), private
    assert fetcher.with_identities(None).identities is None


def test_with_identities_presents_only_the_principals_own() -> None:
    """An identity in one principal's store is presented for that principal only."""
    from gophergem.trust import operations as ops

    net = MemoryNetwork()
    net.resolver.add("localhost", "192.0.2.20")
    server = net.listen_gemini("192.0.2.20", 1965, FakeGeminiServer({"/": b"20 text/plain\r\nhi"}))
    shared = net.fetcher(gemini={"cache_enabled": False})
    alice = shared.with_identities(MemoryIdentityStore())
    bob = shared.with_identities(MemoryIdentityStore())
    net.run(Deferred.fromCoroutine(ops.create_identity(alice.identities, "gemini://localhost/", 0)))
    net.run(alice.gemini("gemini://localhost/"))
    net.run(bob.gemini("gemini://localhost/"))
    presented, absent = server.client_certificates
    assert presented is not None and absent is None


# --- one host, every scheme: one pace and one connection count ----------------------

SHARED_IP = "192.0.2.20"
OTHER_IP = "192.0.2.30"


@pytest.fixture
def one_host() -> MemoryNetwork:
    """A machine serving Gopher, Gemini and Spartan as localhost, and another serving Spartan."""
    network = MemoryNetwork()
    network.resolver.add("localhost", SHARED_IP)
    network.resolver.add("other.example", OTHER_IP)
    network.listen(SHARED_IP, 70, FakeGopherServer({b"": MENU}))
    network.listen_gemini(SHARED_IP, 1965, FakeGeminiServer({"/": b"20 text/gemini\r\n# hi\n"}))
    for address, host in ((SHARED_IP, b"localhost"), (OTHER_IP, b"other.example")):
        network.listen(
            address,
            300,
            FakeSmolServer({host + b" / 0": b"2 text/gemini\r\n# hi\n"}, spartan=True),
        )
    return network


def paced(net: MemoryNetwork, gopher: int = 60, gemini: int = 60, smolweb: int = 60) -> Fetcher:
    """A fetcher pacing each scheme at the rates given, caching nothing."""
    return net.fetcher(
        requests_per_minute=gopher,
        cache_enabled=False,
        gemini={"requests_per_minute": gemini, "cache_enabled": False},
        smolweb={"requests_per_minute": smolweb, "cache_enabled": False},
    )


FETCHES: dict[str, Callable[[Fetcher, str], Deferred[Any]]] = {
    "gopher": lambda fetcher, host: fetcher.gopher(f"gopher://{host}/"),
    "gemini": lambda fetcher, host: fetcher.gemini(f"gemini://{host}/"),
    "spartan": lambda fetcher, host: fetcher.smolweb(f"spartan://{host}/"),
}


def dialled(net: MemoryNetwork, port: int) -> int:
    """How many connections were tried to C{port}."""
    return sum(1 for _, p in net.attempts if p == port)


@pytest.mark.parametrize(
    ("first", "second"),
    [("gopher", "gemini"), ("gemini", "spartan"), ("spartan", "gopher"), ("gemini", "gopher")],
)
def test_schemes_wait_for_each_others_pace(
    one_host: MemoryNetwork, first: str, second: str
) -> None:
    """
    Through one fetcher, a fetch of one scheme to a host waits out the pace
    of a fetch of another scheme to the same host.
    """
    fetcher = paced(one_host)
    assert type(one_host.run(FETCHES[first](fetcher, "localhost"))).__name__ != "FetchFailure"
    waiting = FETCHES[second](fetcher, "localhost")
    one_host.flush()
    one_host.reactor.advance(0.999)
    one_host.flush()
    assert not waiting.called
    one_host.reactor.advance(0.001)
    assert type(one_host.run(waiting)).__name__ != "FetchFailure"


def test_other_hosts_keep_their_own_pace(one_host: MemoryNetwork) -> None:
    """A Gopher fetch of one host does not delay a Spartan fetch of another."""
    fetcher = paced(one_host)
    began = one_host.reactor.seconds()
    one_host.run(fetcher.gopher("gopher://localhost/"))
    spartan = one_host.run(fetcher.smolweb("spartan://other.example/"))
    assert type(spartan).__name__ == "GemtextResult"
    assert one_host.reactor.seconds() == began


def test_each_start_keeps_its_own_schemes_interval(one_host: MemoryNetwork) -> None:
    """
    Gopher at 6 a minute and Gemini at 60 on one host: the Gemini fetch waits
    ten seconds after the Gopher one, the next Gopher fetch one second after
    the Gemini one.
    """
    fetcher = paced(one_host, gopher=6, gemini=60)
    began = one_host.reactor.seconds()
    started: list[float] = []
    pending = [
        FETCHES[scheme](fetcher, "localhost").addCallback(
            lambda r: (started.append(one_host.reactor.seconds() - began), r)[1]
        )
        for scheme in ("gopher", "gemini", "gopher")
    ]
    for _ in range(40):
        one_host.flush()
        one_host.reactor.advance(0.5)
    assert all(d.called for d in pending)
    assert started == [0.0, 10.0, 11.0]


def test_a_deadline_gives_the_turn_to_another_scheme(one_host: MemoryNetwork) -> None:
    """
    A Gemini fetch whose deadline passes while it waits for its turn gives
    the turn up: the Gopher fetch queued behind it starts one interval
    after the first, not two.
    """
    fetcher = one_host.fetcher(
        requests_per_minute=60,
        cache_enabled=False,
        gemini={"requests_per_minute": 60, "timeout_seconds": 0.5, "cache_enabled": False},
    )
    one_host.run(fetcher.gopher("gopher://localhost/"))
    gemini = fetcher.gemini("gemini://localhost/")
    one_host.flush()
    gopher = fetcher.gopher("gopher://localhost/")
    one_host.flush()
    one_host.reactor.advance(0.5)
    assert one_host.run(gemini).error.code == "TIMEOUT"
    assert dialled(one_host, 1965) == 0 and not gopher.called
    one_host.reactor.advance(0.5)
    assert type(one_host.run(gopher)).__name__ == "MenuResult"


def test_the_connection_limit_counts_every_scheme(one_host: MemoryNetwork) -> None:
    """
    Two Gopher connections held open to a host fill a Gemini limit of 2 to
    it (Gemini waits, nothing dialled), but not a Spartan limit of 3.
    """
    server = one_host.listen(SHARED_IP, 70, GatedServer(gopher_answer))
    fetcher = one_host.fetcher(
        max_connections_per_host=2,
        cache_enabled=False,
        gemini={"max_connections_per_host": 2, "cache_enabled": False},
        smolweb={"max_connections_per_host": 3, "cache_enabled": False},
    )
    held = [fetcher.gopher(f"gopher://localhost/0/about.txt?{n}") for n in range(2)]
    one_host.flush()
    assert len(server.held) == 2
    assert type(one_host.run(fetcher.smolweb("spartan://localhost/"))).__name__ == "GemtextResult"
    gemini = fetcher.gemini("gemini://localhost/")
    one_host.flush()
    assert dialled(one_host, 1965) == 0 and not gemini.called
    server.release()
    assert type(one_host.run(gemini)).__name__ == "GemtextResult"
    assert all(type(one_host.run(d)).__name__ == "TextResult" for d in held)


def test_a_probe_waits_for_a_place_another_scheme_holds(one_host: MemoryNetwork) -> None:
    """
    With one place per host, a Gemini robots.txt probe waits for the place
    a Gopher fetch holds, then runs, then the Gemini fetch: no deadlock.
    """
    server = one_host.listen(SHARED_IP, 70, GatedServer(gopher_answer))
    fetcher = one_host.fetcher(
        max_connections_per_host=1,
        cache_enabled=False,
        gemini={"max_connections_per_host": 1, "respect_robots_txt": True},
    )
    held = fetcher.gopher("gopher://localhost/0/about.txt")
    one_host.flush()
    gemini = fetcher.gemini("gemini://localhost/")
    one_host.flush()
    assert dialled(one_host, 1965) == 0
    server.release()
    assert type(one_host.run(gemini)).__name__ == "GemtextResult"
    assert dialled(one_host, 1965) == 2  # the probe, then the page
    assert type(one_host.run(held)).__name__ == "TextResult"


def test_pipelines_without_a_shared_policy_pace_alone(one_host: MemoryNetwork) -> None:
    """Pipelines built without a policy each make their own: they do not wait for each other."""
    connector = Connector(one_host.reactor, one_host.resolver, AddressPolicy(allow_local=True), 30)
    gopher = GopherPipeline(
        one_host.reactor, connector, GopherConfig(allow_local_hosts=True, respect_robots_txt=False)
    )
    smolweb = SmolwebPipeline(
        one_host.reactor, connector, SmolwebConfig(allow_local_hosts=True, respect_robots_txt=False)
    )
    began = one_host.reactor.seconds()
    assert type(one_host.run(gopher.fetch("gopher://localhost/"))).__name__ == "MenuResult"
    assert type(one_host.run(smolweb.fetch("spartan://localhost/"))).__name__ == "GemtextResult"
    assert one_host.reactor.seconds() == began
