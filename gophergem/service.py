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
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.internet import StreamServerEndpointService
from twisted.application.service import MultiService, Service
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from gophergem.config import DEFAULT_BACKLOG, DEFAULT_ENDPOINT, Config
from gophergem.fetcher import Fetcher
from gophergem.interfaces import IResolver
from gophergem.mcp.ready import EarlyResponder, reserve_stdout

if TYPE_CHECKING:  # the MCP layer loads only when an endpoint is built
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from gophergem.feeds.follow import Follower
    from gophergem.mcp.auth import TokenFileVerifier
    from gophergem.mcp.web import ASGIResource, BoundedSite

__all__ = [
    "FeedCheckService",
    "HTTPListenService",
    "ListenError",
    "TokenReloadService",
    "build_site",
    "endpoint_security",
    "install_asyncio_reactor",
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
    never overlap).  Each run logs one line (C{checked N, new M, failed K})
    and each failure at warn, without a traceback; a run never stops the
    schedule.  Stopping the service cancels a check in flight (the store
    keeps what was recorded before).

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
        store = self.follower.store
        before = sum(sub.unread for sub in store.subscriptions())
        errors = await self.follower.check_all()
        subscriptions = store.subscriptions()
        new = max(0, sum(sub.unread for sub in subscriptions) - before)
        for failed in errors:
            self.log.warn(
                "feed check of {url} failed: {code}: {message}",
                url=failed.feed_url,
                code=failed.error.code,
                message=failed.error.message,
            )
        self.log.info(
            "feeds: checked {checked}, new {new}, failed {failed}",
            checked=len(subscriptions),
            new=new,
            failed=len(errors),
        )
        if self.on_checked is not None:
            self.on_checked()

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
    error, not a traceback.
    """

    exit_on_error = False

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
        return port


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
            "(https://mcp.example.org/mcp) when GOPHERGEM_AUTH_TOKENS_FILE is set."
        )
    return f"http://{host}:{port}/mcp"


class TokenReloadService(Service):
    """
    Reads the token file at start-up, and again on C{SIGHUP} while running
    (it also reloads by itself when the file changes).  The previous
    C{SIGHUP} handler comes back when the service stops.

    @ivar verifier: The HTTP endpoint's token verifier.
    """

    def __init__(self, verifier: TokenFileVerifier, reactor: Any) -> None:
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
    token_verifier: TokenFileVerifier | None = None,
) -> tuple[BoundedSite, ASGIResource]:
    """
    The web site of the HTTP transport, and its MCP resource.

    The site serves the MCP endpoint at C{/mcp}, C{/health},
    C{/.well-known/agent.gopher} and C{/.well-known/agent/}, all under the
    same C{Host}/C{Origin} rules (C{security}); the resource needs a
    L{gophergem.mcp.web.LifespanService} running beside it.  The
    configuration bounds sessions and the time to send request headers.
    With C{secret_pages} (a L{gophergem.mcp.secret_page.SecretPages}), the
    one-time pages for a capsule's secret input are served under
    C{/input/}, and no request there is logged.  With a C{token_verifier}
    (and C{server} built with the matching auth settings), C{/mcp} needs a
    bearer token and the site serves the endpoint's Protected Resource
    Metadata; C{/health} and the discovery documents stay open.
    """
    from gophergem.mcp.discovery import Directory, add_discovery
    from gophergem.mcp.web import BoundedSite, mcp_resource, transport_security

    if security is None:
        security = transport_security()
    auth = server.settings.auth
    guard = None
    if token_verifier is not None:
        from gophergem.mcp.auth import require_token

        if auth is None:
            raise ValueError("a token verifier needs a server built with auth settings")
        verifier = token_verifier

        def guard(app: Any) -> Any:
            return require_token(app, server, verifier)

    resource = mcp_resource(
        server,
        security=security,
        max_sessions=config.http_max_sessions,
        session_idle_seconds=config.http_session_idle_seconds,
        guard=guard,
    )
    root = Directory()  # type: ignore[no-untyped-call]  # Twisted: unannotated
    root.putChild(b"mcp", resource)
    if secret_pages is not None:
        root.putChild(INPUT_PATH.encode(), secret_pages.resource)
    add_discovery(root, server, config, mcp_path="/mcp", security=security)
    if token_verifier is not None and auth is not None:
        from gophergem.mcp.auth import mount_metadata

        mount_metadata(root, auth, security)
    site = BoundedSite(
        root,
        header_timeout=config.http_header_timeout_seconds,
        reactor=reactor,
        unlogged=(f"/{INPUT_PATH}/".encode(),),
    )
    return site, resource


def _announce(server: Any, uri: str) -> None:
    """Tell the clients watching C{uri} that it changed (on the asyncio loop the reactor runs)."""
    from twisted.internet.defer import Deferred

    done = Deferred.fromFuture(asyncio.ensure_future(server.announce(uri)))
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
    fetcher = Fetcher.from_config(config, reactor, resolver)
    if transport == "stdio":
        from gophergem.mcp.stdio import StdioMCPService

        # Service.setServiceParent is unannotated in Twisted.
        stdio = StdioMCPService(fetcher, reactor, stdout_fd=stdout_fd, config=config, early=early)
        stdio.setServiceParent(top)  # type: ignore[no-untyped-call]
        return top
    from twisted.internet import endpoints

    from gophergem.feeds.follow import Follower
    from gophergem.mcp.feed_tools import UPDATES_URI
    from gophergem.mcp.server import build_server
    from gophergem.mcp.web import LifespanService

    follower = Follower.from_config(fetcher, config)
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
    if config.auth_tokens_file is not None:
        from gophergem.mcp.auth import TokenFileVerifier, auth_settings

        resource_url = public_url(endpoint, config)
        verifier = TokenFileVerifier.from_path(config.auth_tokens_file, resource_url)
        auth = auth_settings(resource_url)
    server = build_server(
        fetcher,
        config,
        follower=follower,
        secret_input=secret_input,
        token_verifier=verifier,
        auth=auth,
    )
    site, resource = build_site(
        server,
        config,
        reactor,
        security=endpoint_security(endpoint, allowed_hosts),
        secret_pages=pages,
        token_verifier=verifier,
    )
    if verifier is not None:
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
        checks = FeedCheckService(follower, reactor, interval)
        checks.on_checked = lambda: _announce(server, UPDATES_URI)
        checks.setName("feeds")  # type: ignore[no-untyped-call]  # Twisted: unannotated
        checks.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
    return top
