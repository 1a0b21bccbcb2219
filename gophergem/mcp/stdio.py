# -*- test-case-name: tests.test_mcp_stdio -*-
"""
MCP over stdio on Twisted: newline-delimited JSON-RPC on stdin and stdout.

L{MessagePipe} feeds the SDK's C{Server.run} through unbounded anyio memory
streams and writes every message the server emits.  It improves on the SDK's
own stdio transport in three ways the specification asks for:

  - a line that is not JSON gets a -32700 parse error (id null) and the
    session goes on; a JSON-RPC batch (an array) is refused with -32600;
  - a notification, even a malformed one, is never answered;
  - at end of input every response already owed is written before the
    server stops (the SDK alone cancels handlers in flight at EOF), within
    a bounded drain time.

L{StdioMCPProtocol} is the thin Twisted side: a line receiver on
C{StandardIO} that survives stdin closing while stdout is still needed.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IHalfCloseableProtocol
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from zope.interface import implementer

__all__ = ["MessagePipe", "StdioMCPProtocol", "classify_line"]

log = Logger()

DRAIN_SECONDS = 10.0
MAX_LINE = 32 * 1024 * 1024


def _error(code: int, message: str, id_: Any = None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)
    )


def classify_line(line: bytes) -> SessionMessage | types.JSONRPCError | None:
    """
    Read one input line.

    @return: The message to hand to the server; or the error reply owed to a
        line that is not a valid message; or C{None} for input that needs
        neither (a blank line, a malformed notification).
    """
    if not line.strip():
        return None
    try:
        raw = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _error(types.PARSE_ERROR, "Parse error: the line is not valid JSON.")
    if isinstance(raw, list):
        return _error(
            types.INVALID_REQUEST, "JSON-RPC batches are not supported; send one message per line."
        )
    if isinstance(raw, dict) and "id" in raw:
        request_id = raw["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            # Not a notification (it has an id), yet the id cannot be echoed.
            return _error(
                types.INVALID_REQUEST, "Invalid Request: id must be a string or an integer."
            )
    try:
        message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        if isinstance(raw, dict) and "method" in raw and "id" not in raw:
            log.warn("dropped a malformed notification")
            return None
        request_id = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            request_id = None
        return _error(
            types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message.", request_id
        )
    return SessionMessage(message)


class MessagePipe:
    """
    Drive one SDK server session from pushed lines; must run on an asyncio loop.

    @param server: The SDK's lowlevel server (C{Server.run} is used).
    @param write_line: Called with each output line, newline included.
    @param drain_seconds: How long, after end of input, responses still owed
        are waited for.
    """

    def __init__(
        self,
        server: Any,
        write_line: Callable[[bytes], None],
        drain_seconds: float = DRAIN_SECONDS,
    ) -> None:
        self._server = server
        self._write_line = write_line
        self._drain_seconds = drain_seconds
        self._in_tx, self._in_rx = anyio.create_memory_object_stream[SessionMessage | Exception](
            math.inf
        )
        self._out_tx, self._out_rx = anyio.create_memory_object_stream[SessionMessage](math.inf)
        self._owed: set[types.RequestId] = set()
        self._eof = False
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> Deferred[None]:
        """Start serving; the Deferred fires when the session has ended."""
        return Deferred.fromFuture(asyncio.ensure_future(self._main()))

    def feed(self, line: bytes) -> None:
        """Hand over one input line (without its newline), in arrival order."""
        if self._eof:
            return
        item = classify_line(line)
        if item is None:
            return
        if isinstance(item, types.JSONRPCError):
            self._emit(item)
            return
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self._owed.add(message.id)
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            # A cancelled request is never answered.
            self._owed.discard((message.params or {}).get("requestId"))
            self._close_if_drained()
        self._in_tx.send_nowait(item)

    def reject(self, message: str) -> None:
        """Answer an input line that could not be read at all (id null)."""
        self._emit(_error(types.INVALID_REQUEST, message))

    def eof(self) -> None:
        """End of input: finish once every owed response is written."""
        if self._eof:
            return
        self._eof = True
        self._timer = asyncio.get_running_loop().call_later(self._drain_seconds, self._in_tx.close)
        self._close_if_drained()

    def _close_if_drained(self) -> None:
        if self._eof and not self._owed:
            self._in_tx.close()

    def _emit(self, message: Any) -> None:
        self._write_line(
            message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        )

    async def _main(self) -> None:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._pump)
                await self._server.run(
                    self._in_rx, self._out_tx, self._server.create_initialization_options()
                )
        finally:
            if self._timer is not None:
                self._timer.cancel()

    async def _pump(self) -> None:
        async with self._out_rx:
            async for session_message in self._out_rx:
                message = session_message.message
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    self._owed.discard(message.id)
                self._emit(message)
                self._close_if_drained()


@implementer(IHalfCloseableProtocol)
class StdioMCPProtocol(Protocol):
    """
    MCP on standard input and output.

    Splits input on LF (a CR before it is dropped); a line longer than
    C{max_line} bytes is discarded as it streams in and answered with an
    error.  Half-closeable, so that stdin reaching EOF leaves stdout open for
    the responses still owed.  C{finished} fires when the session is over.
    """

    def __init__(
        self,
        server: Any,
        drain_seconds: float = DRAIN_SECONDS,
        max_line: int = MAX_LINE,
    ) -> None:
        self._server = server
        self._drain_seconds = drain_seconds
        self._max_line = max_line
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._discarding = False
        self.finished: Deferred[None] = Deferred()
        self._pipe: MessagePipe | None = None

    def connectionMade(self) -> None:
        assert self.transport is not None
        self._pipe = MessagePipe(self._server, self.transport.write, self._drain_seconds)
        self._pipe.start().addBoth(self._ended)

    def _ended(self, result: object) -> None:
        assert self.transport is not None
        self.transport.loseConnection()

    def dataReceived(self, data: bytes) -> None:
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                self._hold(data[start:])
                return
            self._hold(data[start:newline])
            self._line_done()
            start = newline + 1

    def _hold(self, piece: bytes) -> None:
        if self._discarding or not piece:
            return
        self._partial_size += len(piece)
        if self._partial_size > self._max_line:
            self._partial, self._partial_size, self._discarding = [], 0, True
            return
        self._partial.append(piece)

    def _line_done(self) -> None:
        assert self._pipe is not None
        if self._discarding:
            self._discarding = False
            log.warn("discarded an input line over {limit} bytes", limit=self._max_line)
            self._pipe.reject(f"The message is longer than {self._max_line} bytes.")
            return
        line = b"".join(self._partial)
        self._partial, self._partial_size = [], 0
        self._pipe.feed(line.rstrip(b"\r"))

    def readConnectionLost(self) -> None:
        if self._pipe is not None:
            if self._partial and not self._discarding:
                self._line_done()
            self._pipe.eof()

    def writeConnectionLost(self) -> None:
        if self._pipe is not None:
            self._pipe.eof()

    def connectionLost(self, reason: object = None) -> None:
        if self._pipe is not None:
            self._pipe.eof()
        if not self.finished.called:
            self.finished.callback(None)
