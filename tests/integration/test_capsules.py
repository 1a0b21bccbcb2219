"""
Acceptance tests for following and searching: C{python -m gophergem} driven
by the MCP SDK's stdio client (and once C{gophergem serve --transport http}
by its Streamable HTTP client) against real servers on 127.0.0.1:

  - Jetforce serving C{fixtures/capsule/feeds/}: a gemlog index (gemsub), an
    Atom file (C{application/atom+xml}) and a page that is rewritten between
    two checks;
  - gophernicus serving the dated phlog menu C{fixtures/gopherroot/phlog/};
  - two Jetforce search capsules (C{fixtures/engines/}): C{open} answers 10
    without a query and results with one; C{closed} has the same engine but
    its robots.txt disallows it, so it must be skipped without being asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import GopherServer, run_async, tool_payload
from .gemini_peers import GeminiCerts, Jetforce, gemini_session, running_jetforce

pytestmark = pytest.mark.integration

ENGINES_ROOT = Path(__file__).resolve().parent / "fixtures" / "engines"
LOOPBACK = "127.0.0.1"


@pytest.fixture
def feeds_env(gemini_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The Gemini peers' environment, with a feed store of its own and no cache to hide changes."""
    env = dict(gemini_env)
    env["GOPHERGEM_FEEDS_STORAGE_PATH"] = str(tmp_path / "feeds.json")
    env["GEMINI_CACHE_ENABLED"] = "false"
    env["GOPHER_CACHE_ENABLED"] = "false"
    return env


async def call(session: Any, name: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    payload = tool_payload(result)
    assert not result.is_error, payload
    return payload


async def refused(session: Any, name: str, **arguments: Any) -> str:
    result = await session.call_tool(name, arguments)
    payload = tool_payload(result)
    assert result.is_error is True, payload
    code: str = payload["error"]["code"]
    return code


# --- following ---------------------------------------------------------------------------


def test_follow_gemlog_atom_and_changing_page(
    jetforce_server: Jetforce, feeds_env: dict[str, str]
) -> None:
    """Jetforce's gemlog and Atom feed are detected; a page rewritten between checks has news."""
    server = jetforce_server
    page = server.root / "feeds" / "page.gmi"
    original = page.read_text(encoding="utf-8")

    async def body() -> None:
        async with gemini_session(feeds_env) as session:
            gemlog = await call(session, "feed_subscribe", url=server.url("/feeds/"))
            assert (gemlog["feed_type"], gemlog["title"], gemlog["entries_known"]) == (
                "gemsub",
                "Feeds gemlog",
                2,
            )
            atom = await call(session, "feed_subscribe", url=server.url("/feeds/atom.atom"))
            assert (atom["feed_type"], atom["title"], atom["entries_known"]) == (
                "atom",
                "Feeds, in Atom",
                2,
            )
            followed = await call(session, "feed_subscribe", url=server.url("/feeds/page.gmi"))
            assert (followed["feed_type"], followed["entries_known"]) == ("page", 2)

            assert (await call(session, "feed_updates"))["entries"] == []  # the baseline

            page.write_text(original + "=> /feeds/new.gmi Something new\n", encoding="utf-8")
            (server.root / "feeds" / "index.gmi").write_text(
                (server.root / "feeds" / "index.gmi").read_text(encoding="utf-8")
                + "=> 2026-12-01-third.gmi 2026-12-01 - The third post\n",
                encoding="utf-8",
            )
            found = await call(session, "feed_updates")
            assert found["checked"] == 3 and found["errors"] == []
            # Newest first; an undated link counts from when it was first seen (now).
            assert sorted(
                (e["feed_url"], e["url"], e["title"], e["published"]) for e in found["entries"]
            ) == [
                (
                    server.url("/feeds/"),
                    server.url("/feeds/2026-12-01-third.gmi"),
                    "The third post",
                    "2026-12-01T12:00:00Z",
                ),
                (
                    server.url("/feeds/page.gmi"),
                    server.url("/feeds/new.gmi"),
                    "Something new",
                    None,
                ),
            ]
            assert (await call(session, "feed_updates"))["entries"] == []

            since = await call(
                session, "feed_updates", url=server.url("/feeds/atom.atom"), since="2026-10-15"
            )
            assert [(e["url"], e["title"], e["published"]) for e in since["entries"]] == [
                (
                    server.url("/feeds/2026-11-02-second.gmi"),
                    "The second post",
                    "2026-11-02T09:00:00Z",
                )
            ]

            page.unlink()
            broken = await call(session, "feed_updates", url=server.url("/feeds/page.gmi"))
            assert [e["error"]["code"] for e in broken["errors"]] == ["PERMANENT_ERROR"]
            listed = {e["url"]: e for e in (await call(session, "feed_list"))["entries"]}
            assert listed[server.url("/feeds/page.gmi")]["last_error"] == "PERMANENT_ERROR"
            removed = await call(session, "feed_unsubscribe", url=server.url("/feeds/page.gmi"))
            assert removed["kind"] == "subscription_removed"
            assert await refused(
                session, "feed_unsubscribe", url=server.url("/feeds/page.gmi")
            ) == ("NOT_SUBSCRIBED")
            assert await refused(session, "feed_subscribe", url=server.url("/nothing.gmi")) == (
                "PERMANENT_ERROR"
            )

    try:
        run_async(body)
    finally:
        page.write_text(original, encoding="utf-8")


def test_follow_phlog(gopher_server: GopherServer, feeds_env: dict[str, str]) -> None:
    """gophernicus's dated phlog menu is a phlog whose posts carry their dates."""
    url = gopher_server.url("1", "/phlog")

    async def body() -> None:
        async with gemini_session(feeds_env) as session:
            made = await call(session, "feed_subscribe", url=url)
            assert (made["feed_type"], made["title"], made["entries_known"]) == (
                "phlog",
                "My phlog",
                2,
            )
            since = await call(session, "feed_updates", url=url, since="2026-01-01")
            assert [(e["title"], e["published"]) for e in since["entries"]] == [
                ("Cold days", "2026-11-30T12:00:00Z"),
                ("Warm days", "2026-10-02T12:00:00Z"),
            ]
            assert since["entries"][0]["url"] == gopher_server.url("0", "/phlog/20261130-cold.txt")

    run_async(body)


# --- searching ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def search_engines(gemini_certs: GeminiCerts) -> Iterator[tuple[Jetforce, Jetforce]]:
    """The closed engine (robots.txt disallows it) and the open one."""
    with (
        running_jetforce(gemini_certs, ENGINES_ROOT / "closed", "engine-closed") as closed,
        running_jetforce(gemini_certs, ENGINES_ROOT / "open", "engine-open") as opened,
    ):
        yield closed, opened


def search_env(env: dict[str, str], engines: tuple[Jetforce, Jetforce]) -> dict[str, str]:
    closed, opened = engines
    env = dict(env)
    env["GEMINI_SEARCH_ENGINES"] = ",".join(
        [closed.url("/cgi-bin/search"), opened.url("/cgi-bin/search")]
    )
    env["GEMINI_RESPECT_ROBOTS_TXT"] = "true"
    return env


def searched(engine: Jetforce) -> list[str]:
    """The lines of the engine's log that name its search path."""
    return [
        line
        for line in engine.log_path.read_text(errors="replace").splitlines()
        if "/cgi-bin/search" in line
    ]


def check_results(found: dict[str, Any], engines: tuple[Jetforce, Jetforce]) -> None:
    closed, opened = engines
    assert found["engine"] == opened.url("/cgi-bin/search"), found
    assert [(t["engine"], t["error"]["code"]) for t in found["tried"]] == [
        (closed.url("/cgi-bin/search"), "BLOCKED_BY_ROBOTS")
    ]
    assert [(r["title"], r["url"]) for r in found["results"]] == [
        ("About gophers and capsules", "gemini://results.example/gophers%20and%20capsules.gmi"),
        ("A phlog post about cats", "gopher://hole.example/0/cats.txt"),
    ]
    assert searched(closed) == [], "the closed engine was asked"


def test_search_over_stdio(
    search_engines: tuple[Jetforce, Jetforce], feeds_env: dict[str, str]
) -> None:
    """The blocked engine is skipped unasked; the open one answers; engine= picks one."""
    closed, opened = search_engines
    env = search_env(feeds_env, search_engines)

    async def body() -> None:
        async with gemini_session(env) as session:
            found = await call(session, "smolweb_search", query="gophers and capsules")
            check_results(found, search_engines)
            assert any("gophers%20and%20capsules" in line for line in searched(opened))
            only = await call(
                session, "smolweb_search", query="x", engine=closed.url("/cgi-bin/search")
            )
            assert (only["engine"], only["results"]) == (None, [])
            assert [t["error"]["code"] for t in only["tried"]] == ["BLOCKED_BY_ROBOTS"]
            assert (
                await refused(
                    session, "smolweb_search", query="x", engine="gemini://localhost:1/search"
                )
                == "INVALID_REQUEST"
            )

    run_async(body)
    assert searched(closed) == []


def test_search_over_http(
    search_engines: tuple[Jetforce, Jetforce], feeds_env: dict[str, str], tmp_path: Path
) -> None:
    """The same search through C{gophergem serve --transport http}."""
    from mcp import Client

    from tests.helpers.daemon import running, serve_argv

    env = search_env(feeds_env, search_engines)

    with running(serve_argv, env) as daemon:

        async def body() -> None:
            async with Client(daemon.url, mode="legacy") as client:
                result = await client.call_tool("smolweb_search", {"query": "gophers and capsules"})
                payload = tool_payload(result)
                assert not result.is_error, payload
                check_results(payload, search_engines)

        run_async(body)
        daemon.stop()
