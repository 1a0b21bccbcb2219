"""
Shared helpers for the search tests: search engines on a memory network.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred

from gophergem.errors import GophergemError
from gophergem.search.operation import SearchOutcome, search
from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork

FIRST_IP, SECOND_IP, GOPHER_IP = "192.0.2.31", "192.0.2.32", "192.0.2.33"

FIRST = "gemini://first.example/search"

SECOND = "gemini://second.example/search"

VERONICA = "gopher://hole.example/7/v2/vs"

ASK = b"10 Search for something\r\n"


def results_page(url: str) -> bytes:
    """What a TLGS-like engine answers: results, then its own relative navigation."""
    query = url.partition("?")[2]
    if not query:
        return ASK
    return (
        "20 text/gemini\r\n"
        f"# Results for {query}\n"
        "=> gemini://capsule.example/cats.gmi Cats of the capsule (text/gemini, 2KB)\n"
        "=> gopher://hole.example/0/cats.txt A cat phlog\n"
        "=> gemini://capsule.example/cats.gmi The same result again\n"
        f"=> /search/2?{query} Next page\n"
        "=> /search New search\n"
        "=> / Home\n"
        "=> mailto:cats@example.org Write to us\n"
    ).encode()


def veronica(search: bytes | None) -> bytes:
    """A Veronica-2-like type-7 answer: results, and its own service items."""
    if search is None:
        return b"3No query\t\terror.host\t1\r\n.\r\n"
    return (
        b"iResults for " + search + b"\tfake\t(NULL)\t0\r\n"
        b"0Cats of the hole\t/cats.txt\tother.example\t70\r\n"
        b"1A cat menu\t/cats\tother.example\t70\r\n"
        b"7Search again\t/v2/vs\thole.example\t70\r\n"
        b"1Veronica help\t/v2/help\thole.example\t70\r\n"
        b"3Oops\t\terror.host\t1\r\n"
        b".\r\n"
    )


@attrs.define
class Engines:
    """Two Gemini engines and one Gopher engine on one memory network."""

    net: MemoryNetwork
    first: FakeGeminiServer
    second: FakeGeminiServer
    hole: FakeGopherServer
    fetcher: Any

    def search(self, query: str, **options: Any) -> Deferred[SearchOutcome]:
        options.setdefault("gemini_engines", (FIRST, SECOND))
        options.setdefault("gopher_engines", (VERONICA,))
        return search(self.fetcher, query, **options)

    def run(self, query: str, **options: Any) -> SearchOutcome:
        outcome: SearchOutcome = self.net.run(self.search(query, **options))
        return outcome

    def fails(self, query: Any, **options: Any) -> GophergemError:
        with pytest.raises(GophergemError) as caught:
            self.net.run(self.search(query, **options))
        return caught.value


def engines(
    first: Any = results_page,
    second: Any = results_page,
    robots: dict[str, bytes] | None = None,
    **gemini: Any,
) -> Engines:
    net = MemoryNetwork()
    for host, ip in (("first.example", FIRST_IP), ("second.example", SECOND_IP)):
        net.resolver.add(host, ip)
    net.resolver.add("hole.example", GOPHER_IP)
    servers = []
    for name, ip, route in (("first", FIRST_IP, first), ("second", SECOND_IP, second)):
        routes = {"/search": route}
        if robots and name in robots:
            routes["/robots.txt"] = robots[name]
        servers.append(
            net.listen_gemini(ip, 1965, FakeGeminiServer(routes), hostname=f"{name}.example")
        )
    hole = net.listen(GOPHER_IP, 70, FakeGopherServer({b"/v2/vs": veronica}))
    return Engines(net, servers[0], servers[1], hole, net.fetcher(gemini=gemini))
