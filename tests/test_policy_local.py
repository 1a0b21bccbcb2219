"""
Tests for L{gophergem.policy.local}: L{LocalPolicy} hands out this
process's pacer, connection limit, cap, 44 board and cache (the pacers and
limits of every scheme sharing one table per host), and passes robots.txt
probes on.
"""

from __future__ import annotations

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from gophergem.interfaces import (
    IConcurrencyCap,
    IHostConnectionLimit,
    IHostPacer,
    IPolicyBackend,
    IResponseCache,
    ISlowDownBoard,
)
from gophergem.policy.cache import ResponseCache
from gophergem.policy.local import LocalPolicy
from gophergem.policy.pacing import ConcurrencyCap, HostPacer, SlowDownBoard


def test_provides_the_interfaces() -> None:
    """The policy and everything it builds verify against their interfaces."""
    policy, clock = LocalPolicy(), Clock()
    assert verifyObject(IPolicyBackend, policy)
    assert verifyObject(IHostPacer, policy.pacer("gemini", clock, 60))
    assert verifyObject(IConcurrencyCap, policy.cap("gemini", 4))
    assert verifyObject(ISlowDownBoard, policy.board("gemini", clock))
    assert verifyObject(IResponseCache, policy.cache("gopher", clock, 300, 10))


def test_builds_todays_classes() -> None:
    """Each factory builds a fresh in-process object with the settings given."""
    policy, clock = LocalPolicy(), Clock()
    pacer = policy.pacer("gopher", clock, 30)
    assert isinstance(pacer, HostPacer) and pacer.interval == 2.0
    cap = policy.cap("gopher", 3)
    assert isinstance(cap, ConcurrencyCap) and cap.limit == 3
    assert isinstance(policy.board("gemini", clock), SlowDownBoard)
    cache = policy.cache("gemini", clock, 60, 5)
    assert isinstance(cache, ResponseCache) and (cache.ttl, cache.max_entries) == (60, 5)
    assert policy.board("gemini", clock) is not policy.board("gemini", clock)


def test_no_cache_without_a_ttl() -> None:
    """A TTL of 0 means no cache."""
    assert LocalPolicy().cache("gopher", Clock(), 0, 10) is None


def test_robots_probe_is_passed_on() -> None:
    """In one process the gate's own cache is enough: the probe is returned as it is."""

    def probe(host: str, port: int) -> Deferred[bytes | None]:
        return succeed(None)

    assert LocalPolicy().robots_probe("gemini", probe, 86400) is probe


def test_health_and_close() -> None:
    """Health is always ok; closing lets go of nothing."""
    policy = LocalPolicy()
    health: list[object] = []
    policy.health().addCallback(health.append)
    assert health == [{"ok": True, "detail": "in-process"}]
    closed: list[object] = []
    policy.close().addCallback(closed.append)
    assert closed == [None]


def test_every_turn_is_ours() -> None:
    """Nothing shares an in-process policy: every claim is granted."""
    granted: list[object] = []
    LocalPolicy().claim("feeds-check", 60).addCallback(granted.append)
    assert granted == [True]


def test_every_schemes_pacer_shares_one_pace_per_host() -> None:
    """
    The pacers one policy hands out pace a host together, each with its own
    interval; different hosts, and another policy's pacers, do not wait.
    """
    policy, clock = LocalPolicy(), Clock()
    gopher, gemini = policy.pacer("gopher", clock, 6), policy.pacer("gemini", clock, 60)
    assert gopher.turn("h.example").called
    second = gemini.turn("h.example")
    assert not second.called and gemini.turn("other.example").called
    assert LocalPolicy().pacer("gemini", clock, 60).turn("h.example").called
    clock.advance(10)
    assert second.called
    assert not policy.pacer("smolweb", clock, 60).turn("h.example").called


def test_pacers_on_another_clock_pace_apart() -> None:
    """Lanes are kept per clock: a pacer on another clock is timed by that clock alone."""
    policy = LocalPolicy()
    assert policy.pacer("gopher", Clock(), 60).turn("h").called
    assert policy.pacer("gemini", Clock(), 60).turn("h").called


def test_every_schemes_limit_counts_one_host_together() -> None:
    """The connection limits one policy hands out share one count per host."""
    policy = LocalPolicy()
    gopher, gemini = policy.connection_limit("gopher", 4), policy.connection_limit("gemini", 1)
    assert verifyObject(IHostConnectionLimit, gemini)
    held: Deferred[None] = Deferred()
    gopher.run("h.example", lambda: held)
    waiting = gemini.run("h.example", lambda: succeed("ran"))
    assert not waiting.called and gemini.open("h.example") == 1
    assert LocalPolicy().connection_limit("gemini", 1).run("h.example", lambda: succeed(1)).called
    held.callback(None)
    assert waiting.called and gopher.open("h.example") == 0


def test_policies_are_equal_only_to_themselves() -> None:
    """A policy holds its hosts' state: two of them are two policies."""
    policy = LocalPolicy()
    assert policy == policy and policy != LocalPolicy()
