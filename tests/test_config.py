"""
Tests for L{gophergem.config} (defaults and validation, SPEC section 9) and
for how L{gophergem.cli.main} reports a bad setting.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem import config as config_module
from gophergem._version import __version__
from gophergem.cli import main
from gophergem.config import (
    SETTINGS,
    AuthConfig,
    Config,
    ConfigError,
    FeedsConfig,
    GeminiConfig,
    GopherConfig,
    HTTPConfig,
    LogConfig,
    Setting,
    StateConfig,
    StdioConfig,
    TitanConfig,
)

# --- defaults ------------------------------------------------------------------------

COMMON_DEFAULTS = {
    "max_response_size": 1048576,
    "timeout_seconds": 30,
    "cache_enabled": True,
    "cache_ttl_seconds": 300,
    "max_cache_entries": 1000,
    "allowed_hosts": None,
    "allowed_ports": None,
    "allow_local_hosts": False,
    "max_rendered_chars": 50000,
    "requests_per_minute": 60,
    "max_concurrent_requests": 5,
    "max_connections_per_host": 4,
    "respect_robots_txt": True,
    "robots_honor_ai_tokens": True,
    "robots_cache_ttl_seconds": 86400,
    "robots_failure_backoff_seconds": 60,
}
GOPHER_DEFAULTS = {
    **COMMON_DEFAULTS,
    "max_menu_items": 1000,
    "max_selector_length": 1024,
    "max_search_length": 256,
    "search_engines": ("gopher://gopher.floodgap.com/7/v2/vs",),
}
GEMINI_DEFAULTS = {
    **COMMON_DEFAULTS,
    "tofu_enabled": True,
    "tofu_reject_expired": False,
    "tofu_storage_path": None,
    "client_certs_enabled": True,
    "client_certs_storage_path": None,
    "denied_mime_types": (),
    "search_engines": (
        "gemini://kennedy.gemi.dev/search",
        "gemini://tlgs.one/search",
        "gemini://geminispace.info/search",
    ),
}


@pytest.mark.parametrize(("name", "value"), sorted(GOPHER_DEFAULTS.items()))
def test_gopher_defaults(name: str, value: object) -> None:
    """Each GOPHER_* setting defaults to the value in SPEC section 9."""
    assert getattr(Config().gopher, name) == value


@pytest.mark.parametrize(("name", "value"), sorted(GEMINI_DEFAULTS.items()))
def test_gemini_defaults(name: str, value: object) -> None:
    """Each GEMINI_* setting defaults to the value in SPEC section 9."""
    assert getattr(Config().gemini, name) == value


@pytest.mark.parametrize(("name", "value"), sorted(COMMON_DEFAULTS.items()))
def test_smolweb_defaults(name: str, value: object) -> None:
    """
    Each SMOLWEB_* setting (Finger, Nex and Spartan together) defaults to
    what its GOPHER_* namesake does.
    """
    assert getattr(Config().smolweb, name) == value


def test_smolweb_settings_mirror_the_gopher_ones() -> None:
    """The SMOLWEB_* group has every setting the protocols share, named as GOPHER_* are."""
    gopher = {s.name for s in SETTINGS if s.section == "gopher"}
    smolweb = {s.name for s in SETTINGS if s.section == "smolweb"}
    assert smolweb == {name for name, _, _ in config_module._COMMON}
    assert smolweb <= gopher


def test_titan_defaults() -> None:
    """Uploads are off (no host named) and capped at 1 MiB unless set."""
    assert Config().titan == TitanConfig(allowed_hosts=frozenset(), max_upload_bytes=1048576)


def test_titan_settings_read() -> None:
    """TITAN_* fill the titan group; an empty host list is refused, never read as 'none'."""
    config = Config.from_env(
        {"TITAN_ALLOWED_HOSTS": "Capsule.Example,[::1]", "TITAN_MAX_UPLOAD_BYTES": "0"}
    )
    assert config.titan == TitanConfig(
        allowed_hosts=frozenset({"capsule.example", "::1"}), max_upload_bytes=0
    )
    with pytest.raises(ConfigError, match="keep uploads off"):
        Config.from_env({"TITAN_ALLOWED_HOSTS": ","})


def test_auth_defaults() -> None:
    """Authentication is off and the public URL is derived unless set."""
    config = Config()
    assert config.auth.tokens_file is None
    assert config.http.public_url is None


def test_log_defaults() -> None:
    """Logging defaults to INFO on stderr (no log file)."""
    config = Config()
    assert config.log.level == "INFO"
    assert config.log.file is None


def test_from_env_empty_is_default() -> None:
    """Config.from_env({}) equals Config()."""
    assert Config.from_env({}) == Config()
    assert Config.from_env({}).gopher == GopherConfig()
    assert Config.from_env({}).gemini == GeminiConfig()


def test_from_env_ignores_unknown_variables() -> None:
    """Variables that name no setting are ignored."""
    assert Config.from_env({"PATH": "/bin", "GOPHER_NO_SUCH_THING": "x"}) == Config()


def test_every_setting_has_a_config_field() -> None:
    """Each Setting names a field of its group's config class, with a unique variable."""
    config = Config()
    variables = [s.variable for s in SETTINGS]
    assert len(variables) == len(set(variables))
    for setting in SETTINGS:
        assert hasattr(getattr(config, setting.group), setting.field), setting.variable
        assert setting.option == setting.variable.lower().replace("_", "-")


def test_every_config_field_has_a_setting() -> None:
    """
    Config holds only groups, and each field of each group is set by exactly
    one Setting: nothing in Config that no variable can set.
    """
    by_group: dict[str, set[str]] = {}
    for setting in SETTINGS:
        by_group.setdefault(setting.group, set()).add(setting.field)
    groups = attrs.fields_dict(Config)
    assert set(groups) == set(by_group)
    for group, fields in by_group.items():
        assert set(attrs.fields_dict(type(getattr(Config(), group)))) == fields, group


def test_gophergem_settings_are_grouped() -> None:
    """
    Each GOPHERGEM_* setting lives in a group named like the documentation's
    sections, its field named without the group's prefix; the variable is
    unchanged (GOPHERGEM_HTTP_MAX_SESSIONS is http.max_sessions).
    """
    where = {s.variable: f"{s.group}.{s.field}" for s in SETTINGS if s.section == "gophergem"}
    assert where["GOPHERGEM_HTTP_MAX_SESSIONS"] == "http.max_sessions"
    assert where["GOPHERGEM_PUBLIC_URL"] == "http.public_url"
    assert where["GOPHERGEM_LOG_FILE"] == "log.file"
    assert where["GOPHERGEM_STDIO_DRAIN_SECONDS"] == "stdio.drain_seconds"
    assert where["GOPHERGEM_FEEDS_STORAGE_PATH"] == "feeds.storage_path"
    assert where["GOPHERGEM_AUTH_ISSUER"] == "auth.issuer"
    assert where["GOPHERGEM_STATE_TIMEOUT_SECONDS"] == "state.timeout_seconds"
    assert where["GOPHERGEM_PINS_PER_PRINCIPAL"] == "state.pins_per_principal"
    assert {group for group, _, _ in (w.partition(".") for w in where.values())} == {
        "log",
        "stdio",
        "http",
        "feeds",
        "auth",
        "state",
    }


def test_groups_read_from_the_environment() -> None:
    """from_env fills each group from its variables, the other groups keep their defaults."""
    config = Config.from_env(
        {
            "GOPHERGEM_HTTP_DRAIN_SECONDS": "4",
            "GOPHERGEM_AUTH_CLIENT_ID": "gophergem",
            "GOPHERGEM_REDIS_URL": "redis://127.0.0.1:6379/0",
        }
    )
    assert config.http == HTTPConfig(drain_seconds=4.0)
    assert config.auth == AuthConfig(client_id="gophergem")
    assert config.state == StateConfig(redis_url="redis://127.0.0.1:6379/0")
    assert (config.log, config.stdio, config.feeds) == (LogConfig(), StdioConfig(), FeedsConfig())


# --- good values ---------------------------------------------------------------------


GOOD = [
    ("GOPHER_MAX_RESPONSE_SIZE", "1024", ("gopher", "max_response_size", 1024)),
    ("GOPHER_MAX_RESPONSE_SIZE", " 104857600 ", ("gopher", "max_response_size", 104857600)),
    ("GEMINI_TIMEOUT_SECONDS", "2.5", ("gemini", "timeout_seconds", 2.5)),
    ("GOPHER_TIMEOUT_SECONDS", "3600", ("gopher", "timeout_seconds", 3600.0)),
    ("GOPHER_CACHE_TTL_SECONDS", "0", ("gopher", "cache_ttl_seconds", 0)),
    ("GOPHER_CACHE_ENABLED", "false", ("gopher", "cache_enabled", False)),
    ("GOPHER_CACHE_ENABLED", "TRUE", ("gopher", "cache_enabled", True)),
    ("GEMINI_TOFU_ENABLED", "0", ("gemini", "tofu_enabled", False)),
    ("GEMINI_TOFU_REJECT_EXPIRED", "yes", ("gemini", "tofu_reject_expired", True)),
    ("GOPHER_ALLOW_LOCAL_HOSTS", "On", ("gopher", "allow_local_hosts", True)),
    ("GEMINI_RESPECT_ROBOTS_TXT", "off", ("gemini", "respect_robots_txt", False)),
    ("GOPHER_REQUESTS_PER_MINUTE", "0", ("gopher", "requests_per_minute", 0)),
    ("GOPHER_MAX_CONCURRENT_REQUESTS", "0", ("gopher", "max_concurrent_requests", 0)),
    ("GOPHER_MAX_CONNECTIONS_PER_HOST", "1", ("gopher", "max_connections_per_host", 1)),
    ("GEMINI_MAX_CONNECTIONS_PER_HOST", "64", ("gemini", "max_connections_per_host", 64)),
    ("GOPHER_MAX_MENU_ITEMS", "1", ("gopher", "max_menu_items", 1)),
    ("SMOLWEB_TIMEOUT_SECONDS", "5", ("smolweb", "timeout_seconds", 5.0)),
    ("SMOLWEB_ALLOW_LOCAL_HOSTS", "true", ("smolweb", "allow_local_hosts", True)),
    ("SMOLWEB_REQUESTS_PER_MINUTE", "0", ("smolweb", "requests_per_minute", 0)),
    ("SMOLWEB_ALLOWED_HOSTS", "a.example", ("smolweb", "allowed_hosts", frozenset({"a.example"}))),
    (
        "GEMINI_TOFU_STORAGE_PATH",
        "/var/lib/gg/pins",
        ("gemini", "tofu_storage_path", "/var/lib/gg/pins"),
    ),
    ("GOPHERGEM_FEEDS_CHECK_INTERVAL_SECONDS", "3600", ("feeds", "check_interval_seconds", 3600)),
    (
        "GOPHERGEM_AUTH_TOKENS_FILE",
        "/etc/gg/tokens.json",
        ("auth", "tokens_file", "/etc/gg/tokens.json"),
    ),
    (
        "GOPHERGEM_PUBLIC_URL",
        "https://mcp.example.org/mcp",
        ("http", "public_url", "https://mcp.example.org/mcp"),
    ),
    (
        "GOPHERGEM_PUBLIC_URL",
        " https://mcp.example.org/mcp/ ",
        ("http", "public_url", "https://mcp.example.org/mcp"),
    ),
    (
        "GOPHERGEM_PUBLIC_URL",
        "http://[::1]:8000/mcp",
        ("http", "public_url", "http://[::1]:8000/mcp"),
    ),
    (
        "GEMINI_SEARCH_ENGINES",
        "gemini://127.0.0.1/search, gemini://localhost:1966/s",
        ("gemini", "search_engines", ("gemini://127.0.0.1/search", "gemini://localhost:1966/s")),
    ),
    (
        "GOPHER_SEARCH_ENGINES",
        "gopher://127.0.0.1:7070/7/find",
        ("gopher", "search_engines", ("gopher://127.0.0.1:7070/7/find",)),
    ),
]


@pytest.mark.parametrize(("variable", "text", "where"), GOOD, ids=[f"{v}={t}" for v, t, _ in GOOD])
def test_good_values(variable: str, text: str, where: tuple[str, str, object]) -> None:
    """A valid value is parsed into its typed field."""
    section, name, value = where
    config = Config.from_env({variable: text})
    assert getattr(getattr(config, section), name) == value


@pytest.mark.parametrize(
    "text",
    ["a.example,b.example", " a.example , b.example ", '["a.example", "b.example"]'],
    ids=repr,
)
def test_host_list_forms(text: str) -> None:
    """A host allowlist accepts C{a,b} and a JSON array."""
    config = Config.from_env({"GOPHER_ALLOWED_HOSTS": text})
    assert config.gopher.allowed_hosts == frozenset({"a.example", "b.example"})


def test_host_list_normalised() -> None:
    """Allowed hosts are lower-cased and lose a trailing dot, like URL hosts."""
    config = Config.from_env({"GEMINI_ALLOWED_HOSTS": "Capsule.Example.,OTHER.example"})
    assert config.gemini.allowed_hosts == frozenset({"capsule.example", "other.example"})


@pytest.mark.parametrize(
    ("entry", "host"), [("bücher.example", "xn--bcher-kva.example"), ("[::1]", "::1")], ids=repr
)
def test_host_list_normalised_like_urls(entry: str, host: str) -> None:
    """An allowlist entry is stored in the form GopherURL.from_text gives the same host."""
    config = Config.from_env({"GOPHER_ALLOWED_HOSTS": entry})
    assert config.gopher.allowed_hosts == frozenset({host})


@pytest.mark.parametrize("text", ['{"hosts": ["a.example"]}', "a.example/1/", "bad host"], ids=repr)
def test_host_list_junk_refused(text: str) -> None:
    """A host allowlist entry that cannot be a host name is a startup error."""
    with pytest.raises(ConfigError, match="GOPHER_ALLOWED_HOSTS"):
        Config.from_env({"GOPHER_ALLOWED_HOSTS": text})


@pytest.mark.parametrize(
    "text", ["70,7070", "70, 7070,", "[70, 7070]", '["70", "7070"]', "7070,70,70"], ids=repr
)
def test_port_list_forms(text: str) -> None:
    """A port allowlist accepts C{a,b} and a JSON array of numbers or strings."""
    config = Config.from_env({"GOPHER_ALLOWED_PORTS": text})
    assert config.gopher.allowed_ports == frozenset({70, 7070})


def test_port_list_bounds() -> None:
    """Ports 1 and 65535 are accepted."""
    config = Config.from_env({"GEMINI_ALLOWED_PORTS": "1,65535"})
    assert config.gemini.allowed_ports == frozenset({1, 65535})


@pytest.mark.parametrize(
    "text",
    ["image/*,application/pdf", '["image/*", "application/pdf"]', "IMAGE/*, Application/PDF"],
    ids=repr,
)
def test_mime_list_forms(text: str) -> None:
    """Denied MIME types accept C{a,b} and a JSON array of type/subtype or type/*."""
    config = Config.from_env({"GEMINI_DENIED_MIME_TYPES": text})
    assert config.gemini.denied_mime_types == ("image/*", "application/pdf")


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("debug", "DEBUG"),
        ("Info", "INFO"),
        ("WARNING", "WARN"),
        ("warn", "WARN"),
        ("error", "ERROR"),
    ],
)
def test_log_level_values(text: str, level: str) -> None:
    """Log levels are case-insensitive and WARNING is WARN."""
    assert Config.from_env({"GOPHERGEM_LOG_LEVEL": text}).log.level == level


# --- bad values ----------------------------------------------------------------------

_NUMBER_BAD = ["abc", "", " ", "1.5", "1e3x", "0x10"]
_BOOL_BAD = ["", "maybe", "2", "tru", "enabled"]
_LIST_BAD = ["", " ", ",", " , ,", "[]", '[""]', "[", "[null]", "[[1]]"]
_PATH_BAD = ["", "   "]

_URL_BAD = [
    "",
    " ",
    "issuer.example.org",
    "ftp://issuer.example.org/",
    "http://issuer.example.org/",
    "https://",
    "https://issuer.example.org/#top",
    "https://user:pw@issuer.example.org/",
    "https://issuer.example.org:99999/",
    "https://issuer example.org/",
]

BAD_BY_NAME: dict[str, list[str]] = {
    "max_response_size": [*_NUMBER_BAD, "1023", "104857601", "-1"],
    "timeout_seconds": ["abc", "", "0", "-1", "3601", "nan", "inf", "-inf", "1s"],
    "cache_enabled": _BOOL_BAD,
    "cache_ttl_seconds": [*_NUMBER_BAD, "-1", "2592001"],
    "max_cache_entries": [*_NUMBER_BAD, "0", "1000001"],
    "allowed_hosts": _LIST_BAD,
    "allowed_ports": [
        *_LIST_BAD,
        '{"a": 1}',
        "0",
        "70000",
        "65536",
        "70,0",
        "abc",
        "-1",
        "70.5",
        "[0]",
        "[true]",
    ],
    "allow_local_hosts": _BOOL_BAD,
    "max_rendered_chars": [*_NUMBER_BAD, "99", "10000001"],
    "requests_per_minute": [*_NUMBER_BAD, "-1", "6001"],
    "max_concurrent_requests": [*_NUMBER_BAD, "-1", "1001"],
    "max_connections_per_host": [*_NUMBER_BAD, "0", "-1", "65"],
    "respect_robots_txt": _BOOL_BAD,
    "robots_honor_ai_tokens": _BOOL_BAD,
    "robots_cache_ttl_seconds": [*_NUMBER_BAD, "-1", "31536001"],
    "robots_failure_backoff_seconds": [*_NUMBER_BAD, "-1", "86401"],
    "max_menu_items": [*_NUMBER_BAD, "0", "1000001"],
    "max_selector_length": [*_NUMBER_BAD, "0", "65537"],
    "max_search_length": [*_NUMBER_BAD, "0", "65537"],
    "tofu_enabled": _BOOL_BAD,
    "tofu_reject_expired": _BOOL_BAD,
    "tofu_storage_path": _PATH_BAD,
    "client_certs_enabled": _BOOL_BAD,
    "client_certs_storage_path": _PATH_BAD,
    "denied_mime_types": [
        *_LIST_BAD,
        '{"a": 1}',
        "text",
        "*/html",
        "*/*",
        "text/",
        "/html",
        "image/*,pdf",
    ],
    "log_level": ["", "LOUD", "trace", "0"],
    "log_file": _PATH_BAD,
    "stdio_drain_seconds": ["abc", "", "-1", "604801", "nan", "inf", "1s"],
    "http_max_sessions": [*_NUMBER_BAD, "0", "1000001"],
    "http_session_idle_seconds": ["abc", "", "0", "-1", "604801", "nan", "inf", "1s"],
    "http_header_timeout_seconds": ["abc", "", "0", "-1", "3601", "nan", "inf", "1s"],
    "http_body_timeout_seconds": ["abc", "", "0", "-1", "3601", "nan", "inf", "1s"],
    "http_max_connections_per_address": [*_NUMBER_BAD, "-1", "1000001"],
    "http_drain_seconds": ["abc", "", "0", "-1", "3601", "nan", "inf", "1s"],
    "feeds_storage_path": _PATH_BAD,
    "feeds_check_interval_seconds": ["abc", "", "-1", "604801", "1.5"],
    "auth_tokens_file": _PATH_BAD,
    "public_url": [
        "",
        " ",
        "mcp.example.org/mcp",
        "ftp://mcp.example.org/mcp",
        "https://",
        "https:///mcp",
        "https://mcp.example.org/mcp?x=1",
        "https://mcp.example.org/mcp#top",
        "https://user:secret@mcp.example.org/mcp",
        "https://mcp.example.org:99999/mcp",
        "https://mcp example.org/mcp",
        "https://[::1/mcp",
    ],
    "auth_issuer": _URL_BAD,
    "auth_jwks_url": _URL_BAD,
    "auth_audience": ["", ",", "[]"],
    "auth_algorithms": ["", ",", "none", "HS256", "RS256,none", "rs256"],
    "auth_introspection_url": _URL_BAD,
    "auth_client_id": _PATH_BAD,
    "auth_client_secret_file": _PATH_BAD,
    "auth_required_scopes": ["", ",", "[]", 'a"b', "a b"],
    "database_url": ["", " ", "mysql://x/y", "127.0.0.1:5432", "redis://127.0.0.1"],
    "database_key_file": _PATH_BAD,
    "redis_url": ["", " ", "postgresql://x/y", "127.0.0.1:6379", "redis://127.0.0.1:99999"],
    "pins_per_principal": _BOOL_BAD,
    "request_state_keys_file": _PATH_BAD,
    "state_timeout_seconds": ["abc", "", "0", "-1", "61", "nan", "inf", "1s"],
    "max_upload_bytes": [*_NUMBER_BAD, "-1", "104857601"],
    "search_engines": [
        "",
        ",",
        "http://example.org/search",
        "gemini://example.org/search?already",
        "gopher://example.org/1/menu",
    ],
}

BAD_CASES = [(s.variable, bad) for s in SETTINGS for bad in BAD_BY_NAME[s.name]]


def test_every_setting_has_bad_values() -> None:
    """The bad-value table covers every setting."""
    assert {s.name for s in SETTINGS} == set(BAD_BY_NAME)


@pytest.mark.parametrize(("variable", "text"), BAD_CASES, ids=[f"{v}={t!r}" for v, t in BAD_CASES])
def test_bad_value_raises_config_error_naming_variable(variable: str, text: str) -> None:
    """A bad value raises ConfigError whose one-line message names the variable."""
    with pytest.raises(ConfigError) as info:
        Config.from_env({variable: text})
    message = str(info.value)
    assert variable in message
    assert "\n" not in message


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.variable for s in SETTINGS])
def test_empty_value_refused_for_every_setting(setting: Setting) -> None:
    """A variable that is set but empty is refused, never taken as a silent default."""
    variable = setting.variable
    with pytest.raises(ConfigError, match=variable):
        Config.from_env({variable: ""})


def test_bad_value_with_newline_stays_one_line() -> None:
    """A bad value holding a newline is quoted so the message stays on one line."""
    with pytest.raises(ConfigError) as info:
        Config.from_env({"GOPHER_TIMEOUT_SECONDS": "1\nFAKE LOG LINE"})
    assert "\n" not in str(info.value)


def test_config_error_is_value_error() -> None:
    """ConfigError is a ValueError."""
    assert issubclass(ConfigError, ValueError)


@settings(max_examples=200, deadline=None)
@given(
    setting=st.sampled_from(SETTINGS),
    text=st.text(max_size=30),
)
def test_any_value_parses_or_raises_config_error(setting: Setting, text: str) -> None:
    """Any text for any variable either parses or raises ConfigError naming the variable."""
    variable = setting.variable
    try:
        Config.from_env({variable: text})
    except ConfigError as exc:
        assert variable in str(exc)
        assert "\n" not in str(exc)


# --- the console script --------------------------------------------------------------------


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    """C{gophergem --version} prints the version on stdout; main returns status 0."""
    assert main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert __version__ in out
    assert out.strip() == f"gophergem {__version__}"
    assert err == ""


def test_cli_bad_environment_value(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad environment value makes main return 2 with one stderr line naming it."""
    status = main([], environ={"GOPHER_TIMEOUT_SECONDS": "x"})
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1
    assert "GOPHER_TIMEOUT_SECONDS" in lines[0]
    assert "Traceback" not in err


def test_cli_bad_option_value(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad command-line option is reported the same way, naming its variable."""
    status = main(["--gemini-allowed-ports", "0"], environ={})
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "GEMINI_ALLOWED_PORTS" in err


def test_cli_option_overrides_environment(capsys: pytest.CaptureFixture[str]) -> None:
    """A command-line option wins over its environment variable."""
    # Both values are bad, so main returns before it would ever serve.
    status = main(["--gopher-max-menu-items", "0"], environ={"GOPHER_MAX_MENU_ITEMS": "-5"})
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert "GOPHER_MAX_MENU_ITEMS='0'" in err


def test_log_level_help_names_every_level_accepted() -> None:
    """The help of GOPHERGEM_LOG_LEVEL lists exactly the levels it accepts."""
    import re

    (setting,) = [s for s in SETTINGS if s.variable == "GOPHERGEM_LOG_LEVEL"]
    named = set(re.findall(r"\b[A-Z]{4,}\b", setting.help))
    accepted = {"DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL", "TRACE", "OFF"}
    works = set()
    for level in accepted:
        try:
            setting.parse(level)
        except ValueError:
            continue
        works.add(level)
    assert named == works - {"WARN"}  # WARN is WARNING's short form


# --- a misspelled setting is named, never silently ignored --------------------------------


def test_misspelled_setting_names_the_closest() -> None:
    """A variable of ours that is no setting but close to one gets one warning naming it."""
    from gophergem.config import misspelled_settings

    warnings = misspelled_settings(
        {"GOPHER_ALLOW_LOCAL_HOST": "true", "GOPHERGEM_LOGLEVEL": "debug", "PATH": "/bin"}
    )
    assert warnings == [
        "GOPHERGEM_LOGLEVEL is not a setting and is ignored; did you mean GOPHERGEM_LOG_LEVEL?",
        "GOPHER_ALLOW_LOCAL_HOST is not a setting and is ignored; did you mean "
        "GOPHER_ALLOW_LOCAL_HOSTS?",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "GEMINI_API_KEY",  # another program's variable, nothing like ours
        "GEMINI_MODEL",
        "GOPHERGEM_TRANSPORT",  # read by the .tac, not a setting
        "GOPHERGEM_ENDPOINT",
        "GOPHERGEM_ALLOWED_HOSTS",
        "GOPHER_ALLOW_LOCAL_HOSTS",
        "gopher_allow_local_host",  # not our spelling at all
    ],
)
def test_other_variables_are_left_alone(name: str) -> None:
    """Known names, and names with our prefix but like none of ours, are not warned about."""
    from gophergem.config import misspelled_settings

    assert misspelled_settings({name: "x"}) == []


@given(
    st.sampled_from([s.variable for s in SETTINGS]),
    st.integers(min_value=0, max_value=200),
)
def test_one_letter_off_is_caught(variable: str, where: int) -> None:
    """Dropping any one letter after the prefix of a setting's name is named as that setting."""
    from gophergem.config import misspelled_settings

    start = variable.index("_") + 1
    where = start + where % (len(variable) - start)
    typo = variable[:where] + variable[where + 1 :]
    warnings = misspelled_settings({typo: "1"})
    if typo in {s.variable for s in SETTINGS}:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith(f"{typo} is not a setting")


def test_cli_warns_once_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script warns on stderr and goes on: stdout stays the command's."""
    import gophergem._log

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)
    status = main(
        ["trust", "list"],
        environ={
            "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "pins.json"),
            "GOPHER_ALLOW_LOCAL_HOST": "true",
            "HOME": str(tmp_path),
        },
    )
    captured = capsys.readouterr()
    assert status == 0 and captured.out == "No pins.\n"
    assert captured.err == (
        "gophergem: warning: GOPHER_ALLOW_LOCAL_HOST is not a setting and is ignored; "
        "did you mean GOPHER_ALLOW_LOCAL_HOSTS?\n"
    )


def test_twistd_options_warn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """twistd gophergem (and serve, which parses the same options) warns too, once."""
    from gophergem import tap
    from gophergem.tap import Options

    monkeypatch.setattr(tap, "_ensure_asyncio_reactor", lambda: None)  # not this test's point

    options = Options()
    options.environ = {"GEMINI_RESPECT_ROBOT_TXT": "false"}
    options.parseOptions(["--transport", "stdio"])
    assert capsys.readouterr().err == (
        "gophergem: warning: GEMINI_RESPECT_ROBOT_TXT is not a setting and is ignored; "
        "did you mean GEMINI_RESPECT_ROBOTS_TXT?\n"
    )
