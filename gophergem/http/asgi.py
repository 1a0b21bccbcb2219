# -*- test-case-name: tests.test_http_asgi -*-
"""
An ASGI application as a C{twisted.web} resource, and its lifespan.

The SDK serves Streamable HTTP (both protocol eras, sessions, SSE, the
C{Host}/C{Origin} checks) only as an ASGI application, so L{ASGIResource} is
a small ASGI-to-C{twisted.web} bridge that hosts it unchanged, and
L{LifespanService} runs the application's lifespan (for MCP, the SDK's
session manager) around it.  Both need Twisted's asyncio reactor.
L{gophergem.http.endpoint.mcp_resource} builds one for an MCP server.

The bridge is where the classic ASGI-on-Twisted traps are handled: response
headers go out as soon as the app starts its response (a quiet SSE stream
still shows its headers); the app hears C{http.disconnect} when the client
leaves and after the response is complete; nothing is written after the
response has finished or the connection is gone; request bodies are capped
in Twisted before the app sees them; and the lifespan is entered and left in
one asyncio task.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import unquote_to_bytes

from twisted.application.service import Service
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.web import server
from twisted.web.resource import Resource

from gophergem.config import Config
from gophergem.http.site import MAX_BODY_SIZE, _plain, _reason

__all__ = [
    "DRAIN_SECONDS",
    "ASGIApp",
    "ASGIResource",
    "LifespanService",
]

log = Logger()

DRAIN_SECONDS: float = Config().http.drain_seconds
"""
On shutdown, how long requests in flight get to finish before they are
cancelled: the default of C{GOPHERGEM_HTTP_DRAIN_SECONDS}, defined once in
L{gophergem.config.Config}, for a resource used without a configuration.
"""

SETTLE_SECONDS = 2.0
"""After the lifespan ends, how long open streams get to close by themselves."""

SHUTDOWN_ERROR_CODE = -32000
"""The JSON-RPC error code of a request cancelled at shutdown (the SDK's "connection closed")."""

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[..., Any]],
    Awaitable[None],
]


class _State(enum.Enum):
    IDLE = "idle"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class _Exchange:
    """One request and its response, between a Twisted request and an ASGI app."""

    def __init__(self, request: server.Request, body: bytes) -> None:
        self.request = request
        self.method = request.method
        self.started = False
        self.done = False  # finished, aborted or disconnected: write nothing more
        self._body: bytes | None = body
        self._gone = asyncio.Event()
        self.rpc_id = _request_id(body) if self.method == b"POST" else None
        self.content_type = b""
        request.notifyFinish().addBoth(self._ended)

    def _ended(self, _: object) -> None:
        self.done = True
        self._gone.set()

    async def receive(self) -> dict[str, Any]:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        # The body has been handed over: the next event is the end, whether
        # the client went away or the response is complete.
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("the response has already started")
            self.started = True
            if self.done:
                return
            status = int(message["status"])
            self.request.setResponseCode(status, _reason(status))
            for name, value in message.get("headers", ()):
                self.request.responseHeaders.addRawHeader(bytes(name), bytes(value))
                if bytes(name).lower() == b"content-type":
                    self.content_type = bytes(value).partition(b";")[0].strip().lower()
            # Twisted sends the headers with the first write; an SSE stream
            # may not write for a long time, so send them now.
            self.request.write(b"")
        elif kind == "http.response.body":
            if not self.started:
                raise RuntimeError("a response body was sent before the response started")
            if self.done:
                return
            body = message.get("body", b"")
            if body:
                self.request.write(body)
            if not message.get("more_body", False):
                self.finish()

    def finish(self) -> None:
        if not self.done:
            self.done = True
            self.request.finish()
        self._gone.set()

    def fail(self, code: int, text: str) -> None:
        """Answer with a short plain-text error, if nothing has been sent yet."""
        if self.done or self.started:
            return
        self.request.write(_plain(self.request, code, text))
        self.finish()

    def answer_error(self, code: int, message: str) -> bool:
        """
        Answer the JSON-RPC request of this exchange with an error, and end it.

        Possible before the response starts (a JSON body) and on an event
        stream (one more event); not once a JSON body is under way.

        @return: Whether the client got the error.
        """
        if self.done or self.rpc_id is None:
            return False
        error = json.dumps(
            {"jsonrpc": "2.0", "id": self.rpc_id, "error": {"code": code, "message": message}},
            separators=(",", ":"),
        ).encode("utf-8")
        if not self.started:
            self.started = True
            self.request.setResponseCode(200)
            self.request.setHeader(b"Content-Type", b"application/json")
            self.request.setHeader(b"Content-Length", b"%d" % len(error))
            self.request.setHeader(b"Cache-Control", b"no-store")
            self.request.write(error)
        elif self.content_type == b"text/event-stream":
            self.request.write(b"event: message\r\ndata: " + error + b"\r\n\r\n")
        else:
            return False
        self.finish()
        return True

    def abort(self) -> None:
        """Cut the connection: a response already under way cannot be completed."""
        if self.done:
            return
        self.done = True
        self._gone.set()
        transport = getattr(self.request.channel, "transport", None)
        if transport is not None and hasattr(transport, "abortConnection"):
            transport.abortConnection()
        else:
            self.request.loseConnection()


def _request_id(body: bytes) -> str | int | None:
    """The id of the JSON-RPC request in C{body}, if it holds one."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    identifier = message.get("id")
    if isinstance(identifier, bool) or not isinstance(identifier, str | int):
        return None
    return identifier


def _address(address: Any) -> tuple[str, int] | None:
    host, port = getattr(address, "host", None), getattr(address, "port", None)
    return (host, port) if isinstance(host, str) and isinstance(port, int) else None


def _scope(request: server.Request) -> dict[str, Any]:
    raw_path = request.path
    return {
        "type": "http",
        # 2.3, not 2.4: the app must learn of a disconnect from receive(),
        # which is what sse-starlette and the SDK's modern era rely on.
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": request.clientproto.partition(b"/")[2].decode("ascii") or "1.1",
        "method": request.method.decode("ascii"),
        "scheme": "https" if request.isSecure() else "http",
        "path": unquote_to_bytes(raw_path).decode("utf-8", "replace"),
        "raw_path": raw_path,
        "query_string": request.uri.partition(b"?")[2],
        "root_path": "",
        "headers": [
            (name.lower(), value)
            for name, values in request.requestHeaders.getAllRawHeaders()
            for value in values
        ],
        "client": _address(request.getClientAddress()),
        "server": _address(request.getHost()),
    }


def _body_size(request: server.Request) -> int:
    content = request.content
    if content is None:
        return 0
    content.seek(0, io.SEEK_END)
    size = content.tell()
    content.seek(0)
    return int(size)


class ASGIResource(Resource):
    """
    A leaf resource hosting an ASGI HTTP application.

    Requests are answered only while the resource is serving (see
    L{serving} and L{LifespanService}); before that and after shutdown they
    get 503.  Bodies over C{max_body_size} get 413 here too, for sites that
    do not use L{BodyCappedRequest<gophergem.http.site.BodyCappedRequest>}.

    @param app: The ASGI application (HTTP scopes only).
    @param lifespan: Returns the async context manager that must be active
        while the app serves (for MCP, the session manager's C{run}).
    """

    isLeaf = True

    def __init__(
        self,
        app: ASGIApp,
        lifespan: Callable[[], AbstractAsyncContextManager[Any]],
        *,
        max_body_size: int = MAX_BODY_SIZE,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self._app = app
        self._lifespan = lifespan
        self._max_body_size = max_body_size
        self._state = _State.IDLE
        self._ready = asyncio.Event()
        self._exchanges: dict[_Exchange, asyncio.Task[None]] = {}

    @property
    def serving_now(self) -> bool:
        """Whether requests are being passed to the app."""
        return self._state is _State.RUNNING

    def render(self, request: server.Request) -> bytes | int:
        request.defaultContentType = None
        declared = request.getHeader(b"Content-Length")
        if (
            declared is not None and declared.isdigit() and int(declared) > self._max_body_size
        ) or _body_size(request) > self._max_body_size:
            return _plain(request, 413, "Request body too large.")
        if self._state not in (_State.STARTING, _State.RUNNING):
            return _plain(request, 503, "The MCP endpoint is not running.")
        exchange = _Exchange(request, request.content.read() if request.content else b"")
        task = asyncio.ensure_future(self._serve(exchange, _scope(request)))
        self._exchanges[exchange] = task
        task.add_done_callback(lambda _: self._exchanges.pop(exchange, None))
        return server.NOT_DONE_YET

    async def _serve(self, exchange: _Exchange, scope: dict[str, Any]) -> None:
        await self._ready.wait()
        if self._state is not _State.RUNNING:
            exchange.fail(503, "The MCP endpoint is not running.")
            return
        try:
            await self._app(scope, exchange.receive, exchange.send)
        except asyncio.CancelledError:
            exchange.abort()
            raise
        except Exception:
            log.failure(
                "The MCP application failed on {method} {path}",
                method=scope["method"],
                path=scope["path"],
            )
            if exchange.started:
                exchange.abort()
            else:
                exchange.fail(500, "Internal server error.")
            return
        if not exchange.started:
            log.error(
                "The MCP application sent no response to {method} {path}",
                method=scope["method"],
                path=scope["path"],
            )
            exchange.fail(500, "Internal server error.")
        else:
            exchange.finish()

    @contextlib.asynccontextmanager
    async def serving(self, drain_seconds: float = DRAIN_SECONDS) -> AsyncIterator[None]:
        """
        Serve requests for as long as the context is active.

        Enter and leave it in one asyncio task (the SDK's task groups demand
        it).  On the way out, new requests get 503, requests in flight get
        C{drain_seconds} to finish, the lifespan ends (which closes the SDK's
        sessions and their streams), and whatever is still open after that is
        cancelled.
        """
        if self._state is not _State.IDLE:
            raise RuntimeError("an ASGIResource serves only once")
        self._state = _State.STARTING
        try:
            async with self._lifespan():
                self._state = _State.RUNNING
                self._ready.set()
                try:
                    yield
                finally:
                    self._state = _State.STOPPING
                    await self._drain(drain_seconds)
        finally:
            self._state = _State.STOPPED
            self._ready.set()
            await self._wait_for(list(self._exchanges.values()), SETTLE_SECONDS)
            leftovers = list(self._exchanges.values())
            for task in leftovers:
                task.cancel()
            await self._wait_for(leftovers, SETTLE_SECONDS)

    async def _drain(self, seconds: float) -> None:
        """
        Give the requests in flight C{seconds} to finish; then answer each one
        still running with a JSON-RPC error, and cancel it.

        Event streams (C{GET}) are not waited for: they last as long as their
        session, which ends with the lifespan.
        """
        calls = {e: t for e, t in self._exchanges.items() if e.method != b"GET"}
        await self._wait_for(list(calls.values()), seconds)
        late = [(e, t) for e, t in calls.items() if not t.done()]
        for exchange, task in late:
            answered = exchange.answer_error(
                SHUTDOWN_ERROR_CODE,
                f"The server is shutting down: this request was still running after the "
                f"{seconds:g}-second drain period and was cancelled. Try again later.",
            )
            log.warn(
                "Shutting down: cancelled {method} {path} (JSON-RPC id {rpc_id}), still running "
                "after the {seconds:g}s drain period; {outcome}",
                method=exchange.method.decode("ascii", "replace"),
                path=exchange.request.path.decode("ascii", "replace"),
                rpc_id=exchange.rpc_id,
                seconds=seconds,
                outcome="answered with an error" if answered else "its connection was closed",
            )
            task.cancel()
        await self._wait_for([t for _, t in late], SETTLE_SECONDS)

    @staticmethod
    async def _wait_for(tasks: list[asyncio.Task[None]], seconds: float) -> None:
        if tasks:
            await asyncio.wait(tasks, timeout=seconds)


class LifespanService(Service):
    """
    Runs an L{ASGIResource}'s lifespan while this service is running.

    Start it as part of the application that serves the resource; stopping
    it (as C{twistd} does on SIGTERM, before the reactor stops) drains the
    resource and ends the lifespan; the returned Deferred fires when that is
    done.
    """

    def __init__(
        self, resource: ASGIResource, reactor: IReactorTime, drain_seconds: float = DRAIN_SECONDS
    ) -> None:
        self._resource = resource
        self._reactor = reactor
        self._drain_seconds = drain_seconds
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._pending: IDelayedCall | None = None

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        # twistd starts services before the reactor (and its asyncio loop)
        # runs; begin once the loop turns.
        self._pending = self._reactor.callLater(0, self._begin)

    def _begin(self) -> None:
        self._pending = None
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            async with self._resource.serving(self._drain_seconds):
                log.info("MCP endpoint serving")
                await self._stop.wait()
                log.info("MCP endpoint stopping")
        except Exception:
            log.failure("The MCP endpoint stopped with an error")
        else:
            log.info("MCP endpoint stopped")

    def stopService(self) -> Deferred[None]:
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if self._pending is not None and self._pending.active():
            self._pending.cancel()
            self._pending = None
        self._stop.set()
        if self._task is None:
            return succeed(None)
        return Deferred.fromFuture(self._task)
