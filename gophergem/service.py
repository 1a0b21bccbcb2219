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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.service import MultiService, Service
from twisted.internet.interfaces import IReactorCore

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
    "DEFAULT_ENDPOINT",
    "StdioMCPService",
    "build_fetcher",
    "build_mcp_server",
    "build_site",
    "endpoint_security",
    "makeService",
    "reserve_stdout",
]

DEFAULT_ENDPOINT = "tcp:8000:interface=127.0.0.1"
"""Where C{--transport http} listens unless told otherwise: loopback only."""


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
    the session ends (stdin closed and every owed response written),
    C{on_end} is called, which stops the reactor by default.
    """

    fetcher: Fetcher
    reactor: Any
    stdout_fd: int = 1
    on_end: Callable[[], None] | None = None
    config: Config | None = None
    protocol: Any = attrs.field(default=None, init=False)

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
        self.protocol = StdioMCPProtocol(server._lowlevel_server)
        StandardIO(self.protocol, stdin=0, stdout=self.stdout_fd, reactor=self.reactor)
        self.protocol.finished.addBoth(lambda _: self._ended())

    def _ended(self) -> None:
        if self.on_end is not None:
            self.on_end()
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
    C{/.well-known/agent.gopher} and C{/.well-known/agent/}; the resource
    needs a L{gophergem.mcp.web.LifespanService} running beside it.
    """
    from twisted.web.server import Site

    from gophergem.mcp.discovery import Directory, add_discovery
    from gophergem.mcp.web import BodyCappedRequest, mcp_resource

    resource = mcp_resource(server, security=security)
    root = Directory()  # type: ignore[no-untyped-call]  # Twisted: unannotated
    root.putChild(b"mcp", resource)
    add_discovery(root, server, config, mcp_path="/mcp")
    return Site(root, requestFactory=BodyCappedRequest, reactor=reactor), resource


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
    from twisted.application import strports

    from gophergem.mcp.web import LifespanService

    site, resource = build_site(
        build_mcp_server(fetcher, config),
        config,
        reactor,
        security=endpoint_security(endpoint, allowed_hosts),
    )
    # Started in this order, stopped in reverse: the port closes, then the
    # endpoint drains and its lifespan ends.  (setServiceParent: unannotated in Twisted.)
    LifespanService(resource, reactor).setServiceParent(top)  # type: ignore[no-untyped-call]
    strports.service(endpoint, site, reactor=reactor).setServiceParent(top)
    return top
