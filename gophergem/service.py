# -*- test-case-name: tests.test_service -*-
"""
All the wiring: configuration in, a tree of Twisted services out.

L{build_fetcher} assembles the fetch pipeline (resolver, address policy,
connector, cache); L{makeService} puts the MCP endpoint on top.  This is the
only module that decides which concrete providers are used; nothing binds or
connects until a service starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from twisted.application.service import MultiService, Service
from twisted.internet.interfaces import IReactorCore

from gophergem.client.connect import Connector, reactor_resolver
from gophergem.config import Config
from gophergem.fetcher import Fetcher
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.interfaces import IIdentityStore, IPinStore, IResolver
from gophergem.policy.cache import ResponseCache
from gophergem.policy.targets import AddressPolicy
from gophergem.trust.identities import FileIdentityStore
from gophergem.trust.paths import identity_store_dir, pin_store_path
from gophergem.trust.pins import FilePinStore

__all__ = ["StdioMCPService", "build_fetcher", "makeService", "reserve_stdout"]


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
    pipeline = GeminiPipeline(
        reactor,
        connector(gemini.allow_local_hosts, gemini.timeout_seconds),
        gemini,
        cache(gemini),
        pins if gemini.tofu_enabled else None,
        identities if gemini.client_certs_enabled else None,
    )
    return Fetcher(
        reactor,
        connector(gopher.allow_local_hosts, gopher.timeout_seconds),
        gopher,
        cache(gopher),
        pipeline,
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
    protocol: Any = attrs.field(default=None, init=False)

    def startService(self) -> None:
        from twisted.internet.stdio import StandardIO

        from gophergem.mcp.server import build_server
        from gophergem.mcp.stdio import StdioMCPProtocol

        super().startService()
        server = build_server(self.fetcher)
        self.protocol = StdioMCPProtocol(server._lowlevel_server)
        StandardIO(self.protocol, stdin=0, stdout=self.stdout_fd, reactor=self.reactor)
        self.protocol.finished.addBoth(lambda _: self._ended())

    def _ended(self) -> None:
        if self.on_end is not None:
            self.on_end()
        elif IReactorCore.providedBy(self.reactor) and self.reactor.running:
            self.reactor.stop()


def makeService(
    config: Config,
    reactor: Any = None,
    *,
    transport: str = "stdio",
    resolver: IResolver | None = None,
    stdout_fd: int = 1,
) -> MultiService:
    """
    Build gophergem's service tree.

    @param reactor: The reactor to run on; the global one when omitted.  The
        MCP endpoint needs Twisted's asyncio reactor.
    @param transport: C{"stdio"}: MCP on stdin/stdout.
    @param stdout_fd: Where stdio responses are written (see L{reserve_stdout}).
    """
    if reactor is None:
        from twisted.internet import reactor as global_reactor

        reactor = global_reactor
    top = MultiService()
    fetcher = build_fetcher(config, reactor, resolver)
    if transport != "stdio":
        raise ValueError(f"unknown transport {transport!r}")
    StdioMCPService(fetcher, reactor, stdout_fd=stdout_fd).setServiceParent(top)
    return top
