"""
Tests for the twistd plugin and L{gophergem.tap}.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from twisted.application.service import IServiceMaker, MultiService
from twisted.logger import ILogObserver, LogLevel
from twisted.plugin import getPlugins
from twisted.python import usage

from gophergem import tap


@pytest.fixture(autouse=True)
def _no_reactor_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap, "_ensure_asyncio_reactor", lambda: None)


@pytest.fixture(autouse=True)
def _root_logger_kept() -> Iterator[logging.Logger]:
    """Whatever a test does to the standard library's root logger is undone."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield root
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_plugin_is_discovered() -> None:
    """twistd finds the gophergem plugin and it points at gophergem.tap."""
    import twisted.plugins

    makers = {p.tapname: p for p in getPlugins(IServiceMaker, twisted.plugins)}
    assert makers["gophergem"].module == "gophergem.tap"


def test_options_make_a_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Options override environment variables, which override defaults."""
    monkeypatch.setenv("GOPHER_TIMEOUT_SECONDS", "12")
    monkeypatch.setenv("GOPHER_MAX_MENU_ITEMS", "7")
    options = tap.Options()
    options.parseOptions(["--gopher-max-menu-items", "9"])
    config = options["config"]
    assert config.gopher.timeout_seconds == 12
    assert config.gopher.max_menu_items == 9


@pytest.mark.parametrize(
    "argv",
    [
        ["--gopher-timeout-seconds", "soon"],
        ["--gopher-allowed-ports", "0"],
        ["--transport", "pigeon"],
    ],
)
def test_bad_options_are_usage_errors(argv: list[str]) -> None:
    """A bad value is a usage error naming what is wrong, not a traceback."""
    with pytest.raises(usage.UsageError):
        tap.Options().parseOptions(argv)


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"GOPHERGEM_REQUEST_STATE_KEYS_FILE": "/nonexistent/keys"}, "cannot read the key file"),
        ({"GOPHERGEM_AUTH_ISSUER": "https://idp.example.org"}, "GOPHERGEM_PUBLIC_URL"),
        (
            {
                "GOPHERGEM_AUTH_INTROSPECTION_URL": "https://idp.example.org/introspect",
                "GOPHERGEM_AUTH_CLIENT_ID": "gophergem",
                "GOPHERGEM_PUBLIC_URL": "https://mcp.example.org/mcp",
            },
            "go together",
        ),
        (
            {
                "GOPHERGEM_AUTH_INTROSPECTION_URL": "https://idp.example.org/introspect",
                "GOPHERGEM_AUTH_CLIENT_ID": "gophergem",
                "GOPHERGEM_AUTH_CLIENT_SECRET_FILE": "/nonexistent/secret",
                "GOPHERGEM_PUBLIC_URL": "https://mcp.example.org/mcp",
            },
            "cannot be read",
        ),
        ({"GOPHERGEM_DATABASE_URL": "postgresql://gg:pw@127.0.0.1:1/db"}, "DATABASE_KEY_FILE"),
        (
            {
                "GOPHERGEM_DATABASE_URL": "postgresql://gg:pw@127.0.0.1:1/db",
                "GOPHERGEM_DATABASE_KEY_FILE": "/nonexistent/db.key",
            },
            "DATABASE_KEY_FILE",
        ),
    ],
    ids=["keys-file", "issuer-no-url", "half-client", "secret-file", "no-db-key", "bad-db-key"],
)
def test_team_settings_are_checked_before_start(settings: dict[str, str], said: str) -> None:
    """
    Settings that only work together, or that name files, are checked when
    the options are parsed: one line, before anything starts.
    """
    options = tap.Options()
    options.environ = settings
    with pytest.raises(usage.UsageError) as info:
        options.parseOptions(["--transport", "http", "--endpoint", "tcp:8000:interface=0.0.0.0"])
    message = str(info.value)
    assert said in message
    assert "\n" not in message
    assert "pw" not in message


def test_other_reactor_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a non-asyncio reactor already installed, the plugin gives a usage error."""
    monkeypatch.undo()
    import sys

    fake = object()
    monkeypatch.setitem(sys.modules, "twisted.internet.reactor", fake)
    import twisted.internet

    monkeypatch.setattr(twisted.internet, "reactor", fake, raising=False)
    with pytest.raises(usage.UsageError, match="asyncio"):
        tap._ensure_asyncio_reactor()


# --- under twistd ---------------------------------------------------------------------


def twistd_parse(argv: list[str]) -> tap.Options:
    """Parse C{argv} as twistd does; return gophergem's options."""
    from twisted.scripts.twistd import ServerOptions

    options = ServerOptions()
    options.parseOptions(argv)
    sub = options.subOptions
    assert isinstance(sub, tap.Options)
    return sub


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["gophergem", "--bogus"], "--bogus"),
        (["gophergem", "--transport", "pigeon"], "pigeon"),
        (["gophergem", "--gopher-timeout-seconds", "soon"], "GOPHER_TIMEOUT_SECONDS"),
        (["gophergem", "--transport", "http", "--endpoint", "nowhere"], "nowhere"),
    ],
)
def test_twistd_usage_error_is_one_line(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under twistd a bad option is one line on stderr and exit status 2, not a usage page."""
    with pytest.raises(SystemExit) as info:
        twistd_parse(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("twistd gophergem: ") and named in err


def test_unwritable_log_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unwritable --gophergem-log-file is named in one line, before anything starts."""
    with pytest.raises(SystemExit) as info:
        twistd_parse(["gophergem", "--gophergem-log-file", str(tmp_path / "no" / "such.log")])
    assert info.value.code == 2
    assert "--gophergem-log-file" in capsys.readouterr().err


def emit(observer: ILogObserver, level: LogLevel, text: str) -> None:
    observer({"log_level": level, "log_format": text, "log_namespace": "t", "log_time": 0.0})


def test_twistd_logs_to_our_file_at_our_level(tmp_path: Path) -> None:
    """--gophergem-log-file and --gophergem-log-level decide twistd's log when twistd's don't."""
    path = tmp_path / "gophergem.log"
    options = twistd_parse(
        ["-n", "gophergem", "--gophergem-log-file", str(path), "--gophergem-log-level", "WARNING"]
    )
    observer = tap.twistd_log_observer(options)
    assert observer is not None
    emit(observer, LogLevel.info, "quiet detail")
    emit(observer, LogLevel.warn, "worth a look")
    text = path.read_text()
    assert "worth a look" in text and "quiet detail" not in text


def test_twistd_logfile_wins_over_ours(tmp_path: Path) -> None:
    """twistd's own --logfile is where logs go; our level still filters them."""
    ours, theirs = tmp_path / "ours.log", tmp_path / "theirs.log"
    options = twistd_parse(
        [
            "--logfile",
            str(theirs),
            "gophergem",
            "--gophergem-log-file",
            str(ours),
            "--gophergem-log-level",
            "ERROR",
        ]
    )
    observer = tap.twistd_log_observer(options)
    assert observer is not None
    emit(observer, LogLevel.warn, "a warning")
    emit(observer, LogLevel.error, "an error")
    text = theirs.read_text()
    assert "an error" in text and "a warning" not in text
    assert not ours.exists() or ours.read_text() == ""


def test_twistd_logger_option_takes_over() -> None:
    """With twistd's --logger, gophergem leaves logging to it."""
    options = twistd_parse(
        [
            "--logger",
            "gophergem._log.stderr_observer",
            "gophergem",
            "--gophergem-log-level",
            "ERROR",
        ]
    )
    assert tap.twistd_log_observer(options) is None


def test_twistd_application_gets_the_observer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The service twistd runs installs the observer on the application it joins."""
    from twisted.application.service import Application

    from gophergem import service

    monkeypatch.setattr(service, "makeService", lambda config, **kwargs: MultiService())
    options = twistd_parse(
        ["-n", "gophergem", "--transport", "http", "--gophergem-log-file", str(tmp_path / "x.log")]
    )
    application = Application("gophergem")
    tap.makeService(options).setServiceParent(application)
    assert application.getComponent(ILogObserver) is not None


def test_parsed_alone_options_still_raise(capsys: pytest.CaptureFixture[str]) -> None:
    """Outside twistd (the .tac, gophergem serve) a bad option is a UsageError to catch."""
    with pytest.raises(usage.UsageError):
        tap.Options().parseOptions(["--bogus"])
    assert capsys.readouterr().err == ""


# --- the standard library's logging goes through twisted.logger ------------------------------


def test_sdk_records_land_in_twisted_logger_at_our_level(
    _root_logger_kept: logging.Logger,
) -> None:
    """
    An SDK logger's record becomes a twisted.logger event in its namespace
    at the matching level (an exception as its failure; its INFO is our
    debug); records below our level are dropped.
    """
    from twisted.logger import capturedLogs, formatEvent

    from gophergem._log import TwistedLogHandler, log_through_twisted

    with capturedLogs() as events:
        assert log_through_twisted("WARN")
        sdk = logging.getLogger("mcp.server.streamable_http_manager")
        sdk.debug("Processing %s", "a request")
        sdk.info("Created new transport with session ID: %s", "abc")
        sdk.warning("dropped %r: malformed params", "x")
        sdk.error("an error")
        logging.getLogger("mcp.server.mcpserver.server").critical("a crash")
        try:
            raise ZeroDivisionError("tool body")
        except ZeroDivisionError:
            logging.getLogger("mcp.server.mcpserver.server").exception("Tool %r raised", "t")
    assert [(e["log_namespace"], e["log_level"], formatEvent(e)) for e in events] == [
        ("mcp.server.streamable_http_manager", LogLevel.warn, "dropped 'x': malformed params"),
        ("mcp.server.streamable_http_manager", LogLevel.error, "an error"),
        ("mcp.server.mcpserver.server", LogLevel.critical, "a crash"),
        ("mcp.server.mcpserver.server", LogLevel.error, "Tool 't' raised"),
    ]
    assert events[-1]["log_failure"].check(ZeroDivisionError)
    assert [type(h) for h in _root_logger_kept.handlers] == [TwistedLogHandler]

    with capturedLogs() as events:
        assert log_through_twisted("INFO")  # a library's INFO is our debug: dropped
        logging.getLogger("mcp.server.lowlevel.server").info("Processing request of type %s", "t")
        logging.getLogger("mcp.server.lowlevel.server").warning("a warning")
    assert [(e["log_level"], formatEvent(e)) for e in events] == [(LogLevel.warn, "a warning")]

    with capturedLogs() as events:
        assert log_through_twisted("DEBUG")  # again: still one handler, a new level
        logging.getLogger("mcp.server.lowlevel.server").debug("Initializing server %r", "g")
        logging.getLogger("mcp.server.lowlevel.server").info("Processing request of type %s", "t")
    assert [(e["log_level"], formatEvent(e)) for e in events] == [
        (LogLevel.debug, "Initializing server 'g'"),
        (LogLevel.debug, "Processing request of type t"),
    ]
    assert len(_root_logger_kept.handlers) == 1


def test_our_observer_filters_what_the_sdk_says() -> None:
    """Through our observer, an SDK record reads like ours and passes our level only."""
    from gophergem._log import TwistedLogHandler, observer_for

    stream = io.StringIO()
    sdk = logging.getLogger("mcp.server.test_bridge")
    sdk.setLevel(logging.DEBUG)
    handler = TwistedLogHandler(observer_for(stream, "WARN"))
    sdk.addHandler(handler)
    try:
        sdk.info("Terminating session: %s", "abc")
        sdk.warning("requestState rejected on %s: %s", "tools/call", "stale")
    finally:
        sdk.removeHandler(handler)
        sdk.setLevel(logging.NOTSET)
    (line,) = stream.getvalue().splitlines()
    assert line.endswith("[mcp.server.test_bridge#warn] requestState rejected on tools/call: stale")


def test_the_sdk_installs_no_handler_of_its_own(_root_logger_kept: logging.Logger) -> None:
    """
    build_server in a program that set up no logging (a mounted resource)
    routes the SDK through twisted.logger at the config's level, instead of
    the SDK's own stderr handler; a program's own set-up is left alone.
    """
    from gophergem._log import TwistedLogHandler
    from gophergem.config import Config
    from gophergem.mcp.server import build_server
    from gophergem.testing import MemoryNetwork

    root = _root_logger_kept
    root.handlers[:] = []
    fetcher = MemoryNetwork().fetcher()
    build_server(fetcher, Config.from_env({"GOPHERGEM_LOG_LEVEL": "ERROR"}))
    assert [type(h) for h in root.handlers] == [TwistedLogHandler]
    assert root.level == logging.ERROR
    build_server(fetcher, Config())
    assert [type(h) for h in root.handlers] == [TwistedLogHandler]
    assert root.level == logging.ERROR

    theirs = logging.StreamHandler(io.StringIO())
    root.handlers[:] = [theirs]
    root.setLevel(logging.INFO)
    build_server(fetcher, Config())
    assert root.handlers == [theirs]
    assert root.level == logging.INFO


def test_twistd_routes_the_sdk_through_twisted_logger(
    monkeypatch: pytest.MonkeyPatch, _root_logger_kept: logging.Logger
) -> None:
    """Under twistd, the service tree routes the standard library's logging at our level."""
    from gophergem import service
    from gophergem._log import TwistedLogHandler

    def make(config: Any, **kwargs: Any) -> MultiService:
        # What the SDK does when it builds a server and the root logger has no handler.
        logging.basicConfig(handlers=[logging.StreamHandler(io.StringIO())])
        return MultiService()

    monkeypatch.setattr(service, "makeService", make)
    _root_logger_kept.handlers[:] = []
    options = twistd_parse(
        ["-n", "gophergem", "--transport", "http", "--gophergem-log-level", "ERROR"]
    )
    tap.makeService(options)
    assert [type(h) for h in _root_logger_kept.handlers] == [TwistedLogHandler]
    assert _root_logger_kept.level == logging.ERROR


# --- daemonized, a port in use ---------------------------------------------------------------


def test_listen_problem_found_before_listening() -> None:
    """A TCP port in use (bound here) is found by binding first; what cannot be checked is None."""
    import socket

    from gophergem.http.listen import listen_problem

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for endpoint in (f"tcp:{port}:interface=127.0.0.1", f"tcp:port={port}:interface=127.0.0.1"):
            assert listen_problem(endpoint) == (
                f"cannot listen on {endpoint}: Address already in use"
            )
    assert listen_problem("tcp:0:interface=127.0.0.1") is None
    assert listen_problem("unix:/nowhere/gophergem.sock") is None


def test_twistd_refuses_a_port_in_use_before_daemonizing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """twistd gophergem checks the port before twistd daemonizes: one line, status 2."""
    import socket
    import sys

    err = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", err)

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        endpoint = f"tcp:{taken.getsockname()[1]}:interface=127.0.0.1"
        options = twistd_parse(["gophergem", "--transport", "http", "--endpoint", endpoint])
        with pytest.raises(SystemExit) as info:
            tap.makeService(options)
    assert info.value.code == 2
    assert err.getvalue() == f"gophergem: cannot listen on {endpoint}: Address already in use\n"


def test_daemon_failing_to_listen_fits_twistds_status_pipe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """
    When the daemon itself cannot listen (the port taken after the check),
    twistd passes the first 100 bytes of the error's last traceback line to
    the process started: the error says it in few enough words to fit, and
    the whole line goes to the log.
    """
    import traceback

    from twisted.internet.defer import fail
    from twisted.internet.error import CannotListenError
    from twisted.logger import capturedLogs, formatEvent

    from gophergem import service
    from gophergem.http import listen

    class Refusing:
        def listen(self, factory: object) -> Any:
            error = OSError(98, "Address already in use")
            return fail(CannotListenError("127.0.0.1", 8000, error))

    endpoint = "tcp:8000:interface=127.0.0.1:backlog=4096"
    listener = listen.HTTPListenService(Refusing(), None, endpoint)

    def make(config: Any, **kwargs: Any) -> MultiService:
        top = MultiService()
        listener.setName("http")
        listener.setServiceParent(top)
        return top

    monkeypatch.setattr(service, "makeService", make)
    monkeypatch.setattr(listen, "listen_problem", lambda endpoint: None)  # taken since
    monkeypatch.chdir(tmp_path)  # a daemon's default log, twistd.log, goes there
    options = twistd_parse(["gophergem", "--transport", "http", "--endpoint", endpoint])
    tap.makeService(options)
    assert listener.daemonized and not listener.exit_on_error
    with capturedLogs() as events, pytest.raises(listen.ListenError) as info:
        listener.privilegedStartService()
    assert str(info.value) == "cannot listen on 127.0.0.1:8000: Address already in use"
    line = traceback.format_exception_only(listen.ListenError, info.value)[-1].strip()
    assert len(f"1 {line}".encode("ascii", "backslashreplace")) <= 100
    assert [formatEvent(e) for e in events] == [
        f"gophergem cannot listen on {endpoint}: Address already in use"
    ]
