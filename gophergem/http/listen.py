# -*- test-case-name: tests.test_http_listen -*-
"""
Where the HTTP transport listens, and how clients reach it.

A strports description (C{tcp:8000:interface=127.0.0.1}, C{unix:...}) is
read once here: whether it is loopback only and on which fixed port
(the DNS-rebinding settings of L{endpoint_security}, the page host of the
secret-input pages, the L{public_url} authentication needs), the listen
backlog (L{with_backlog}), and whether it can listen at all
(L{listen_problem}, L{HTTPListenService}): a port in use is one line,
never a traceback.  L{check_http_settings} checks, before anything starts,
the HTTP settings that can only be judged together.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import TYPE_CHECKING, Any

from twisted.application.internet import StreamServerEndpointService
from twisted.internet.error import CannotListenError
from twisted.logger import Logger

from gophergem.config import DEFAULT_BACKLOG, Config

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "HTTPListenService",
    "ListenError",
    "check_http_settings",
    "endpoint_security",
    "listen_problem",
    "page_host",
    "public_url",
    "with_backlog",
]


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
    from gophergem.http.origin import transport_security

    loopback, port = _bind_facts(endpoint)
    if not loopback and not allowed_hosts:
        Logger().warn(
            "{endpoint} is not a loopback-only bind, but no --allowed-host was given: only "
            "requests addressed to 127.0.0.1, localhost or [::1] will be served",
            endpoint=endpoint,
        )
    return transport_security(port if loopback else None, allowed_hosts)


def page_host(endpoint: str) -> str | None:
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
    if config.http.public_url is not None:
        return config.http.public_url
    host = page_host(endpoint)
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
        config.auth.tokens_file is not None
        or config.auth.issuer is not None
        or config.auth.introspection_url is not None
    ):
        public_url(endpoint, config)
    if config.auth.introspection_url is not None:
        if (config.auth.client_id is None) != (config.auth.client_secret_file is None):
            raise ValueError(
                "GOPHERGEM_AUTH_CLIENT_ID and GOPHERGEM_AUTH_CLIENT_SECRET_FILE go together: "
                "set both (or neither) for the introspection endpoint"
            )
        if config.auth.client_secret_file is not None:
            from gophergem.auth.introspection import read_secret

            read_secret(config.auth.client_secret_file)
    if config.state.request_state_keys_file is not None:
        from gophergem.errors import GophergemError
        from gophergem.state.keys import read_key_ring

        try:
            read_key_ring(config.state.request_state_keys_file)
        except GophergemError as error:
            raise ValueError(f"GOPHERGEM_REQUEST_STATE_KEYS_FILE: {error.message}") from None
    if config.state.database_url is not None and config.gemini.client_certs_enabled:
        if config.state.database_key_file is None:
            raise ValueError(
                "GOPHERGEM_DATABASE_KEY_FILE must name the key that encrypts client identities' "
                "private keys in the database (or set GEMINI_CLIENT_CERTS_ENABLED=false)"
            )
        from gophergem.state.postgres import load_database_key

        load_database_key(config.state.database_key_file)
