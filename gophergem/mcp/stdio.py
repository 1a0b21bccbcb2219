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
    server stops, however long that takes (the SDK alone cancels handlers
    in flight at EOF).

L{StdioMCPProtocol} is the Twisted side: a line receiver on C{StandardIO}
that survives stdin closing while stdout is still needed, and ends the
session at once when stdout is gone (no reply can be delivered any more).
L{StdioMCPService} runs one on this process's stdin and stdout.
Replies are given up on only when stdout is gone, when the optional
C{GOPHERGEM_STDIO_DRAIN_SECONDS} runs out after end of input, or when the
shutdown grace of L{StdioMCPProtocol.stop} (SIGTERM) runs out; they are
counted and logged, answered with an error while stdout still works, and
make the console script's exit status 1.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError
from twisted.application.service import Service
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import (
    IDelayedCall,
    IHalfCloseableProtocol,
    IReactorCore,
    IReactorTime,
)
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.config import Config
from gophergem.interfaces import IFetcher, ISecretInput
from gophergem.mcp._sdk import lowlevel_server
from gophergem.mcp.early import EarlyResponder, Handover
from gophergem.mcp.server import build_server

__all__ = ["MessagePipe", "StdioMCPProtocol", "StdioMCPService", "classify_line"]

log = Logger()

MAX_LINE = 32 * 1024 * 1024
STOP_GRACE_SECONDS = 2.0
"""On shutdown (SIGTERM), how long replies in flight get to be written."""


def _error(code: int, message: str, id_: Any = None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)
    )


def _usable_id(value: object) -> bool:
    """Whether C{value} can be echoed as an id: an integer, or a string that is valid Unicode."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, from a \ud800 escape
            return False
        return True
    return isinstance(value, int) and not isinstance(value, bool)


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
        if not _usable_id(request_id):
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
        if not _usable_id(request_id):
            request_id = None
        return _error(
            types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message.", request_id
        )
    return SessionMessage(message)


def write_through(stdio: Any) -> Callable[[bytes], None]:
    """
    C{stdio.write} for a Twisted C{StandardIO}, but straight to the
    descriptor while nothing is queued.

    Twisted's C{FileDescriptor.write} always queues, then waits for the
    reactor to report the descriptor writable: a poller registration, a turn
    of the loop and a deregistration for every reply.  A reply to a client
    that keeps up finds the pipe empty and can go out at once.  What the pipe
    does not take (it is full, or the reply is larger than its room), and
    every write while anything is queued or the writer is closing, goes
    through C{stdio.write} as before, so bytes keep their order; errors (a
    closed pipe) are left for the transport to meet and report as it always
    has.

    It reads the writer's queue, which Twisted does not publish: when the
    writer does not look as expected, this is plain C{stdio.write}
    (C{tests/test_mcp_stdio.py} checks that the installed Twisted gets the
    fast path).
    """
    writer = getattr(stdio, "_writer", None)
    needed = ("dataBuffer", "offset", "_tempDataLen", "writeSomeData", "connected")
    if writer is None or not all(hasattr(writer, name) for name in needed):
        write: Callable[[bytes], None] = stdio.write
        return write

    def write_now(data: bytes) -> None:
        idle = (
            writer.connected
            and not writer.disconnecting
            and not getattr(writer, "_writeDisconnecting", False)
            and writer.offset == len(writer.dataBuffer)
            and not writer._tempDataLen
        )
        if idle and data:
            sent = writer.writeSomeData(data)
            if isinstance(sent, int) and sent > 0:
                if sent == len(data):
                    return
                data = data[sent:]
        stdio.write(data)

    return write_now


class MessagePipe:
    """
    Drive one SDK server session from pushed lines; must run on an asyncio loop.

    At end of input (L{eof}) the session ends once every owed response is
    written, with no time limit of its own.  L{abandon} ends it at once,
    giving up the responses still owed; how many were given up is
    L{lost}.

    @param server: The SDK's lowlevel server (C{Server.run} is used).
    @param write_line: Called with each output line, newline included.
    """

    def __init__(self, server: Any, write_line: Callable[[bytes], None]) -> None:
        self._server = server
        self._write_line = write_line
        self._in_tx, self._in_rx = anyio.create_memory_object_stream[SessionMessage | Exception](
            math.inf
        )
        self._out_tx, self._out_rx = anyio.create_memory_object_stream[SessionMessage](math.inf)
        # A multiset: a client may (wrongly) reuse an id still in flight.
        self._owed: Counter[types.RequestId] = Counter()
        self._eof = False
        self._abandoned = False
        self._scope: anyio.CancelScope | None = None
        self._answered: dict[types.RequestId, bytes] = {}
        self.lost = 0
        """How many owed responses were given up (see L{abandon})."""

    @property
    def owed(self) -> int:
        """How many responses are owed and not yet written."""
        return self._owed.total()

    def answered_early(self, answered: dict[Any, bytes]) -> None:
        """
        Say which requests were answered before the SDK had loaded
        (L{gophergem.mcp.early}): when the SDK answers them, its answer is
        compared with the line already written (id → line, no newline) and
        not written again.
        """
        self._answered.update(answered)

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
            self._owed[message.id] += 1
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            # A cancelled request is never answered.
            self._settle((message.params or {}).get("requestId"))
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
        self._close_if_drained()

    def abandon(self, why: str, answer: str | None = None) -> int:
        """
        End the session now: handlers in flight are cancelled and the
        responses still owed are given up, which is logged.  Nothing is
        written afterwards.

        @param why: What happened, for the log (e.g. C{"standard output closed"}).
        @param answer: If given (output still works), each request given up
            is answered with an error carrying this message, so that the
            client is not left waiting.
        @return: How many owed responses were given up by this call.
        """
        self._eof = True
        if self._abandoned:
            return 0
        given_up = self.owed
        if answer is not None:
            for request_id in self._owed.elements():
                if request_id in self._answered:
                    continue  # answered early, and so not given up
                self._emit(_error(types.INTERNAL_ERROR, answer, request_id))
        self._abandoned = True
        self._owed.clear()
        self.lost += given_up
        if given_up:
            log.warn(
                "{why}: gave up {count} {requests} still owed a reply{how}",
                why=why,
                count=given_up,
                requests="request" if given_up == 1 else "requests",
                how=" (each answered with an error)" if answer is not None else "",
            )
        self._in_tx.close()
        if self._scope is not None:
            self._scope.cancel()
        return given_up

    def _settle(self, request_id: Any) -> None:
        if self._owed.get(request_id, 0) > 0:
            self._owed[request_id] -= 1
            if not self._owed[request_id]:
                del self._owed[request_id]

    def _close_if_drained(self) -> None:
        if self._eof and not self._owed:
            self._in_tx.close()

    def _emit(self, message: Any) -> None:
        if self._abandoned:
            return
        data = self._serialise(message)
        if data is not None:
            self._write_line(data + b"\n")

    def _serialise(self, message: Any) -> bytes | None:
        try:
            data: bytes = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            return data
        except (PydanticSerializationError, UnicodeError):
            # Text that is not valid Unicode (a lone surrogate) cannot be sent
            # as JSON; the request still gets an answer.
            if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                log.warn("dropped an outgoing notification that is not valid Unicode")
                return None
            log.warn("a reply held text that is not valid Unicode; sent an error instead")
            request_id = message.id if _usable_id(message.id) else None
            reply = _error(
                types.INTERNAL_ERROR, "The reply held text that is not valid Unicode.", request_id
            )
            return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()

    async def _main(self) -> None:
        with anyio.CancelScope() as self._scope:
            if self._abandoned:
                self._scope.cancel()
            async with anyio.create_task_group() as group:
                group.start_soon(self._pump)
                await self._server.run(
                    self._in_rx, self._out_tx, self._server.create_initialization_options()
                )

    async def _pump(self) -> None:
        async with self._out_rx:
            async for session_message in self._out_rx:
                message = session_message.message
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    self._settle(message.id)
                    if message.id is not None and message.id in self._answered:
                        self._check_early(message)
                        self._close_if_drained()
                        continue
                self._emit(message)
                self._close_if_drained()

    def _check_early(self, message: types.JSONRPCResponse | types.JSONRPCError) -> None:
        assert message.id is not None
        early = self._answered.pop(message.id)
        if self._serialise(message) != early:
            log.error(
                "the answer written early to request {id!r} differs from the SDK's; "
                "regenerate gophergem/mcp/ready_answers.json (python -m gophergem.mcp.prebuilt)",
                id=message.id,
            )


@implementer(IHalfCloseableProtocol)
class StdioMCPProtocol(Protocol):
    """
    MCP on standard input and output.

    Splits input on LF (a CR before it is dropped); a line longer than
    C{max_line} bytes is discarded as it streams in and answered with an
    error.  Half-closeable, so that stdin reaching EOF leaves stdout open for
    the responses still owed; stdout closing ends the session at once, since
    nothing can be delivered any more.  C{finished} fires when the session
    is over and the transport is done with; L{replies_lost} then says how
    many owed responses were never written.

    @param drain_seconds: How long, after end of input, owed responses are
        waited for; C{0} waits until every one is written.
    @param clock: Where timers are scheduled (the reactor); needed for a
        drain limit and for L{stop}.
    """

    def __init__(
        self,
        server: Any,
        max_line: int = MAX_LINE,
        *,
        drain_seconds: float = 0,
        clock: IReactorTime | None = None,
    ) -> None:
        self._server = server
        self._max_line = max_line
        self._drain_seconds = drain_seconds
        self._clock = clock
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._discarding = False
        self.finished: Deferred[None] = Deferred()
        self._pipe: MessagePipe | None = None
        self._pipe_over = False
        self._pipe_waiters: list[Deferred[None]] = []
        self._write_lost = False
        self._transport_gone = False
        self._drain_timer: IDelayedCall | None = None
        self.crashed = False
        """Whether the session ended on an unexpected error (which is logged)."""

    @property
    def replies_lost(self) -> int:
        """How many owed responses were given up so far."""
        return 0 if self._pipe is None else self._pipe.lost

    @property
    def exit_status(self) -> int:
        """C{0} for a session that ended cleanly, C{1} if replies were lost or it crashed."""
        return 1 if self.crashed or self.replies_lost else 0

    def connectionMade(self) -> None:
        assert self.transport is not None
        self._pipe = MessagePipe(self._server, write_through(self.transport))
        self._pipe.start().addBoth(self._ended)

    def take_over(self, handover: Handover) -> None:
        """
        Go on from an L{EarlyResponder<gophergem.mcp.early.EarlyResponder>}:
        replay every byte it read, in order, without answering again what it
        answered.  Call it right after the connection is made.
        """
        assert self._pipe is not None
        for note in handover.notes:
            log.debug("start-up: {note}", note=note)
        self._pipe.answered_early(handover.answered)
        if handover.data:
            self.dataReceived(handover.data)

    def _ended(self, result: object) -> None:
        assert self.transport is not None and self._pipe is not None
        if isinstance(result, Failure):
            self.crashed = True
            log.failure("the MCP session ended on an error", failure=result)
            self._pipe.abandon(
                "the MCP session ended on an error",
                "Not completed: gophergem hit an internal error.",
            )
        self._pipe_over = True
        if self._drain_timer is not None and self._drain_timer.active():
            self._drain_timer.cancel()
        waiters, self._pipe_waiters = self._pipe_waiters, []
        for waiter in waiters:
            waiter.callback(None)
        # Stops reading and, while stdout is there, flushes it and closes it;
        # connectionLost follows.  With stdout gone there is nothing to flush
        # and no connectionLost to wait for.
        self.transport.loseConnection()
        if self._write_lost or self._transport_gone:
            self._finish()

    def _finish(self) -> None:
        if not self.finished.called:
            self.finished.callback(None)

    def _when_pipe_over(self) -> Deferred[None]:
        if self._pipe_over:
            return succeed(None)
        waiter: Deferred[None] = Deferred()
        self._pipe_waiters.append(waiter)
        return waiter

    def _later(self, seconds: float, what: Callable[[], object]) -> IDelayedCall:
        if self._clock is None:
            raise RuntimeError("StdioMCPProtocol needs a clock to time a drain or a stop")
        return self._clock.callLater(seconds, what)

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> Deferred[None]:
        """
        Shut down: read no more requests, give the responses owed up to
        C{grace} seconds to be written, then give up the rest.

        @return: Fires once the session is over and its output flushed, or,
            if stdout will not take it, C{grace} seconds after the session
            is over; never later than about C{2 * grace}.
        """
        if self.finished.called or self._pipe is None:
            return succeed(None)
        pipe = self._pipe
        done: Deferred[None] = Deferred()
        timers: list[IDelayedCall] = []

        def fire(_: object = None) -> None:
            if not done.called:
                for timer in timers:
                    if timer.active():
                        timer.cancel()
                done.callback(None)

        def give_up() -> None:
            if not self._pipe_over:
                pipe.abandon("shutting down", "Not completed: gophergem is shutting down.")
            # Stdout that takes nothing is waited for no longer than the grace again.
            self._when_pipe_over().addCallback(lambda _: timers.append(self._later(grace, fire)))

        def finished(result: object) -> object:
            fire()
            return result

        self.finished.addBoth(finished)
        pipe.eof()
        if not done.called:
            timers.append(self._later(grace, give_up))
        return done

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
        if self._pipe is None:
            return
        if self._partial and not self._discarding:
            self._line_done()
        self._pipe.eof()
        if self._drain_seconds and not self._pipe_over and self._drain_timer is None:
            pipe, seconds = self._pipe, self._drain_seconds
            self._drain_timer = self._later(
                seconds,
                lambda: pipe.abandon(
                    f"GOPHERGEM_STDIO_DRAIN_SECONDS ({seconds:g} s) ran out after end of input",
                    f"Not completed within GOPHERGEM_STDIO_DRAIN_SECONDS ({seconds:g} s) "
                    "after end of input.",
                ),
            )

    def writeConnectionLost(self) -> None:
        self._write_lost = True
        if self._pipe is not None:
            self._pipe.abandon("standard output closed")
        if self._pipe_over:
            self._finish()

    def connectionLost(self, reason: object = None) -> None:
        self._transport_gone = True
        if self._pipe is not None and not self._pipe_over:
            # Both directions are gone: nothing owed can be delivered.
            self._pipe.abandon("standard input and output closed")
        else:
            self._finish()


@attrs.define
class StdioMCPService(Service):
    """
    Serve MCP on this process's stdin and stdout.

    Responses go to C{stdout_fd}; pass the descriptor
    L{gophergem.service.reserve_stdout} returned so that nothing else can
    write into the protocol stream.  When the session ends (stdin closed and
    every owed response written, or stdout gone), C{on_end} is called, which
    stops the reactor by default.  Stopping the service (SIGTERM) gives
    replies in flight C{stop_grace} seconds, then gives them up.
    L{exit_status} says whether any reply owed was lost.  With an C{early}
    responder (L{gophergem.mcp.early}), the service takes over stdin from it
    once the server is built.

    @ivar config: The configuration: the server then has the policy resource
        and the prompts, and C{GOPHERGEM_STDIO_DRAIN_SECONDS} applies.
    @ivar secret_input: Where a capsule's secret input is asked for (the
        daemon's wiring passes the loopback pages of
        L{gophergem.http.secret_input}); C{None}: nowhere, the input result
        goes back with advice.
    """

    fetcher: IFetcher
    reactor: Any
    stdout_fd: int = 1
    on_end: Callable[[], None] | None = None
    config: Config | None = None
    stop_grace: float = STOP_GRACE_SECONDS
    early: EarlyResponder | None = None
    secret_input: ISecretInput | None = None
    protocol: StdioMCPProtocol | None = attrs.field(default=None, init=False)
    _stopping: bool = attrs.field(default=False, init=False)

    @property
    def exit_status(self) -> int:
        """C{0}, or C{1} when owed replies were lost or the session crashed."""
        return 0 if self.protocol is None else int(self.protocol.exit_status)

    def startService(self) -> None:
        if TYPE_CHECKING:  # mypy reads stdio.StandardIO as the Windows one
            from twisted.internet._posixstdio import StandardIO
        else:
            from twisted.internet.stdio import StandardIO

        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        follower = None
        if self.config is not None:
            from gophergem.feeds.follow import Follower

            follower = Follower.from_config(self.fetcher, self.config)
        server = build_server(
            self.fetcher, self.config, follower=follower, secret_input=self.secret_input
        )
        drain = self.config.stdio.drain_seconds if self.config is not None else 0
        self.protocol = StdioMCPProtocol(
            lowlevel_server(server), drain_seconds=drain, clock=self.reactor
        )
        handover = self.early.hand_over() if self.early is not None else None
        StandardIO(self.protocol, stdin=0, stdout=self.stdout_fd, reactor=self.reactor)
        if handover is not None:
            self.protocol.take_over(handover)
        self.protocol.finished.addBoth(lambda _: self._ended())

    def stopService(self) -> Deferred[None] | None:
        """Give replies in flight a short grace, then end the session."""
        self._stopping = True
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if self.protocol is None:
            return None
        return self.protocol.stop(self.stop_grace)

    def _ended(self) -> None:
        if self.on_end is not None:
            self.on_end()
        elif self._stopping:
            return  # the reactor is already on its way down
        elif IReactorCore.providedBy(self.reactor) and self.reactor.running:
            self.reactor.stop()
