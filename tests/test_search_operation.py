"""
Tests for L{gophergem.search.operation}: L{search} asking fake engines on an
in-memory network (real TLS for Gemini, fake clock), through a real
fetcher, so the robots.txt gate and the error codes are the fetcher's own.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet.defer import Deferred

from gophergem.errors import GophergemError
from gophergem.search.operation import MAX_LIMIT, SearchOutcome, search
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


def test_gemini_results() -> None:
    """The first engine's results: links to other hosts, once each; its navigation left out."""
    e = engines()
    outcome = e.run("cats and dogs")
    assert outcome.engine == FIRST and outcome.query == "cats and dogs"
    assert [(hit.title, hit.url) for hit in outcome.results] == [
        ("Cats of the capsule (text/gemini, 2KB)", "gemini://capsule.example/cats.gmi"),
        ("A cat phlog", "gopher://hole.example/0/cats.txt"),
    ]
    assert outcome.tried == ()
    assert e.first.requests == [b"gemini://first.example/search?cats%20and%20dogs"]
    assert e.second.requests == []


def test_limit() -> None:
    """At most limit results come back."""
    assert len(engines().run("cats", limit=1).results) == 1


def test_engine_asking_again_is_tried() -> None:
    """An engine that answers 10 to the query did not take it: it is tried, the next one answers."""
    e = engines(first=ASK)
    outcome = e.run("cats")
    assert outcome.engine == SECOND
    assert [(url, error.code) for url, error in outcome.tried] == [(FIRST, "NOT_FETCHABLE")]
    assert len(outcome.results) == 2


def test_failing_engine_is_tried() -> None:
    """An engine answering with an error is tried, with the fetch's code."""
    outcome = engines(first=b"42 CGI error\r\n").run("cats")
    assert outcome.engine == SECOND
    assert [(url, error.code) for url, error in outcome.tried] == [(FIRST, "TEMPORARY_ERROR")]


def test_no_engine_answers() -> None:
    """When every engine fails the outcome has no engine and no results, and says why."""
    e = engines(first=b"51 Gone\r\n", second=b"20 image/png\r\n\x89PNG")
    outcome = e.run("cats")
    assert (outcome.engine, outcome.results) == (None, ())
    assert [(url, error.code) for url, error in outcome.tried] == [
        (FIRST, "PERMANENT_ERROR"),
        (SECOND, "NOT_FETCHABLE"),
    ]


def test_robots_disallowed_engine_is_skipped() -> None:
    """An engine robots.txt disallows is BLOCKED_BY_ROBOTS; the query is never sent."""
    robots = {"first": b"20 text/plain\r\nUser-agent: *\r\nDisallow: /search\r\n"}
    e = engines(robots=robots, respect_robots_txt=True)
    outcome = e.run("cats")
    assert outcome.engine == SECOND
    assert [(url, error.code) for url, error in outcome.tried] == [(FIRST, "BLOCKED_BY_ROBOTS")]
    assert e.first.requests == [b"gemini://first.example/robots.txt"]
    assert e.second.requests == [
        b"gemini://second.example/robots.txt",
        b"gemini://second.example/search?cats",
    ]


def test_engine_picks_one() -> None:
    """engine= asks that engine only, in any spelling of its URL."""
    e = engines()
    outcome = e.run("cats", engine="gemini://SECOND.example:1965/search")
    assert (outcome.engine, outcome.tried) == (SECOND, ())
    assert e.first.requests == []


def test_engine_picked_fails_alone() -> None:
    """A picked engine that fails is not replaced by another."""
    e = engines(second=ASK)
    outcome = e.run("cats", engine=SECOND)
    assert outcome.engine is None
    assert [url for url, _ in outcome.tried] == [SECOND]
    assert e.first.requests == []


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ("cats", {"engine": "gemini://unknown.example/search"}),
        ("cats", {"engine": VERONICA}),  # a gopher engine is not one of the gemini ones
        ("cats", {"where": "web"}),
        ("cats", {"limit": 0}),
        ("cats", {"limit": MAX_LIMIT + 1}),
        ("cats", {"limit": True}),
        ("", {}),
        ("   ", {}),
        (None, {}),
        ("cats", {"gemini_engines": ()}),
        ("x" * 2000, {}),
        ("tab\there", {"where": "gopher"}),
    ],
)
def test_invalid_request(query: Any, options: dict[str, Any]) -> None:
    """A search wrong in itself is INVALID_REQUEST, and nothing is fetched."""
    e = engines()
    assert e.fails(query, **options).code == "INVALID_REQUEST"
    assert e.first.requests == e.second.requests == e.hole.requests == []


def test_gopher_engine() -> None:
    """A type-7 engine gets selector TAB query; its own service items are not results."""
    e = engines()
    outcome = e.run("cats dogs", where="gopher")
    assert outcome.engine == VERONICA
    assert e.hole.requests == [b"/v2/vs\tcats dogs"]
    assert [(hit.title, hit.url) for hit in outcome.results] == [
        ("Cats of the hole", "gopher://other.example/0/cats.txt"),
        ("A cat menu", "gopher://other.example/1/cats"),
    ]


def test_gopher_engine_not_a_menu() -> None:
    """A type-7 engine that answers an error line only gives no results, not a failure."""
    e = engines()
    e.hole.responses[b"/v2/vs"] = b"3Nothing found\t\terror.host\t1\r\n.\r\n"
    outcome = e.run("cats", where="gopher")
    assert (outcome.engine, outcome.results) == (VERONICA, ())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=500))
def test_any_engine_answer(body: bytes) -> None:
    """Whatever an engine answers, the search gives an outcome (never raises)."""
    e = engines(first=body)
    outcome = e.run("cats", engine=FIRST)
    assert outcome.engine in (FIRST, None)
