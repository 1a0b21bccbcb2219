"""
Shared helpers for the feed tools' tests: drive a tool call, read its error code.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client

from gophergem.config import Config
from gophergem.feeds.follow import Follower
from gophergem.mcp.server import build_server
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork
from tests.helpers.feeds import GEMINI_IP, GEMLOG, GOPHER_IP, PHLOG
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import validator

TOOLS = {"feed_subscribe", "feed_unsubscribe", "feed_list", "feed_updates"}

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def drive(
    net: MemoryNetwork,
    script: Callable[[Client, Call], Awaitable[Any]],
    *,
    mode: str = "legacy",
    follower: Follower | None = None,
) -> Any:
    """
    Run C{script(client, call)} against a server with a follower; C{call}
    makes a tool call and checks its structured result against the tool's
    outputSchema and its text block.
    """
    fetcher = net.fetcher()
    if follower is None:
        follower = Follower(fetcher, MemoryFeedStore(), now=net.reactor.seconds)
    server = build_server(fetcher, Config(), follower=follower)

    async def body() -> Any:
        async with Client(server, mode=mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) >= TOOLS

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                result = await client.call_tool(name, arguments)
                assert result.structured_content is not None, result.content
                validator(tools[name].output_schema).validate(result.structured_content)
                compact = json.loads(result.content[0].text)
                assert compact.get("kind") == result.structured_content.get("kind")
                return result

            return await script(client, call)

    return run_with_network(net, body)


def error_code(result: Any) -> str:
    assert result.is_error is True, result.structured_content
    code: str = result.structured_content["error"]["code"]
    return code


def network() -> tuple[MemoryNetwork, FakeGeminiServer, FakeGopherServer]:
    net = MemoryNetwork()
    net.resolver.add("localhost", GEMINI_IP)
    net.resolver.add("g.example", GOPHER_IP)
    capsule = net.listen_gemini(GEMINI_IP, 1965, FakeGeminiServer({"/gemlog/": GEMLOG}))
    hole = net.listen(GOPHER_IP, 70, FakeGopherServer({b"/phlog": PHLOG}))
    return net, capsule, hole
