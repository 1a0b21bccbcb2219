"""
Acceptance test: a capsule's secret input (status 11) typed on gophergem's
one-time loopback page, with C{python -m gophergem} over stdio, the MCP
SDK's client (which offers URL-mode elicitation) and a real Jetforce whose
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

    def browser(url: str) -> str:
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "Passphrase?" in page and 'type="password"' in page
        form = urllib.parse.urlencode({"answer": SECRET}).encode()
        request = urllib.request.Request(url, data=form, headers={"Origin": "null"})
        return str(urllib.request.urlopen(request, timeout=10).read().decode())

    async def elicitation(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params)

        async def user() -> None:
            posted.append(await asyncio.to_thread(browser, params.url))

        asyncio.get_running_loop().create_task(user())
        return mcp_types.ElicitResult(action="accept")

    async def body() -> tuple[Any, dict[str, Any]]:
        async with gemini_session(env, elicitation) as session:  # type: ignore[arg-type]
            result = await session.call_tool(
                "gemini_fetch", {"url": jetforce_server.url("/cgi-bin/secret")}
            )
            return result, tool_payload(result)

    result, payload = run_async(body)
    (params,) = asked
    assert params.mode == "url" and params.url.startswith("http://127.0.0.1:")
    assert posted and "Sent" in posted[0]
    assert payload["kind"] == "success", payload
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert payload["content"].strip() == f"Secret received, sha256: {digest}"
    for shown in (result.model_dump_json(), params.model_dump_json(), log.read_text()):
        assert "horse" not in shown
