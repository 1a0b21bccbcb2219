# -*- test-case-name: tests.test_service_http -*-
"""
All the wiring: configuration in, a tree of Twisted services out.

L{makeService} builds the fetch pipeline (L{Fetcher.from_config}) and puts
the MCP endpoint on top: on stdin and stdout
(L{gophergem.mcp.stdio.StdioMCPService}), or over
Streamable HTTP in a C{twisted.web} site that also serves C{/health} and
C{/.well-known/agent.gopher} (L{build_site}).  This is the only module that
decides which concrete providers are used; nothing binds or connects until
a service starts.  L{install_asyncio_reactor} installs the reactor the MCP
layer needs, for the console script and C{twistd}.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
from typing import TYPE_CHECKING, Any

from twisted.application.internet import StreamServerEndpointService
from twisted.application.service import MultiService
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gophergem.config import DEFAULT_BACKLOG, DEFAULT_ENDPOINT, Config
from gophergem.fetcher import Fetcher
from gophergem.interfaces import IResolver

if TYPE_CHECKING:  # the MCP layer loads only when an endpoint is built
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from gophergem.mcp.web import ASGIResource, BoundedSite

__all__ = [
    "HTTPListenService",
    "ListenError",
    "build_site",
    "endpoint_security",
    "install_asyncio_reactor",
    "makeService",
    "reserve_stdout",
    "with_backlog",
]


def reserve_stdout() -> int:
    """
    Keep standard output for the MCP wire alone.

    Duplicates file descriptor 1 for the protocol and points 1 at stderr, so
    that a stray C{print} or a log observer on C{sys.stdout} can never write
    into the protocol stream.  Call it before anything logs.

    @return: The descriptor the protocol must write to.
    """
    wire = os.dup(1)
    os.dup2(2, 1)
    return wire


def install_asyncio_reactor() -> bool:
    """
    Install Twisted's asyncio reactor, which the MCP layer needs, unless a
    reactor is installed already.

    @return: Whether the installed reactor is the asyncio one (C{False}
        when another was chosen first, e.g. with C{twistd -r}).
    """
    if "twisted.internet.reactor" in sys.modules:
        from twisted.internet import reactor
        from twisted.internet.asyncioreactor import AsyncioSelectorReactor

        return isinstance(reactor, AsyncioSelectorReactor)
    from twisted.internet import asyncioreactor

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    asyncioreactor.install(loop)
    return True


def _strport_parts(description: str) -> tuple[str, list[str], dict[str, str]]:
    """Split a strports description on unescaped colons: type, arguments, options."""
    parts, current, chars = [], [], iter(description)
    for char in chars:
        if char == "\\":
            current.append(next(chars, ""))
        elif char == ":":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    kind, positional, named = parts[0].lower(), [], {}
    for part in parts[1:]:
        key, equals, value = part.partition("=")
        if equals:
            named[key] = value
        else:
            positional.append(part)
    return kind, positional, named


class ListenError(Exception):
    """The HTTP endpoint could not listen; the message is one line saying why."""


class HTTPListenService(StreamServerEndpointService):
    """
    Listens for the HTTP transport; failing to listen is a one-line error.

    A port already in use, or one this user may not bind, raises
    L{ListenError} naming the endpoint and the reason.  With
    C{exit_on_error} set (as under C{twistd -n}), that line is written to
    standard error and the process exits with status 2 instead: a user
    error, not a traceback.
    """

    exit_on_error = False

    def __init__(self, endpoint: Any, factory: Any, description: str) -> None:
        super().__init__(endpoint, factory)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.description = description
        self._raiseSynchronously = True  # as strports.service does: fail at start-up

    def privilegedStartService(self) -> None:
        try:
            super().privilegedStartService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        except (CannotListenError, OSError) as error:
            # A unix: socket in a missing directory raises a bare OSError.
            cause = error.socketError if isinstance(error, CannotListenError) else error
            reason = getattr(cause, "strerror", None) or str(cause)
            message = f"cannot listen on {self.description}: {reason}"
            if not self.exit_on_error:
                raise ListenError(message) from None
            Logger().error("gophergem {message}", message=message)
            stream = sys.__stderr__
            if stream is not None:
                stream.write(f"gophergem: {message}\n")
                stream.flush()
            raise SystemExit(2) from None


def with_backlog(endpoint: str, backlog: int = DEFAULT_BACKLOG) -> str:
    """
    C{endpoint} with a C{backlog=} option, unless it is not a listening
    socket type that takes one (C{tcp}, C{tcp6}, C{ssl}, C{unix}) or names
    its own.
    """
    kind, _, named = _strport_parts(endpoint)
    if kind not in ("tcp", "tcp6", "ssl", "unix") or "backlog" in named:
        return endpoint
    return f"{endpoint}:backlog={backlog}"


def _bind_facts(endpoint: str) -> tuple[bool, int | None]:
    """Whether C{endpoint} listens on loopback only, and its fixed port if it has one."""
    kind, positional, named = _strport_parts(endpoint)
    if kind == "unix":
        return True, None
    if kind not in ("tcp", "tcp6", "ssl"):
        return False, None
    port_text = named.get("port", positional[0] if positional else "")
    port = int(port_text) if port_text.isdigit() and int(port_text) > 0 else None
    interface = named.get("interface", positional[2] if len(positional) > 2 else "")
    if interface.lower() == "localhost":
        return True, port
    try:
        return ipaddress.ip_address(interface.strip("[]")).is_loopback, port
    except ValueError:
        return False, port


def endpoint_security(
    endpoint: str, allowed_hosts: tuple[str, ...] | list[str] = ()
) -> TransportSecuritySettings:
    """
    The DNS-rebinding protection for an HTTP endpoint.

    Loopback names are accepted (on the endpoint's port when it names a
    fixed loopback one), plus each of C{allowed_hosts}.  A bind beyond
    loopback with no C{allowed_hosts} accepts only loopback names, which is
    logged: clients reaching it by another name get 421.
    """
    from gophergem.mcp.web import transport_security

    loopback, port = _bind_facts(endpoint)
    if not loopback and not allowed_hosts:
        Logger().warn(
            "{endpoint} is not a loopback-only bind, but no --allowed-host was given: only "
            "requests addressed to 127.0.0.1, localhost or [::1] will be served",
            endpoint=endpoint,
        )
    return transport_security(port if loopback else None, allowed_hosts)


def build_site(
    server: MCPServer[Any],
    config: Config,
    reactor: IReactorTime,
    *,
    security: TransportSecuritySettings | None = None,
) -> tuple[BoundedSite, ASGIResource]:
    """
    The web site of the HTTP transport, and its MCP resource.

    The site serves the MCP endpoint at C{/mcp}, C{/health},
    C{/.well-known/agent.gopher} and C{/.well-known/agent/}, all under the
    same C{Host}/C{Origin} rules (C{security}); the resource needs a
    L{gophergem.mcp.web.LifespanService} running beside it.  The
    configuration bounds sessions and the time to send request headers.
    """
    from gophergem.mcp.discovery import Directory, add_discovery
    from gophergem.mcp.web import BoundedSite, mcp_resource, transport_security

    if security is None:
        security = transport_security()
    resource = mcp_resource(
        server,
        security=security,
        max_sessions=config.http_max_sessions,
        session_idle_seconds=config.http_session_idle_seconds,
    )
    root = Directory()  # type: ignore[no-untyped-call]  # Twisted: unannotated
    root.putChild(b"mcp", resource)
    add_discovery(root, server, config, mcp_path="/mcp", security=security)
    site = BoundedSite(root, header_timeout=config.http_header_timeout_seconds, reactor=reactor)
    return site, resource


def makeService(
    config: Config,
    reactor: Any = None,
    *,
    transport: str = "stdio",
    resolver: IResolver | None = None,
    stdout_fd: int = 1,
    endpoint: str = DEFAULT_ENDPOINT,
    allowed_hosts: tuple[str, ...] | list[str] = (),
) -> MultiService:
    """
    Build gophergem's service tree.

    @param reactor: The reactor to run on; the global one when omitted.  The
        MCP endpoint needs Twisted's asyncio reactor.
    @param transport: C{"stdio"}: MCP on stdin/stdout; C{"http"}: Streamable
        HTTP on C{endpoint}.
    @param stdout_fd: Where stdio responses are written (see L{reserve_stdout}).
    @param endpoint: A strports description of where HTTP listens.
    @param allowed_hosts: Host names (optionally C{name:port}) HTTP clients
        may address beyond the loopback names (see L{endpoint_security}).
    """
    if reactor is None:
        from twisted.internet import reactor as global_reactor

        reactor = global_reactor
    if transport not in ("stdio", "http"):
        raise ValueError(f"unknown transport {transport!r}")
    top = MultiService()
    fetcher = Fetcher.from_config(config, reactor, resolver)
    if transport == "stdio":
        from gophergem.mcp.stdio import StdioMCPService

        # Service.setServiceParent is unannotated in Twisted.
        StdioMCPService(fetcher, reactor, stdout_fd=stdout_fd, config=config).setServiceParent(top)  # type: ignore[no-untyped-call]
        return top
    from twisted.internet import endpoints

    from gophergem.mcp.server import build_server
    from gophergem.mcp.web import LifespanService

    site, resource = build_site(
        build_server(fetcher, config),
        config,
        reactor,
        security=endpoint_security(endpoint, allowed_hosts),
    )
    # Started in this order, stopped in reverse: the port closes, then the
    # endpoint drains and its lifespan ends.  (setServiceParent: unannotated in Twisted.)
    LifespanService(resource, reactor, config.http_drain_seconds).setServiceParent(top)  # type: ignore[no-untyped-call]
    listener = HTTPListenService(
        endpoints.serverFromString(reactor, with_backlog(endpoint)), site, endpoint
    )
    listener.setName("http")  # type: ignore[no-untyped-call]  # Twisted: unannotated
    listener.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
    return top
