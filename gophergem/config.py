# -*- test-case-name: tests.test_config -*-
"""
The configuration: every default and every validation rule, in one place.

One table (L{SETTINGS}) names each setting once; the environment variable
(C{GOPHER_TIMEOUT_SECONDS}) and the command-line option
(C{--gopher-timeout-seconds}) are both derived from it, so the two can never
drift apart.  A bad value stops start-up with a L{ConfigError} naming the
variable; there is no silent fallback to a default.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from urllib.parse import SplitResult

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_ENDPOINT",
    "SETTINGS",
    "AuthConfig",
    "Config",
    "ConfigError",
    "FeedsConfig",
    "GeminiConfig",
    "GopherConfig",
    "HTTPConfig",
    "LogConfig",
    "Setting",
    "SmolwebConfig",
    "StateConfig",
    "StdioConfig",
    "TitanConfig",
    "misspelled_settings",
]

DEFAULT_ENDPOINT = "tcp:8000:interface=127.0.0.1"
"""Where C{--transport http} listens unless told otherwise: loopback only."""

DEFAULT_BACKLOG = 4096
"""
The listen backlog of an HTTP endpoint that names none: enough for a burst
of thousands of connections (Twisted's own default is 50).  Linux caps it at
C{net.core.somaxconn}.
"""


class ConfigError(ValueError):
    """A configuration value is unusable; the message names the variable."""


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _int_range(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("expected a whole number") from None
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}")
        return value

    return parse


def _float_range(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError("expected a number of seconds") from None
        if not low < value <= high:
            raise ValueError(f"must be more than {low:g} and at most {high:g}")
        return value

    return parse


def _limit_seconds(high: float) -> Callable[[str], float]:
    """A number of seconds from 0 to C{high}, where 0 means no limit."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError("expected a number of seconds (0 for no limit)") from None
        if not 0 <= value <= high:
            raise ValueError(f"must be from 0 (no limit) to {high:g}")
        return value

    return parse


def _list(text: str) -> tuple[str, ...]:
    """
    C{a,b} or a JSON array; an empty list is refused.  Text that starts with
    C{[} but is not JSON (a bracketed IPv6 address) is read as C{a,b}.
    """
    stripped = text.strip()
    values: list[str] | None = None
    if stripped.startswith("["):
        try:
            loaded = json.loads(stripped)
        except json.JSONDecodeError:
            loaded = None
        else:
            if not isinstance(loaded, list) or not all(isinstance(i, str | int) for i in loaded):
                raise ValueError("must be a JSON array of strings")
            values = [str(i).strip() for i in loaded]
    if values is None:
        values = [part.strip() for part in stripped.split(",")]
    values = [v for v in values if v]
    if not values:
        raise ValueError("names nothing; unset it to allow everything")
    return tuple(values)


def _default_engines(where: str) -> tuple[str, ...]:
    from gophergem.search.engines import default_engines

    return tuple(engine.url for engine in default_engines(where))


def _engines(where: str) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        from gophergem.search.engines import parse_engines

        return tuple(engine.url for engine in parse_engines(text, where))

    return parse


def _hosts(text: str) -> frozenset[str]:
    from gophergem.errors import InvalidRequest
    from gophergem.url import parse_host

    hosts = set()
    for entry in _list(text):
        try:
            host, port = parse_host(entry, 0, "gopher")
        except InvalidRequest:
            raise ValueError(f"{entry!r} is not a host name or address") from None
        if port:
            raise ValueError(f"{entry!r}: name hosts without ports (use *_ALLOWED_PORTS)")
        hosts.add(host)
    return frozenset(hosts)


def _upload_hosts(text: str) -> frozenset[str]:
    """L{_hosts}; unset, not empty, is what keeps every upload off."""
    if not [part for part in text.replace("[", "").replace("]", "").split(",") if part.strip()]:
        raise ValueError("names nothing; unset it to keep uploads off")
    return _hosts(text)


def _ports(text: str) -> frozenset[int]:
    ports = set()
    for item in _list(text):
        if not item.isdigit() or not 1 <= int(item) <= 65535:
            raise ValueError(f"{item!r} is not a port between 1 and 65535")
        ports.add(int(item))
    return frozenset(ports)


def _mime_list(text: str) -> tuple[str, ...]:
    types = tuple(t.lower() for t in _list(text))
    for t in types:
        major, slash, minor = t.partition("/")
        if not slash or not major or not minor or "*" in major:
            raise ValueError(f"{t!r} is not of the form type/subtype or type/*")
    return types


def _path(text: str) -> str:
    if not text.strip():
        raise ValueError("is empty")
    return text


def _split_url(text: str, *, plain: bool = False) -> tuple[str, SplitResult]:
    """
    C{text} stripped, and its parts; the port must be a number.  Unless
    C{plain}, no spaces or control characters and no user or password.
    """
    from urllib.parse import urlsplit

    stripped = text.strip()
    if not plain and any(ord(c) < 0x21 or ord(c) == 0x7F for c in stripped):
        raise ValueError("must not contain spaces or control characters")
    try:
        parts = urlsplit(stripped)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ValueError("is not a URL") from None
    if not plain and (parts.username is not None or parts.password is not None):
        raise ValueError("must not name a user or password")
    return stripped, parts


def _public_url(text: str) -> str:
    """
    An absolute C{http://} or C{https://} URL with a host and no query or
    fragment: the address clients use for the MCP endpoint.  A trailing
    C{/} is dropped (the canonical form RFC 8707 resource indicators use).
    """
    stripped, parts = _split_url(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if parts.query or parts.fragment or "?" in stripped or "#" in stripped:
        raise ValueError("must have no query or fragment")
    return stripped.rstrip("/")


def _https_or_loopback_url(text: str) -> str:
    """
    An absolute C{https://} URL with a host (C{http://} only for a loopback
    host, as in tests), no user, password or fragment.
    """
    stripped, parts = _split_url(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an https:// URL with a host")
    if scheme == "http" and parts.hostname not in ("127.0.0.1", "::1", "localhost"):
        raise ValueError("must be https:// (http:// only for a loopback host)")
    if parts.fragment or "#" in stripped:
        raise ValueError("must have no fragment")
    return stripped


def _database_url(text: str) -> str:
    # No port check: libpq URLs may name several hosts (h1:5432,h2:5432).
    from urllib.parse import urlsplit

    stripped = text.strip()
    try:
        scheme = urlsplit(stripped).scheme.lower()
    except ValueError:
        raise ValueError("is not a URL") from None
    if scheme not in ("postgresql", "postgres"):
        raise ValueError("expected a postgresql:// URL")
    return stripped


def _redis_url(text: str) -> str:
    stripped, parts = _split_url(text, plain=True)
    if parts.scheme.lower() not in ("redis", "rediss", "unix"):
        raise ValueError("expected a redis://, rediss:// or unix:// URL")
    return stripped


def _algorithms(text: str) -> tuple[str, ...]:
    allowed = (
        "RS256",
        "RS384",
        "RS512",
        "PS256",
        "PS384",
        "PS512",
        "ES256",
        "ES384",
        "ES512",
        "EdDSA",
    )
    names = _list(text)
    if not names:
        raise ValueError("names no algorithm")
    for name in names:
        if name not in allowed:
            raise ValueError(f"{name!r} is not one of {', '.join(allowed)}")
    return names


def _audiences(text: str) -> tuple[str, ...]:
    names = _list(text)
    if not names or not all(n.strip() and n.isprintable() for n in names):
        raise ValueError("expected one or more audience names")
    return names


def _scopes(text: str) -> tuple[str, ...]:
    names = _list(text)
    if not names:
        raise ValueError("names no scope")
    for name in names:
        if not name or any(c in name for c in ' "\\') or not name.isprintable():
            raise ValueError(f"{name!r} is not a scope")
    return names


def _log_level(text: str) -> str:
    level = text.strip().upper()
    if level == "WARNING":
        level = "WARN"
    if level not in ("DEBUG", "INFO", "WARN", "ERROR", "CRITICAL"):
        raise ValueError("expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return level


@attrs.frozen
class Setting:
    """
    One configuration setting.

    @ivar section: C{"gopher"}, C{"gemini"}, C{"smolweb"} (Finger, Nex
        and Spartan), C{"titan"} or C{"gophergem"}: the variable's prefix.
    @ivar name: The rest of the variable's name, in lower case; in the
        C{gopher}, C{gemini} and C{smolweb} sections, the field name in that section's
        config class.
    @ivar parse: Turns the text of the variable into a value, raising
        L{ValueError} with a short reason.
    @ivar help: One line for C{--help}.
    @ivar group: The L{Config} attribute whose class holds the value
        (C{"http"} for L{HTTPConfig}); the section unless given.
    """

    section: str
    name: str
    parse: Callable[[str], Any]
    help: str
    group: str = attrs.field(kw_only=True)

    @group.default
    def _section(self) -> str:
        return self.section

    @property
    def field(self) -> str:
        """
        The field name in its group's config class: L{name} without the
        group's prefix (C{GOPHERGEM_HTTP_MAX_SESSIONS} is C{http.max_sessions},
        C{GOPHERGEM_PUBLIC_URL} is C{http.public_url}).
        """
        return self.name.removeprefix(f"{self.group}_")

    @property
    def variable(self) -> str:
        """The environment variable, e.g. C{GOPHER_TIMEOUT_SECONDS}."""
        return f"{self.section}_{self.name}".upper()

    @property
    def option(self) -> str:
        """The command-line option, without dashes, e.g. C{gopher-timeout-seconds}."""
        return self.variable.lower().replace("_", "-")


_COMMON: tuple[tuple[str, Callable[[str], Any], str], ...] = (
    (
        "max_response_size",
        _int_range(1024, 100 * 1024 * 1024),
        "Byte cap per response (1 KiB-100 MiB).",
    ),
    ("timeout_seconds", _float_range(0, 3600), "One overall deadline per fetch, in seconds."),
    ("cache_enabled", _bool, "Cache successful fetches (true/false)."),
    (
        "cache_ttl_seconds",
        _int_range(0, 30 * 86400),
        "Seconds a cached response stays fresh; 0 disables.",
    ),
    ("max_cache_entries", _int_range(1, 1_000_000), "Responses kept in the cache at most."),
    ("allowed_hosts", _hosts, "Only these hosts may be fetched (a,b or a JSON array)."),
    ("allowed_ports", _ports, "Only these ports may be fetched (a,b or a JSON array)."),
    ("allow_local_hosts", _bool, "Allow loopback, private and link-local targets."),
    (
        "max_rendered_chars",
        _int_range(100, 10_000_000),
        "Characters per result window, counted as the payload's JSON (items, lines, escapes).",
    ),
    (
        "requests_per_minute",
        _int_range(0, 6000),
        "Requests per minute to one host: each start keeps the host's next one, of any scheme, "
        "60/N seconds away; 0 = no pacing.",
    ),
    (
        "max_concurrent_requests",
        _int_range(0, 1000),
        "Fetches in flight at once, all hosts together; 0 = no global cap.",
    ),
    (
        "max_connections_per_host",
        _int_range(1, 64),
        "Connections open at once to one host, counting every scheme's and robots.txt probes "
        "(always on).",
    ),
    ("respect_robots_txt", _bool, "Honour the host's robots.txt."),
    ("robots_honor_ai_tokens", _bool, "Also honour robots.txt rules naming AI crawlers."),
    ("robots_cache_ttl_seconds", _int_range(0, 365 * 86400), "Seconds a robots.txt stays cached."),
    (
        "robots_failure_backoff_seconds",
        _int_range(0, 86400),
        "Seconds to back off after a failed robots.txt probe.",
    ),
)

SETTINGS: tuple[Setting, ...] = (
    *(
        Setting(p, name, parse, help_)
        for p in ("gopher", "gemini")
        for name, parse, help_ in _COMMON
    ),
    Setting("gopher", "max_menu_items", _int_range(1, 1_000_000), "Menu items per result window."),
    Setting(
        "gopher",
        "max_selector_length",
        _int_range(1, 65536),
        "Longest selector sent, in characters.",
    ),
    Setting(
        "gopher",
        "max_search_length",
        _int_range(1, 65536),
        "Longest search string sent, in characters.",
    ),
    Setting("gemini", "tofu_enabled", _bool, "Pin server certificates on first use."),
    Setting("gemini", "tofu_reject_expired", _bool, "Refuse expired server certificates."),
    Setting("gemini", "tofu_storage_path", _path, "Where the certificate pin store lives."),
    Setting("gemini", "client_certs_enabled", _bool, "Present client identities where they apply."),
    Setting("gemini", "client_certs_storage_path", _path, "Where client identities live."),
    Setting(
        "gemini", "denied_mime_types", _mime_list, "MIME types refused (type/subtype or type/*)."
    ),
    *(Setting("smolweb", name, parse, help_) for name, parse, help_ in _COMMON),
    Setting(
        "gophergem",
        "log_level",
        _log_level,
        "DEBUG, INFO, WARNING, ERROR or CRITICAL.",
        group="log",
    ),
    Setting("gophergem", "log_file", _path, "Log to this file instead of stderr.", group="log"),
    Setting(
        "gophergem",
        "stdio_drain_seconds",
        _limit_seconds(7 * 86400),
        "stdio: at end of input, seconds owed replies are waited for; 0 = until all are written.",
        group="stdio",
    ),
    Setting(
        "gophergem",
        "http_max_sessions",
        _int_range(1, 1_000_000),
        "HTTP: live MCP sessions at most; a new one closes its owner's session idle longest.",
        group="http",
    ),
    Setting(
        "gophergem",
        "http_session_idle_seconds",
        _float_range(0, 7 * 86400),
        "HTTP: seconds a session may go unused before it is closed.",
        group="http",
    ),
    Setting(
        "gophergem",
        "http_header_timeout_seconds",
        _float_range(0, 3600),
        "HTTP: seconds a client gets to send a request's headers.",
        group="http",
    ),
    Setting(
        "gophergem",
        "http_body_timeout_seconds",
        _float_range(0, 3600),
        "HTTP: seconds a client gets to send a request's body, once its headers are in.",
        group="http",
    ),
    Setting(
        "gophergem",
        "http_max_connections_per_address",
        _int_range(0, 1_000_000),
        "HTTP: connections open at once from one IP address; 0 = no limit (behind a proxy).",
        group="http",
    ),
    Setting(
        "gophergem",
        "http_drain_seconds",
        _float_range(0, 3600),
        "HTTP: on shutdown, seconds requests in flight get to finish.",
        group="http",
    ),
    Setting(
        "gophergem",
        "feeds_storage_path",
        _path,
        "Where the feed subscription store lives.",
        group="feeds",
    ),
    Setting(
        "gophergem",
        "feeds_check_interval_seconds",
        _int_range(0, 7 * 86400),
        "Daemon: seconds between background checks of every subscription (default 3600); "
        "0 = never. Never in stdio mode.",
        group="feeds",
    ),
    Setting(
        "gophergem",
        "auth_tokens_file",
        _path,
        "HTTP: require a bearer token from this token file (gophergem token add NAME); "
        "unset: no authentication.",
        group="auth",
    ),
    Setting(
        "gophergem",
        "public_url",
        _public_url,
        "HTTP: the MCP endpoint's URL as clients reach it (https://host/mcp); needed with "
        "authentication beyond loopback.",
        group="http",
    ),
    Setting(
        "gophergem",
        "auth_issuer",
        _https_or_loopback_url,
        "HTTP: accept JWT access tokens from this authorization server (its issuer URL).",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_jwks_url",
        _https_or_loopback_url,
        "HTTP: the issuer's JWKS URL; unset: read from its authorization server metadata.",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_audience",
        _audiences,
        "HTTP: audiences a token must name (default: the public URL).",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_algorithms",
        _algorithms,
        "HTTP: JWT signature algorithms accepted (default RS256,ES256,EdDSA).",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_introspection_url",
        _https_or_loopback_url,
        "HTTP: check tokens at this RFC 7662 introspection endpoint.",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_client_id",
        _path,
        "HTTP: the client id gophergem authenticates to the introspection endpoint with.",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_client_secret_file",
        _path,
        "HTTP: a file holding the introspection client secret.",
        group="auth",
    ),
    Setting(
        "gophergem",
        "auth_required_scopes",
        _scopes,
        "HTTP: scopes every token must carry (a,b or a JSON array).",
        group="auth",
    ),
    Setting(
        "gophergem",
        "database_url",
        _database_url,
        "HTTP daemon and admin CLI: keep pins, identities and subscriptions in this "
        "PostgreSQL database (postgresql://...); unset: files. stdio keeps its files.",
        group="state",
    ),
    Setting(
        "gophergem",
        "database_key_file",
        _path,
        "A file holding the key that encrypts private keys in the database.",
        group="state",
    ),
    Setting(
        "gophergem",
        "redis_url",
        _redis_url,
        "HTTP daemon: share pacing, caps, the 44 board and caches through this Redis "
        "(redis://...); unset: in process. stdio keeps them in process.",
        group="state",
    ),
    Setting(
        "gophergem",
        "request_state_keys_file",
        _path,
        "HTTP replicas: a file of shared keys (one per line, 32+ characters, the first seals) "
        "for the 2026-07-28 era's request state.",
        group="state",
    ),
    Setting(
        "gophergem",
        "pins_per_principal",
        _bool,
        "HTTP with authentication: keep certificate pins per principal instead of shared.",
        group="state",
    ),
    Setting(
        "gophergem",
        "state_timeout_seconds",
        _float_range(0.05, 60),
        "Seconds one call to PostgreSQL or Redis may take before it counts as unavailable.",
        group="state",
    ),
    Setting(
        "gemini",
        "search_engines",
        _engines("gemini"),
        "Search engines, in order (gemini:// URLs, a,b or a JSON array).",
    ),
    Setting(
        "gopher",
        "search_engines",
        _engines("gopher"),
        "Search engines, in order (gopher:// type-7 URLs, a,b or a JSON array).",
    ),
    Setting(
        "titan",
        "allowed_hosts",
        _upload_hosts,
        "Hosts Titan uploads may go to (a,b or a JSON array); unset: uploads are off.",
    ),
    Setting(
        "titan",
        "max_upload_bytes",
        _int_range(0, 100 * 1024 * 1024),
        "Largest upload, in bytes (0-100 MiB); a larger one is refused before dialling.",
    ),
)


@attrs.frozen(kw_only=True)
class _ProtocolConfig:
    max_response_size: int = 1048576
    timeout_seconds: float = 30.0
    cache_enabled: bool = True
    cache_ttl_seconds: int = 300
    max_cache_entries: int = 1000
    allowed_hosts: frozenset[str] | None = None
    allowed_ports: frozenset[int] | None = None
    allow_local_hosts: bool = False
    max_rendered_chars: int = 50000
    requests_per_minute: int = 60
    max_concurrent_requests: int = 5
    max_connections_per_host: int = 4
    respect_robots_txt: bool = True
    robots_honor_ai_tokens: bool = True
    robots_cache_ttl_seconds: int = 86400
    robots_failure_backoff_seconds: int = 60


@attrs.frozen(kw_only=True)
class GopherConfig(_ProtocolConfig):
    """Settings for Gopher fetches (C{GOPHER_*})."""

    max_menu_items: int = 1000
    max_selector_length: int = 1024
    max_search_length: int = 256
    search_engines: tuple[str, ...] = attrs.field(factory=lambda: _default_engines("gopher"))


@attrs.frozen(kw_only=True)
class GeminiConfig(_ProtocolConfig):
    """Settings for Gemini fetches (C{GEMINI_*})."""

    tofu_enabled: bool = True
    tofu_reject_expired: bool = False
    tofu_storage_path: str | None = None
    client_certs_enabled: bool = True
    client_certs_storage_path: str | None = None
    denied_mime_types: tuple[str, ...] = ()
    search_engines: tuple[str, ...] = attrs.field(factory=lambda: _default_engines("gemini"))


@attrs.frozen(kw_only=True)
class SmolwebConfig(_ProtocolConfig):
    """
    Settings for Finger, Nex and Spartan fetches (C{SMOLWEB_*}), one group
    for the three: they share one concurrency cap.  Pacing and the limit on
    connections per host are per host across every scheme (Gopher and
    Gemini too), each scheme with its own group's interval and limit.
    robots.txt is read over Spartan only (Finger and Nex have no such
    convention).
    """


@attrs.frozen(kw_only=True)
class TitanConfig:
    """
    Uploads over Titan (C{TITAN_*}): off until C{allowed_hosts} names a
    host; addresses, local hosts, timeouts and pacing follow the Gemini
    settings of that host (L{GeminiConfig}).
    """

    allowed_hosts: frozenset[str] = frozenset()
    max_upload_bytes: int = 1048576


#: Variables with our prefixes that are read although they are no setting:
#: the C{.tac}'s transport, endpoint and allowed hosts, and the test suite's.
_OTHER_VARIABLES = frozenset(
    {
        "GOPHERGEM_TRANSPORT",
        "GOPHERGEM_ENDPOINT",
        "GOPHERGEM_ALLOWED_HOSTS",
        "GOPHERGEM_REQUIRE_PEERS",
    }
)


def misspelled_settings(environ: Mapping[str, str]) -> list[str]:
    """
    One warning for each variable of C{environ} that starts like ours
    (C{GOPHER_}, C{GEMINI_}, C{SMOLWEB_}, C{GOPHERGEM_}, C{TITAN_}), is no setting, and is close to
    one (L{difflib.get_close_matches}), naming that setting; sorted.

    A name like none of ours is left alone: other programs use these
    prefixes too (C{GEMINI_API_KEY}).  Never an error: the variable is
    ignored, as it always was, and the warning says so.
    """
    import difflib

    known = {setting.variable for setting in SETTINGS} | _OTHER_VARIABLES
    warnings = []
    for name in sorted(environ):
        prefixes = ("GOPHER_", "GEMINI_", "SMOLWEB_", "GOPHERGEM_", "TITAN_")
        if name in known or not name.startswith(prefixes):
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
        if close:
            warnings.append(f"{name} is not a setting and is ignored; did you mean {close[0]}?")
    return warnings


@attrs.frozen(kw_only=True)
class LogConfig:
    """Where logs go and how much of them (C{GOPHERGEM_LOG_*})."""

    level: str = "INFO"
    file: str | None = None


@attrs.frozen(kw_only=True)
class StdioConfig:
    """The stdio server (C{GOPHERGEM_STDIO_*})."""

    drain_seconds: float = 0.0


@attrs.frozen(kw_only=True)
class HTTPConfig:
    """
    The HTTP endpoint: its limits (C{GOPHERGEM_HTTP_*}) and the URL clients
    reach it by (C{GOPHERGEM_PUBLIC_URL}).
    """

    max_sessions: int = 2000
    session_idle_seconds: float = 1800.0
    header_timeout_seconds: float = 20.0
    body_timeout_seconds: float = 30.0
    max_connections_per_address: int = 256
    drain_seconds: float = 10.0
    public_url: str | None = None
    """The MCP endpoint's public URL; C{None}: derived from a loopback bind."""


@attrs.frozen(kw_only=True)
class FeedsConfig:
    """Feed subscriptions (C{GOPHERGEM_FEEDS_*})."""

    storage_path: str | None = None
    check_interval_seconds: int | None = None
    """Seconds between the daemon's checks of every subscription; C{None}: the default (an hour)."""


@attrs.frozen(kw_only=True)
class AuthConfig:
    """Authentication of the HTTP endpoint (C{GOPHERGEM_AUTH_*})."""

    tokens_file: str | None = None
    """The token file of the HTTP endpoint; C{None}: no authentication."""
    issuer: str | None = None
    """The authorization server whose JWT access tokens are accepted; C{None}: none."""
    jwks_url: str | None = None
    audience: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ("RS256", "ES256", "EdDSA")
    introspection_url: str | None = None
    client_id: str | None = None
    client_secret_file: str | None = None
    required_scopes: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class StateConfig:
    """
    The state a team server's replicas share (C{GOPHERGEM_DATABASE_*},
    C{GOPHERGEM_REDIS_URL}, C{GOPHERGEM_REQUEST_STATE_KEYS_FILE},
    C{GOPHERGEM_PINS_PER_PRINCIPAL}, C{GOPHERGEM_STATE_TIMEOUT_SECONDS}).
    """

    database_url: str | None = None
    """PostgreSQL for pins, identities and subscriptions; C{None}: the file stores."""
    database_key_file: str | None = None
    redis_url: str | None = None
    """Redis for pacing, the caps, the 44 board and the caches; C{None}: in process."""
    pins_per_principal: bool = False
    request_state_keys_file: str | None = None
    """Keys every replica shares for 2026-07-28 request state; C{None}: one made per process."""
    timeout_seconds: float = 2.0


#: The class of each L{Config} group, by L{Setting.group}.
_GROUPS: dict[str, type[Any]] = {
    "gopher": GopherConfig,
    "gemini": GeminiConfig,
    "smolweb": SmolwebConfig,
    "log": LogConfig,
    "stdio": StdioConfig,
    "http": HTTPConfig,
    "feeds": FeedsConfig,
    "auth": AuthConfig,
    "state": StateConfig,
    "titan": TitanConfig,
}


@attrs.frozen(kw_only=True)
class Config:
    """
    Everything gophergem is configured with, grouped as the documentation
    groups the settings.

    Build it with L{Config.from_env} or L{Config.from_mapping}; derive
    variants with C{attrs.evolve} (C{attrs.evolve(config,
    http=attrs.evolve(config.http, max_sessions=10))}).
    """

    gopher: GopherConfig = attrs.field(factory=GopherConfig)
    gemini: GeminiConfig = attrs.field(factory=GeminiConfig)
    smolweb: SmolwebConfig = attrs.field(factory=SmolwebConfig)
    log: LogConfig = attrs.field(factory=LogConfig)
    stdio: StdioConfig = attrs.field(factory=StdioConfig)
    http: HTTPConfig = attrs.field(factory=HTTPConfig)
    feeds: FeedsConfig = attrs.field(factory=FeedsConfig)
    auth: AuthConfig = attrs.field(factory=AuthConfig)
    state: StateConfig = attrs.field(factory=StateConfig)
    titan: TitanConfig = attrs.field(factory=TitanConfig)

    @classmethod
    def from_mapping(cls, values: Mapping[str, str]) -> Config:
        """
        Read settings from C{values}, keyed by environment variable name.

        Variables set to an empty string count as set (and are refused where
        an empty value means nothing); unknown keys are ignored.

        @raise ConfigError: Naming the first unusable variable.
        """
        groups: dict[str, dict[str, Any]] = {group: {} for group in _GROUPS}
        for setting in SETTINGS:
            if setting.variable not in values:
                continue
            raw = values[setting.variable]
            try:
                groups[setting.group][setting.field] = setting.parse(raw)
            except ValueError as exc:
                raise ConfigError(f"{setting.variable}={raw!r}: {exc}") from None
        return cls(**{group: _GROUPS[group](**fields) for group, fields in groups.items()})

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Config:
        """Read settings from the process environment (pass C{os.environ})."""
        return cls.from_mapping(environ)
