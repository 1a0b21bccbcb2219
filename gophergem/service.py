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
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.internet import StreamServerEndpointService
from twisted.application.service import MultiService, Service
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem._defer import settle
from gophergem.config import DEFAULT_BACKLOG, DEFAULT_ENDPOINT, Config
from gophergem.fetcher import Fetcher
from gophergem.interfaces import IResolver
from gophergem.mcp.ready import EarlyResponder, reserve_stdout

if TYPE_CHECKING:  # the MCP layer loads only when an endpoint is built
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from gophergem.feeds.follow import Follower
    from gophergem.mcp.auth import CombinedVerifier, TokenFileVerifier
    from gophergem.mcp.web import ASGIResource, BoundedSite

__all__ = [
    "FeedCheckService",
    "HTTPListenService",
    "ListenError",
    "SharedStateService",
    "StateStartError",
    "TokenReloadService",
    "build_site",
    "check_http_settings",
    "endpoint_security",
    "install_asyncio_reactor",
    "listen_problem",
    "makeService",
    "public_url",
    "reserve_stdout",
    "with_backlog",
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
    error, not a traceback.  With C{daemonized} set (C{twistd} without
    C{-n}), the line goes to the log and the error raised names the address
    in few words: twistd shows the daemon's parent only the first 100 bytes
    of it (usually L{listen_problem} has caught the problem before twistd
    daemonized).
    """

    exit_on_error = False
    daemonized = False

    def __init__(self, endpoint: Any, factory: Any, description: str) -> None:
        super().__init__(endpoint, factory)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.description = description
        self._raiseSynchronously = True  # as strports.service does: fail at start-up

    listening: Any = None
    """The listening port (C{IListeningPort}) once listening, else C{None}."""

    def privilegedStartService(self) -> None:
        try:
            super().privilegedStartService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
            if self._waitingForPort is not None:
                self._waitingForPort.addCallback(self._listening)
        except (CannotListenError, OSError) as error:
            # A unix: socket in a missing directory raises a bare OSError.
            cause = error.socketError if isinstance(error, CannotListenError) else error
            reason = getattr(cause, "strerror", None) or str(cause)
            message = f"cannot listen on {self.description}: {reason}"
            if self.daemonized and not self.exit_on_error:
                Logger().error("gophergem {message}", message=message)
                where = _short_address(self.description)
                raise ListenError(f"cannot listen on {where}: {reason}") from None
            if not self.exit_on_error:
                raise ListenError(message) from None
            Logger().error("gophergem {message}", message=message)
            stream = sys.__stderr__
            if stream is not None:
                stream.write(f"gophergem: {message}\n")
                stream.flush()
            raise SystemExit(2) from None

    def _listening(self, port: Any) -> Any:
        self.listening = port
        watch = getattr(self.factory, "watch_port", None)
        if watch is not None:
            # The site pauses accepting near the file descriptor limit.
            watch(port)
        return port


def _tcp_address(endpoint: str) -> tuple[str, str, int] | None:
    """The kind, interface and fixed port of a C{tcp}/C{tcp6}/C{ssl} endpoint, else C{None}."""
    kind, positional, named = _strport_parts(endpoint)
    if kind not in ("tcp", "tcp6", "ssl"):
        return None
    port_text = named.get("port", positional[0] if positional else "")
    if not port_text.isdigit() or int(port_text) == 0:
        return None
    interface = named.get("interface", positional[2] if len(positional) > 2 else "")
    return kind, interface.strip("[]"), int(port_text)


def _short_address(endpoint: str) -> str:
    """C{endpoint} in few words: C{127.0.0.1:8000}, C{port 8000}, else as given."""
    address = _tcp_address(endpoint)
    if address is None:
        return endpoint
    _, interface, port = address
    if not interface:
        return f"port {port}"
    return f"[{interface}]:{port}" if ":" in interface else f"{interface}:{port}"


def listen_problem(endpoint: str) -> str | None:
    """
    Why C{endpoint} cannot listen, found by binding (and closing) a socket
    the way Twisted will, or C{None} when it can, or when that cannot be
    known beforehand (not a TCP endpoint, an ephemeral port, no IPv6).

    For C{twistd} without C{-n}: checked before it daemonizes, a port in use
    is one line from the process the user started, not a message passed up
    from the daemon.
    """
    address = _tcp_address(endpoint)
    if address is None:
        return None
    kind, interface, port = address
    family = socket.AF_INET6 if kind == "tcp6" or ":" in interface else socket.AF_INET
    if not interface:
        interface = "::" if family == socket.AF_INET6 else ""
    try:
        probe = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return None
    with probe:
        if sys.platform != "win32":
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Twisted does
        try:
            probe.bind((interface, port))
        except OSError as error:
            return f"cannot listen on {endpoint}: {error.strerror or error}"
    return None


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


DEFAULT_FEEDS_CHECK_SECONDS = 3600
"""How often the daemon checks every subscription unless told otherwise (never in stdio mode)."""

INPUT_PATH = "input"
"""Where the daemon serves the one-time pages for secret input (C{/input/<token>})."""


@attrs.define(eq=False)
class SiteSecretInput:
    """
    The daemon's one-time pages for a capsule's secret input, served by its
    own site under C{/input/} (see L{gemini_tools<gophergem.mcp.gemini_tools>}):
    offered only when the daemon listens on loopback alone, so that whoever
    opens a page is on this machine.

    @ivar base: Gives the pages' base URL (C{http://127.0.0.1:PORT/input/})
        once the daemon listens.
    """

    pages: Any
    base: Callable[[], str | None]

    def open(self, prompt: str, capsule_url: str) -> Deferred[tuple[str, Deferred[str]]]:
        """A new page: its URL, and a Deferred of the answer given on it."""
        base = self.base()
        if base is None:
            return fail(RuntimeError("the daemon is not listening yet"))
        token, answer = self.pages.open(prompt, capsule_url)
        return succeed((base + token, answer))


def _page_host(endpoint: str) -> str | None:
    """The host a browser uses to reach a loopback TCP endpoint, or C{None} (no page offered)."""
    kind, positional, named = _strport_parts(endpoint)
    loopback, _ = _bind_facts(endpoint)
    if kind not in ("tcp", "tcp6") or not loopback:
        return None
    interface = named.get("interface", positional[2] if len(positional) > 2 else "")
    interface = interface.strip("[]")
    if interface.lower() == "localhost":
        return "127.0.0.1"
    return f"[{interface}]" if ":" in interface else interface


def public_url(endpoint: str, config: Config) -> str:
    """
    The MCP endpoint's URL as clients reach it: C{GOPHERGEM_PUBLIC_URL}
    when set, else C{http://<host>:<port>/mcp} for a loopback TCP endpoint
    on a fixed port.

    @raise ValueError: With one line saying what to set, when it is not set
        and the endpoint is not such a loopback one.
    """
    if config.public_url is not None:
        return config.public_url
    host = _page_host(endpoint)
    _, port = _bind_facts(endpoint)
    if host is None or port is None:
        raise ValueError(
            f"{endpoint} is not a loopback TCP endpoint on a fixed port: set "
            "GOPHERGEM_PUBLIC_URL (--gophergem-public-url) to the URL clients use for /mcp "
            "(https://mcp.example.org/mcp) when authentication is configured."
        )
    return f"http://{host}:{port}/mcp"


def check_http_settings(endpoint: str, config: Config) -> None:
    """
    Check, before anything starts, the HTTP settings that can only be
    judged together or by reading a file: the public URL authentication
    needs, the introspection client's id and secret, the request-state key
    file, and the database key.

    @raise ValueError: One line naming what is wrong (never a secret).
    """
    if (
        config.auth_tokens_file is not None
        or config.auth_issuer is not None
        or config.auth_introspection_url is not None
    ):
        public_url(endpoint, config)
    if config.auth_introspection_url is not None:
        if (config.auth_client_id is None) != (config.auth_client_secret_file is None):
            raise ValueError(
                "GOPHERGEM_AUTH_CLIENT_ID and GOPHERGEM_AUTH_CLIENT_SECRET_FILE go together: "
                "set both (or neither) for the introspection endpoint"
            )
        if config.auth_client_secret_file is not None:
            from gophergem.auth.introspection import read_secret

            read_secret(config.auth_client_secret_file)
    if config.request_state_keys_file is not None:
        from gophergem.errors import GophergemError
        from gophergem.state.keys import read_key_ring

        try:
            read_key_ring(config.request_state_keys_file)
        except GophergemError as error:
            raise ValueError(f"GOPHERGEM_REQUEST_STATE_KEYS_FILE: {error.message}") from None
    if config.database_url is not None and config.gemini.client_certs_enabled:
        if config.database_key_file is None:
            raise ValueError(
                "GOPHERGEM_DATABASE_KEY_FILE must name the key that encrypts client identities' "
                "private keys in the database (or set GEMINI_CLIENT_CERTS_ENABLED=false)"
            )
        from gophergem.state.postgres import load_database_key

        load_database_key(config.database_key_file)


class TokenReloadService(Service):
    """
    Reads the token file at start-up, and again on C{SIGHUP} while running
    (it also reloads by itself when the file changes).  The previous
    C{SIGHUP} handler comes back when the service stops.

    @ivar verifier: The HTTP endpoint's token verifier.
    """

    def __init__(self, verifier: TokenFileVerifier | CombinedVerifier, reactor: Any) -> None:
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


def build_site(
    server: MCPServer[Any],
    config: Config,
    reactor: IReactorTime,
    *,
    security: TransportSecuritySettings | None = None,
    secret_pages: Any = None,
    token_verifier: TokenFileVerifier | CombinedVerifier | None = None,
    health_checks: Callable[[], Deferred[list[str]]] | None = None,
) -> tuple[BoundedSite, ASGIResource]:
    """
    The web site of the HTTP transport, and its MCP resource.

    The site serves the MCP endpoint at C{/mcp}, C{/health},
    C{/.well-known/agent.gopher} and C{/.well-known/agent/}, all under the
    same C{Host}/C{Origin} rules (C{security}); the resource needs a
    L{gophergem.mcp.web.LifespanService} running beside it.  The
    configuration bounds sessions, the time to send request headers and
    bodies, and the connections from one address.
    With C{secret_pages} (a L{gophergem.mcp.secret_page.SecretPages}), the
    one-time pages for a capsule's secret input are served under
    C{/input/}, and no request there is logged.  With a C{token_verifier}
    (and C{server} built with the matching auth settings), C{/mcp} needs a
    bearer token and the site serves the endpoint's Protected Resource
    Metadata; C{/health} stays open, the discovery root shows only its
    minimum and its drill-down needs the token too.
    """
    from gophergem.mcp.discovery import Directory, add_discovery
    from gophergem.mcp.web import BoundedSite, mcp_resource, transport_security

    if security is None:
        security = transport_security()
    auth = server.settings.auth
    guard = principal = None
    if token_verifier is not None:
        from gophergem.mcp.auth import principal_of, require_token

        if auth is None:
            raise ValueError("a token verifier needs a server built with auth settings")
        verifier = token_verifier

        def guard(app: Any) -> Any:
            return require_token(app, server, verifier)

        def principal(scope: Any) -> str | None:
            # The session cap counts and closes sessions per principal.
            token = getattr(scope.get("user"), "access_token", None)
            return principal_of(token) if token is not None else None

    resource = mcp_resource(
        server,
        security=security,
        max_sessions=config.http_max_sessions,
        session_idle_seconds=config.http_session_idle_seconds,
        guard=guard,
        principal_of=principal,
    )
    root = Directory()  # type: ignore[no-untyped-call]  # Twisted: unannotated
    root.putChild(b"mcp", resource)
    if secret_pages is not None:
        root.putChild(INPUT_PATH.encode(), secret_pages.resource)
    discovery_guard = None
    if token_verifier is not None and auth is not None:
        from gophergem.mcp.auth import BearerGuardResource

        checker, settings = token_verifier, auth

        def discovery_guard(inner: Any) -> Any:
            return BearerGuardResource(inner, checker, settings, security)

    add_discovery(
        root,
        server,
        config,
        mcp_path="/mcp",
        security=security,
        guard=discovery_guard,
        health_checks=health_checks,
    )
    if token_verifier is not None and auth is not None:
        from gophergem.mcp.auth import mount_metadata

        mount_metadata(root, auth, security)
    site = BoundedSite(
        root,
        header_timeout=config.http_header_timeout_seconds,
        body_timeout=config.http_body_timeout_seconds,
        max_connections_per_address=config.http_max_connections_per_address,
        reactor=reactor,
        unlogged=(f"/{INPUT_PATH}/".encode(),),
    )
    return site, resource


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
        (see L{gophergem.mcp.ready}); the stdio service takes over from it.
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
    if transport == "stdio":
        from gophergem.mcp.stdio import StdioMCPService

        if config.database_url is not None or config.redis_url is not None:
            Logger().info(
                "stdio serves one person from this machine's files: "
                "GOPHERGEM_DATABASE_URL and GOPHERGEM_REDIS_URL are for the HTTP daemon"
            )
        fetcher = Fetcher.from_config(config, reactor, resolver)
        # Service.setServiceParent is unannotated in Twisted.
        stdio = StdioMCPService(fetcher, reactor, stdout_fd=stdout_fd, config=config, early=early)
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

        from gophergem.feeds.follow import Follower
        from gophergem.mcp.feed_tools import UPDATES_URI
        from gophergem.mcp.principals import Principals
        from gophergem.mcp.server import build_server
        from gophergem.mcp.web import LifespanService

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
        page_host = _page_host(endpoint)
        pages = secret_input = listener = None
        if page_host is not None:
            from gophergem.mcp.secret_page import SecretPages

            pages = SecretPages(reactor)

            def base() -> str | None:
                port = listener.listening if listener is not None else None
                if port is None:
                    return None
                return f"http://{page_host}:{port.getHost().port}/{INPUT_PATH}/"

            secret_input = SiteSecretInput(pages, base)
        verifier = None
        auth = None
        principals = None
        if (
            config.auth_tokens_file is not None
            or config.auth_issuer is not None
            or config.auth_introspection_url is not None
        ):
            from gophergem.mcp.auth import auth_settings, verifier_from_config

            resource_url = public_url(endpoint, config)
            verifier = verifier_from_config(config, reactor, resource_url)
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
            checks = _health_checks(state if config.database_url is not None else None, policy)
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


def _health_checks(state: Any, policy: Any) -> Callable[[], Deferred[list[str]]]:
    """What C{/health} asks: each shared backend, named by kind when it fails."""

    async def failing() -> list[str]:
        failed = []
        for name, backend in (("postgresql", state), ("redis", policy)):
            if backend is None or not hasattr(backend, "health"):
                continue
            try:
                report = await settle(backend.health())
            except Exception:
                report = {"ok": False}
            if not report.get("ok"):
                failed.append(name)
        return failed

    def checks() -> Deferred[list[str]]:
        return Deferred.fromCoroutine(failing())

    return checks


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
