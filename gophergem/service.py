# -*- test-case-name: tests.test_service_http -*-
"""
All the wiring: configuration in, a tree of Twisted services out.

L{makeService} builds the fetch pipeline (L{Fetcher.from_config}) and puts
the MCP endpoint on top: on stdin and stdout
(L{gophergem.mcp.stdio.StdioMCPService}), or over Streamable HTTP in a
C{twisted.web} site that also serves C{/health} and
C{/.well-known/agent.gopher} (L{gophergem.http.endpoint.build_site}).  This
is the only module that decides which concrete providers are used; nothing
binds or connects until a service starts.  L{install_asyncio_reactor} installs the reactor the MCP
layer needs, for the console script and C{twistd}.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.service import MultiService
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from gophergem._defer import settle
from gophergem.config import DEFAULT_ENDPOINT, Config
from gophergem.fetcher import Fetcher
from gophergem.http.listen import (
    HTTPListenService,
    ListenError,
    endpoint_security,
    page_host,
    public_url,
    with_backlog,
)
from gophergem.interfaces import IResolver
from gophergem.mcp.early import EarlyResponder, reserve_stdout

if TYPE_CHECKING:  # the MCP layer loads only when an endpoint is built
    from gophergem.feeds.follow import Follower

__all__ = [
    "install_asyncio_reactor",
    "makeService",
    "reserve_stdout",
]


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


DEFAULT_FEEDS_CHECK_SECONDS = 3600
"""How often the daemon checks every subscription unless told otherwise (never in stdio mode)."""


def _announce(server: Any, uri: str, principal: str | None = None) -> None:
    """
    Tell C{principal}'s clients watching C{uri} that it changed (on the
    asyncio loop the reactor runs).
    """

    done = Deferred.fromFuture(asyncio.ensure_future(server.announce(uri, principal)))
    done.addErrback(lambda failure: Logger().failure("announcing {uri}", failure=failure, uri=uri))


def makeService(
    config: Config,
    reactor: Any = None,
    *,
    transport: str = "stdio",
    resolver: IResolver | None = None,
    stdout_fd: int = 1,
    early: EarlyResponder | None = None,
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
    @param early: The responder that answered stdin while gophergem loaded
        (see L{gophergem.mcp.early}); the stdio service takes over from it.
    @param endpoint: A strports description of where HTTP listens.
    @param allowed_hosts: Host names (optionally C{name:port}) HTTP clients
        may address beyond the loopback names (see
        L{gophergem.http.listen.endpoint_security}).
    """
    if reactor is None:
        from twisted.internet import reactor as global_reactor

        reactor = global_reactor
    if transport not in ("stdio", "http"):
        raise ValueError(f"unknown transport {transport!r}")
    top = MultiService()
    if transport == "stdio":
        from gophergem.http.secret_input import LoopbackSecretInput
        from gophergem.mcp.stdio import StdioMCPService

        if config.state.database_url is not None or config.state.redis_url is not None:
            Logger().info(
                "stdio serves one person from this machine's files: "
                "GOPHERGEM_DATABASE_URL and GOPHERGEM_REDIS_URL are for the HTTP daemon"
            )
        fetcher = Fetcher.from_config(config, reactor, resolver)
        # Service.setServiceParent is unannotated in Twisted.
        stdio = StdioMCPService(
            fetcher,
            reactor,
            stdout_fd=stdout_fd,
            config=config,
            early=early,
            secret_input=LoopbackSecretInput(reactor),
        )
        stdio.setServiceParent(top)  # type: ignore[no-untyped-call]
        return top
    http = _HTTPParts(config, reactor, resolver, endpoint, tuple(allowed_hosts))
    if config.state.database_url is not None or config.state.redis_url is not None:
        from gophergem.state.service import SharedStateService

        starter = SharedStateService(http, cacheable=_cacheable_downloads, one_line=(ListenError,))
        starter.setName("state")  # type: ignore[no-untyped-call]  # Twisted: unannotated
        starter.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        return top
    from gophergem.state.backends import file_backend

    http.add_to(top, file_backend(config), None)
    return top


@attrs.frozen
class _HTTPParts:
    """What the HTTP transport is made of, put together by L{add_to}."""

    config: Config
    reactor: Any
    resolver: IResolver | None
    endpoint: str
    allowed_hosts: tuple[str, ...]

    def add_to(self, top: MultiService, state: Any, policy: Any) -> None:
        """
        Build the fetcher on C{state} (a L{gophergem.state.files.FileState}
        or L{gophergem.state.postgres.PostgresState}) and C{policy} (an
        L{IPolicyBackend}; C{None}: in process), the MCP server and the site,
        and add their services to C{top}.
        """
        from twisted.internet import endpoints

        from gophergem.auth.principals import Principals
        from gophergem.auth.reload import TokenReloadService
        from gophergem.feeds.checker import FeedCheckService
        from gophergem.feeds.follow import Follower
        from gophergem.http.asgi import LifespanService
        from gophergem.http.endpoint import INPUT_PATH, build_site, health_checks
        from gophergem.http.secret_input import SiteSecretInput
        from gophergem.mcp.server import build_server
        from gophergem.mcp.tools.feeds import UPDATES_URI

        config, reactor, endpoint = self.config, self.reactor, self.endpoint
        fetcher = Fetcher.from_config(
            config,
            reactor,
            self.resolver,
            pins=state.pins(None),
            identities=state.identities(None),
            policy=policy,
        )
        follower = Follower(fetcher, state.feeds(None))
        host = page_host(endpoint)
        pages = secret_input = listener = None
        if host is not None:
            from gophergem.http.secret_page import SecretPages

            pages = SecretPages(reactor)

            def base() -> str | None:
                port = listener.listening if listener is not None else None
                if port is None:
                    return None
                return f"http://{host}:{port.getHost().port}/{INPUT_PATH}/"

            secret_input = SiteSecretInput(pages, base)
        verifier = None
        auth = None
        principals = None
        if (
            config.auth.tokens_file is not None
            or config.auth.issuer is not None
            or config.auth.introspection_url is not None
        ):
            from gophergem.auth.verifiers import verifier_from_config
            from gophergem.http.guard import BearerVerifier, auth_settings

            resource_url = public_url(endpoint, config)
            combined = verifier_from_config(config, reactor, resource_url)
            verifier = BearerVerifier(combined) if combined is not None else None
            auth = auth_settings(
                resource_url,
                issuer=config.auth.issuer,
                required_scopes=config.auth.required_scopes,
            )
            principals = Principals(fetcher, state, follower)
        keys = None
        if config.state.request_state_keys_file is not None:
            from gophergem.state.keys import read_key_ring

            keys = read_key_ring(config.state.request_state_keys_file)
        server = build_server(
            fetcher,
            config,
            follower=follower,
            secret_input=secret_input,
            token_verifier=verifier,
            auth=auth,
            request_state_keys=keys,
            principals=principals,
        )
        if policy is not None and hasattr(policy, "events"):
            # Replicas tell each other's listeners what changed.
            relay = policy.events()
            relay.listen(server.hear)
            server.relay = relay
        checks = None
        if policy is not None or config.state.database_url is not None:
            checks = health_checks(state if config.state.database_url is not None else None, policy)
        site, resource = build_site(
            server,
            config,
            reactor,
            security=endpoint_security(endpoint, self.allowed_hosts),
            secret_pages=pages,
            token_verifier=verifier,
            health_checks=checks,
        )
        if verifier is not None and config.auth.tokens_file is not None:
            reload = TokenReloadService(verifier, reactor)
            reload.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        # Started in this order, stopped in reverse: the port closes, then the
        # endpoint drains and its lifespan ends.  (setServiceParent: unannotated in Twisted.)
        LifespanService(resource, reactor, config.http.drain_seconds).setServiceParent(top)  # type: ignore[no-untyped-call]
        listener = HTTPListenService(
            endpoints.serverFromString(reactor, with_backlog(endpoint)), site, endpoint
        )
        listener.setName("http")  # type: ignore[no-untyped-call]  # Twisted: unannotated
        listener.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        interval = config.feeds.check_interval_seconds
        if interval is None:
            interval = DEFAULT_FEEDS_CHECK_SECONDS
        if interval > 0:
            # Added last, so stopped first: no check starts while the endpoint drains.
            feed_checks = FeedCheckService(follower, reactor, interval)
            feed_checks.on_checked = lambda: _announce(server, UPDATES_URI)
            if policy is not None and config.state.database_url is not None:
                # Replicas sharing the subscriptions take turns: one check of
                # every feed per interval.  (With files, each checks its own.)
                shared, turn = policy, interval * 0.9
                feed_checks.claim = lambda: shared.claim("feeds-check", turn)
            if principals is not None:
                everyone = principals

                async def others() -> list[tuple[str, Follower]]:
                    found = await settle(state.feed_principals())
                    pairs = []
                    for principal in found:
                        mine = everyone.follower_for(principal)
                        if principal is not None and mine is not None:
                            pairs.append((principal, mine))
                    return pairs

                feed_checks.others = others
                feed_checks.on_checked_for = lambda p: _announce(server, UPDATES_URI, p)
            feed_checks.setName("feeds")  # type: ignore[no-untyped-call]  # Twisted: unannotated
            feed_checks.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated


def _cacheable_downloads() -> list[Any]:
    """What replicas share in the Redis response cache: the downloads, without their windows."""
    from gophergem.fetcher.gemini import GeminiDownload
    from gophergem.fetcher.gopher import GopherDownload
    from gophergem.fetcher.smolweb import SmolDownload
    from gophergem.state.redis import Cacheable

    return [
        Cacheable(GopherDownload, transient={"windows"}),
        Cacheable(GeminiDownload, transient={"windows"}),
        Cacheable(SmolDownload, transient={"windows"}),
    ]
