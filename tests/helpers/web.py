"""
Shared helpers for the HTTP-layer tests: an asyncio loop with Twisted's
asyncio reactor on it (not the global reactor), an in-memory HTTP
connection to a C{Site}, and a real site on a loopback port.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from twisted.internet.address import IPv4Address
from twisted.internet.asyncioreactor import AsyncioSelectorReactor
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.web.server import Site

T = TypeVar("T")

DEADLINE = 20.0  # seconds a test body may take before it is failed


def run(body: Callable[[], Awaitable[T]], deadline: float = DEADLINE) -> T:
    """Run C{body()} on a fresh asyncio loop, failing after C{deadline} seconds."""

    async def bounded() -> T:
        return await asyncio.wait_for(body(), deadline)

    return asyncio.run(bounded())


async def until(condition: Callable[[], object], seconds: float = 5.0) -> None:
    """Let the loop turn until C{condition()} holds; fail after C{seconds}."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {seconds}s")
        await asyncio.sleep(0)


@contextlib.contextmanager
def loop_reactor() -> Any:
    """Twisted's asyncio reactor on the running loop, without installing it globally."""
    reactor = AsyncioSelectorReactor(asyncio.get_running_loop())
    try:
        yield reactor
    finally:
        reactor.removeAll()
        reactor.removeReader(reactor.waker)
        reactor.waker.connectionLost(None)


class Wire:
    """One in-memory HTTP connection to C{site}."""

    def __init__(self, site: Site) -> None:
        self.transport = StringTransport(
            hostAddress=IPv4Address("TCP", "127.0.0.1", 8000),
            peerAddress=IPv4Address("TCP", "127.0.0.1", 40000),
        )
        self.channel = site.buildProtocol(self.transport.getPeer())
        self.channel.makeConnection(self.transport)

    def send(self, data: bytes) -> None:
        self.channel.dataReceived(data)

    def value(self) -> bytes:
        return self.transport.value()

    def drop(self) -> None:
        """The client goes away."""
        self.channel.connectionLost(Failure(ConnectionDone("client left")))

    def head(self) -> tuple[int, dict[str, str]]:
        """The status and headers (lower-cased names) written so far."""
        head, _, _ = self.value().partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status_line.split()[1]), headers

    def body(self) -> bytes:
        """The body written so far, with chunked framing undone."""
        _, _, rest = self.value().partition(b"\r\n\r\n")
        if self.head()[1].get("transfer-encoding") != "chunked":
            return rest
        out = b""
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2 :]
        return out


def request_bytes(
    method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1:8000"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@contextlib.asynccontextmanager
async def listening(site_factory: Callable[[Any], Site]) -> AsyncIterator[tuple[Any, int]]:
    """A site (built with the loop's reactor) on a free 127.0.0.1 port: yields (reactor, port)."""
    with loop_reactor() as reactor:
        port = reactor.listenTCP(0, site_factory(reactor), interface="127.0.0.1")
        try:
            yield reactor, port.getHost().port
        finally:
            stopped = port.stopListening()
            if stopped is not None:
                await stopped.asFuture(asyncio.get_running_loop())


async def http_exchange(port: int, raw: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a connection to 127.0.0.1:port and send C{raw}."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    return reader, writer


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").strip().split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers
