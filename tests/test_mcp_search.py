"""
Tests for L{gophergem.mcp.tools.search}: C{smolweb_search} driven by the
SDK's in-process C{mcp.Client}, in both protocol eras, against fake engines
on an in-memory network, with the engines the server's L{Config} names.
Every structured result is checked against the tool's outputSchema.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from mcp import Client

from gophergem.config import Config
from gophergem.mcp.server import build_server
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import validator
from tests.helpers.search import ASK, FIRST, SECOND, VERONICA, Engines, engines

ERAS = ["legacy", "2026-07-28"]


def config() -> Config:
    base = Config()
    return attrs.evolve(
        base,
        gemini=attrs.evolve(base.gemini, search_engines=(FIRST, SECOND)),
        gopher=attrs.evolve(base.gopher, search_engines=(VERONICA,)),
    )


def searches(e: Engines, calls: list[dict[str, Any]], mode: str = "legacy") -> list[Any]:
    """Make C{smolweb_search} calls in one session; validate each structured result."""
    server = build_server(e.fetcher, config())

    async def body() -> list[Any]:
        async with Client(server, mode=mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = validator(tools["smolweb_search"].output_schema)
            results = []
            for arguments in calls:
                result = await client.call_tool("smolweb_search", arguments)
                assert result.structured_content is not None, result.content
                schema.validate(result.structured_content)
                compact = json.loads(result.content[0].text)
                assert compact.get("kind") == result.structured_content.get("kind")
                results.append(result)
            return results

    return run_with_network(e.net, body)


def payload(result: Any) -> dict[str, Any]:
    assert result.is_error is not True, result.structured_content
    found: dict[str, Any] = result.structured_content
    assert found["kind"] == "search_results"
    return found


@pytest.mark.parametrize("mode", ERAS)
def test_search_gemini(mode: str) -> None:
    """The configured engines are asked in order; results are titles and URLs."""
    e = engines(first=ASK)
    (result,) = searches(e, [{"query": "cats"}], mode)
    found = payload(result)
    assert found["engine"] == SECOND and found["query"] == "cats"
    assert [r["url"] for r in found["results"]] == [
        "gemini://capsule.example/cats.gmi",
        "gopher://hole.example/0/cats.txt",
    ]
    assert [(t["engine"], t["error"]["code"]) for t in found["tried"]] == [(FIRST, "NOT_FETCHABLE")]


def test_search_gopher_and_engine_and_limit() -> None:
    """where=gopher asks the type-7 engine; engine= picks one; limit cuts."""
    e = engines()
    gopher, picked = searches(
        e,
        [{"query": "cats", "where": "gopher"}, {"query": "cats", "engine": SECOND, "limit": 1}],
    )
    assert payload(gopher)["engine"] == VERONICA
    assert e.hole.requests == [b"/v2/vs\tcats"]
    assert (payload(picked)["engine"], len(payload(picked)["results"])) == (SECOND, 1)
    assert e.first.requests == []


def test_robots_blocked_engine() -> None:
    """An engine whose robots.txt disallows search is reported BLOCKED_BY_ROBOTS and never asked."""
    robots = {"first": b"20 text/plain\r\nUser-agent: *\r\nDisallow: /search\r\n"}
    e = engines(robots=robots, respect_robots_txt=True)
    (result,) = searches(e, [{"query": "cats"}])
    found = payload(result)
    assert found["engine"] == SECOND
    assert [t["error"]["code"] for t in found["tried"]] == ["BLOCKED_BY_ROBOTS"]
    assert e.first.requests == [b"gemini://first.example/robots.txt"]


def test_no_engine_answers() -> None:
    """When no engine answers the result says so, with every engine tried (not a tool error)."""
    e = engines(first=ASK, second=b"51 Gone\r\n")
    (result,) = searches(e, [{"query": "cats"}])
    found = payload(result)
    assert (found["engine"], found["results"]) == (None, [])
    assert [t["engine"] for t in found["tried"]] == [FIRST, SECOND]


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "cats", "engine": "gemini://unknown.example/search"},
        {"query": ""},
        {"query": "cats", "limit": 0},
    ],
)
def test_invalid_request(mode: str, arguments: dict[str, Any]) -> None:
    """A search wrong in itself is an INVALID_REQUEST error result; nothing is fetched."""
    e = engines()
    (result,) = searches(e, [arguments], mode)
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "INVALID_REQUEST"
    assert e.first.requests == e.second.requests == []


def test_no_config_no_search_tool() -> None:
    """A server built without a config has no search tool."""
    e = engines()
    server = build_server(e.fetcher)

    async def body() -> set[str]:
        async with Client(server, mode="legacy") as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert "smolweb_search" not in run_with_network(e.net, body)
