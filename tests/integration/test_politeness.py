"""
Safety and politeness against a real Gopher server (gophernicus) with the
MCP SDK's stdio client: SSRF refusal under default settings and robots.txt.
Per-host pacing is a matter of time, so it is tested on a fake clock
(tests/test_fetcher.py, test_same_host_paced), not against the wall clock here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import GopherServer, mcp_session, run_async, tool_payload

pytestmark = pytest.mark.integration


def defaults_env(mcp_env: dict[str, str], stores: Path, **overrides: str) -> dict[str, str]:
    """The spawning environment with gophergem's own defaults (no test relaxations)."""
    env = {k: v for k, v in mcp_env.items() if not k.startswith(("GOPHER_", "GEMINI_"))}
    env["GEMINI_TOFU_STORAGE_PATH"] = f"{stores}/tofu.json"
    env["GEMINI_CLIENT_CERTS_STORAGE_PATH"] = f"{stores}/identities"
    env.update(overrides)
    return env


async def call(session: Any, tool: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
    result = await session.call_tool(tool, arguments)
    return result, tool_payload(result)


def test_loopback_blocked_by_default(
    gopher_server: GopherServer, mcp_env: dict[str, str], tmp_path: Path
) -> None:
    """By default a loopback target is BLOCKED, for both protocols; nothing is fetched."""

    async def body() -> None:
        async with mcp_session(defaults_env(mcp_env, tmp_path)) as session:
            for tool, url in (
                ("gopher_fetch", gopher_server.url("1")),
                ("gemini_fetch", "gemini://127.0.0.1/"),
                ("gopher_fetch", f"gopher://2130706433:{gopher_server.port}/"),
                ("gopher_fetch", f"gopher://[::ffff:127.0.0.1]:{gopher_server.port}/"),
            ):
                result, data = await call(session, tool, url=url)
                assert result.is_error and data["error"]["code"] == "BLOCKED", data

    run_async(body)


def test_allow_local_hosts_lifts_it(
    gopher_server: GopherServer, mcp_env: dict[str, str], tmp_path: Path
) -> None:
    """GOPHER_ALLOW_LOCAL_HOSTS=true lets the same fetch through."""
    env = defaults_env(mcp_env, tmp_path, GOPHER_ALLOW_LOCAL_HOSTS="true")

    async def body() -> None:
        async with mcp_session(env) as session:
            result, data = await call(session, "gopher_fetch", url=gopher_server.url("1"))
            assert not result.is_error and data["kind"] == "menu", data

    run_async(body)


def test_robots_txt_honoured(
    gopher_server: GopherServer, mcp_env: dict[str, str], tmp_path: Path
) -> None:
    """The server's robots.txt excludes gophergem from a path: BLOCKED_BY_ROBOTS; others pass."""
    env = defaults_env(
        mcp_env, tmp_path, GOPHER_ALLOW_LOCAL_HOSTS="true", GOPHER_REQUESTS_PER_MINUTE="0"
    )

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
