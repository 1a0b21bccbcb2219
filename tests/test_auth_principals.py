"""
Tests for L{gophergem.auth.principals}, L{gophergem.mcp.caller} and the
server's per-principal state: each authenticated caller has their own
client identities and subscriptions, and is told only of changes to their
own resources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from mcp import Client
from mcp.server.subscriptions import ResourceUpdated

from gophergem.auth.principals import Principals
from gophergem.feeds.follow import Follower
from gophergem.mcp.server import PrincipalBus, build_server
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import MemoryNetwork
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import Asker, capsule, data, error_code
from tests.helpers.principals import ALICE, BOB, Caller
from tests.helpers.state import file_state


def test_the_owner_gets_the_servers_own_fetcher_and_follower(tmp_path: Path) -> None:
    """Principal None (stdio, no authentication) changes nothing."""
    net = MemoryNetwork()
    fetcher = net.fetcher()
    follower = Follower(fetcher, MemoryFeedStore())
    principals = Principals(fetcher, file_state(tmp_path), follower)
    assert principals.fetcher_for(None) is fetcher
    assert principals.follower_for(None) is follower


def test_a_principal_gets_their_own_stores_and_shares_the_rest(tmp_path: Path) -> None:
    """Alice's view holds her identities and subscriptions; caches and pins are shared."""
    net = MemoryNetwork()
    fetcher = net.fetcher()
    state = file_state(tmp_path)
    principals = Principals(fetcher, state, Follower(fetcher, MemoryFeedStore()))
    alice = principals.fetcher_for(ALICE)
    assert alice.identities is state.identities(ALICE)
    assert alice.pins is fetcher.pins
    assert alice.gemini_pipeline.cache is fetcher.gemini_pipeline.cache  # type: ignore[attr-defined]
    assert principals.fetcher_for(ALICE) is alice
    follower = principals.follower_for(ALICE)
    assert follower is not None
    assert follower.store is state.feeds(ALICE)
    assert follower.fetcher is alice


def test_pins_per_principal(tmp_path: Path) -> None:
    """With pins kept per principal, a principal's view judges against their own pins."""
    net = MemoryNetwork()
    fetcher = net.fetcher()
    state = file_state(tmp_path, pins_per_principal=True)
    alice = Principals(fetcher, state).fetcher_for(ALICE)
    assert alice.pins is state.pins(ALICE)
    assert alice.pins is not fetcher.pins


def test_views_are_bounded(tmp_path: Path) -> None:
    """The least recently used view goes when more principals call than are kept."""
    net = MemoryNetwork()
    principals = Principals(net.fetcher(), file_state(tmp_path), max_views=2)
    first = principals.fetcher_for("token:a")
    principals.fetcher_for("token:b")
    principals.fetcher_for("token:a")
    principals.fetcher_for("token:c")
    assert principals.fetcher_for("token:a") is first
    assert len(principals._views) == 2


def test_identities_belong_to_their_principal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    An identity Alice creates is presented for Alice only: Bob's fetch of
    the same zone is asked for a certificate, Bob's list is empty, and Bob
    cannot remove Alice's identity.
    """
    caller = Caller(monkeypatch)
    net, server, _ = capsule()

    def app(url: str) -> bytes:
        if server.client_certificates[-1] is None:
            return b"60 Identify yourself\r\n"
        return b"20 text/gemini\r\n# Welcome back\n"

    server.routes["/app/"] = app
    fetcher = net.fetcher(gemini={"respect_robots_txt": False, "requests_per_minute": 0})
    mcp = build_server(fetcher, principals=Principals(fetcher, file_state(tmp_path)))
    scope = "gemini://localhost/app/"

    async def body() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(mcp, elicitation_callback=Asker("accept")) as client:
            caller.principal = ALICE
            seen["created"] = await client.call_tool(
                "gemini_client_cert_update", {"url": scope, "action": "create"}
            )
            seen["alice_fetch"] = await client.call_tool("gemini_fetch", {"url": scope})
            caller.principal = BOB
            seen["bob_fetch"] = await client.call_tool("gemini_fetch", {"url": scope})
            seen["bob_list"] = await client.call_tool("gemini_client_cert_list", {})
            fingerprint = data(seen["created"])["entry"]["fingerprint"]
            seen["bob_remove"] = await client.call_tool(
                "gemini_client_cert_update",
                {"url": scope, "action": "remove", "fingerprint": fingerprint},
            )
            caller.principal = None
            seen["owner_list"] = await client.call_tool("gemini_client_cert_list", {})
            caller.principal = ALICE
            seen["alice_list"] = await client.call_tool("gemini_client_cert_list", {})
        return seen

    seen = run_with_network(net, body)
    assert data(seen["created"])["kind"] == "client_cert_update"
    assert data(seen["alice_fetch"])["kind"] == "gemtext"
    assert data(seen["bob_fetch"])["kind"] == "certificate"
    assert data(seen["bob_list"])["entries"] == []
    assert error_code(seen["bob_remove"]) == "FINGERPRINT_MISMATCH"
    assert data(seen["owner_list"])["entries"] == []
    assert len(data(seen["alice_list"])["entries"]) == 1


def test_subscriptions_belong_to_their_principal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob neither sees nor can drop what Alice follows."""
    caller = Caller(monkeypatch)
    net, _, _ = capsule({"/": b"20 text/gemini\r\n# Log\n=> /a.gmi 2026-01-02 First\n"})
    fetcher = net.fetcher(gemini={"respect_robots_txt": False, "requests_per_minute": 0})
    follower = Follower(fetcher, MemoryFeedStore())
    mcp = build_server(
        fetcher,
        follower=follower,
        principals=Principals(fetcher, file_state(tmp_path), follower),
    )

    async def body() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(mcp) as client:
            caller.principal = ALICE
            seen["subscribed"] = await client.call_tool(
                "feed_subscribe", {"url": "gemini://localhost/"}
            )
            seen["alice"] = await client.call_tool("feed_list", {})
            caller.principal = BOB
            seen["bob"] = await client.call_tool("feed_list", {})
            seen["bob_drop"] = await client.call_tool(
                "feed_unsubscribe", {"url": "gemini://localhost/"}
            )
            caller.principal = ALICE
            seen["alice_after"] = await client.call_tool("feed_list", {})
        return seen

    seen = run_with_network(net, body)
    assert data(seen["subscribed"])["kind"] == "subscription"
    assert len(data(seen["alice"])["entries"]) == 1
    assert data(seen["bob"])["entries"] == []
    assert error_code(seen["bob_drop"]) == "NOT_SUBSCRIBED"
    assert len(data(seen["alice_after"])["entries"]) == 1
    assert follower.store.subscriptions() == []  # type: ignore[attr-defined]


def test_listeners_hear_only_their_principal(monkeypatch: pytest.MonkeyPatch) -> None:
    """An event meant for Alice reaches Alice's listen streams, not Bob's."""
    caller = Caller(monkeypatch)
    bus = PrincipalBus()
    heard: dict[str | None, list[object]] = {ALICE: [], BOB: [], None: []}
    for principal in heard:
        caller.principal = principal
        bus.subscribe(heard[principal].append)
    server = build_server(MemoryNetwork().fetcher())
    server.events = bus

    async def body() -> None:
        await server.announce("gophergem://feeds/updates", ALICE)
        await server.announce("gophergem://feeds/updates", None)

    run_with_network(MemoryNetwork(), body)
    assert [type(e) for e in heard[ALICE]] == [ResourceUpdated]
    assert heard[BOB] == []
    assert [type(e) for e in heard[None]] == [ResourceUpdated]


@attrs.define
class Relay:
    """Stands in for the replicas' channel: records, or fails."""

    broken: bool = False
    sent: list[dict[str, Any]] = attrs.field(factory=list)

    def publish(self, message: dict[str, Any]) -> Any:
        from twisted.internet.defer import fail, succeed

        if self.broken:
            return fail(RuntimeError("Redis is away"))
        self.sent.append(message)
        return succeed(1)


def test_with_a_relay_every_replica_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    With replicas, an announcement goes to the relay (and reaches this
    replica's listeners only when the relay brings it back); without the
    relay, this replica's own listeners are still told.
    """
    caller = Caller(monkeypatch)
    caller.principal = ALICE
    server = build_server(MemoryNetwork().fetcher())
    heard: list[object] = []
    server.events.subscribe(heard.append)  # registered as Alice
    relay = Relay()
    server.relay = relay

    async def body() -> None:
        import asyncio

        await server.announce("gophergem://feeds/updates")
        assert relay.sent == [{"uri": "gophergem://feeds/updates", "principal": ALICE}]
        assert heard == []
        server.hear(relay.sent[0])
        server.hear({"uri": 7, "principal": None})  # not an announcement: ignored
        for _ in range(10):
            await asyncio.sleep(0)
        assert len(heard) == 1
        relay.broken = True
        await server.announce("gophergem://feeds/updates")
        assert len(heard) == 2

    run_with_network(MemoryNetwork(), body)


def test_the_updates_resource_is_the_readers_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gophergem://feeds/updates read by Alice shows her unread entries; Bob's shows none."""
    caller = Caller(monkeypatch)
    net, server, _ = capsule({"/": b"20 text/gemini\r\n# Log\n=> /a.gmi 2026-01-02 First\n"})
    fetcher = net.fetcher(
        gemini={"respect_robots_txt": False, "requests_per_minute": 0, "cache_enabled": False}
    )
    follower = Follower(fetcher, MemoryFeedStore())
    mcp = build_server(
        fetcher,
        follower=follower,
        principals=Principals(fetcher, file_state(tmp_path), follower),
    )

    async def body() -> dict[str | None, Any]:
        read: dict[str | None, Any] = {}
        async with Client(mcp) as client:
            caller.principal = ALICE
            await client.call_tool("feed_subscribe", {"url": "gemini://localhost/"})
            server.routes["/"] = b"20 text/gemini\r\n# Log\n=> /b.gmi 2026-02-03 Second\n"
            await client.call_tool(
                "feed_updates", {"url": "gemini://localhost/", "mark_read": False}
            )
            for principal in (ALICE, BOB, None):
                caller.principal = principal
                result = await client.read_resource("gophergem://feeds/updates")
                read[principal] = json.loads(result.contents[0].text)
        return read

    read = run_with_network(net, body)
    assert [e["title"] for e in read[ALICE]["entries"]] == ["Second"]
    assert read[BOB]["entries"] == []
    assert read[None]["entries"] == []
