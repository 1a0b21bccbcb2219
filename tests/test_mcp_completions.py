"""
Tests for L{gophergem.mcp.completions}: the prompts' C{url} arguments
complete from the caller's recent fetches, subscriptions, pins and
identities' scopes, filtered by what was typed, through the SDK's own
in-process C{mcp.Client} in both protocol eras; the server advertises
completions; one principal's history is never offered to another; a failing
or silent store gives fewer completions, never an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from mcp import Client
from mcp_types import PromptReference
from twisted.internet.defer import Deferred, fail

from gophergem.config import Config
from gophergem.feeds.follow import Follower
from gophergem.mcp import completions
from gophergem.mcp.completions import (
    MAX_VALUES,
    RecentUrls,
    _matches,
    candidates,
    complete_url,
    remember,
)
from gophergem.mcp.server import build_server
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import FakeGopherServer, MemoryNetwork
from tests.helpers.feeds import GEMINI_IP, GEMLOG, GOPHER_IP, PHLOG
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import STALE

ERAS = ["legacy", "2026-07-28"]
EXPLORE = PromptReference(type="ref/prompt", name="explore_capsule")
GEMLOG_URL = "gemini://localhost/gemlog/"
PHLOG_URL = "gopher://g.example/1/phlog"


def network() -> MemoryNetwork:
    from gophergem.testing import FakeGeminiServer

    net = MemoryNetwork()
    net.resolver.add("localhost", GEMINI_IP)
    net.resolver.add("g.example", GOPHER_IP)
    net.listen_gemini(GEMINI_IP, 1965, FakeGeminiServer({"/gemlog/": GEMLOG, "/": GEMLOG}))
    net.listen(GOPHER_IP, 70, FakeGopherServer({b"/phlog": PHLOG, b"": PHLOG}))
    return net


def serve(net: MemoryNetwork) -> Any:
    fetcher = net.fetcher()
    follower = Follower(fetcher, MemoryFeedStore(), now=net.reactor.seconds)
    return build_server(fetcher, Config(), follower=follower)


def values(result: Any) -> tuple[list[str], int | None, bool | None]:
    c = result.completion
    return c.values, c.total, c.has_more


@pytest.mark.parametrize("mode", ERAS)
def test_urls_complete_from_every_source(mode: str) -> None:
    """
    Recent fetches first (most recent first), then subscriptions, pinned
    hosts and identity scopes, each once; filtered by the typed prefix.
    """
    net = network()
    server = serve(net)

    async def body() -> Any:
        async with Client(server, mode=mode) as client:
            if mode == "legacy":  # (the in-process 2026-07-28 client makes its own discover)
                assert client.server_capabilities.completions is not None
            await client.call_tool("feed_subscribe", {"url": PHLOG_URL})  # fetched and followed
            scope = {"url": "gemini://localhost:1965/app/", "action": "create"}
            await client.call_tool("gemini_client_cert_update", scope)
            await client.call_tool("gopher_fetch", {"url": "gopher://g.example/"})
            await client.call_tool("gemini_fetch", {"url": "gemini://localhost/?secret"})
            await client.call_tool("gemini_fetch", {"url": GEMLOG_URL})
            await client.call_tool("gopher_fetch", {"url": "gopher://unknown.example/"})
            everything = await client.complete(EXPLORE, {"name": "url", "value": ""})
            gemini = await client.complete(
                EXPLORE, {"name": "url", "value": "GEMINI://LocalHost/g"}
            )
            gemlog = await client.complete(
                PromptReference(type="ref/prompt", name="summarize_gemlog"),
                {"name": "url", "value": "gopher"},
            )
            other = await client.complete(
                PromptReference(type="ref/prompt", name="whats_new"),
                {"name": "since", "value": "2"},
            )
            return everything, gemini, gemlog, other

    everything, gemini, gemlog, other = run_with_network(net, body)
    assert values(everything) == (
        [
            GEMLOG_URL,  # recent, newest first
            "gemini://localhost/",  # its query is never kept
            "gopher://g.example/1",
            # (the failed fetch of unknown.example is not offered; the subscribe
            # read its page through the fetcher, not a tool)
            PHLOG_URL,  # subscriptions
            "gemini://localhost/app/",  # identity scope (pinned host already listed)
        ],
        5,
        False,
    )
    assert values(gemini) == ([GEMLOG_URL], 1, False)
    assert values(gemlog) == (["gopher://g.example/1", PHLOG_URL], 2, False)
    assert values(other) == ([], None, None)


def test_pinned_hosts_are_offered() -> None:
    """A pinned host is offered as gemini://host/ (the port only when not 1965)."""
    net = network()
    server = serve(net)
    net.pins.put(attrs.evolve(STALE, host="pinned.example", port=1966))

    async def body() -> Any:
        async with Client(server) as client:
            return await client.complete(EXPLORE, {"name": "url", "value": "gemini://p"})

    assert values(run_with_network(net, body)) == (["gemini://pinned.example:1966/"], 1, False)


def test_matches_ignores_case_on_scheme_and_host_only() -> None:
    assert _matches("gemini://Host.example/Path", "GEMINI://host.EXAMPLE/Pa")
    assert not _matches("gemini://host.example/Path", "gemini://host.example/pa")
    assert _matches("gopher://g.example", "Gopher://G")
    assert not _matches("gopher://g.example/", "gopher://g.example/x")
    assert _matches("anything", "")


def test_at_most_a_hundred_values_with_the_count() -> None:
    urls = [f"gemini://h{i}.example/" for i in range(150)]
    completion = complete_url(urls, "gemini://h1")
    assert completion.total == 61  # h1, h10-h19, h100-h149
    assert completion.values == [u for u in urls if u.startswith("gemini://h1")]
    everything = complete_url(urls, "")
    assert len(everything.values) == MAX_VALUES
    assert everything.values == urls[:MAX_VALUES]
    assert (everything.total, everything.has_more) == (150, True)


def test_recent_urls_are_bounded_and_per_principal() -> None:
    recent = RecentUrls(per_principal=3, principals=2)
    for i in range(5):
        recent.add("alice", f"gopher://a/{i}")
    recent.add("alice", "gopher://a/2")  # again: moves to the front
    assert recent.of("alice") == ["gopher://a/2", "gopher://a/4", "gopher://a/3"]
    recent.add("bob", "gopher://b/")
    assert recent.of("bob") == ["gopher://b/"]
    assert recent.of(None) == []
    recent.add(None, "gopher://shared/")
    assert recent.of("alice") == []  # the least recently active principal went
    assert recent.of(None) == ["gopher://shared/"]


def test_one_principals_history_is_never_offered_to_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What alice fetched is offered to alice only; nobody's to the unauthenticated."""
    net = network()
    server = serve(net)

    class Ctx:
        mcp_server = server

    who = ["token:alice"]
    monkeypatch.setattr(completions, "current_principal", lambda: who[0])
    page = {"kind": "menu", "request_info": {"url": "gopher://private.example/1/diary"}}
    remember(Ctx(), [page])  # type: ignore[arg-type]

    async def offered(principal: str | None) -> list[str]:
        return await candidates(server, principal)

    assert run_with_network(net, lambda: offered("token:alice"))[0] == (
        "gopher://private.example/1/diary"
    )
    assert "gopher://private.example/1/diary" not in run_with_network(
        net, lambda: offered("token:bob")
    )
    assert "gopher://private.example/1/diary" not in run_with_network(net, lambda: offered(None))


class BrokenPins:
    def all(self, host: str | None = None) -> Any:
        raise RuntimeError("the pin store is on fire")


class BrokenFeeds:
    def subscriptions(self) -> Deferred[Any]:
        return fail(RuntimeError("the feed store is gone"))


class SilentFeeds:
    def subscriptions(self) -> Deferred[Any]:
        return Deferred()  # never answers


@pytest.mark.parametrize("feeds", [BrokenFeeds, SilentFeeds])
def test_a_failing_store_gives_fewer_completions_not_an_error(
    feeds: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pins that raise, subscriptions that fail or never answer: the rest still come."""
    monkeypatch.setattr(completions, "STORE_WAIT", 0.05)
    net = network()
    net.pins = BrokenPins()  # type: ignore[assignment]
    server = serve(net)
    server.follower = feeds()

    async def body() -> Any:
        async with Client(server) as client:
            await client.call_tool("gopher_fetch", {"url": PHLOG_URL})
            return await client.complete(EXPLORE, {"name": "url", "value": ""})

    assert values(run_with_network(net, body)) == ([PHLOG_URL], 1, False)


def test_a_server_without_prompts_does_not_advertise_completions() -> None:
    net = network()
    server = build_server(net.fetcher())

    async def body() -> Any:
        async with Client(server, mode="legacy") as client:
            return client.server_capabilities.completions

    assert run_with_network(net, body) is None


def test_each_principal_is_offered_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    On a team server, Alice's fetches, subscriptions and identities complete
    for Alice; Bob, and the unauthenticated owner, are offered none of them.
    """
    from gophergem.auth.principals import Principals
    from tests.helpers.principals import ALICE, BOB, Caller
    from tests.helpers.state import file_state

    caller = Caller(monkeypatch)
    monkeypatch.setattr(completions, "current_principal", lambda: caller.principal)
    net = network()
    fetcher = net.fetcher()
    follower = Follower(fetcher, MemoryFeedStore(), now=net.reactor.seconds)
    server = build_server(
        fetcher,
        Config(),
        follower=follower,
        principals=Principals(fetcher, file_state(tmp_path), follower),
    )

    async def offered() -> list[str]:
        async with Client(server) as client:
            answer = await client.complete(EXPLORE, {"name": "url", "value": ""})
            return answer.completion.values

    async def body() -> dict[str | None, list[str]]:
        async with Client(server) as client:
            caller.principal = ALICE
            await client.call_tool("gopher_fetch", {"url": "gopher://g.example/"})
            await client.call_tool("feed_subscribe", {"url": GEMLOG_URL})
            scope = {"url": "gemini://localhost/app/", "action": "create"}
            await client.call_tool("gemini_client_cert_update", scope)
        seen: dict[str | None, list[str]] = {}
        for who in (ALICE, BOB, None):
            caller.principal = who
            seen[who] = await offered()
        return seen

    seen = run_with_network(net, body)
    mine = ["gopher://g.example/1", GEMLOG_URL, "gemini://localhost/app/"]
    assert seen[ALICE] == [*mine[:2], "gemini://localhost/", mine[2]]
    pinned = ["gemini://localhost/"]  # pins are shared by default: they describe hosts
    assert seen[BOB] == pinned
    assert seen[None] == pinned
