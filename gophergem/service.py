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
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.service import MultiService, Service
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

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
from gophergem.state import settle

if TYPE_CHECKING:  # the MCP layer loads only when an endpoint is built
    from collections.abc import Callable

    from gophergem.feeds.follow import Follower
    from gophergem.http.guard import BearerVerifier

__all__ = [
    "FeedCheckService",
    "SharedStateService",
    "StateStartError",
    "TokenReloadService",
    "install_asyncio_reactor",
    "makeService",
    "reserve_stdout",
]


class FeedCheckService(Service):
    """
    Checks every subscription once per interval, in the background.

    The first check runs one interval after the service starts, not at
    start-up; a check still running when the next is due delays it (runs
    never overlap).  Each check reads what the capsules serve now, past the
    response cache (L{Follower.check_all}), paced like every fetch.  Each
    run logs one line (C{checked N, new M, failed K}) and each failure at
    warn, without a traceback; a run never stops the schedule.  Every
    person and every feed is checked on its own: a feed that fails is that
    feed's failure (see L{Follower.check_all}), a person whose check fails
    as a whole (their store down, a bug) is logged once and counted as one
    failure, and everyone after them is still checked.  Stopping the
    service cancels a check in flight (the store keeps what was recorded
    before).

    @ivar follower: The follower the MCP server uses, so tools and checks
        share one store.
    @ivar clock: Where time is read and runs are scheduled.
    @ivar interval: Seconds between runs (more than 0).
    @ivar on_checked: Called after each run, e.g. to announce that
        C{gophergem://feeds/updates} changed; C{None}: nothing is called.
    """

    log = Logger()

    def __init__(self, follower: Follower, clock: IReactorTime, interval: float) -> None:
        if interval <= 0:
            raise ValueError("the interval must be more than 0 seconds")
        self.follower = follower
        self.clock = clock
        self.interval = interval
        self.on_checked: Callable[[], None] | None = None
        self.others: Callable[[], Awaitable[list[tuple[str, Follower]]]] | None = None
        """With authentication: every other principal's follower, checked after the owner's."""
        self.on_checked_for: Callable[[str], None] | None = None
        """Called with each other principal after their check."""
        self.claim: Callable[[], Deferred[bool]] | None = None
        """With replicas: whether this one runs the check now (one replica per interval)."""
        self._loop: LoopingCall | None = None
        self._running: Deferred[None] | None = None

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        loop = LoopingCall(self.run_once)
        loop.clock = self.clock
        loop.start(self.interval, now=False)
        self._loop = loop

    def stopService(self) -> Deferred[None]:
        """Stop the schedule; fires once a check in flight has been cancelled."""
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        loop, self._loop = self._loop, None
        if loop is not None and loop.running:
            loop.stop()
        running = self._running
        if running is None:
            return succeed(None)
        settled: Deferred[None] = Deferred()
        running.addBoth(lambda _: settled.callback(None))
        running.cancel()
        return settled

    def run_once(self) -> Deferred[None]:
        """Check every subscription now; fires when done, and never fails."""
        running = Deferred.fromCoroutine(self._check())
        running.addErrback(self._failed)
        self._running = running

        def finished(result: None) -> None:
            self._running = None

        running.addBoth(finished)
        return running

    async def _check(self) -> None:
        if self.claim is not None and not await self.claim():
            self.log.debug("feeds: another replica checks this time")
            return
        checked, new, failed = await self._check_person(None, self.follower)
        if self.on_checked is not None:
            self.on_checked()
        if self.others is not None:
            try:
                others = await self.others()
            except CancelledError:
                raise
            except Exception:
                self._person_failed(Failure(), "the other principals")
                others = []
            for principal, follower in others:
                counts = await self._check_person(principal, follower)
                checked, new, failed = checked + counts[0], new + counts[1], failed + counts[2]
                if self.on_checked_for is not None:
                    self.on_checked_for(principal)
        self.log.info(
            "feeds: checked {checked}, new {new}, failed {failed}",
            checked=checked,
            new=new,
            failed=failed,
        )

    async def _check_person(
        self, principal: str | None, follower: Follower
    ) -> tuple[int, int, int]:
        """L{_check_one}; a failure of the whole is logged once and counts as one."""
        try:
            return await self._check_one(follower)
        except CancelledError:
            raise
        except Exception:
            self._person_failed(Failure(), "the owner" if principal is None else principal)
            return 0, 0, 1

    def _person_failed(self, failure: Failure, who: str) -> None:
        """Log, once, that the check of C{who} failed as a whole."""
        from gophergem.errors import GophergemError

        error = failure.value
        if isinstance(error, GophergemError):
            self.log.warn(
                "feeds: the check of {who} failed: {code}: {message}",
                who=who,
                code=error.code,
                message=error.message,
            )
        else:
            self.log.failure("feeds: the check of {who} failed unexpectedly", failure, who=who)

    async def _check_one(self, follower: Follower) -> tuple[int, int, int]:
        store = follower.store  # may answer later: each call is settled
        before = sum(sub.unread for sub in await settle(store.subscriptions()))
        errors = await follower.check_all()
        subscriptions = await settle(store.subscriptions())
        new = max(0, sum(sub.unread for sub in subscriptions) - before)
        for failed in errors:
            self.log.warn(
                "feed check of {url} failed: {code}: {message}",
                url=failed.feed_url,
                code=failed.error.code,
                message=failed.error.message,
            )
        return len(subscriptions), new, len(errors)

    def _failed(self, failure: Any) -> None:
        if failure.check(CancelledError):
            return
        from gophergem.errors import GophergemError

        error = failure.value
        if isinstance(error, GophergemError):
            self.log.warn(
                "feeds: the check failed: {code}: {message}",
                code=error.code,
                message=error.message,
            )
            return
        self.log.warn(
            "feeds: the check failed unexpectedly: {error}", error=failure.getErrorMessage()
        )


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


class TokenReloadService(Service):
    """
    Reads the token file at start-up, and again on C{SIGHUP} while running
    (it also reloads by itself when the file changes).  The previous
    C{SIGHUP} handler comes back when the service stops.

    @ivar verifier: The HTTP endpoint's token verifier.
    """

    def __init__(self, verifier: BearerVerifier, reactor: Any) -> None:
        self.verifier = verifier
        self.reactor = reactor
        self._previous: Any = None

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.verifier.reload()
        if hasattr(signal, "SIGHUP"):
            self._previous = signal.signal(signal.SIGHUP, self._hangup)

    def stopService(self) -> None:
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if hasattr(signal, "SIGHUP") and self._previous is not None:
            signal.signal(signal.SIGHUP, self._previous)
            self._previous = None

    def _hangup(self, signum: int, frame: Any) -> None:
        Logger().info("SIGHUP: reloading the token file")
        self.reactor.callFromThread(self.verifier.reload)


def _announce(server: Any, uri: str, principal: str | None = None) -> None:
    """
    Tell C{principal}'s clients watching C{uri} that it changed (on the
    asyncio loop the reactor runs).
    """
    from twisted.internet.defer import Deferred

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

        if config.database_url is not None or config.redis_url is not None:
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
    if config.database_url is not None or config.redis_url is not None:
        starter = SharedStateService(http)
        starter.setName("state")  # type: ignore[no-untyped-call]  # Twisted: unannotated
        starter.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        return top
    from gophergem.state.files import FileState

    http.add_to(top, FileState.from_config(config), None)
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
            config.auth_tokens_file is not None
            or config.auth_issuer is not None
            or config.auth_introspection_url is not None
        ):
            from gophergem.auth.verifiers import verifier_from_config
            from gophergem.http.guard import BearerVerifier, auth_settings

            resource_url = public_url(endpoint, config)
            combined = verifier_from_config(config, reactor, resource_url)
            verifier = BearerVerifier(combined) if combined is not None else None
            auth = auth_settings(
                resource_url,
                issuer=config.auth_issuer,
                required_scopes=config.auth_required_scopes,
            )
            principals = Principals(fetcher, state, follower)
        keys = None
        if config.request_state_keys_file is not None:
            from gophergem.state.keys import read_key_ring

            keys = read_key_ring(config.request_state_keys_file)
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
        if policy is not None or config.database_url is not None:
            checks = health_checks(state if config.database_url is not None else None, policy)
        site, resource = build_site(
            server,
            config,
            reactor,
            security=endpoint_security(endpoint, self.allowed_hosts),
            secret_pages=pages,
            token_verifier=verifier,
            health_checks=checks,
        )
        if verifier is not None and config.auth_tokens_file is not None:
            reload = TokenReloadService(verifier, reactor)
            reload.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        # Started in this order, stopped in reverse: the port closes, then the
        # endpoint drains and its lifespan ends.  (setServiceParent: unannotated in Twisted.)
        LifespanService(resource, reactor, config.http_drain_seconds).setServiceParent(top)  # type: ignore[no-untyped-call]
        listener = HTTPListenService(
            endpoints.serverFromString(reactor, with_backlog(endpoint)), site, endpoint
        )
        listener.setName("http")  # type: ignore[no-untyped-call]  # Twisted: unannotated
        listener.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        interval = config.feeds_check_interval_seconds
        if interval is None:
            interval = DEFAULT_FEEDS_CHECK_SECONDS
        if interval > 0:
            # Added last, so stopped first: no check starts while the endpoint drains.
            feed_checks = FeedCheckService(follower, reactor, interval)
            feed_checks.on_checked = lambda: _announce(server, UPDATES_URI)
            if policy is not None and config.database_url is not None:
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


class SharedStateService(MultiService):
    """
    The HTTP transport of a replica that shares its state: connects to
    PostgreSQL (C{GOPHERGEM_DATABASE_URL}) and Redis (C{GOPHERGEM_REDIS_URL}),
    checks the database schema, and only then builds the endpoint and
    listens.

    Under twistd and C{gophergem serve} the connections are made before the
    reactor runs (on the asyncio loop it will run), so a replica that
    cannot share its state never listens: L{privilegedStartService} raises
    L{StateStartError} naming what is wrong in one line or, with
    C{exit_on_error} set (as under C{twistd -n}), writes that line to
    standard error and exits with status 1.  Started on a running loop (an
    application that mounts gophergem), it connects then, and a failure
    logs the line, sets C{exit_status} to 1 and stops the reactor.
    Stopping closes the connections after the endpoint has drained.
    """

    log = Logger()
    exit_on_error = False

    def __init__(self, http: _HTTPParts) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.http = http
        self.exit_status = 0
        self.ready: Deferred[None] | None = None
        self._backends: list[Any] = []
        self._built = False

    def privilegedStartService(self) -> None:
        loop = getattr(self.http.reactor, "_asyncioEventloop", None)
        if isinstance(loop, asyncio.AbstractEventLoop) and not loop.is_running():
            connecting = Deferred.fromCoroutine(self._connect())
            try:
                state, policy = loop.run_until_complete(connecting.asFuture(loop))
            except Exception as error:
                message = self._one_line(error)
                if not self.exit_on_error:
                    raise StateStartError(message) from None
                self.log.error("gophergem {message}", message=message)
                stream = sys.__stderr__
                if stream is not None:
                    stream.write(f"gophergem: {message}\n")
                    stream.flush()
                raise SystemExit(1) from None
            self._build(state, policy)
        super().privilegedStartService()  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if not self._built:
            self.ready = Deferred.fromCoroutine(self._start())
            self.ready.addErrback(self._refuse)

    def _build(self, state: Any, policy: Any) -> None:
        self._built = True
        self.http.add_to(self, state, policy)
        self.log.info("shared state ready")

    async def _start(self) -> None:
        state, policy = await self._connect()
        if self.running:
            self._build(state, policy)

    async def _connect(self) -> tuple[Any, Any]:
        """Open the configured backends; on a failure, close what was opened."""
        try:
            return await self._open()
        except BaseException:
            await self._close_backends()
            raise

    async def _open(self) -> tuple[Any, Any]:
        config, reactor = self.http.config, self.http.reactor
        # psycopg's pool reports each failed attempt through the logging
        # module; gophergem says it once, in its own words.
        logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
        state: Any
        if config.database_url is not None:
            from gophergem.state.postgres import PostgresState

            state = await PostgresState.from_config(config, reactor)
            self._backends.append(state)
        else:
            from gophergem.state.files import FileState

            state = FileState.from_config(config)
        policy = None
        if config.redis_url is not None:
            from gophergem.fetcher.gemini import GeminiDownload
            from gophergem.fetcher.gopher import GopherDownload
            from gophergem.state.redis import Cacheable, RedisPolicy

            policy = await RedisPolicy.connect(
                config.redis_url,
                timeout=config.state_timeout_seconds,
                reactor=reactor,
                cacheable=[
                    Cacheable(GopherDownload, transient={"windows"}),
                    Cacheable(GeminiDownload, transient={"windows"}),
                ],
            )
            self._backends.append(policy)
        return state, policy

    def _one_line(self, error: BaseException) -> str:
        from gophergem.config import ConfigError
        from gophergem.errors import GophergemError
        from gophergem.state import SchemaBehind

        if isinstance(error, (ListenError, ConfigError, SchemaBehind)):
            return str(error)
        if isinstance(error, GophergemError):
            return f"{error.code}: {error.message}"
        self.log.failure("could not start the shared state", failure=Failure(error))
        return f"could not start the shared state: {type(error).__name__}"

    def _refuse(self, failure: Failure) -> None:
        message = self._one_line(failure.value or Exception("unknown"))
        self.log.error("gophergem {message}", message=message)
        stream = sys.__stderr__
        if stream is not None:
            stream.write(f"gophergem: {message}\n")
            stream.flush()
        self.exit_status = 1
        reactor = self.http.reactor
        if getattr(reactor, "running", False):
            reactor.stop()

    def stopService(self) -> Deferred[None]:
        stopped = super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        done: Deferred[None] = Deferred.fromCoroutine(self._close(stopped))
        return done

    async def _close(self, stopped: Any) -> None:
        if stopped is not None:
            await stopped
        await self._close_backends()

    async def _close_backends(self) -> None:
        backends, self._backends = self._backends, []
        for backend in reversed(backends):
            try:
                await settle(backend.close())
            except Exception:
                self.log.warn("a backend did not close cleanly")


class StateStartError(Exception):
    """A replica could not reach its shared state; the message is one line."""
