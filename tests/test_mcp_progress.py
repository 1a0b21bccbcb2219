"""
Tests for the progress notifications of C{gopher_batch_fetch},
C{gemini_batch_fetch} and C{feed_updates}, through the SDK's own
in-process C{mcp.Client} in both protocol eras: one notification per URL
(or feed) done, numbered in the order they complete, the total the number
of URLs (or feeds), the message naming it; none without a progress token;
and the results exactly as without progress.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_types import ProgressNotification
from twisted.internet.protocol import Factory, Protocol

from gophergem.config import Config
from gophergem.feeds.follow import Follower
from gophergem.mcp.server import build_server
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import MemoryNetwork
from tests.helpers.mcp import network, run_with_network
from tests.helpers.mcp_feeds import network as feed_network
from tests.helpers.mcp_gemini import KINDS, capsule

ERAS = ["legacy", "2026-07-28"]
SILENT_IP = "192.0.2.99"  # memory reactor only: never dialled
TIMEOUT = 5


def silent_network() -> MemoryNetwork:
    """The small hole at g.example, and silent.example that accepts and never answers."""
    net, _ = network()
    net.resolver.add("silent.example", SILENT_IP)
    net.listen(SILENT_IP, 70, Factory.forProtocol(Protocol))
    return net


SILENT = "gopher://silent.example/1/"
MENU = "gopher://g.example/"
TELNET = "gopher://g.example/8/telnet"  # NOT_FETCHABLE: done before anything is dialled


def batch(mode: str, urls: list[str], *, progress: bool = True) -> tuple[Any, list[Any]]:
    """One gopher_batch_fetch; its result and the (progress, total, message) heard."""
    net = silent_network()
    server = build_server(net.fetcher(timeout_seconds=TIMEOUT))
    heard: list[tuple[float, float | None, str | None]] = []
    notes: list[Any] = []

    async def told(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def handler(message: Any) -> None:
        notes.append(message)

    async def body() -> Any:
        async with Client(server, mode=mode, message_handler=handler) as client:
            return await client.call_tool(
                "gopher_batch_fetch",
                {"urls": urls},
                progress_callback=told if progress else None,
            )

    result = run_with_network(net, body, advance=0.1)
    return result, heard if progress else [n for n in notes if _is_progress(n)]


def _is_progress(message: Any) -> bool:
    return isinstance(message, ProgressNotification) or (
        getattr(getattr(message, "root", None), "method", None) == "notifications/progress"
    )


@pytest.mark.parametrize("mode", ERAS)
def test_batch_progress_in_completion_order(mode: str) -> None:
    """
    One notification per URL, in the order they complete (the refused item
    at once, the menu, then the silent host at its deadline), the total the
    batch's size; the results stay in input order.
    """
    result, heard = batch(mode, [SILENT, MENU, TELNET])
    assert heard == [(1, 3, TELNET), (2, 3, MENU), (3, 3, SILENT)]
    kinds = [r["kind"] for r in result.structured_content["result"]]
    assert kinds == ["error", "menu", "error"]
    codes = [r.get("error", {}).get("code") for r in result.structured_content["result"]]
    assert codes == ["TIMEOUT", None, "NOT_FETCHABLE"]
    assert result.is_error is False


@pytest.mark.parametrize("mode", ERAS)
def test_no_progress_without_a_token(mode: str) -> None:
    """
    A call without a progress token hears nothing (up to 2025-11-25 the
    client sees every notification on the wire: none is progress), and gets
    the same results.
    """
    with_token, _ = batch(mode, [SILENT, MENU, TELNET])
    without, notes = batch(mode, [SILENT, MENU, TELNET], progress=False)
    assert notes == []
    strip = [
        {k: v for k, v in r.items() if k != "request_info"}
        for r in without.structured_content["result"]
    ]
    assert strip == [
        {k: v for k, v in r.items() if k != "request_info"}
        for r in with_token.structured_content["result"]
    ]


def test_refused_batch_has_no_progress() -> None:
    """A batch refused as a whole fetches nothing and tells nothing."""
    result, heard = batch("legacy", [MENU] * 51)
    assert result.is_error is True
    assert heard == []


def test_progress_names_urls_safely() -> None:
    """A URL with control characters is named percent-encoded, as every echo is."""
    hostile = "gopher://g.example/0/a\u202eb"
    _, heard = batch("legacy", [hostile])
    assert heard == [(1, 1, "gopher://g.example/0/a%E2%80%AEb")]


@pytest.mark.parametrize("mode", ERAS)
def test_gemini_batch_progress(mode: str) -> None:
    """gemini_batch_fetch reports each URL as it completes, with the batch's size."""
    net, _, _ = capsule({path: body for path, (body, _) in KINDS.items()})
    server = build_server(net.fetcher(gemini={"respect_robots_txt": False}))
    urls = ["gemini://localhost/gemtext", "gemini://localhost/gone"]
    heard: list[Any] = []

    async def told(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def body() -> Any:
        async with Client(server, mode=mode) as client:
            return await client.call_tool(
                "gemini_batch_fetch", {"urls": urls}, progress_callback=told
            )

    result = run_with_network(net, body, advance=0.1)
    assert [r["kind"] for r in result.structured_content["result"]] == ["gemtext", "error"]
    assert [(d, t) for d, t, _ in heard] == [(1, 2), (2, 2)]
    assert sorted(m for _, _, m in heard) == sorted(urls)


@pytest.mark.parametrize("mode", ERAS)
def test_feed_updates_progress(mode: str) -> None:
    """feed_updates reports each feed as its check ends; the total is the number checked."""
    net, _, _ = feed_network()
    fetcher = net.fetcher()
    follower = Follower(fetcher, MemoryFeedStore(), now=net.reactor.seconds)
    server = build_server(fetcher, Config(), follower=follower)
    feeds = ["gemini://localhost/gemlog/", "gopher://g.example/1/phlog"]
    heard: list[Any] = []

    async def told(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def body() -> Any:
        async with Client(server, mode=mode) as client:
            for feed in feeds:
                subscribed = await client.call_tool("feed_subscribe", {"url": feed})
                assert subscribed.is_error is not True, subscribed.structured_content
            quiet = await client.call_tool("feed_list", {}, progress_callback=told)
            assert quiet.is_error is not True
            assert heard == []  # only the checks report progress
            return await client.call_tool("feed_updates", {}, progress_callback=told)

    result = run_with_network(net, body, advance=0.1)
    assert result.structured_content["checked"] == 2
    assert [(d, t) for d, t, _ in heard] == [(1, 2), (2, 2)]
    assert sorted(m for _, _, m in heard) == sorted(feeds)


def test_progress_callback_trouble_changes_nothing() -> None:
    """A progress callback that raises in the fetcher is logged; the batch is unchanged."""
    net = silent_network()
    fetcher = net.fetcher(timeout_seconds=TIMEOUT)

    def bad(index: int) -> None:
        raise RuntimeError("boom")

    results = net.run(fetcher.gopher_batch([MENU, TELNET], progress=bad))
    assert [r.__class__.__name__ for r in results] == ["MenuResult", "FetchFailure"]
