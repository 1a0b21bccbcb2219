# -*- test-case-name: tests.test_mcp_web -*-
"""
MCP over Streamable HTTP, as a C{twisted.web} resource.

The SDK serves Streamable HTTP (both protocol eras, sessions, SSE, the
C{Host}/C{Origin} checks) only as an ASGI application, so L{ASGIResource} is
a small ASGI-to-C{twisted.web} bridge that hosts it unchanged, and
L{LifespanService} runs the SDK's session manager around it.  Both need
Twisted's asyncio reactor.  To serve MCP from your own C{Site}::

    resource = mcp_resource(build_server(fetcher))
    root.putChild(b"mcp", resource)
    LifespanService(resource, reactor).setServiceParent(application)
    site = Site(root, requestFactory=BodyCappedRequest)

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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from contextlib import AbstractAsyncContextManager
from http import HTTPStatus
from typing import Any, ClassVar
from urllib.parse import unquote_to_bytes

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from twisted.application.service import Service
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.web import http, server
from twisted.web.resource import Resource

__all__ = [
    "DRAIN_SECONDS",
    "MAX_BODY_SIZE",
    "ASGIResource",
    "BodyCappedRequest",
    "LifespanService",
    "mcp_resource",
    "transport_security",
]

log = Logger()

MAX_BODY_SIZE = 4 * 1024 * 1024
"""Largest request body accepted, in bytes (the SDK's own limit)."""

DRAIN_SECONDS = 10.0
"""On shutdown, how long requests in flight get to finish before they are cancelled."""

SETTLE_SECONDS = 2.0
"""After the lifespan ends, how long open streams get to close by themselves."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[..., Any]],
    Awaitable[None],
]


def transport_security(
    port: int | None = None, allowed_hosts: Iterable[str] = ()
) -> TransportSecuritySettings:
    """
    DNS-rebinding protection: the C{Host} and C{Origin} values accepted.

    Loopback names (C{127.0.0.1}, C{localhost}, C{[::1]}) are always accepted,
    on C{port} when it is given and on any port otherwise.  Each name of
    C{allowed_hosts} (a host name or address, optionally with C{:port}) is
    accepted as well, on any port unless it names one; browsers may then send
    it as an C{http://} or C{https://} origin.
    """
    suffix = f":{port}" if port else ":*"
    hosts = [name + suffix for name in LOOPBACK_HOSTS]
    origins = [f"http://{name}{suffix}" for name in LOOPBACK_HOSTS]
    for name in allowed_hosts:
        with_port = [name] if _has_port(name) else [name, f"{name}:*"]
        hosts.extend(with_port)
        origins.extend(f"{scheme}://{h}" for h in with_port for scheme in ("http", "https"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _has_port(name: str) -> bool:
    tail = name.rpartition("]")[2] if name.startswith("[") else name
    return ":" in tail


class BodyCappedRequest(server.Request):
    """
    A C{Site} request that refuses an over-size body while it arrives.

    C{twisted.web} otherwise buffers a whole body (to a temporary file past
    100 kB) before any resource sees it.  Beyond C{max_body_size} bytes,
    declared or received, the client gets 413 and the connection is closed;
    nothing more is stored.  Use it as C{Site(root, requestFactory=...)};
    subclass to change the cap.
    """

    max_body_size: ClassVar[int] = MAX_BODY_SIZE
    body_refused = False
    _received = 0

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > self.max_body_size:
            # Twisted answers "Expect: 100-continue" right after this call;
            # the body is refused already, so do not invite it.
            self.requestHeaders.removeHeader(b"Expect")
            self._refuse_body()
            return
        super().gotLength(length)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def handleContentChunk(self, data: bytes) -> None:
        if self.body_refused:
            return
        self._received += len(data)
        if self._received > self.max_body_size:
            self._refuse_body()
            return
        super().handleContentChunk(data)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def _refuse_body(self) -> None:
        self.body_refused = True
        self.content = io.BytesIO()
        message = b"Request body too large.\n"
        transport = self.channel.transport
        assert transport is not None
        transport.write(
            b"HTTP/1.1 413 Payload Too Large\r\n"
            b"Content-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(message), message)
        )
        self.channel.loseConnection()

    def process(self) -> None:
        if not self.body_refused:
            super().process()  # type: ignore[no-untyped-call]  # Twisted: unannotated


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


def _reason(status: int) -> bytes | None:
    """A reason phrase for codes Twisted has none for (421 among them)."""
    if status in http.RESPONSES:
        return None
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return None


def _plain(request: server.Request, code: int, text: str) -> bytes:
    """Set up a short plain-text answer; return its body."""
    data = (text + "\n").encode("utf-8")
    request.setResponseCode(code)
    request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
    request.setHeader(b"Content-Length", b"%d" % len(data))
    request.setHeader(b"Cache-Control", b"no-store")
    return data


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
    do not use L{BodyCappedRequest}.

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
                    await self._wait_for(
                        [t for e, t in self._exchanges.items() if e.method != b"GET"],
                        drain_seconds,
                    )
        finally:
            self._state = _State.STOPPED
            self._ready.set()
            await self._wait_for(list(self._exchanges.values()), SETTLE_SECONDS)
            leftovers = list(self._exchanges.values())
            for task in leftovers:
                task.cancel()
            await self._wait_for(leftovers, SETTLE_SECONDS)

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


def mcp_resource(
    server: MCPServer[Any],
    *,
    security: TransportSecuritySettings | None = None,
    max_body_size: int = MAX_BODY_SIZE,
) -> ASGIResource:
    """
    The Streamable HTTP endpoint of C{server}, as a resource to mount anywhere.

    Serve it together with a L{LifespanService}.  Build one per server: the
    SDK's session manager it creates runs once.

    @param security: The accepted C{Host}/C{Origin} values; by default
        loopback names on any port (see L{transport_security}).
    """
    server.streamable_http_app(
        transport_security=security if security is not None else transport_security(),
        max_request_body_size=max_body_size,
    )
    manager = server.session_manager
    return ASGIResource(manager.handle_request, manager.run, max_body_size=max_body_size)
