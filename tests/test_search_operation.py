"""
Tests for L{gophergem.search.operation}: L{search} asking fake engines on an
in-memory network (real TLS for Gemini, fake clock), through a real
fetcher, so the robots.txt gate and the error codes are the fetcher's own.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gophergem.search.operation import MAX_LIMIT
from tests.helpers.search import ASK, FIRST, SECOND, VERONICA, engines


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
