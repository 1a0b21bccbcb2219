"""
The stdio transport under test, driven by hand: L{StdioHarness} puts a
L{StdioMCPProtocol} on a L{FakeStdio}, in front of the MCP server over a
L{HeldFetcher} (whose fetches wait for the test), with a L{Clock} for the
protocol's timers and a L{WarpLoop} whose time the test moves on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.logger import LogLevel, capturedLogs, formatEvent
from twisted.python.failure import Failure

from gophergem.errors import FetchTimeout
from gophergem.mcp._sdk import lowlevel_server
from gophergem.mcp.server import build_server
from gophergem.mcp.stdio import StdioMCPProtocol
from gophergem.results import FetchFailure, RequestInfo


class HeldFetcher:
    """A fetcher whose every Gopher fetch waits until the test answers it."""

    gemini_enabled = False

    def __init__(self) -> None:
        self.pending: list[Deferred[Any]] = []
        self.cancelled = 0

    def _cancel(self, d: Deferred[Any]) -> None:
        self.cancelled += 1
        d.errback(CancelledError())

    def gopher(
        self, url: str, *, search: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[Any]:
        d: Deferred[Any] = Deferred(self._cancel)
        self.pending.append(d)
        return d

    def answer(self, count: int | None = None) -> None:
        """Answer the first C{count} fetches still waiting (all by default)."""
        waiting = [d for d in self.pending if not d.called]
        for d in waiting[:count]:
            d.callback(
                FetchFailure(
                    request_info=RequestInfo(url="gopher://g.example/"),
                    error=FetchTimeout(message="Too slow."),
                )
            )


class WarpLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test moves on by hand."""

    skipped = 0.0

    def time(self) -> float:
        return super().time() + self.skipped


def run_warped(body: Callable[[WarpLoop], Awaitable[None]]) -> None:
    """Run C{body} to its end on a new L{WarpLoop}."""
    loop = WarpLoop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(body(loop))
    finally:
        asyncio.set_event_loop(None)
        loop.close()


async def until(condition: Callable[[], bool], turns: int = 20000) -> None:
    """Let the loop run until C{condition()} holds (failing after C{turns} turns)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def turns(count: int = 200) -> None:
    """Let the loop run C{count} turns."""
    for _ in range(count):
        await asyncio.sleep(0)


class FakeStdio:
    """
    The transport side of C{StandardIO}, by hand.

    C{loseConnection} stops reading and, while stdout is open, closes it
    once flushed (at once, unless C{stuck}: stdout that takes nothing).
    """

    def __init__(self, stuck: bool = False) -> None:
        self.written: list[bytes] = []
        self.stdout_open = True
        self.stuck = stuck
        self.reading = True
        self.protocol: StdioMCPProtocol | None = None

    def write(self, data: bytes) -> None:
        if self.stdout_open:
            self.written.append(data)

    def loseConnection(self) -> None:
        self.reading = False
        if self.stdout_open and not self.stuck:
            self.stdout_open = False
            assert self.protocol is not None
            self.protocol.connectionLost(Failure(ConnectionDone()))

    def close_stdout(self) -> None:
        """The client closed its end of our stdout."""
        self.stdout_open = False
        assert self.protocol is not None
        self.protocol.writeConnectionLost()


@attrs.define
class StdioHarness:
    """
    One stdio session, as a test body gets it: the protocol, its transport,
    the fetcher behind the server, the protocol's clock and the loop.
    """

    protocol: StdioMCPProtocol
    stdio: FakeStdio
    fetcher: HeldFetcher
    clock: Clock
    loop: WarpLoop

    def receive(self, *lines: bytes) -> None:
        """Read C{lines} on standard input, each ended by a newline."""
        for raw in lines:
            self.protocol.dataReceived(raw + b"\n")

    @classmethod
    def run(
        cls,
        body: Callable[[StdioHarness], Awaitable[None]],
        *,
        drain_seconds: float = 0,
        stuck: bool = False,
    ) -> list[str]:
        """
        Run C{body} with a new session (the protocol connected, nothing read
        yet); return the warnings and errors logged meanwhile.
        """
        fetcher = HeldFetcher()
        server = lowlevel_server(build_server(fetcher))  # type: ignore[arg-type]
        clock = Clock()
        transport = FakeStdio(stuck=stuck)

        async def run(loop: WarpLoop) -> None:
            protocol = StdioMCPProtocol(server, drain_seconds=drain_seconds, clock=clock)
            transport.protocol = protocol
            protocol.makeConnection(transport)  # type: ignore[arg-type]
            await body(cls(protocol, transport, fetcher, clock, loop))

        with capturedLogs() as events:
            run_warped(run)
        return [formatEvent(e) for e in events if e["log_level"] >= LogLevel.warn]
