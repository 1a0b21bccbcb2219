"""
Tests for L{gophergem.state.redis}: the shared pacer (one lane per host for
every scheme), cap, 44 board, response and robots.txt caches, the
in-process connection limit, and the codec of cached values.

The codec is pure and tested alone.  Everything else runs against a real
C{redis-server} on loopback (L{tests.servers.redis}), usually as two
L{RedisPolicy} instances (two "replicas") sharing it.  Rates are asserted
from recorded start times with generous bounds.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from array import array
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import Clock, deferLater
from zope.interface.verify import verifyObject

from gophergem._defer import settle
from gophergem.errors import StateUnavailable
from gophergem.fetcher.gemini import GeminiDownload
from gophergem.fetcher.gopher import GopherDownload
from gophergem.interfaces import (
    IConcurrencyCap,
    IHostConnectionLimit,
    IHostPacer,
    IPolicyBackend,
    IResponseCache,
    ISlowDownBoard,
)
from gophergem.state.redis import Cacheable, NearCache, RedisPolicy, ValueCodec
from gophergem.state.redis._codec import Unencodable, Unreadable
from gophergem.state.redis._scripts import BOOK, UNBOOK
from gophergem.wire import gemini as gemini_wire
from gophergem.wire import gopher as gopher_wire
from tests.helpers.web import loop_reactor, run
from tests.servers.redis import (
    RedisServer,
    find_redis_server,
    missing,
    redis_url,  # noqa: F401  (the fixture)
    start_rate,
)

T = TypeVar("T")

CACHEABLE = (
    Cacheable(GopherDownload, transient={"windows"}),
    Cacheable(GeminiDownload, transient={"windows"}),
)


def menu_download() -> GopherDownload:
    item = gopher_wire.MenuItem(
        item_type="1",
        title="Phlogs ☕",
        selector=b"/phlogs\xff",
        host="gopher.example",
        port=70,
        next_url="gopher://gopher.example/1/phlogs%FF",
    )
    menu = gopher_wire.Menu(items=(item, item), terminated=True, charset="utf-8")
    return GopherDownload(
        category=gopher_wire.Category.MENU, size=120, overflowed=False, fetched_at=5.5, menu=menu
    )


def gemtext_download() -> GeminiDownload:
    text = "# Hello\n```\ncode\n```\n=> /a link\n"
    return GeminiDownload(
        header=gemini_wire.ResponseHeader(20, "text/gemini; lang=en"),
        mime=gemini_wire.MimeType("text", "gemini", {"lang": "en"}, None, "en"),
        text=text,
        charset="utf-8",
        size=len(text),
        overflowed=False,
        incomplete_reason=None,
        fetched_at=7.25,
        tls={"tls_version": "TLSv1.3", "cipher": None, "cert_fingerprint": "sha256:ab"},
        toggles=array("q", [8, 17]),
    ).with_memo(2000)


# --- the codec (pure) ---------------------------------------------------------------


def test_codec_round_trips_a_gopher_menu() -> None:
    """A parsed menu comes back equal, its memo fresh and empty."""
    codec = ValueCodec.of(CACHEABLE)
    original = menu_download().with_memo(2000, 100)
    value, stored_at = codec.decode(codec.encode(original, 12.5))
    assert value == original
    assert stored_at == 12.5
    assert isinstance(value, GopherDownload)
    assert value.windows.allowance == 0


def test_codec_round_trips_a_gemini_page() -> None:
    """A decoded Gemini page keeps its header, MIME parameters, TLS facts and toggles."""
    codec = ValueCodec.of(CACHEABLE)
    original = gemtext_download()
    value, _ = codec.decode(codec.encode(original, 1.0))
    assert isinstance(value, GeminiDownload)
    assert value == original
    assert value.toggles == array("q", [8, 17])
    assert value.mime.params == {"lang": "en"}
    assert value.tls == original.tls


def test_codec_round_trips_text_and_bytes() -> None:
    """Bytes, tuples and dicts keep their types; the JSON holds no pickle."""
    codec = ValueCodec.of()
    body = gopher_wire.TextBody(text="caf\u00e9", charset="latin-1", terminated=False)
    original = (b"\x00\x80", {"k": [1, 2.5, None]}, body, bytearray(b"x"))
    data = codec.encode(original, 0)
    assert json.loads(data)["format"] == 1
    value, _ = codec.decode(data)
    assert value == original
    assert isinstance(value, tuple) and isinstance(value[3], bytearray)


def _unicode_array() -> array[str]:
    """An array of an exotic type code ('u' is deprecated in 3.13, hence the filter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return array("u", "x")


@pytest.mark.parametrize(
    "value",
    [object(), {1: "a"}, float("nan"), menu_download(), _unicode_array()],
    ids=["object", "int-keys", "nan", "unregistered-type", "unicode-array"],
)
def test_codec_refuses_what_it_does_not_know(value: object) -> None:
    """A value holding an unknown type, or anything JSON cannot spell, is not encoded."""
    with pytest.raises(Unencodable):
        ValueCodec.of().encode(value, 0)


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x04\x95pickle",
        b"{}",
        b'{"format": 1, "at": 0, "value": {"$": "attrs", "n": "Popen", "f": {}}}',
        b'{"format": 1, "at": 0, "value": {"$": "attrs", "n": "Menu", "f": {"nope": 1}}}',
        b'{"format": 1, "at": 0, "value": {"$": "bytes", "v": "***"}}',
        b'{"format": 1, "at": 0, "value": {"$": "enum", "n": "Category", "v": "NOPE"}}',
        b'{"format": 1, "at": "x", "value": null}',
        b'{"format": 2, "at": 0, "value": null}',
    ],
    ids=[
        "pickle",
        "no-format",
        "unknown-type",
        "unknown-field",
        "bad-base64",
        "bad-enum",
        "no-time",
        "other-format",
    ],
)
def test_codec_reads_only_what_it_wrote(data: bytes) -> None:
    """Anything but an entry of this format, of known types, is unreadable."""
    with pytest.raises(Unreadable):
        ValueCodec.of(CACHEABLE).decode(data)


def test_importing_does_not_import_the_driver() -> None:
    """Importing gophergem.state.redis leaves redis-py unimported until connect."""
    code = "import sys, gophergem.state.redis; print('redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- against a real Redis -----------------------------------------------------------


async def wait(d: Deferred[T]) -> T:
    """Wait on a Deferred from an asyncio coroutine."""
    return await d.asFuture(asyncio.get_running_loop())


@asynccontextmanager
async def replicas(
    url: str, count: int = 2, timeout: float = 10.0, **kwargs: Any
) -> AsyncIterator[tuple[IReactorTime, list[RedisPolicy]]]:
    """
    C{count} policies on one Redis, sharing a prefix no other test uses.

    Their calls may take C{timeout} seconds: generous, so that a busy
    machine (the suite runs in parallel) is not mistaken for a Redis outage;
    the tests of the bound itself pass their own.
    """
    prefix = f"test-{uuid.uuid4().hex}:"
    with loop_reactor() as reactor:
        policies = [
            await wait(
                RedisPolicy.connect(
                    url,
                    timeout=timeout,
                    reactor=reactor,
                    prefix=prefix,
                    cacheable=CACHEABLE,
                    **kwargs,
                )
            )
            for _ in range(count)
        ]
        try:
            yield reactor, policies
        finally:
            for policy in policies:
                await wait(policy.close())


def on_redis(url: str, body: Callable[..., Awaitable[None]], **kwargs: Any) -> None:
    """Run C{body(reactor, policies)} on a fresh loop with two replicas."""

    async def main() -> None:
        async with replicas(url, **kwargs) as (reactor, policies):
            await body(reactor, policies)

    run(main, deadline=60)


def test_interfaces(redis_url: str) -> None:  # noqa: F811
    """The policy and every part it makes provide their interfaces."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        policy = policies[0]
        assert verifyObject(IPolicyBackend, policy)
        assert verifyObject(IHostPacer, policy.pacer("gemini", reactor, 60))
        assert verifyObject(IHostConnectionLimit, policy.connection_limit("gemini", 4))
        assert verifyObject(IConcurrencyCap, policy.cap("gemini", 4))
        assert verifyObject(ISlowDownBoard, policy.board("gemini", reactor))
        cache = policy.cache("gemini", reactor, 60, 100)
        assert isinstance(cache, NearCache) and verifyObject(IResponseCache, cache)
        assert verifyObject(IResponseCache, cache.shared)
        assert policy.cache("gemini", reactor, 0, 100) is None
        assert await wait(policy.health()) == {"ok": True, "detail": "Redis answers."}

    on_redis(redis_url, body)


def test_two_replicas_share_one_pace(redis_url: str) -> None:  # noqa: F811
    """At 600 rpm, eight starts to one host from two replicas span at least 0.6 s."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        pacers = [policy.pacer("gemini", reactor, 600) for policy in policies]
        starts: list[float] = []

        def started(_: object) -> None:
            starts.append(time.monotonic())

        turns = [pacers[i % 2].turn("Slow.Example").addCallback(started) for i in range(8)]
        await wait(pacers[1].turn("other.example"))
        # Another host does not queue behind: its turn comes before the last
        # of the eight (told by order, not by a time a busy machine may miss).
        other = time.monotonic()
        for turn in turns:
            await wait(turn)
        assert other < max(starts)
        rate = start_rate(starts)
        assert rate.count == 8
        # One interval of slack for a first start made late by a busy machine;
        # two pacers that did not share would span about 0.3 s.
        assert rate.obeys(600, slack=0.1)

    on_redis(redis_url, body)


def test_no_pacing_at_zero(redis_url: str) -> None:  # noqa: F811
    """At 0 requests per minute every turn has already fired."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        pacer = policies[0].pacer("gopher", reactor, 0)
        assert all(pacer.turn("h").called for _ in range(5))

    on_redis(redis_url, body)


def test_a_cancelled_wait_gives_its_slot_back(redis_url: str) -> None:  # noqa: F811
    """
    Cancelling the last booked wait frees its slot: the next request starts
    one interval after the first, not two.
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        pacer = policies[0].pacer("gemini", reactor, 30)  # two seconds apart
        await wait(pacer.turn("h"))
        second = pacer.turn("h")
        await wait(deferLater(reactor, 0.2, lambda: None))  # booked, now waiting
        second.cancel()
        with pytest.raises(CancelledError):
            await wait(second)
        await wait(deferLater(reactor, 0.2, lambda: None))  # the slot goes back
        asked = time.monotonic()
        await wait(policies[1].pacer("gemini", reactor, 30).turn("h"))
        assert time.monotonic() - asked < 3.0  # about 1.6 s; 3.6 s had it stayed spent

    on_redis(redis_url, body)


def test_schemes_and_replicas_share_one_pace(redis_url: str) -> None:  # noqa: F811
    """
    At 120 rpm for each scheme, four starts to one host by Gopher on one
    replica and Gemini on the other span about 1.5 s: one lane per host.
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        pacers = [
            policies[0].pacer("gopher", reactor, 120),
            policies[1].pacer("gemini", reactor, 120),
        ]
        starts: list[float] = []
        turns = [
            pacers[i % 2]
            .turn("Slow.Example")
            .addCallback(lambda _: starts.append(time.monotonic()))
            for i in range(4)
        ]
        for turn in turns:
            await wait(turn)
        rate = start_rate(starts)
        assert rate.count == 4
        # One interval of slack for a first start made late by a busy
        # machine; a lane per scheme would span about 0.5 s.
        assert rate.obeys(120, slack=0.5)

    on_redis(redis_url, body)


def test_bookings_of_mixed_intervals(redis_url: str) -> None:  # noqa: F811
    """
    On one lane each booking is as long as its own interval asked, and
    giving the last one back returns the lane to that booking's start.
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        client = policies[0].client
        key = client.key("pace", "mixed.example")

        async def book(interval_us: int) -> tuple[float, str]:
            answer = await wait(client.run_script("book", BOOK, [key], [interval_us]))
            return int(answer[0]) / 1_000_000, answer[1].decode("ascii")

        began = time.monotonic()
        assert (await book(2_000_000))[0] == 0  # a slow scheme starts at once
        fast, _ = await book(100_000)  # a fast one waits the slow one's interval
        slow, end = await book(2_000_000)  # then the fast one's own
        ran = time.monotonic() - began
        assert 2.0 - ran <= fast <= 2.0 and 2.1 - ran <= slow <= 2.1
        assert await wait(client.run_script("unbook", UNBOOK, [key], [end, 2_000_000])) == 1
        again, _ = await book(500_000)  # the slow slot given back: after the fast one
        assert 2.1 - (time.monotonic() - began) <= again <= 2.1

    on_redis(redis_url, body)


def test_a_cancelled_wait_of_another_scheme_gives_its_slot_back(
    redis_url: str,  # noqa: F811
) -> None:
    """
    A queued Gopher wait of ten seconds, cancelled, frees its whole slot:
    a Spartan request on another replica starts one Gemini interval after
    the Gemini start, not ten seconds later.
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        began = time.monotonic()  # before the Gemini start, so no load can shorten what follows
        await wait(policies[0].pacer("gemini", reactor, 60).turn("h"))
        queued = policies[0].pacer("gopher", reactor, 6).turn("h")
        await wait(deferLater(reactor, 0.2, lambda: None))  # booked, now waiting
        queued.cancel()
        with pytest.raises(CancelledError):
            await wait(queued)
        await wait(deferLater(reactor, 0.2, lambda: None))  # the slot goes back
        await wait(policies[1].pacer("smolweb", reactor, 60).turn("h"))
        assert 0.9 < time.monotonic() - began < 5.0  # about 1 s; 11 s had the slot stayed spent

    on_redis(redis_url, body)


def test_connection_limit_is_per_process_and_shared_by_schemes(
    redis_url: str,  # noqa: F811
) -> None:
    """
    The per-host connection limit counts this process's sockets: one
    replica's schemes count a host together, the other replica apart.
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        gopher = policies[0].connection_limit("gopher", 4)
        gemini = policies[0].connection_limit("gemini", 1)
        held: Deferred[None] = Deferred()
        gopher.run("h.example", lambda: held)
        waiting = gemini.run("h.example", lambda: succeed(None))
        assert not waiting.called and gemini.open("h.example") == 1
        other = policies[1].connection_limit("gemini", 1).run("h.example", lambda: succeed(2))
        assert other.called
        held.callback(None)
        assert waiting.called and gopher.open("h.example") == 0

    on_redis(redis_url, body)


def test_cap_across_replicas(redis_url: str) -> None:  # noqa: F811
    """A cap of 2 holds for both replicas together, and every operation runs."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        caps = [policy.cap("gopher", 2) for policy in policies]
        running: list[int] = []
        most = [0]

        async def work(n: int) -> int:
            running.append(n)
            most[0] = max(most[0], len(running))
            await deferLater(reactor, 0.1, lambda: None)
            running.remove(n)
            return n

        results = [caps[n % 2].run(work, n) for n in range(6)]
        assert [await wait(d) for d in results] == list(range(6))
        assert most[0] == 2

    on_redis(redis_url, body)


def test_cap_zero_is_no_cap(redis_url: str) -> None:  # noqa: F811
    """A cap of 0 calls at once, without asking Redis."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        cap = policies[0].cap("gopher", 0)
        assert cap.run(lambda: 7).result == 7  # type: ignore[attr-defined]

    on_redis(redis_url, body)


def test_cap_cancel_while_waiting(redis_url: str) -> None:  # noqa: F811
    """Cancelling a waiting operation never calls it; the holder's result is unchanged."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        cap = policies[0].cap("gopher", 1)
        gate: Deferred[str] = Deferred()
        holding = cap.run(lambda: gate)
        await wait(deferLater(reactor, 0.2, lambda: None))
        called: list[int] = []
        waiting = policies[1].cap("gopher", 1).run(lambda: called.append(1))
        await wait(deferLater(reactor, 0.2, lambda: None))
        waiting.cancel()
        with pytest.raises(CancelledError):
            await wait(waiting)
        gate.callback("done")
        assert await wait(holding) == "done"
        assert called == []
        # The place is free again.
        assert await wait(cap.run(lambda: succeed(3))) == 3

    on_redis(redis_url, body)


def test_leases_lapse_and_running_ones_are_renewed(redis_url: str) -> None:  # noqa: F811
    """
    A lease nobody renews (a killed replica) lapses after lease_seconds;
    a running operation renews its own and keeps its place meanwhile.
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        first, second = policies
        key = first.client.key("cap", "gemini")
        await wait(first.client.call(lambda redis: redis.zadd(key, {"dead": 0})))
        # The dead lease has score 0 (long expired): it is swept at once.
        assert await wait(first.cap("gemini", 1).run(lambda: 1)) == 1
        # A live operation longer than the lease keeps its place.
        gate: Deferred[None] = Deferred()
        holding = first.cap("gemini", 1).run(lambda: gate)
        started = time.monotonic()
        waiting = second.cap("gemini", 1).run(time.monotonic)
        await wait(deferLater(reactor, 1.0, lambda: None))  # over three lease lengths
        assert not waiting.called
        gate.callback(None)
        await wait(holding)
        assert await wait(waiting) - started >= 1.0

    on_redis(redis_url, body, lease_seconds=0.3)


def test_board_seen_by_both(redis_url: str) -> None:  # noqa: F811
    """A 44 noted by one replica is seen by the other, doubles, and is cleared by either."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        a, b = (policy.board("gemini", reactor) for policy in policies)
        assert await wait(b.retry_after("Cap.Example", 1965)) is None
        first = await wait(a.note("Cap.Example", 1965, "please slow down"))
        assert first == pytest.approx(1.0, abs=0.05)
        left = await wait(b.retry_after("cap.example", 1965))
        assert left is not None and 0 < left <= 1.0
        assert await wait(b.retry_after("cap.example", 1966)) is None
        second = await wait(b.note("cap.example", 1965, "again"))
        assert second == pytest.approx(2.0, abs=0.05)
        told = await wait(a.note("told.example", 1965, "5"))
        assert told == pytest.approx(5.0, abs=0.05)
        huge = await wait(a.note("huge.example", 1965, "99999999"))
        assert huge == pytest.approx(3600.0, abs=0.05)
        await wait(a.clear("cap.example", 1965))
        assert await wait(b.retry_after("cap.example", 1965)) is None
        again = await wait(b.note("cap.example", 1965, "x"))
        assert again == pytest.approx(1.0, abs=0.05)  # the doubling starts afresh

    on_redis(redis_url, body)


def test_one_replica_takes_each_turn(redis_url: str) -> None:  # noqa: F811
    """The first replica to claim a turn gets it; the other waits until it lapses."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        a, b = policies
        assert await wait(a.claim("feeds-check", 0.3)) is True
        assert await wait(b.claim("feeds-check", 0.3)) is False
        assert await wait(a.claim("feeds-check", 0.3)) is False
        assert await wait(b.claim("another", 0.3)) is True
        await asyncio.sleep(0.4)
        assert await wait(b.claim("feeds-check", 0.3)) is True

    on_redis(redis_url, body)


def test_announcements_reach_every_replica(redis_url: str) -> None:  # noqa: F811
    """What one replica publishes, every listening replica hears, itself included."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        heard: dict[int, list[object]] = {0: [], 1: []}
        for index, policy in enumerate(policies):
            policy.events().listen(heard[index].append)
        await asyncio.sleep(0.2)  # both subscribed
        name = policies[0].client.key("events")
        await wait(policies[0].client.call(lambda r: r.publish(name, b"not json")))
        told = await wait(policies[1].events().publish({"uri": "u", "principal": None}))
        assert told == 2
        for _ in range(100):
            if heard[0] and heard[1]:
                break
            await asyncio.sleep(0.02)
        assert heard == {0: [{"uri": "u", "principal": None}], 1: [{"uri": "u", "principal": None}]}
        for policy in policies:
            await wait(policy.events().stop())

    on_redis(redis_url, body)


def test_cache_shared(redis_url: str) -> None:  # noqa: F811
    """
    What one replica caches the other reads; a discard forgets it in Redis
    (a replica's own near copy lapses within NEAR_SECONDS).
    """

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        a, b = (policy.cache("gemini", reactor, 60, 100) for policy in policies)
        assert a is not None and b is not None
        page = gemtext_download()
        assert await wait(settle(b.get("gemini://h/"))) is None
        stored_at = await wait(settle(a.put("gemini://h/", page)))
        hit = await wait(settle(b.get("gemini://h/")))
        assert hit is not None
        assert hit == (page, stored_at)
        await wait(settle(b.discard("gemini://h/")))
        fresh = policies[0].cache("gemini", reactor, 60, 100)
        assert fresh is not None
        assert await wait(settle(fresh.get("gemini://h/"))) is None
        # Not shareable: kept out of Redis, and the put still answers.
        await wait(settle(a.put("gemini://h/x", object())))
        assert await wait(settle(b.get("gemini://h/x"))) is None

    on_redis(redis_url, body)


def test_cache_entries_expire_and_garbage_is_a_miss(redis_url: str) -> None:  # noqa: F811
    """An entry lives for the TTL; bytes that are not an entry read as a miss."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        policy = policies[0]
        cache = policy.cache("gopher", reactor, 0.2, 100)
        assert cache is not None
        await wait(settle(cache.put("k", menu_download())))
        ttl = await wait(
            policy.client.call(lambda r: r.pttl(policy.client.key("cache", "gopher", "k")))
        )
        assert 0 < ttl <= 200
        await wait(deferLater(reactor, 0.5, lambda: None))
        assert await wait(settle(cache.get("k"))) is None
        name = policy.client.key("cache", "gopher", "bad")
        await wait(policy.client.call(lambda r: r.set(name, b"\x80\x04pickle")))
        assert await wait(settle(cache.get("bad"))) is None

    on_redis(redis_url, body)


def test_robots_probed_once_for_both(redis_url: str) -> None:  # noqa: F811
    """A robots.txt answer (a file, or none) is read by the other replica without a probe."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        asked: list[tuple[str, int]] = []
        answers = {"a.example": b"User-agent: *\nDisallow: /x\n", "b.example": None}

        def probe(host: str, port: int) -> Deferred[bytes | None]:
            asked.append((host, port))
            return succeed(answers[host])

        a, b = (policy.robots_probe("gemini", probe, 60) for policy in policies)
        assert await wait(a("a.example", 1965)) == answers["a.example"]
        assert await wait(b("A.example", 1965)) == answers["a.example"]
        assert await wait(a("b.example", 1965)) is None
        assert await wait(b("b.example", 1965)) is None
        assert asked == [("a.example", 1965), ("b.example", 1965)]
        assert policies[0].robots_probe("gemini", probe, 0) is probe

    on_redis(redis_url, body)


def test_a_failed_robots_probe_is_not_shared(redis_url: str) -> None:  # noqa: F811
    """A probe that fails fails for its caller, and the next replica probes again."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        calls: list[int] = []

        def probe(host: str, port: int) -> Deferred[bytes | None]:
            calls.append(port)
            if len(calls) == 1:
                raise StateUnavailable(message="boom")
            return succeed(b"")

        a, b = (policy.robots_probe("gopher", probe, 60) for policy in policies)
        with pytest.raises(StateUnavailable):
            await wait(a("h", 70))
        assert await wait(b("h", 70)) == b""
        assert calls == [70, 70]

    on_redis(redis_url, body)


def test_scripts_reload_after_script_flush(redis_url: str) -> None:  # noqa: F811
    """After SCRIPT FLUSH (as after a restart) the scripts are loaded again."""

    async def body(reactor: IReactorTime, policies: list[RedisPolicy]) -> None:
        policy = policies[0]
        board = policy.board("gemini", reactor)
        pacer = policy.pacer("gemini", reactor, 6000)
        await wait(board.note("h", 1965, "x"))
        await wait(pacer.turn("h"))
        await wait(policy.client.call(lambda r: r.script_flush()))
        assert await wait(board.retry_after("h", 1965)) is not None
        await wait(pacer.turn("h"))
        assert await wait(policy.cap("gemini", 1).run(lambda: 5)) == 5

    on_redis(redis_url, body)


# --- failures ------------------------------------------------------------------------


@pytest.fixture
def own_server() -> Any:
    """A Redis this test may stop and start."""
    binary = find_redis_server()
    if binary is None:
        missing("redis-server is not installed")
    with tempfile.TemporaryDirectory(prefix="gophergem-redis-") as directory:
        server = RedisServer(binary, Path(directory))
        server.start()
        try:
            yield server
        finally:
            server.stop()


def test_stopped_redis_fails_fast_and_recovers(own_server: RedisServer) -> None:
    """
    With Redis stopped every part fails with STATE_UNAVAILABLE within the
    timeout, health says so, and all works again once Redis is back.
    """

    async def main() -> None:
        async with replicas(own_server.url, count=1, timeout=1.0) as (reactor, (policy,)):
            board = policy.board("gemini", reactor)
            cache = policy.cache("gemini", reactor, 60, 10)
            assert cache is not None
            await wait(board.note("h", 1965, "x"))
            own_server.stop()
            calls: list[Callable[[], Deferred[Any]]] = [
                lambda: board.retry_after("h", 1965),
                lambda: policy.pacer("gemini", reactor, 60).turn("h"),
                lambda: policy.cap("gemini", 1).run(lambda: 1),
                lambda: settle(cache.get("k")),
            ]
            for call in calls:
                began = time.monotonic()
                with pytest.raises(StateUnavailable) as caught:
                    await wait(call())
                assert time.monotonic() - began < 1.0 + 1.0
                assert caught.value.code == "STATE_UNAVAILABLE"
                assert "Redis" in caught.value.message
            health = await wait(policy.health())
            assert health["ok"] is False and "Redis" in str(health["detail"])
            own_server.start()
            await wait(board.note("h", 1965, "x"))  # a fresh server: scripts reloaded
            assert await wait(board.retry_after("h", 1965)) is not None
            assert (await wait(policy.health()))["ok"] is True

    run(main, deadline=60)


def test_a_silent_server_times_out() -> None:
    """A server that accepts and never answers gives STATE_UNAVAILABLE after the timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]

        async def main() -> None:
            with loop_reactor() as reactor:
                began = time.monotonic()
                with pytest.raises(StateUnavailable) as caught:
                    await wait(
                        RedisPolicy.connect(
                            f"redis://:sekrit@127.0.0.1:{port}/0", timeout=0.5, reactor=reactor
                        )
                    )
                assert 0.4 <= time.monotonic() - began < 0.5 + 1.0
                assert "sekrit" not in str(caught.value)
                assert "0.5 seconds" in caught.value.message

        run(main)


def test_nothing_listening() -> None:
    """Connecting where nothing listens fails at once with STATE_UNAVAILABLE."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    async def main() -> None:
        with loop_reactor() as reactor:
            with pytest.raises(StateUnavailable) as caught:
                await wait(
                    RedisPolicy.connect(
                        f"redis://user:sekrit@127.0.0.1:{port}", timeout=2.0, reactor=reactor
                    )
                )
            assert caught.value.message == "Redis could not be reached."
            with pytest.raises(StateUnavailable):
                await wait(RedisPolicy.connect("http://x", timeout=2.0, reactor=reactor))

    run(main)


@attrs.define
class _SharedStandIn:
    """A shared cache answering through Deferreds, counting reads."""

    clock: Clock
    entries: dict[str, tuple[object, float]] = attrs.field(factory=dict)
    reads: int = 0

    def get(self, key: str) -> Deferred[tuple[object, float] | None]:
        self.reads += 1
        return succeed(self.entries.get(key))

    def put(self, key: str, value: object) -> Deferred[float]:
        self.entries[key] = (value, self.clock.seconds())
        return succeed(self.clock.seconds())

    def discard(self, key: str) -> Deferred[None]:
        self.entries.pop(key, None)
        return succeed(None)


def _near(ttl: float = 300.0) -> tuple[NearCache, _SharedStandIn, Clock]:
    clock = Clock()
    shared = _SharedStandIn(clock)
    return NearCache(shared, clock, ttl, near_seconds=10.0), shared, clock  # type: ignore[arg-type]


def test_near_copy_answers_at_once_with_the_same_object() -> None:
    """A value read from Redis is then answered from memory, the same object, for a while."""
    cache, shared, clock = _near()
    page = object()
    shared.entries["k"] = (page, 0.0)
    first: list[object] = []
    settle(cache.get("k")).addCallback(first.append)
    assert first == [(page, 0.0)] and shared.reads == 1
    clock.advance(9)
    assert cache.get("k") == (page, 0.0)
    assert shared.reads == 1
    clock.advance(2)  # the near copy has lapsed: Redis is asked again
    settle(cache.get("k"))
    assert shared.reads == 2


def test_near_copy_never_outlives_the_shared_freshness() -> None:
    """An entry stored long ago is answered near only while it is still fresh."""
    cache, shared, clock = _near(ttl=5.0)
    shared.entries["k"] = ("old", 0.0)
    settle(cache.get("k"))
    clock.advance(5)
    found: list[object] = []
    settle(cache.get("k")).addCallback(found.append)
    assert shared.reads == 2


def test_puts_and_discards_reach_both() -> None:
    """A value stored here is in Redis too; a discard forgets it in both."""
    cache, shared, _ = _near()
    settle(cache.put("k", "v"))
    assert shared.entries["k"][0] == "v"
    assert cache.get("k") == ("v", 0.0)
    settle(cache.discard("k"))
    assert "k" not in shared.entries
    missed: list[object] = []
    settle(cache.get("k")).addCallback(missed.append)
    assert missed == [None]


# --- a replica that shares only Redis ------------------------------------------------


def _redis_only(url: str, tmp_path: Path, loop: asyncio.AbstractEventLoop) -> Any:
    """
    The service tree of C{gophergem serve --transport http} with only
    C{GOPHERGEM_REDIS_URL} set, on an asyncio reactor over C{loop} (not
    running yet, as under C{serve} and twistd).
    """
    from twisted.internet.asyncioreactor import AsyncioSelectorReactor

    from gophergem.config import Config
    from gophergem.service import makeService

    config = Config.from_mapping(
        {
            "GOPHERGEM_REDIS_URL": url,
            "GOPHERGEM_STATE_TIMEOUT_SECONDS": "1",
            "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
            "GOPHERGEM_FEEDS_CHECK_INTERVAL_SECONDS": "3600",
            "GEMINI_TOFU_ENABLED": "false",
            "GEMINI_CLIENT_CERTS_ENABLED": "false",
        }
    )
    reactor = AsyncioSelectorReactor(loop)
    return reactor, makeService(
        config, reactor, transport="http", endpoint="tcp:0:interface=127.0.0.1"
    )


def _dispose(reactor: Any, loop: asyncio.AbstractEventLoop) -> None:
    reactor.removeAll()
    reactor.removeReader(reactor.waker)
    reactor.waker.connectionLost(None)
    loop.close()


def test_a_redis_only_replica_starts_before_the_loop_runs(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """
    With Redis and no PostgreSQL, the replica connects before the reactor
    runs (as C{serve} and twistd start it), listens, and C{/health} asks
    Redis: 200.
    """
    loop = asyncio.new_event_loop()
    reactor, top = _redis_only(redis_url, tmp_path, loop)
    try:
        top.privilegedStartService()  # the loop is not running here
        top.startService()
        port = top.getServiceNamed("state").getServiceNamed("http").listening

        async def health() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port.getHost().port)
            writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = await reader.read()
            writer.close()
            return answer

        answer = loop.run_until_complete(asyncio.wait_for(health(), 30))
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        # Subscriptions are in this replica's files: it checks them itself,
        # not in turns with replicas whose files it never reads.
        assert top.getServiceNamed("state").getServiceNamed("feeds").claim is None
        loop.run_until_complete(asyncio.wait_for(top.stopService().asFuture(loop), 30))
    finally:
        _dispose(reactor, loop)


def test_a_redis_only_replica_refuses_in_one_line_when_redis_is_away(tmp_path: Path) -> None:
    """Redis unreachable at start-up: L{StateStartError} with one line, no URL."""
    from gophergem.state.service import StateStartError

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    loop = asyncio.new_event_loop()
    reactor, top = _redis_only(f"redis://:sekrit@127.0.0.1:{port}/0", tmp_path, loop)
    try:
        with pytest.raises(StateStartError) as caught:
            top.privilegedStartService()
        assert str(caught.value) == "STATE_UNAVAILABLE: Redis could not be reached."
    finally:
        _dispose(reactor, loop)


def test_a_call_cancelled_before_it_runs_leaves_no_warning() -> None:
    """
    A call whose Deferred is cancelled before the loop ran it (the client
    went away) leaves no "coroutine was never awaited" warning in the log.
    """
    import gc

    from gophergem.state.redis._client import run_bounded

    async def command() -> None:
        return None

    loop = asyncio.new_event_loop()
    try:

        def cancelled_at_once() -> None:
            d = run_bounded(loop, command(), 1.0)
            d.cancel()
            d.addErrback(lambda reason: reason.trap(CancelledError))

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cancelled_at_once()
            loop.run_until_complete(asyncio.sleep(0))
            loop.run_until_complete(asyncio.sleep(0))
            gc.collect()
        assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    finally:
        loop.close()
