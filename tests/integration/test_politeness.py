"""
Safety and politeness against a real Gopher server (gophernicus) with the
MCP SDK's stdio client: SSRF refusal under default settings, robots.txt and
per-host pacing.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

import pytest

from tests.integration.conftest import GopherServer, mcp_session, run_async, tool_payload

pytestmark = pytest.mark.integration


def defaults_env(mcp_env: dict[str, str], **overrides: str) -> dict[str, str]:
    """The spawning environment with gophergem's own defaults (no test relaxations)."""
    env = {k: v for k, v in mcp_env.items() if not k.startswith(("GOPHER_", "GEMINI_"))}
    stores = tempfile.mkdtemp(prefix="gophergem-politeness-")
    env["GEMINI_TOFU_STORAGE_PATH"] = f"{stores}/tofu.json"
    env["GEMINI_CLIENT_CERTS_STORAGE_PATH"] = f"{stores}/identities"
    env.update(overrides)
    return env


async def call(session: Any, tool: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
    result = await session.call_tool(tool, arguments)
    return result, tool_payload(result)


def test_loopback_blocked_by_default(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    """By default a loopback target is BLOCKED, for both protocols; nothing is fetched."""

    async def body() -> None:
        async with mcp_session(defaults_env(mcp_env)) as session:
            for tool, url in (
                ("gopher_fetch", gopher_server.url("1")),
                ("gemini_fetch", "gemini://127.0.0.1/"),
                ("gopher_fetch", f"gopher://2130706433:{gopher_server.port}/"),
                ("gopher_fetch", f"gopher://[::ffff:127.0.0.1]:{gopher_server.port}/"),
            ):
                result, data = await call(session, tool, url=url)
                assert result.is_error and data["error"]["code"] == "BLOCKED", data

    run_async(body)


def test_allow_local_hosts_lifts_it(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    """GOPHER_ALLOW_LOCAL_HOSTS=true lets the same fetch through."""
    env = defaults_env(mcp_env, GOPHER_ALLOW_LOCAL_HOSTS="true")

    async def body() -> None:
        async with mcp_session(env) as session:
            result, data = await call(session, "gopher_fetch", url=gopher_server.url("1"))
            assert not result.is_error and data["kind"] == "menu", data

    run_async(body)


def test_robots_txt_honoured(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    """The server's robots.txt excludes gophergem from a path: BLOCKED_BY_ROBOTS; others pass."""
    env = defaults_env(mcp_env, GOPHER_ALLOW_LOCAL_HOSTS="true", GOPHER_REQUESTS_PER_MINUTE="0")

    async def body() -> None:
        async with mcp_session(env) as session:
            result, data = await call(
                session, "gopher_fetch", url=gopher_server.url("0", "/private.txt")
            )
            assert result.is_error and data["error"]["code"] == "BLOCKED_BY_ROBOTS", data
            result, data = await call(
                session, "gopher_fetch", url=gopher_server.url("0", "/about.txt")
            )
            assert not result.is_error and data["kind"] == "text", data

    run_async(body)


def test_same_host_paced(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    """At the default 60 requests/minute, two fetches of one host start at least a second apart."""
    env = defaults_env(mcp_env, GOPHER_ALLOW_LOCAL_HOSTS="true", GOPHER_RESPECT_ROBOTS_TXT="false")

    async def body() -> float:
        async with mcp_session(env) as session:
            await call(
                session, "gopher_fetch", url=gopher_server.url("0", "/about.txt"), refresh=True
            )
            started = time.monotonic()
            await call(
                session, "gopher_fetch", url=gopher_server.url("0", "/about.txt"), refresh=True
            )
            return time.monotonic() - started

    # The second call waited for its turn: the politeness floor, not a speed claim.
    assert run_async(body) >= 0.9
