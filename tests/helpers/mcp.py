"""
Shared helpers for the MCP-layer tests: run an asyncio body while an
in-memory Gopher network is pumped on the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from mcp import Client

from gophergem.mcp.server import build_server
from gophergem.testing import FakeGopherServer, MemoryNetwork

T = TypeVar("T")

HOST_IP = "192.0.2.10"  # memory reactor only: never dialled

#: The initialize request a raw HTTP client POSTs to open a legacy session.
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
).encode()
MENU = (
    b"iWelcome\tfake\t(NULL)\t0\r\n"
    b"1Sub\t/sub\tg.example\t70\r\n"
    b"0About\t/about\tg.example\t70\r\n"
    b"hWeb\tURL:https://example.org/\tg.example\t70\r\n"
    b"9Bin\t/bin\tg.example\t70\r\n"
    b".\r\n"
)


def network() -> tuple[MemoryNetwork, FakeGopherServer]:
    """A network with g.example serving a small menu, a text and a binary."""
    net = MemoryNetwork()
    net.resolver.add("g.example", HOST_IP)
    server = net.listen(
        HOST_IP,
        70,
        FakeGopherServer(
            {b"": MENU, b"/about": b"Hello\r\n.\r\n", b"/bin": b"GIF89a" + b"\x00" * 10}
        ),
    )
    return net, server


def run_with_network(
    net: MemoryNetwork, body: Callable[[], Awaitable[T]], advance: float | None = None
) -> T:
    """
    Run C{body()} on a fresh asyncio loop while C{net} is flushed every turn.

    @param advance: If given, the seconds the network's clock moves on
        each turn too (for bodies that wait on a timeout).
    """

    async def main() -> T:
        async def pump() -> None:
            while True:
                net.flush()
                if advance is not None:
                    net.reactor.advance(advance)
                await asyncio.sleep(0)

        pumping = asyncio.ensure_future(pump())
        try:
            return await body()
        finally:
            pumping.cancel()

    return asyncio.run(main())


def structured(result: Any) -> dict[str, Any]:
    return result.structured_content  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def bearer_session(url: str, token: str, mode: str, **options: Any) -> AsyncIterator[Any]:
    """
    An SDK client session on the Streamable HTTP endpoint at C{url}, in
    C{mode} (an era), sending C{token} as its bearer token; C{options} go to
    the SDK's C{Client}.
    """
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        client,
        Client(streamable_http_client(url, http_client=client), mode=mode, **options) as session,
    ):
        yield session


def call(name: str, arguments: dict[str, Any], **fetcher_options: Any) -> tuple[Any, Any]:
    net, _ = network()
    mcp_server = build_server(net.fetcher(**fetcher_options))

    async def body() -> tuple[Any, Any]:
        async with Client(mcp_server) as client:
            tools = await client.list_tools()
            return tools, await client.call_tool(name, arguments)

    return run_with_network(net, body)
