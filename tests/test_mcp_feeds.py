"""
Tests for L{gophergem.mcp.tools.feeds}: the subscription tools and the
C{gophergem://feeds/updates} resource driven by the SDK's in-process
C{mcp.Client}, in both protocol eras, against a fake capsule and gopher hole
on an in-memory network.  Every structured result is checked against the
tool's outputSchema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from gophergem.config import Config
from gophergem.feeds.follow import Follower
from gophergem.mcp.server import build_server
from gophergem.mcp.tools.feeds import UPDATES_URI
from gophergem.state.memory import MemoryFeedStore
from tests.helpers.feeds import (
    BASE,
    CACHE_TTL,
    GEMLOG,
    HOLE,
    INJECTION,
    OLD_ATOM,
    gemtext,
)
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_feeds import TOOLS, Call, drive, error_code, network

ERAS = ["legacy", "2026-07-28"]


def ok(result: Any, kind: str) -> dict[str, Any]:
    assert result.is_error is not True, result.structured_content
    payload: dict[str, Any] = result.structured_content
    assert payload["kind"] == kind, payload
    return payload


@pytest.mark.parametrize("mode", ERAS)
def test_follow_then_updates(mode: str) -> None:
    """Subscribe, list, find what is new after the page changed, then nothing more."""
    net, capsule, _ = network()

    async def script(client: Client, call: Call) -> None:
        made = ok(await call("feed_subscribe", {"url": f"{BASE}/gemlog/"}), "subscription")
        assert made == {
            "kind": "subscription",
            "url": f"{BASE}/gemlog/",
            "title": "My gemlog",
            "feed_type": "gemsub",
            "entries_known": 2,
        }
        ok(
            await call("feed_subscribe", {"url": f"{HOLE}/1/phlog", "title": "Holes"}),
            "subscription",
        )
        listed = ok(await call("feed_list", {}), "subscriptions")
        assert [(s["url"], s["title"], s["unread"]) for s in listed["entries"]] == [
            (f"{BASE}/gemlog/", "My gemlog", 0),
            (f"{HOLE}/1/phlog", "Holes", 0),
        ]
        nothing = ok(await call("feed_updates", {}), "feed_updates")
        assert (nothing["entries"], nothing["checked"], nothing["errors"]) == ([], 2, [])

        capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/new.gmi 2026-12-01 News\n"
        net.reactor.advance(CACHE_TTL + 1)
        found = ok(await call("feed_updates", {}), "feed_updates")
        assert found["entries"] == [
            {
                "feed_url": f"{BASE}/gemlog/",
                "feed_title": "My gemlog",
                "url": f"{BASE}/gemlog/new.gmi",
                "title": "News",
                "published": "2026-12-01T12:00:00Z",
            }
        ]
        assert found["more"] is False
        again = ok(await call("feed_updates", {"url": f"{BASE}/gemlog/"}), "feed_updates")
        assert (again["entries"], again["checked"]) == ([], 1)

    drive(net, script, mode=mode)


def test_mark_read_since_limit() -> None:
    """mark_read, since and limit reach the follower; more says what was left out."""
    net, capsule, _ = network()
    capsule.routes["/gemlog/"] = gemtext()

    async def script(client: Client, call: Call) -> None:
        await call("feed_subscribe", {"url": f"{BASE}/gemlog/"})
        capsule.routes["/gemlog/"] = gemtext(
            "=> /1.gmi 2026-12-01 One", "=> /2.gmi 2026-12-02 Two", "=> /3.gmi 2026-12-03 Three"
        )
        net.reactor.advance(CACHE_TTL + 1)
        peek = ok(await call("feed_updates", {"mark_read": False, "limit": 2}), "feed_updates")
        assert ([e["title"] for e in peek["entries"]], peek["more"]) == (["Three", "Two"], True)
        listed = ok(await call("feed_list", {}), "subscriptions")
        assert listed["entries"][0]["unread"] == 3
        read = ok(await call("feed_updates", {}), "feed_updates")
        assert [e["title"] for e in read["entries"]] == ["Three", "Two", "One"]
        since = ok(await call("feed_updates", {"since": "2026-12-02"}), "feed_updates")
        assert [e["title"] for e in since["entries"]] == ["Three", "Two"]

    drive(net, script)


@pytest.mark.parametrize("mode", ERAS)
def test_errors_are_results(mode: str) -> None:
    """Refusals are error results with stable codes; a failing feed is an entry of errors."""
    net, capsule, _ = network()

    async def script(client: Client, call: Call) -> None:
        assert error_code(await call("feed_subscribe", {"url": "https://example.org/"})) == (
            "INVALID_REQUEST"
        )
        assert error_code(await call("feed_subscribe", {"url": f"{BASE}/nope"})) == (
            "PERMANENT_ERROR"
        )
        assert error_code(await call("feed_unsubscribe", {"url": f"{BASE}/gemlog/"})) == (
            "NOT_SUBSCRIBED"
        )
        assert error_code(await call("feed_updates", {"url": f"{BASE}/gemlog/"})) == (
            "NOT_SUBSCRIBED"
        )
        assert error_code(await call("feed_updates", {"limit": 0})) == "INVALID_REQUEST"
        assert error_code(await call("feed_updates", {"since": "soon"})) == "INVALID_REQUEST"
        await call("feed_subscribe", {"url": f"{BASE}/gemlog/"})
        capsule.routes["/gemlog/"] = b"40 Busy\r\n"
        net.reactor.advance(CACHE_TTL + 1)
        found = ok(await call("feed_updates", {}), "feed_updates")
        assert found["entries"] == []
        assert [(e["feed_url"], e["error"]["code"]) for e in found["errors"]] == [
            (f"{BASE}/gemlog/", "TEMPORARY_ERROR")
        ]
        listed = ok(await call("feed_list", {}), "subscriptions")
        assert listed["entries"][0]["last_error"] == "TEMPORARY_ERROR"
        gone = ok(
            await call("feed_unsubscribe", {"url": f"{BASE}/gemlog/"}), "subscription_removed"
        )
        assert gone["url"] == f"{BASE}/gemlog/"
        assert ok(await call("feed_list", {}), "subscriptions")["entries"] == []

    drive(net, script, mode=mode)


@pytest.mark.parametrize("mode", ERAS)
def test_feed_dated_before_year_1000(mode: str) -> None:
    """
    Issue 21: an Atom feed dated 0999 and 0001 is followed, its entries
    undated; feed_updates answers for every subscription, and a feed whose
    check hits a bug is only that feed's entry of errors.
    """
    import gophergem.feeds.follow

    net, capsule, _ = network()
    capsule.routes["/old.xml"] = OLD_ATOM
    capsule.routes["/bug/"] = gemtext()
    real = gophergem.feeds.follow.detect_feed

    def detect(url: str, **kwargs: Any) -> Any:
        if url.endswith("/bug/") and capsule.requests.count(b"gemini://localhost/bug/") > 1:
            raise RuntimeError("a bug")
        return real(url, **kwargs)

    async def script(client: Client, call: Call) -> None:
        made = ok(await call("feed_subscribe", {"url": f"{BASE}/old.xml"}), "subscription")
        assert (made["feed_type"], made["entries_known"]) == ("atom", 2)
        for path in ("/gemlog/", "/bug/"):
            ok(await call("feed_subscribe", {"url": f"{BASE}{path}"}), "subscription")
        capsule.routes["/old.xml"] = OLD_ATOM.replace(b"/old/2.gmi", b"/old/3.gmi")
        capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/new.gmi 2026-12-01 News\n"
        found = ok(await call("feed_updates", {}), "feed_updates")
        assert sorted((e["title"], e["published"]) for e in found["entries"]) == [
            ("News", "2026-12-01T12:00:00Z"),
            ("Zero time", None),
        ]
        assert found["checked"] == 3
        assert [(e["feed_url"], e["error"]["code"]) for e in found["errors"]] == [
            (f"{BASE}/bug/", "FETCH_ERROR")
        ]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gophergem.feeds.follow, "detect_feed", detect)
        drive(net, script, mode=mode)


def test_titles_are_data() -> None:
    """Hostile titles reach the model sanitised, the injection text as plain data."""
    net, capsule, _ = network()
    capsule.routes["/gemlog/"] = gemtext()

    async def script(client: Client, call: Call) -> None:
        await call("feed_subscribe", {"url": f"{BASE}/gemlog/"})
        capsule.routes["/gemlog/"] = (
            "20 text/gemini\r\n"
            f"=> /1.gmi 2026-12-01 {INJECTION}\n"
            "=> /2.gmi 2026-12-02 Bell\x07 and \x1b[2Jclear\n"
        ).encode()
        net.reactor.advance(CACHE_TTL + 1)
        result = await call("feed_updates", {})
        titles = [e["title"] for e in ok(result, "feed_updates")["entries"]]
        assert titles == ["Bell and clear", INJECTION]
        assert "\x1b" not in result.content[0].text and "\x07" not in result.content[0].text

    drive(net, script)


@pytest.mark.parametrize("mode", ERAS)
def test_updates_resource(mode: str) -> None:
    """The resource lists unread entries as JSON and marks nothing read."""
    net, capsule, _ = network()
    capsule.routes["/gemlog/"] = gemtext()

    async def script(client: Client, call: Call) -> None:
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert UPDATES_URI in resources
        await call("feed_subscribe", {"url": f"{BASE}/gemlog/"})
        capsule.routes["/gemlog/"] = gemtext("=> /1.gmi 2026-12-01 One")
        net.reactor.advance(CACHE_TTL + 1)
        await call("feed_updates", {"mark_read": False})
        for _ in range(2):  # reading it twice: still unread
            (content,) = (await client.read_resource(UPDATES_URI)).contents
            document = json.loads(content.text)  # type: ignore[union-attr]
            assert document == {
                "kind": "unread",
                "entries": [
                    {
                        "feed_url": f"{BASE}/gemlog/",
                        "feed_title": "Log",
                        "url": f"{BASE}/1.gmi",
                        "title": "One",
                        "published": "2026-12-01T12:00:00Z",
                    }
                ],
            }

    drive(net, script, mode=mode)


def test_no_feeds_no_feed_tools() -> None:
    """Built with feeds=False, or with neither config nor follower: no subscription tools."""
    net, _, _ = network()
    server = build_server(net.fetcher(), Config(), feeds=False)

    async def body() -> set[str]:
        async with Client(server, mode="legacy") as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert not TOOLS & run_with_network(net, body)
    server = build_server(net.fetcher())
    assert not TOOLS & run_with_network(net, body)


# --- gophergem://feeds/updates announces its changes ----------------------------------


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
def test_subscribed_clients_are_told_the_resource_changed() -> None:
    """
    Up to 2025-11-25: a client that sent resources/subscribe gets
    notifications/resources/updated after a feed tool changed the resource;
    every change is also published for 2026-07-28 listeners.
    """
    import asyncio

    import mcp_types

    net, _, _ = network()
    fetcher = net.fetcher()
    follower = Follower(fetcher, MemoryFeedStore(), now=net.reactor.seconds)
    server = build_server(fetcher, Config(), follower=follower)
    published: list[Any] = []
    server.events.subscribe(published.append)
    told: list[str] = []

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, mcp_types.ResourceUpdatedNotification):
            told.append(str(root.params.uri))

    async def body() -> None:
        async with Client(server, mode="legacy", message_handler=handler) as client:
            capabilities = client.server_capabilities
            assert capabilities.resources is not None and capabilities.resources.subscribe
            await client.subscribe_resource(UPDATES_URI)
            await client.call_tool("feed_subscribe", {"url": f"{BASE}/gemlog/"})
            await client.call_tool("feed_list", {})  # changes nothing: tells nobody
            for _ in range(50):
                if told:
                    break
                await asyncio.sleep(0)
            await client.unsubscribe_resource(UPDATES_URI)
            await client.call_tool("feed_updates", {})

    run_with_network(net, body)
    assert told == [UPDATES_URI]
    assert [event.uri for event in published] == [UPDATES_URI, UPDATES_URI]
