"""
Acceptance test: a capsule's secret input (status 11) typed on gophergem's
one-time loopback page, with C{python -m gophergem} over stdio and with
C{gophergem serve} on 127.0.0.1, the MCP SDK's client (which offers URL-mode
elicitation) and a real Jetforce whose
CGI answers 11 and then proves what it received (a SHA-256 of it).  The
client plays the browser: it opens the page and posts the form.  The secret
reaches the capsule and appears in no MCP message and no log line.
"""

from __future__ import annotations

import asyncio
import hashlib
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from .conftest import run_async, tool_payload
from .gemini_peers import Jetforce, gemini_session

pytestmark = pytest.mark.integration

SECRET = "correct horse battery staple"


def test_secret_typed_on_the_page_reaches_the_capsule_only(
    jetforce_server: Jetforce, gemini_env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "gophergem.log"
    env = {**gemini_env, "GOPHERGEM_LOG_LEVEL": "DEBUG", "GOPHERGEM_LOG_FILE": str(log)}
    asked: list[Any] = []
    posted: list[str] = []
    elicitation = user_at_the_page(asked, posted)

    async def body() -> tuple[Any, dict[str, Any]]:
        async with gemini_session(env, elicitation) as session:  # type: ignore[arg-type]
            result = await session.call_tool(
                "gemini_fetch", {"url": jetforce_server.url("/cgi-bin/secret")}
            )
            return result, tool_payload(result)

    result, payload = run_async(body)
    check(result, payload, asked, posted)
    for shown in (result.model_dump_json(), asked[0].model_dump_json(), log.read_text()):
        assert "horse" not in shown


def check(result: Any, payload: dict[str, Any], asked: list[Any], posted: list[str]) -> None:
    """The user was sent to a loopback page, posted there, and the capsule got the secret."""
    (params,) = asked
    assert params.mode == "url" and params.url.startswith("http://127.0.0.1:")
    assert posted and "Sent" in posted[0]
    assert payload["kind"] == "success", payload
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert payload["content"].strip() == f"Secret received, sha256: {digest}"


def user_at_the_page(asked: list[Any], posted: list[str]) -> Any:
    """
    A client's URL-mode elicitation handler: it records the request, says
    yes, and (as the user would, a moment later) opens the page and posts the
    form, recording the page's answer.
    """

    async def elicitation(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params)

        async def user() -> None:
            posted.append(await asyncio.to_thread(browser, params.url))

        asyncio.get_running_loop().create_task(user())
        return mcp_types.ElicitResult(action="accept")

    return elicitation


def browser(url: str) -> str:
    """Open the page and submit the form, as the user's browser would."""
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    assert "Passphrase?" in page and 'type="password"' in page
    form = urllib.parse.urlencode({"answer": SECRET}).encode()
    request = urllib.request.Request(url, data=form, headers={"Origin": "null"})
    return str(urllib.request.urlopen(request, timeout=10).read().decode())


def test_the_daemon_on_loopback_serves_the_page_on_its_own_site(
    jetforce_server: Jetforce, gemini_env: dict[str, str]
) -> None:
    """C{gophergem serve} bound to 127.0.0.1: the page is C{/input/<token>} of its own site."""
    from mcp import Client

    from tests.helpers.daemon import running, serve_argv

    asked: list[Any] = []
    posted: list[str] = []
    elicitation = user_at_the_page(asked, posted)

    with running(serve_argv, gemini_env) as daemon:

        async def body() -> tuple[Any, dict[str, Any]]:
            async with Client(daemon.url, mode="legacy", elicitation_callback=elicitation) as c:
                result = await c.call_tool(
                    "gemini_fetch", {"url": jetforce_server.url("/cgi-bin/secret")}
                )
                return result, tool_payload(result)

        result, payload = run_async(body)
        output = daemon.output()
        daemon.stop()
    check(result, payload, asked, posted)
    assert f":{daemon.port}/input/" in asked[0].url
    assert "horse" not in result.model_dump_json()
    assert "/input/" not in output  # the page's URL is its password: never logged


def test_the_2026_era_sends_the_user_to_the_page_through_input_required(
    jetforce_server: Jetforce, gemini_env: dict[str, str]
) -> None:
    """In the 2026-07-28 era the page comes in an input_required result; the retry waits for it."""
    from mcp import Client, StdioServerParameters

    from .conftest import REPO_ROOT, server_command

    command, args = server_command()
    params = StdioServerParameters(command=command, args=args, env=gemini_env, cwd=str(REPO_ROOT))
    asked: list[Any] = []
    posted: list[str] = []

    async def elicitation(context: Any, request: Any) -> mcp_types.ElicitResult:
        asked.append(request)
        posted.append(await asyncio.to_thread(browser, request.url))
        return mcp_types.ElicitResult(action="accept")

    async def body() -> tuple[Any, dict[str, Any]]:
        async with Client(params, mode="2026-07-28", elicitation_callback=elicitation) as c:
            result = await c.call_tool(
                "gemini_fetch", {"url": jetforce_server.url("/cgi-bin/secret")}
            )
            return result, tool_payload(result)

    result, payload = run_async(body)
    check(result, payload, asked, posted)
    assert "horse" not in result.model_dump_json()
