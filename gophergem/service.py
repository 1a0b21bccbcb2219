# -*- test-case-name: tests.test_service -*-
"""
All the wiring: configuration in, a tree of Twisted services out.

L{build_fetcher} assembles the fetch pipeline (resolver, address policy,
connector, cache); L{makeService} puts the MCP endpoint on top: on stdin and
stdout, or over Streamable HTTP in a C{twisted.web} site that also serves
C{/health} and C{/.well-known/agent.gopher} (L{build_site}).  This is the
only module that decides which concrete providers are used; nothing binds or
connects until a service starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.internet import StreamServerEndpointService
from twisted.application.service import MultiService, Service
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IReactorCore
from twisted.logger import Logger

from gophergem.client.connect import Connector, reactor_resolver
from gophergem.config import Config
from gophergem.fetcher import Fetcher
from gophergem.fetcher.common import offloader
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.interfaces import IIdentityStore, IPinStore, IResolver
from gophergem.policy.cache import ResponseCache
from gophergem.policy.targets import AddressPolicy
from gophergem.trust.identities import FileIdentityStore
from gophergem.trust.paths import identity_store_dir, pin_store_path
from gophergem.trust.pins import FilePinStore

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_ENDPOINT",
    "HTTPListenService",
    "ListenError",
    "StdioMCPService",
    "build_fetcher",
    "build_mcp_server",
    "build_site",
    "endpoint_security",
    "makeService",
    "reserve_stdout",
    "with_backlog",
]

DEFAULT_ENDPOINT = "tcp:8000:interface=127.0.0.1"
"""Where C{--transport http} listens unless told otherwise: loopback only."""

DEFAULT_BACKLOG = 4096
"""
The listen backlog of an HTTP endpoint that names none: enough for a burst
of thousands of connections (Twisted's own default is 50).  Linux caps it at
C{net.core.somaxconn}.
"""


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


def build_fetcher(
    config: Config,
    reactor: Any,
    resolver: IResolver | None = None,
    *,
    pins: IPinStore | None = None,
    identities: IIdentityStore | None = None,
    environ: Mapping[str, str] | None = None,
) -> Fetcher:
    """
    Assemble the fetch pipeline for C{config} on C{reactor}.

    @param resolver: Where host names are looked up; the reactor's own
        resolver when omitted.
    @param pins: The TOFU pin store; by default the file store the
        configuration names (none when TOFU is off).
    @param identities: The client identity store; by default the file store
        the configuration names (none when identities are off).
    @param environ: The environment default store locations derive from.
    """
    names = resolver if resolver is not None else reactor_resolver(reactor)
    gopher, gemini = config.gopher, config.gemini

    def connector(allow_local: bool, timeout: float) -> Connector:
        return Connector(reactor, names, AddressPolicy(allow_local=allow_local), timeout)

    def cache(settings: Any) -> ResponseCache | None:
        if settings.cache_enabled and settings.cache_ttl_seconds > 0:
            return ResponseCache(reactor, settings.cache_ttl_seconds, settings.max_cache_entries)
        return None

    environ = os.environ if environ is None else environ
    if pins is None and gemini.tofu_enabled:
        pins = FilePinStore(str(pin_store_path(gemini.tofu_storage_path, environ)))
    if identities is None and gemini.client_certs_enabled:
        identities = FileIdentityStore(
            str(identity_store_dir(gemini.client_certs_storage_path, environ))
        )
    # Large responses are parsed on the reactor's thread pool, if it has one.
    offload = offloader(reactor)
    pipeline = GeminiPipeline(
        reactor,
        connector(gemini.allow_local_hosts, gemini.timeout_seconds),
        gemini,
        cache(gemini),
        pins if gemini.tofu_enabled else None,
        identities if gemini.client_certs_enabled else None,
        offload=offload,
    )
    return Fetcher(
        reactor,
        connector(gopher.allow_local_hosts, gopher.timeout_seconds),
        gopher,
        cache(gopher),
        pipeline,
        offload=offload,
    )


@attrs.define
class StdioMCPService(Service):
    """
    Serve MCP on this process's stdin and stdout.

    Responses go to C{stdout_fd}; pass the descriptor L{reserve_stdout}
    returned so that nothing else can write into the protocol stream.  When
    the session ends (stdin closed and every owed response written, or
    stdout gone), C{on_end} is called, which stops the reactor by default.
    Stopping the service (SIGTERM) gives replies in flight C{stop_grace}
    seconds, then gives them up.  L{exit_status} says whether any reply owed
    was lost.
    """

    fetcher: Fetcher
    reactor: Any
    stdout_fd: int = 1
    on_end: Callable[[], None] | None = None
    config: Config | None = None
    stop_grace: float = 2.0
    protocol: Any = attrs.field(default=None, init=False)
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

        from gophergem.mcp.server import build_server
        from gophergem.mcp.stdio import StdioMCPProtocol

        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if self.config is not None:
            server = build_mcp_server(self.fetcher, self.config)
        else:
            server = build_server(self.fetcher)
        drain = self.config.stdio_drain_seconds if self.config is not None else 0
        self.protocol = StdioMCPProtocol(
            server._lowlevel_server, drain_seconds=drain, clock=self.reactor
        )
        StandardIO(self.protocol, stdin=0, stdout=self.stdout_fd, reactor=self.reactor)
        self.protocol.finished.addBoth(lambda _: self._ended())

    def stopService(self) -> Any:
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


def build_mcp_server(fetcher: Fetcher, config: Config) -> Any:
    """The SDK server with every tool, the policy resource and the prompts."""
    from gophergem.mcp.extras import add_policy_and_prompts
    from gophergem.mcp.server import build_server

    server = build_server(fetcher)
    add_policy_and_prompts(server, config)
    return server


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
    import ipaddress

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


def endpoint_security(endpoint: str, allowed_hosts: tuple[str, ...] | list[str] = ()) -> Any:
    """
    The DNS-rebinding protection for an HTTP endpoint.

    Loopback names are accepted (on the endpoint's port when it names a
    fixed loopback one), plus each of C{allowed_hosts}.  A bind beyond
    loopback with no C{allowed_hosts} accepts only loopback names, which is
    logged: clients reaching it by another name get 421.
    """
    from twisted.logger import Logger

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
    server: Any, config: Config, reactor: Any, *, security: Any = None
) -> tuple[Any, Any]:
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
    fetcher = build_fetcher(config, reactor, resolver)
    if transport == "stdio":
        # Service.setServiceParent is unannotated in Twisted.
        StdioMCPService(fetcher, reactor, stdout_fd=stdout_fd, config=config).setServiceParent(top)  # type: ignore[no-untyped-call]
        return top
    from twisted.internet import endpoints

    from gophergem.mcp.web import LifespanService

    site, resource = build_site(
        build_mcp_server(fetcher, config),
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
