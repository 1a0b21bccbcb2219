# -*- test-case-name: tests.test_http_site -*-
"""
The bounded C{twisted.web} site every HTTP answer of gophergem goes through.

L{BoundedSite} serves L{BoundedHTTPChannel}s, which bound the time and size
of a request's head and body, and L{BodyCappedRequest}s, which refuse an
over-size body while it arrives; the site limits the connections open from
one address and in all (pausing accepts near the file descriptor limit),
and keeps credentials out of its access log (L{redact_uri}).  L{refuse} is
the short plain-text answer the other resources give.
"""

from __future__ import annotations

import collections
import errno
import io
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, ClassVar
from urllib.parse import unquote_to_bytes

from twisted.internet.interfaces import IDelayedCall
from twisted.internet.protocol import Protocol, connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http, server
from twisted.web.resource import Resource

from gophergem.config import Config

__all__ = [
    "CREDENTIAL_NAMES",
    "MAX_BODY_SIZE",
    "MAX_CONNECTIONS_PER_ADDRESS",
    "RESUME_SECONDS",
    "BodyCappedRequest",
    "BoundedHTTPChannel",
    "BoundedSite",
    "descriptor_budget",
    "redact_uri",
    "redacting_log_formatter",
    "refuse",
]

log = Logger()

MAX_BODY_SIZE = 4 * 1024 * 1024
"""Largest request body accepted, in bytes (the SDK's own limit)."""

MAX_CONNECTIONS_PER_ADDRESS: int = Config().http.max_connections_per_address
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
    body_timeout: float = Config().http.body_timeout_seconds
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
