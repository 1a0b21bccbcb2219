"""
Tests for the HTTP daemon's options (L{gophergem.tap}) and wiring
(L{gophergem.service}): C{--transport}, C{--endpoint}, C{--allowed-host},
the .tac's environment variables, and the service tree they build.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.application.internet import StreamServerEndpointService
from twisted.internet.testing import MemoryReactorClock
from twisted.python import usage

from gophergem import service, tap
from gophergem.config import DEFAULT_BACKLOG, DEFAULT_ENDPOINT, Config
from gophergem.feeds.checker import FeedCheckService
from gophergem.fetcher import Fetcher
from gophergem.http import endpoint
from gophergem.http.asgi import LifespanService
from gophergem.http.listen import endpoint_security
from gophergem.mcp.server import build_server
from gophergem.mcp.stdio import StdioMCPService


@pytest.fixture(autouse=True)
def _no_reactor_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap, "_ensure_asyncio_reactor", lambda: None)


def parse(argv: list[str]) -> tap.Options:
    options = tap.Options()
    options.parseOptions(argv)
    return options


# --- twistd options ---------------------------------------------------------------


def test_defaults() -> None:
    """stdio by default; HTTP would listen on loopback port 8000."""
    options = parse([])
    assert options["transport"] == "stdio"
    assert options["endpoint"] == "tcp:8000:interface=127.0.0.1"
    assert options["allowed_hosts"] == ()
    assert options["endpoint"] == DEFAULT_ENDPOINT


def test_http_options() -> None:
    """--allowed-host repeats; names are lower-cased, de-duplicated, IPv6 bracketed."""
    options = parse(
        [
            "--transport",
            "http",
            "--endpoint",
            "tcp:9000:interface=0.0.0.0",
            "--allowed-host",
            "MCP.Example.org",
            "--allowed-host",
            "mcp.example.org",
            "--allowed-host",
            "other.example:8443",
            "--allowed-host",
            "2001:db8::1",
        ]
    )
    assert options["transport"] == "http"
    assert options["endpoint"] == "tcp:9000:interface=0.0.0.0"
    assert options["allowed_hosts"] == ("mcp.example.org", "other.example:8443", "[2001:db8::1]")


@pytest.mark.parametrize(
    "argv",
    [
        ["--transport", "pigeon"],
        ["--allowed-host", "https://mcp.example.org/"],
        ["--allowed-host", "two words"],
        ["--allowed-host", ""],
        ["--transport", "http", "--endpoint", "carrier-pigeon:8000"],
        ["--transport", "http", "--endpoint", "tcp:eighty"],
    ],
)
def test_bad_options_are_usage_errors(argv: list[str]) -> None:
    """Bad transports, host names and endpoints are usage errors, not tracebacks."""
    with pytest.raises(usage.UsageError):
        parse(argv)


# --- the .tac's environment ---------------------------------------------------------


def test_options_from_env() -> None:
    """The .tac reads transport, endpoint, hosts and settings from the environment given."""
    options = tap.options_from_env(
        {
            "GOPHERGEM_ENDPOINT": "tcp:8123:interface=127.0.0.1",
            "GOPHERGEM_ALLOWED_HOSTS": "a.example, b.example",
            "GOPHER_TIMEOUT_SECONDS": "7",
        }
    )
    assert options["transport"] == "http"
    assert options["endpoint"] == "tcp:8123:interface=127.0.0.1"
    assert options["allowed_hosts"] == ("a.example", "b.example")
    assert options["config"].gopher.timeout_seconds == 7


def test_options_from_env_stdio() -> None:
    """GOPHERGEM_TRANSPORT=stdio makes the .tac a stdio server."""
    assert tap.options_from_env({"GOPHERGEM_TRANSPORT": "stdio"})["transport"] == "stdio"


@pytest.mark.parametrize(
    "environ",
    [
        {"GOPHERGEM_TRANSPORT": "smoke"},
        {"GOPHERGEM_ENDPOINT": "nowhere"},
        {"GOPHERGEM_ALLOWED_HOSTS": "http://x.example"},
        {"GOPHER_TIMEOUT_SECONDS": "-1"},
    ],
)
def test_options_from_env_errors(environ: dict[str, str]) -> None:
    """A bad variable is a usage error naming it."""
    with pytest.raises(usage.UsageError):
        tap.options_from_env(environ)


# --- the service tree ---------------------------------------------------------------


OFFLINE = Config.from_mapping(
    {"GEMINI_TOFU_ENABLED": "false", "GEMINI_CLIENT_CERTS_ENABLED": "false"}
)


def test_http_service_tree() -> None:
    """
    HTTP: the lifespan service, the port serving /mcp, /health, discovery
    and the one-time input pages, then the hourly feed check.
    """
    reactor = MemoryReactorClock()
    top = service.makeService(
        OFFLINE, reactor, transport="http", endpoint="tcp:0:interface=127.0.0.1"
    )
    lifespan, listener, checks = list(top)
    assert isinstance(lifespan, LifespanService)
    assert isinstance(listener, StreamServerEndpointService)
    assert isinstance(checks, FeedCheckService)
    root = listener.factory.resource
    assert set(root.children) == {b"mcp", b"health", b".well-known", b"input"}
    assert set(root.children[b".well-known"].children) == {b"agent.gopher", b"agent"}
    listener.startService()
    assert reactor.tcpServers[0][3] == "127.0.0.1"
    listener.stopService()


def test_stdio_service_tree() -> None:
    """stdio: one stdio service carrying the configuration (for the policy resource)."""
    top = service.makeService(OFFLINE, MemoryReactorClock(), transport="stdio")
    (only,) = list(top)
    assert isinstance(only, StdioMCPService)
    assert only.config is OFFLINE


def test_unknown_transport() -> None:
    """makeService refuses a transport it does not know."""
    with pytest.raises(ValueError, match="pigeon"):
        service.makeService(OFFLINE, MemoryReactorClock(), transport="pigeon")


def test_tap_builds_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """twistd's makeService passes the HTTP options through to the wiring."""
    seen: dict[str, object] = {}

    def make(config: Config, **kwargs: object) -> object:
        seen.update(kwargs, config=config)
        return "tree"

    monkeypatch.setattr(service, "makeService", make)
    options = parse(["--transport", "http", "--allowed-host", "mcp.example.org"])
    assert tap.makeService(options) == "tree"
    assert seen["transport"] == "http"
    assert seen["endpoint"] == "tcp:8000:interface=127.0.0.1"
    assert seen["allowed_hosts"] == ("mcp.example.org",)
    assert seen["stdout_fd"] == 1


# --- the listen backlog -------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "backlog"),
    [("tcp:0:interface=127.0.0.1", DEFAULT_BACKLOG), ("tcp:0:backlog=7", 7)],
)
def test_http_listens_with_a_large_backlog(endpoint: str, backlog: int) -> None:
    """The daemon's port is opened with the default backlog, or the one the endpoint names."""
    reactor = MemoryReactorClock()
    top = service.makeService(OFFLINE, reactor, transport="http", endpoint=endpoint)
    top.getServiceNamed("http").privilegedStartService()
    assert reactor.tcpServers[0][2] == backlog
    assert DEFAULT_BACKLOG >= 3000


def test_site_watches_the_listening_port() -> None:
    """The site is handed the port it serves, to stop accepting near the descriptor limit."""
    reactor = MemoryReactorClock()
    top = service.makeService(
        OFFLINE, reactor, transport="http", endpoint="tcp:0:interface=127.0.0.1"
    )
    listener = top.getServiceNamed("http")
    listener.privilegedStartService()
    assert listener.listening is not None
    assert listener.factory._ports == [listener.listening]


# --- settings reach the site ---------------------------------------------------------------


def test_http_settings_reach_the_site() -> None:
    """Session cap, idle time, header and body timeouts, per-address limit and drain period."""
    from gophergem.http.site import BoundedSite
    from gophergem.mcp.sessions import SessionLimit

    config = attrs.evolve(
        OFFLINE,
        http=attrs.evolve(
            OFFLINE.http,
            max_sessions=7,
            session_idle_seconds=60.0,
            header_timeout_seconds=3.0,
            body_timeout_seconds=6.0,
            max_connections_per_address=9,
            drain_seconds=4.0,
        ),
    )
    top = service.makeService(
        config, MemoryReactorClock(), transport="http", endpoint="tcp:0:interface=127.0.0.1"
    )
    lifespan, listener, _ = list(top)
    assert lifespan._drain_seconds == 4.0
    site = listener.factory
    assert isinstance(site, BoundedSite)
    assert site.header_timeout == 3.0
    assert site.body_timeout == 6.0
    assert site.max_connections_per_address == 9
    resource = site.resource.children[b"mcp"]
    assert isinstance(resource._app, SessionLimit)
    assert resource._app.max_sessions == 7
    assert resource._app._manager.session_idle_timeout == 60.0


def test_default_http_settings() -> None:
    """
    By default: 2000 sessions, 30 minutes idle, 20 s for headers, 30 s for a
    body, 256 connections per address, a 10 s drain.
    """
    config = Config()
    assert config.http.max_sessions == 2000
    assert config.http.session_idle_seconds == 1800
    assert config.http.header_timeout_seconds == 20
    assert config.http.body_timeout_seconds == 30
    assert config.http.max_connections_per_address == 256
    assert config.http.drain_seconds == 10


# --- Host rules across the site ---------------------------------------------------------------


def get_from(site: object, path: str, host: str) -> int:
    from tests.helpers.web import Wire, run, until

    async def body() -> int:
        wire = Wire(site)  # type: ignore[arg-type]
        wire.send(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await until(lambda: b"\r\n\r\n" in wire.value())
        return wire.head()[0]

    return run(body)


@pytest.mark.parametrize("path", ["/health", "/.well-known/agent.gopher"])
def test_site_applies_the_endpoint_host_rules(path: str) -> None:
    """/health and agent.gopher refuse a Host that /mcp would refuse."""
    security = endpoint_security("tcp:8000:interface=127.0.0.1")
    site, _ = endpoint.build_site(
        build_server(Fetcher.from_config(OFFLINE, MemoryReactorClock()), OFFLINE),
        OFFLINE,
        MemoryReactorClock(),
        security=security,
    )
    assert get_from(site, path, "evil.example") == 421
    assert get_from(site, path, "evil.example:8000") == 421
    assert get_from(site, path, "127.0.0.1:9999") == 421
    assert get_from(site, path, "127.0.0.1:8000") == 200


def test_unix_socket_accepts_a_bare_localhost() -> None:
    """On a unix: endpoint, Host: localhost (what curl --unix-socket sends) is accepted."""
    settings = endpoint_security("unix:/run/gophergem.sock")
    for host in ("localhost", "127.0.0.1", "[::1]", "localhost:80"):
        assert any(
            host == allowed or (allowed.endswith(":*") and host.startswith(allowed[:-1]))
            for allowed in settings.allowed_hosts
        ), host
    site, _ = endpoint.build_site(
        build_server(Fetcher.from_config(OFFLINE, MemoryReactorClock()), OFFLINE),
        OFFLINE,
        MemoryReactorClock(),
        security=settings,
    )
    assert get_from(site, "/health", "localhost") == 200
    assert get_from(site, "/health", "evil.example") == 421


def test_session_cap_counts_gophergem_principals(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind token authentication the session cap knows callers as token:NAME."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    from gophergem.auth.verifiers import TokenFileVerifier
    from gophergem.fetcher import Fetcher
    from gophergem.http.guard import BearerVerifier, auth_settings
    from gophergem.mcp.server import build_server

    seen: dict[str, Any] = {}
    original = endpoint.mcp_resource

    def recording(*args: Any, **options: Any) -> Any:
        seen.update(options)
        return original(*args, **options)

    monkeypatch.setattr(endpoint, "mcp_resource", recording)
    url = "http://127.0.0.1:8000/mcp"
    verifier = BearerVerifier(TokenFileVerifier.from_path(str(tmp_path / "tokens.json"), url))
    server = build_server(
        Fetcher.from_config(OFFLINE, MemoryReactorClock()),
        OFFLINE,
        token_verifier=verifier,
        auth=auth_settings(url),
    )
    endpoint.build_site(server, OFFLINE, MemoryReactorClock(), token_verifier=verifier)
    principal = seen["principal_of"]
    token = AccessToken(token="t", client_id="alice", scopes=[], subject="alice")
    assert principal({"user": AuthenticatedUser(token)}) == "token:alice"
    assert principal({}) is None
