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
from collections.abc import Callable
from typing import Any

import attrs
from twisted.application.service import MultiService, Service
from twisted.internet.interfaces import IReactorCore

from gophergem.client.connect import Connector, reactor_resolver
from gophergem.config import Config
from gophergem.fetcher import Fetcher
from gophergem.interfaces import IResolver
from gophergem.policy.cache import ResponseCache
from gophergem.policy.targets import AddressPolicy

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


def build_fetcher(config: Config, reactor: Any, resolver: IResolver | None = None) -> Fetcher:
    """
    Assemble the fetch pipeline for C{config} on C{reactor}.

    @param resolver: Where host names are looked up; the reactor's own
        resolver when omitted.
    """
    gopher = config.gopher
    connector = Connector(
        reactor,
        resolver if resolver is not None else reactor_resolver(reactor),
        AddressPolicy(allow_local=gopher.allow_local_hosts),
        connect_timeout=gopher.timeout_seconds,
    )
    cache = None
    if gopher.cache_enabled and gopher.cache_ttl_seconds > 0:
        cache = ResponseCache(reactor, gopher.cache_ttl_seconds, gopher.max_cache_entries)
    return Fetcher(reactor, connector, gopher, cache)


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
