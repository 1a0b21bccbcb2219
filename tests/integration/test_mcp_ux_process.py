"""
What MCP clients show a person, end to end: C{python -m gophergem} spawned
by the SDK's own C{Client} over stdio, in both protocol eras, against a real
gophernicus on 127.0.0.1.  A batch reports its progress, a prompt's C{url}
completes from what was fetched, and a menu's text block gives back every
link the structured result holds.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gophergem.render.text import menu_links

from .conftest import REPO_ROOT, GopherServer, run_async, server_command

pytestmark = pytest.mark.integration

ERAS = ["legacy", "2026-07-28"]


def client(env: dict[str, str], mode: str) -> Any:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    command, args = server_command()
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(REPO_ROOT))
    return Client(params, mode=mode)


@pytest.mark.parametrize("mode", ERAS)
def test_progress_completions_and_menu_text(
    gopher_server: GopherServer, mcp_env: dict[str, str], mode: str
) -> None:
    from mcp_types import PromptReference

    root = f"gopher://127.0.0.1:{gopher_server.port}/1"
    heard: list[tuple[float, float | None, str | None]] = []

    async def told(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def body() -> tuple[Any, Any, Any]:
        async with client(mcp_env, mode) as session:
            menu = await session.call_tool("gopher_fetch", {"url": root})
            items = menu.structured_content["items"]
            urls = [i["next_url"] for i in items if i["next_url"].startswith("gopher://")][:4]
            batch = await session.call_tool(
                "gopher_batch_fetch", {"urls": urls}, progress_callback=told
            )
            assert len(batch.structured_content["result"]) == len(urls)
            typed = f"GOPHER://127.0.0.1:{gopher_server.port}/1"
            done = await session.complete(
                PromptReference(type="ref/prompt", name="explore_capsule"),
                {"name": "url", "value": typed},
            )
            return menu, urls, done

    menu, urls, done = run_async(body)
    # One notification per URL, numbered in completion order, naming each URL once.
    assert [(d, t) for d, t, _ in heard] == [(i, len(urls)) for i in range(1, len(urls) + 1)]
    assert sorted(m for _, _, m in heard) == sorted(urls)
    # The prompt's url completes from what was fetched (case-insensitive scheme).
    assert root in done.completion.values
    # Every link of the menu can be rebuilt from its text block.
    compact = json.loads(menu.content[0].text)
    assert menu_links(compact) == [i["next_url"] for i in menu.structured_content["items"]]
    assert compact["base"] == f"gopher://127.0.0.1:{gopher_server.port}"
