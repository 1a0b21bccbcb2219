# -*- test-case-name: tests.test_http_site -*-
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
import collections
import contextlib
import enum
import errno
import io
import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from contextlib import AbstractAsyncContextManager
from http import HTTPStatus
from typing import Any, ClassVar
from urllib.parse import unquote_to_bytes

from mcp.server.auth.provider import principal_components
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from twisted.application.service import Service
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol, connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http, server
from twisted.web.resource import Resource

from gophergem.config import Config
from gophergem.mcp._sdk import discard_session, live_sessions

__all__ = [
    "CREDENTIAL_NAMES",
    "DRAIN_SECONDS",
    "MAX_BODY_SIZE",
    "MAX_CONNECTIONS_PER_ADDRESS",
    "MAX_SESSIONS",
    "RESUME_SECONDS",
    "SESSION_IDLE_SECONDS",
    "ASGIResource",
    "BodyCappedRequest",
    "BoundedHTTPChannel",
    "BoundedSite",
    "LifespanService",
    "SessionLimit",
    "descriptor_budget",
    "foreign_request",
    "hide_refused_session_id",
    "mcp_resource",
    "redact_uri",
    "redacting_log_formatter",
    "refuse",
    "scope_principal",
    "transport_security",
]

log = Logger()

MAX_BODY_SIZE = 4 * 1024 * 1024
"""Largest request body accepted, in bytes (the SDK's own limit)."""

DRAIN_SECONDS: float = Config().http_drain_seconds
"""
On shutdown, how long requests in flight get to finish before they are
cancelled: the default of C{GOPHERGEM_HTTP_DRAIN_SECONDS}, defined once in
L{gophergem.config.Config}, for a resource used without a configuration.
"""

SETTLE_SECONDS = 2.0
"""After the lifespan ends, how long open streams get to close by themselves."""

MAX_SESSIONS = 2000
"""Live MCP sessions at most, by default: about 100 MB of a small host's memory."""

SESSION_IDLE_SECONDS = 1800.0
"""How long a session may go without any request before it is closed, by default."""

MAX_CONNECTIONS_PER_ADDRESS: int = Config().http_max_connections_per_address
"""
Connections open at once from one IP address, by default (0: no limit): the
default of C{GOPHERGEM_HTTP_MAX_CONNECTIONS_PER_ADDRESS}.
"""

RESUME_SECONDS = 1.0
"""After the site stopped accepting connections, how soon it looks for room again."""

WARN_EVERY_SECONDS = 60.0
"""Stopping to accept connections is logged at most this often."""

IDLE_SECONDS = 75.0
"""How long an idle keep-alive connection stays open (serving a request or a stream is not idle)."""

SHUTDOWN_ERROR_CODE = -32000
"""The JSON-RPC error code of a request cancelled at shutdown (the SDK's "connection closed")."""

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
    if not port:
        # No fixed port (a Unix socket, or port 0): a bare loopback name is
        # what curl --unix-socket and most clients send there.
        hosts.extend(LOOPBACK_HOSTS)
        origins.extend(f"http://{name}" for name in LOOPBACK_HOSTS)
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


def _matches(value: str, allowed: Iterable[str]) -> bool:
    """Whether C{value} is one of C{allowed}, where C{name:*} stands for any port."""
    return any(
        value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1]))
        for pattern in allowed
    )


def foreign_request(
    request: server.Request, security: TransportSecuritySettings
) -> tuple[int, str] | None:
    """
    Why C{request} must be refused under C{security}, if it must.

    The same rules the SDK applies on the MCP endpoint, for the other
    resources of the site: a C{Host} that is not accepted gets 421, a
    browser C{Origin} that is not accepted gets 403.

    @return: C{None} when the request may be served; otherwise the status
        and a short reason.
    """
    if not security.enable_dns_rebinding_protection:
        return None
    host = (request.getHeader(b"Host") or b"").decode("latin-1")
    if not host or not _matches(host, security.allowed_hosts):
        return 421, "Invalid Host header."
    origin = (request.getHeader(b"Origin") or b"").decode("latin-1")
    if origin and not _matches(origin, security.allowed_origins):
        return 403, "Invalid Origin header."
    return None


def refuse(request: server.Request, code: int, text: str) -> bytes:
    """Answer C{request} with a short plain-text error; return the body to render."""
    return _plain(request, code, text)


CREDENTIAL_NAMES = (
    "token",
    "secret",
    "pass",
    "pwd",
    "auth",
    "key",
    "code",
    "session",
    "sig",
    "cred",
    "jwt",
    "bearer",
    "assertion",
    "ticket",
    "otp",
)
"""
Query parameters whose value is kept out of logs: any parameter whose name
(case and C{-}/C{_} aside) contains one of these (C{access_token},
C{client_secret}, C{password}, C{api_key}, C{code}, C{X-Amz-Signature}, ...).
"""

REDACTED = b"REDACTED"


def _credential_name(name: bytes) -> bool:
    plain = unquote_to_bytes(name.replace(b"+", b" ")).lower().replace(b"-", b"_")
    return any(word.encode() in plain for word in CREDENTIAL_NAMES)


def redact_uri(uri: bytes) -> bytes:
    """
    C{uri} fit for a log: the value of every query parameter that looks
    like a credential (see L{CREDENTIAL_NAMES}) is replaced by C{REDACTED};
    the path and the other parameters are kept as they came.
    """
    path, question, query = uri.partition(b"?")
    if not question or not query:
        return uri
    query, hash_, fragment = query.partition(b"#")
    parts = re.split(rb"([&;])", query)
    for index in range(0, len(parts), 2):
        name, equals, value = parts[index].partition(b"=")
        if equals and value and name and _credential_name(name):
            parts[index] = name + equals + REDACTED
    redacted_fragment = hash_ + (REDACTED if fragment else b"")
    return path + question + b"".join(parts) + redacted_fragment


class _RedactedHeaders:
    """A request, as an access-log formatter sees it, with credentials out of its URIs."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self.uri = redact_uri(request.uri)

    def getHeader(self, name: bytes) -> bytes | None:
        value: bytes | None = self._request.getHeader(name)
        if value is not None and name.lower() == b"referer":
            return redact_uri(value)
        return value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)


def redacting_log_formatter(timestamp: str, request: Any) -> str:
    """
    Twisted's combined access-log line for C{request}, with the request
    URI's and the C{Referer}'s credentials redacted (L{redact_uri}).
    """
    line: str = http.combinedLogFormatter(timestamp, _RedactedHeaders(request))
    return line


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
        try:
            # Past 100 kB Twisted keeps the body in a temporary file.
            super().gotLength(length)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        except OSError as error:
            if error.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            self.requestHeaders.removeHeader(b"Expect")
            out_of_descriptors = getattr(
                getattr(self.channel, "site", None), "out_of_descriptors", None
            )
            if out_of_descriptors is not None:
                out_of_descriptors()
            self._refuse_body(
                b"503 Service Unavailable",
                b"The server is busy: try again later.\n",
                b"Retry-After: 10\r\n",
            )

    def handleContentChunk(self, data: bytes) -> None:
        if self.body_refused:
            return
        self._received += len(data)
        if self._received > self.max_body_size:
            self._refuse_body()
            return
        super().handleContentChunk(data)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def _refuse_body(
        self,
        status: bytes = b"413 Payload Too Large",
        message: bytes = b"Request body too large.\n",
        extra: bytes = b"",
    ) -> None:
        self.body_refused = True
        self.content = io.BytesIO()
        transport = self.channel.transport
        assert transport is not None
        transport.write(
            b"HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n%s"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (status, extra, len(message), message)
        )
        self.channel.loseConnection()

    def __repr__(self) -> str:
        # Twisted's own, with the URI fit for a log (Twisted logs requests by repr).
        return "<{} at 0x{:x} method={} uri={} clientproto={}>".format(
            type(self).__name__,
            id(self),
            self.method.decode("ascii", "replace"),
            redact_uri(self.uri).decode("ascii", "replace"),
            self.clientproto.decode("ascii", "replace"),
        )

    def process(self) -> None:
        if not self.body_refused:
            super().process()  # type: ignore[no-untyped-call]  # Twisted: unannotated


class BoundedHTTPChannel(http.HTTPChannel):
    """
    An HTTP connection with bounds on the head and body of each request.

    A client gets C{header_timeout} seconds to send a request line and its
    headers, from the moment it connects or sends the first byte of its
    next request; past that it gets 408 and the connection is closed (a
    client trickling a byte at a time is cut off, not kept forever).  It
    then gets C{body_timeout} seconds to send the whole body, if the
    request has one; past that, 408 and close as well.  A request line
    longer than C{max_request_line} bytes gets 414; headers past
    C{totalHeadersSize} bytes or C{maxHeaders} lines get 431.  Each refusal
    is an answer followed by closing the connection.

    C{header_timeout} and C{body_timeout} are read from the site when it
    has them (see L{BoundedSite}).
    """

    header_timeout: float = 20.0
    body_timeout: float = Config().http_body_timeout_seconds
    max_request_line = 8 * 1024
    totalHeadersSize = 16 * 1024
    maxHeaders = 100
    MAX_LENGTH = totalHeadersSize

    _head_call: IDelayedCall | None = None
    _body_call: IDelayedCall | None = None
    _address: str | None = None  # the peer's address, when the site counts it
    _counted = False  # the site counts this connection
    _reading_head = True  # between requests or in a request's head
    _on_request_line = True
    _refused = False

    def connectionMade(self) -> None:
        super().connectionMade()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        site = getattr(self, "site", None)
        self.header_timeout = getattr(site, "header_timeout", self.header_timeout)
        self.body_timeout = getattr(site, "body_timeout", self.body_timeout)
        self._start_head_clock()

    def dataReceived(self, data: bytes) -> None:
        if self._refused:
            return
        if self._reading_head and self._head_call is None and data:
            self._start_head_clock()
        super().dataReceived(data)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def lineReceived(self, line: bytes) -> None:
        if self._refused:
            return
        if self._on_request_line and line:
            self._on_request_line = False
            if len(line) > self.max_request_line:
                self._refuse(414, "The request line is too long.")
                return
        elif not self._on_request_line and line:
            if self._header_lines >= self.maxHeaders:
                self._refuse(431, "Too many request headers.")
                return
            self._header_lines += 1
        if self._head_size + len(line) > self.totalHeadersSize:
            self._refuse(431, "The request headers are too large.")
            return
        self._head_size += len(line)
        super().lineReceived(line)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    _header_lines = 0
    _head_size = 0

    def lineLengthExceeded(self, line: bytes) -> None:
        if self._on_request_line:
            self._refuse(414, "The request line is too long.")
        else:
            self._refuse(431, "The request headers are too large.")

    def allHeadersReceived(self) -> None:
        self._stop_head_clock()
        self._reading_head = False
        super().allHeadersReceived()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        # A body follows unless it is declared empty (chunked: length None).
        if self.length != 0 and self.body_timeout and self.body_timeout > 0:
            self._body_call = self.callLater(  # type: ignore[no-untyped-call]  # Twisted: unannotated
                self.body_timeout, self._body_timed_out
            )

    def allContentReceived(self) -> None:
        self._stop_body_clock()
        super().allContentReceived()  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def requestDone(self, request: http.Request) -> None:
        # The next request's head is timed from its first byte; an idle
        # connection in between is the site's idle timeout's business.
        # (Reset first: Twisted goes on with pipelined requests right away.)
        self._reading_head = True
        self._on_request_line = True
        self._header_lines = self._head_size = 0
        super().requestDone(request)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._stop_head_clock()
        self._stop_body_clock()
        if self._counted:
            self._counted = False
            release = getattr(getattr(self, "site", None), "connection_closed", None)
            if release is not None:
                release(self._address)
        super().connectionLost(reason)  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def _start_head_clock(self) -> None:
        if self.header_timeout and self.header_timeout > 0:
            self._head_call = self.callLater(  # type: ignore[no-untyped-call]  # Twisted: unannotated
                self.header_timeout, self._head_timed_out
            )

    def _stop_head_clock(self) -> None:
        if self._head_call is not None:
            if self._head_call.active():
                self._head_call.cancel()
            self._head_call = None

    def _stop_body_clock(self) -> None:
        if self._body_call is not None:
            if self._body_call.active():
                self._body_call.cancel()
            self._body_call = None

    def _body_timed_out(self) -> None:
        self._body_call = None
        log.info(
            "Closing a connection from {peer}: the request body did not arrive within {seconds:g}s",
            peer=str(self.transport.getPeer()) if self.transport else "?",
            seconds=self.body_timeout,
        )
        self._refuse(408, "The request body did not arrive in time.")

    def _head_timed_out(self) -> None:
        self._head_call = None
        log.info(
            "Closing a connection from {peer}: no complete request head within {seconds:g}s",
            peer=str(self.transport.getPeer()) if self.transport else "?",
            seconds=self.header_timeout,
        )
        self._refuse(408, "The request headers did not arrive in time.")

    def _refuse(self, code: int, text: str) -> None:
        self._refused = True
        self._stop_head_clock()
        self._stop_body_clock()
        body = (text + "\n").encode("utf-8")
        reason = http.RESPONSES.get(code) or _reason(code) or b"Error"
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (code, reason, len(body), body)
        )
        self.loseConnection()  # type: ignore[no-untyped-call]  # Twisted: unannotated


class BoundedSite(server.Site):
    """
    A C{Site} whose connections are L{BoundedHTTPChannel}s and whose
    requests are L{BodyCappedRequest}s.

    @param header_timeout: Seconds a client gets to send a request's head.
    @param body_timeout: Seconds a client gets to send a request's body,
        once its head is in.
    @param idle_timeout: Seconds an idle keep-alive connection stays open.
    @param max_connections_per_address: Connections open at once from one
        IP address; one more is answered 503 (with C{Retry-After}) and
        closed.  0: no limit (behind a proxy, where every connection comes
        from the proxy's address).
    @param max_connections: Connections open at once in all; at that many
        the site stops accepting (see L{watch_port}).  By default, what the
        file descriptor limit leaves room for (L{descriptor_budget}).
    """

    protocol = BoundedHTTPChannel  # type: ignore[assignment]  # no HTTP/2: plain HTTP/1.1

    def __init__(
        self,
        resource: Resource,
        *,
        header_timeout: float = BoundedHTTPChannel.header_timeout,
        body_timeout: float = BoundedHTTPChannel.body_timeout,
        idle_timeout: float = IDLE_SECONDS,
        max_connections_per_address: int = MAX_CONNECTIONS_PER_ADDRESS,
        max_connections: int | None = None,
        reactor: Any = None,
        unlogged: tuple[bytes, ...] = (),
    ) -> None:
        super().__init__(  # type: ignore[no-untyped-call]  # Twisted: unannotated
            resource,
            requestFactory=BodyCappedRequest,
            timeout=idle_timeout,
            reactor=reactor,
            logFormatter=redacting_log_formatter,
        )
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.max_connections_per_address = max_connections_per_address
        self.unlogged = unlogged
        self.connections: collections.Counter[str] = collections.Counter()
        """Open connections by peer address (only while a limit applies)."""
        self._refusing: set[str] = set()  # addresses at the limit, logged once
        self.max_connections = max_connections if max_connections else descriptor_budget()
        self.open_connections = 0
        self._ports: list[Any] = []
        self._paused = False
        self._warned_at: float | None = None
        self._resume_call: IDelayedCall | None = None

    def watch_port(self, port: Any) -> None:
        """
        Pause and resume accepting on C{port} (a listening C{tcp.Port} or
        C{unix.Port} serving this site) to stay within the process's file
        descriptors.

        While C{max_connections} connections are open, or right after
        C{accept} ran out of descriptors (C{EMFILE}), the port stops
        accepting: waiting clients stay in the kernel's backlog instead of
        being accepted and dropped.  It is logged once; accepting resumes
        after L{RESUME_SECONDS} once there is room again.
        """
        self._ports.append(port)
        socket = getattr(port, "socket", None)
        if socket is not None and not isinstance(socket, _WatchedListener):
            port.socket = _WatchedListener(socket, self.out_of_descriptors)

    def out_of_descriptors(self) -> None:
        """The process ran out of file descriptors: stop accepting for a moment."""
        self._pause(
            "the process ran out of file descriptors (EMFILE); "
            "raise the limit (ulimit -n, systemd LimitNOFILE=)"
        )

    def _pause(self, why: str) -> None:
        if not self._paused:
            self._paused = True
            now = self.reactor.seconds()
            if self._warned_at is None or now - self._warned_at >= WARN_EVERY_SECONDS:
                self._warned_at = now
                log.warn(
                    "Stopped accepting HTTP connections ({count} open): {why}. Accepting "
                    "again once there is room (logged at most once a minute).",
                    why=why,
                    count=self.open_connections,
                )
            for port in self._ports:
                if hasattr(port, "stopReading"):
                    port.stopReading()
        if self._resume_call is None or not self._resume_call.active():
            self._resume_call = self.reactor.callLater(RESUME_SECONDS, self._maybe_resume)

    def _maybe_resume(self) -> None:
        self._resume_call = None
        if not self._paused:
            return
        if self.open_connections >= self.max_connections:
            self._resume_call = self.reactor.callLater(RESUME_SECONDS, self._maybe_resume)
            return
        self._paused = False
        log.debug("Accepting HTTP connections again ({count} open)", count=self.open_connections)
        for port in self._ports:
            if (
                hasattr(port, "startReading")
                and getattr(port, "connected", True)
                and not getattr(port, "disconnecting", False)
            ):
                port.startReading()

    def stopFactory(self) -> None:
        if self._resume_call is not None and self._resume_call.active():
            self._resume_call.cancel()
        self._resume_call = None
        super().stopFactory()

    def buildProtocol(self, addr: Any) -> Any:
        if self.open_connections >= self.max_connections:
            # Accepted before the pause took hold: refuse it, stop accepting.
            self._pause(self._full())
            return _TooManyConnections()
        limit = self.max_connections_per_address
        host = getattr(addr, "host", None)
        if not limit or not isinstance(host, str):
            return self._counted(super().buildProtocol(addr))  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if self.connections[host] >= limit:
            if host not in self._refusing:
                self._refusing.add(host)
                log.warn(
                    "Refusing connections from {address}: it has {limit} open, the most "
                    "one address may (GOPHERGEM_HTTP_MAX_CONNECTIONS_PER_ADDRESS); "
                    "logged once until it has fewer",
                    address=host,
                    limit=limit,
                )
            return _TooManyConnections()
        channel = self._counted(super().buildProtocol(addr))  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if channel is not None:
            self.connections[host] += 1
            channel._address = host
        return channel

    def _counted(self, channel: Any) -> Any:
        if channel is not None:
            self.open_connections += 1
            channel._counted = True
            if self.open_connections >= self.max_connections:
                self._pause(self._full())
        return channel

    def _full(self) -> str:
        return (
            f"the file descriptor limit (ulimit -n) leaves room for {self.max_connections} "
            "connections"
        )

    def connection_closed(self, address: str | None) -> None:
        """A connection this site counted (against C{address}, if any) has closed."""
        self.open_connections -= 1
        if address is None:
            return
        left = self.connections[address] - 1
        if left > 0:
            self.connections[address] = left
        else:
            del self.connections[address]
        if left < self.max_connections_per_address:
            self._refusing.discard(address)

    def log(self, request: Any) -> None:
        """
        Log a request, unless its path starts with one of C{unlogged} (secret
        URLs); credentials in its query are redacted (L{redact_uri}).
        """
        path = getattr(request, "path", b"") or b""
        if self.unlogged and path.startswith(self.unlogged):
            return
        super().log(request)


def descriptor_budget(limit: int | None = None) -> int:
    """
    How many HTTP connections a process may hold open with C{limit} file
    descriptors (by default its soft C{RLIMIT_NOFILE}): a reserve of a
    quarter (at most 256) is kept for its files, databases and outgoing
    fetches, and each connection counts twice (its socket, and the
    temporary file Twisted keeps a body over 100 kB in).
    """
    if limit is None:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if limit == resource.RLIM_INFINITY or limit <= 0:
            limit = 1 << 20
    return max(16, (limit - min(256, limit // 4)) // 2)


class _WatchedListener:
    """A listening socket that pauses its site when C{accept} runs out of descriptors."""

    def __init__(self, listener: Any, out_of_descriptors: Callable[[], None]) -> None:
        self._listener = listener
        self._out_of_descriptors = out_of_descriptors

    def accept(self) -> Any:
        try:
            return self._listener.accept()
        except OSError as error:
            if error.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            # Stop accepting until there is room; to Twisted's accept loop
            # this is "no more clients for now", so it neither accepts and
            # drops every waiting client nor logs three lines for each.
            self._out_of_descriptors()
            raise BlockingIOError(errno.EAGAIN, "no file descriptor to accept with") from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._listener, name)


class _TooManyConnections(Protocol):
    """Answers a connection over the per-address limit with 503, and closes it."""

    def connectionMade(self) -> None:
        body = b"Too many connections from your address. Try again later.\n"
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nRetry-After: 10\r\nConnection: close\r\n\r\n%s"
            % (len(body), body)
        )
        self.transport.loseConnection()


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
    request.setResponseCode(code, _reason(code))
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


def _header(scope: MutableMapping[str, Any], name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class SessionLimit:
    """
    Caps the live sessions of the SDK's Streamable HTTP session manager.

    An ASGI application in front of C{manager.handle_request}.  The rules:

      - A session is never closed before the answer to the request that
        opened it (its C{initialize}) has been sent; until then it is not
        idle, whatever the clock says.
      - Closing never crosses principals: a request that needs room closes
        the session idle for longest (no request in flight, no open event
        stream) I{of its own principal}, never another's.  Without
        authentication every caller is the one anonymous principal.
      - Each principal holds at most its share of the cap: the cap divided
        by the number of principals holding sessions (counting the one
        asking), at least one.  A principal at its share replaces its own
        idle sessions even while the cap has room, which keeps that room
        for the others.
      - When nothing may be closed the request gets HTTP 503, a JSON-RPC
        error and C{Retry-After}.

    Requests of the stateless 2026-07-28 era open no session and are never
    limited.  A refused request never carries an C{Mcp-Session-Id}.

    It reads which sessions are live from the manager, and closes one the
    way the manager does itself (L{gophergem.mcp._sdk}, where the SDK's
    private names are kept and tested).

    @param principal_of: The principal of a request's ASGI scope; by
        default the one its bearer token names (L{scope_principal}).
    """

    def __init__(
        self,
        manager: Any,
        max_sessions: int,
        principal_of: Callable[[MutableMapping[str, Any]], str | None] | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self._manager = manager
        self._app = hide_refused_session_id(manager.handle_request)
        self.max_sessions = max_sessions
        self._principal_of = principal_of or scope_principal
        self._owner: dict[str, str | None] = {}  # answered sessions: their principal
        self._held: collections.Counter[str | None] = collections.Counter()  # by principal
        self._opening: collections.Counter[str | None] = collections.Counter()  # not answered yet
        self._busy: dict[str, int] = {}  # session id: requests in flight
        self._last_used: dict[str, int] = {}  # session id: when its last request ended
        self._clock = itertools.count()

    @property
    def _live(self) -> dict[str, Any]:
        return live_sessions(self._manager)

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[..., Any],
    ) -> None:
        session_id = _header(scope, b"mcp-session-id")
        if session_id is not None:
            if session_id not in self._live:
                await self._app(scope, receive, send)
                return
            self._hold(session_id)
            try:
                await self._app(scope, receive, send)
            finally:
                self._release(session_id)
            return
        if not self._may_open_session(scope):
            await self._app(scope, receive, send)
            return
        principal = self._principal_of(scope)
        admitted, victim, share = self._admit(principal)
        if not admitted:
            log.warn(
                "Refused a new MCP session{whose}: {reason}",
                whose="" if principal is None else f" for {principal}",
                reason=f"it holds its share ({share}) of the {self.max_sessions} sessions "
                "and none is idle"
                if share
                else f"{len(self._owner)} sessions are open and none of its own is idle",
            )
            await _refuse_session(send, self.max_sessions, share)
            return
        self._opening[principal] += 1
        opened: list[str] = []

        async def watch(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and not opened:
                opened.append("")
                self._opening[principal] -= 1
                if int(message["status"]) < 400:
                    for key, value in message.get("headers", ()):
                        if bytes(key).lower() == b"mcp-session-id":
                            opened[0] = bytes(value).decode("latin-1")
                            self._record(opened[0], principal)
            await send(message)

        try:
            if victim is not None:
                transport = self._live.get(victim)
                if transport is not None:
                    log.info(
                        "Closing the MCP session idle for longest{whose} to make room for "
                        "a new one ({count} open, the limit is {limit})",
                        whose="" if principal is None else f" of {principal}",
                        count=len(self._live),
                        limit=self.max_sessions,
                    )
                    # Forgets the session at once, then ends its streams.
                    await discard_session(self._manager, victim, transport)
            await self._app(scope, receive, watch)
        finally:
            if not opened:
                self._opening[principal] -= 1
            elif opened[0]:
                self._release(opened[0])
            if self._opening[principal] <= 0:
                del self._opening[principal]

    def _may_open_session(self, scope: MutableMapping[str, Any]) -> bool:
        if getattr(self._manager, "stateless", False) or scope.get("method") != "POST":
            return False
        version = _header(scope, b"mcp-protocol-version")
        return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

    def _admit(self, principal: str | None) -> tuple[bool, str | None, int]:
        """
        Whether a new session of C{principal} may open, and which of its own
        idle sessions it replaces (if any); decided at once, with no await,
        so that concurrent requests see each other's decisions.

        @return: Admitted, the session to close first, and the principal's
            share when that is what refused it (else 0).
        """
        live = self._live
        for gone in [s for s in self._owner if s not in live]:
            self._forget(gone)
        holders = {p for p, n in self._held.items() if n > 0}
        holders.update(p for p, n in self._opening.items() if n > 0)
        holders.add(principal)
        share = max(1, self.max_sessions // len(holders))
        mine = self._held[principal] + self._opening[principal]
        total = len(self._owner) + sum(self._opening.values())
        if mine < share and total < self.max_sessions:
            return True, None, 0
        idle = [s for s, p in self._owner.items() if p == principal and not self._busy.get(s)]
        if not idle:
            return False, None, share if mine >= share else 0
        victim = min(idle, key=lambda s: self._last_used.get(s, -1))
        self._forget(victim)
        return True, victim, 0

    def _record(self, session_id: str, principal: str | None) -> None:
        """C{session_id} has answered the request that opened it: it counts, and is in use."""
        if session_id not in self._owner:
            self._owner[session_id] = principal
            self._held[principal] += 1
        self._hold(session_id)

    def _forget(self, session_id: str) -> None:
        if session_id in self._owner:
            principal = self._owner.pop(session_id)
            self._held[principal] -= 1
            if self._held[principal] <= 0:
                del self._held[principal]
        self._last_used.pop(session_id, None)

    def _hold(self, session_id: str) -> None:
        self._busy[session_id] = self._busy.get(session_id, 0) + 1

    def _release(self, session_id: str) -> None:
        left = self._busy.get(session_id, 1) - 1
        if left > 0:
            self._busy[session_id] = left
        else:
            self._busy.pop(session_id, None)
        if session_id in self._live:
            self._last_used[session_id] = next(self._clock)
        else:
            self._forget(session_id)


def scope_principal(scope: MutableMapping[str, Any]) -> str | None:
    """
    The principal of an ASGI request behind the SDK's bearer authentication,
    as the SDK binds sessions to it (client, issuer and subject of the
    token), or C{None} without a token.  The daemon passes
    L{gophergem.mcp.auth.principal_of}'s instead (see
    L{gophergem.service.build_site}).
    """
    token = getattr(scope.get("user"), "access_token", None)
    if token is None:
        return None
    client, issuer, subject = principal_components(token)
    return f"{issuer or ''}#{subject or ''}#{client}"


def hide_refused_session_id(app: ASGIApp) -> ASGIApp:
    """
    C{app}, except that a request sent without a session which is refused
    (status 400 or more) carries no C{Mcp-Session-Id}.

    The SDK registers a session for every request that names none (a C{GET}
    or C{DELETE} included), answers from that session's transport, which
    stamps its id on the refusal, and then forgets it again: the id handed
    out names nothing.
    """

    async def hiding(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[..., Any],
    ) -> None:
        if _header(scope, b"mcp-session-id") is not None:
            await app(scope, receive, send)
            return

        async def without_id(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and int(message["status"]) >= 400:
                message = dict(message)
                message["headers"] = [
                    (key, value)
                    for key, value in message.get("headers", ())
                    if bytes(key).lower() != b"mcp-session-id"
                ]
            await send(message)

        await app(scope, receive, without_id)

    return hiding


async def _refuse_session(send: Callable[..., Any], limit: int, share: int = 0) -> None:
    if share:
        text = (
            f"Too many MCP sessions for one client: you hold your share ({share}) of the "
            f"{limit} this server allows, and none of them is idle to close."
        )
    else:
        text = f"Too many MCP sessions: all {limit} are in use, none of yours is idle to close."
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32603,
                "message": text + " Try again later, or end sessions you no longer use "
                "(HTTP DELETE).",
            },
        },
        separators=(",", ":"),
    ).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                (b"retry-after", b"10"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


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
    max_sessions: int | None = MAX_SESSIONS,
    session_idle_seconds: float | None = SESSION_IDLE_SECONDS,
    guard: Callable[[ASGIApp], ASGIApp] | None = None,
    principal_of: Callable[[MutableMapping[str, Any]], str | None] | None = None,
) -> ASGIResource:
    """
    The Streamable HTTP endpoint of C{server}, as a resource to mount anywhere.

    Serve it together with a L{LifespanService}.  Build one per server: the
    SDK's session manager it creates runs once.

    @param security: The accepted C{Host}/C{Origin} values; by default
        loopback names on any port (see L{transport_security}).
    @param max_sessions: How many sessions may be open at once (see
        L{SessionLimit}); C{None} for no limit.
    @param session_idle_seconds: How long a session may go without a
        request before it is closed; C{None} to keep it until the client
        ends it.
    @param guard: Wraps the endpoint's ASGI application, outermost (e.g.
        L{gophergem.mcp.auth.require_token}'s bearer authentication).
    @param principal_of: Whose a request is, for the session cap (see
        L{SessionLimit}); by default L{scope_principal}.
    """
    server.streamable_http_app(
        transport_security=security if security is not None else transport_security(),
        max_request_body_size=max_body_size,
        session_idle_timeout=session_idle_seconds,
        max_sessions=None,  # SessionLimit decides, closing idle sessions first
    )
    manager = server.session_manager
    app: ASGIApp = hide_refused_session_id(manager.handle_request)
    if max_sessions is not None:
        app = SessionLimit(manager, max_sessions, principal_of)
    if guard is not None:
        app = guard(app)
    return ASGIResource(app, manager.run, max_body_size=max_body_size)
