# -*- test-case-name: tests.test_tap -*-
"""
C{twistd gophergem}: command-line options turned into a L{Config}.

All wiring happens in L{gophergem.service.makeService}; this module only
reads options.  The MCP endpoint needs Twisted's asyncio reactor: it is
installed here when no reactor was chosen, and choosing another one is a
usage error.  L{options_from_env} reads the same options from environment
variables, for C{tac/gophergem.tac}.

Under C{twistd}, a user error is one line on standard error and exit status
2 (a bad option, a port already in use), never twistd's page of usage or a
traceback; and C{--gophergem-log-level} / C{--gophergem-log-file} decide how
and where twistd logs, unless twistd's own C{--logger}, C{--syslog} or
C{--logfile} say otherwise (see L{twistd_log_observer}).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping
from typing import IO, Any, ClassVar

from twisted.application.service import IService, MultiService
from twisted.logger import ILogObserver
from twisted.python import usage
from twisted.python.components import Componentized

from gophergem._log import log_through_twisted, observer_for
from gophergem.config import (
    DEFAULT_ENDPOINT,
    SETTINGS,
    Config,
    ConfigError,
    misspelled_settings,
)

__all__ = [
    "Options",
    "exit_if_cannot_listen",
    "exit_on_listen_error",
    "makeService",
    "options_from_env",
    "twistd_log_observer",
]

TRANSPORTS = ("stdio", "http")

_HOST_NAME = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?)(:[0-9]{1,5})?$")


class Options(usage.Options):
    """Options of C{twistd gophergem}."""

    synopsis = "[options]"
    longdesc = (
        "Serve gophergem's MCP endpoint: on stdin/stdout (--transport stdio, run as "
        "twistd -n --pidfile= gophergem; logs go to stderr), or over Streamable HTTP at /mcp "
        "with /health and /.well-known/agent.gopher (--transport http). Every setting also "
        "reads its environment variable (GOPHER_*, GEMINI_*, GOPHERGEM_*); an option wins "
        "over the variable."
    )
    optParameters: ClassVar[list[list[str | None]]] = [
        ["transport", None, "stdio", "stdio (MCP on stdin/stdout) or http (Streamable HTTP)."],
        ["endpoint", None, DEFAULT_ENDPOINT, "Where HTTP listens, as a strports description."],
        *[[s.option, None, None, f"{s.help} [{s.variable}]"] for s in SETTINGS],
    ]

    environ: Mapping[str, str] | None = None
    """Where settings not given as options are read; the process environment by default."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self["allowed_hosts"] = []

    def parseOptions(self, options: list[str] | None = None) -> None:
        """
        Parse C{options}; under C{twistd}, a usage error ends the process.

        twistd answers a usage error with its whole usage page before the
        one line that matters; as its subcommand, print only that line and
        exit with status 2.  Parsed on their own (the C{.tac}, tests), the
        options raise L{usage.UsageError} as usual.
        """
        try:
            super().parseOptions(options)  # type: ignore[no-untyped-call]  # Twisted: unannotated
        except usage.UsageError as error:
            if _twistd_options(self) is None:
                raise
            sys.stderr.write(f"twistd gophergem: {error} (see twistd gophergem --help)\n")
            sys.stderr.flush()
            raise SystemExit(2) from None

    def opt_allowed_host(self, name: str) -> None:
        """A name (or name:port) HTTP clients may use besides loopback ones; repeatable."""
        self["allowed_hosts"].append(_host_name(name))

    def postOptions(self) -> None:
        if self["transport"] not in TRANSPORTS:
            raise usage.UsageError(f"--transport must be stdio or http, not {self['transport']!r}.")
        values = dict(os.environ if self.environ is None else self.environ)
        for setting in SETTINGS:
            if self[setting.option] is not None:
                values[setting.variable] = self[setting.option]
        try:
            self["config"] = Config.from_env(values)
        except ConfigError as exc:
            raise usage.UsageError(str(exc)) from None
        for warning in misspelled_settings(values):
            sys.stderr.write(f"gophergem: warning: {warning}\n")
            sys.stderr.flush()
        self["allowed_hosts"] = tuple(dict.fromkeys(self["allowed_hosts"]))
        log_file = self["config"].log.file
        if log_file and _twistd_options(self) is not None:
            _check_writable(log_file)
        _ensure_asyncio_reactor()
        if self["transport"] == "http":
            _check_endpoint(self["endpoint"])
            from gophergem.http.listen import check_http_settings

            try:
                check_http_settings(self["endpoint"], self["config"])
            except ValueError as exc:
                raise usage.UsageError(str(exc)) from None


def _twistd_options(options: usage.Options) -> Mapping[str, object] | None:
    """twistd's own options, when C{options} were parsed as its subcommand."""
    parent = getattr(options, "parent", None)
    return parent if parent is not None and "logfile" in parent else None


def _check_writable(path: str) -> None:
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as error:
        raise usage.UsageError(
            f"--gophergem-log-file (GOPHERGEM_LOG_FILE) {path!r}: cannot write to it "
            f"({error.strerror or error})."
        ) from None


def twistd_log_observer(options: Options) -> ILogObserver | None:
    """
    The log observer C{twistd gophergem} runs with, or C{None} to leave it
    to twistd.

    Events below C{--gophergem-log-level} (C{GOPHERGEM_LOG_LEVEL}, C{INFO}
    by default) are dropped.  They go to twistd's C{--logfile} when one is
    given, else to C{--gophergem-log-file} (C{GOPHERGEM_LOG_FILE}) when set,
    else where twistd would log (standard output with C{-n}, C{twistd.log}
    otherwise).  twistd's C{--logger} and C{--syslog} take over entirely.
    """
    twistd = _twistd_options(options)
    if twistd is None or twistd.get("logger") or twistd.get("syslog"):
        return None
    from twisted.python.logfile import LogFile

    config: Config = options["config"]
    stream: IO[str]
    twistd_file = str(twistd.get("logfile") or "")
    if twistd_file == "-" or (not twistd_file and not config.log.file and twistd["nodaemon"]):
        stream = sys.stdout
    elif twistd_file:
        stream = LogFile.fromFullPath(twistd_file)  # type: ignore[no-untyped-call]  # Twisted: unannotated
    elif config.log.file:
        stream = open(config.log.file, "a", encoding="utf-8")  # noqa: SIM115 - open while running
    else:
        stream = LogFile.fromFullPath("twistd.log")  # type: ignore[no-untyped-call]  # Twisted: unannotated
    return observer_for(stream, config.log.level)


class _TwistdRoot(MultiService):
    """The service twistd runs: sets the log observer on the application it joins."""

    def __init__(self, observer: ILogObserver | None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self._observer = observer

    def setServiceParent(self, parent: Any) -> None:
        if (
            self._observer is not None
            and isinstance(parent, Componentized)
            and parent.getComponent(ILogObserver) is None  # type: ignore[no-untyped-call]
        ):
            parent.setComponent(ILogObserver, self._observer)  # type: ignore[no-untyped-call]
        super().setServiceParent(parent)  # type: ignore[no-untyped-call]  # Twisted: unannotated


def _host_name(name: str) -> str:
    text = name.strip().lower()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address
    if not _HOST_NAME.match(text):
        raise usage.UsageError(
            f"--allowed-host {name!r}: give a host name or address, optionally with :port "
            "(not a URL)."
        )
    return text


def _check_endpoint(endpoint: str) -> None:
    from twisted.internet import endpoints, reactor

    try:
        endpoints.serverFromString(reactor, endpoint)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise usage.UsageError(
            f"--endpoint {endpoint!r} is not a strports description ({exc})."
        ) from None


def options_from_env(environ: Mapping[str, str]) -> Options:
    """
    The options of C{twistd gophergem}, read from C{environ}: C{GOPHERGEM_TRANSPORT}
    (C{http} unless set), C{GOPHERGEM_ENDPOINT}, C{GOPHERGEM_ALLOWED_HOSTS} (a,b)
    and every setting's own variable.

    @raise usage.UsageError: Naming what is wrong.
    """
    argv = ["--transport", environ.get("GOPHERGEM_TRANSPORT", "http").strip()]
    if environ.get("GOPHERGEM_ENDPOINT", "").strip():
        argv += ["--endpoint", environ["GOPHERGEM_ENDPOINT"].strip()]
    for name in environ.get("GOPHERGEM_ALLOWED_HOSTS", "").split(","):
        if name.strip():
            argv += ["--allowed-host", name.strip()]
    options = Options()
    options.environ = environ
    options.parseOptions(argv)
    return options


def _ensure_asyncio_reactor() -> None:
    """Install the asyncio reactor unless one was chosen; another one is a usage error."""
    from gophergem.service import install_asyncio_reactor

    if not install_asyncio_reactor():
        raise usage.UsageError(
            "gophergem needs the asyncio reactor; run twistd with -r asyncio or no -r at all."
        )


def makeService(options: Options) -> IService:
    """
    Build the service tree for C{twistd gophergem} (or the C{.tac}).

    Under twistd, the tree also brings the log observer (see
    L{twistd_log_observer}), the standard library's logging (the SDK's)
    goes through C{twisted.logger} at our level (see
    L{gophergem._log.log_through_twisted}), and failing to listen ends the
    process with one line when it runs in the foreground.
    """
    from gophergem.service import makeService as make
    from gophergem.service import reserve_stdout

    twistd = _twistd_options(options)
    if twistd is not None and options["transport"] == "http":
        # Before twistd daemonizes: the one line comes from the process started.
        exit_if_cannot_listen(options["endpoint"])
    observer = twistd_log_observer(options) if twistd is not None else None
    if twistd is not None:
        # Before the SDK's server is built: it would put a handler of its own on stderr.
        log_through_twisted(options["config"].log.level)
    stdout_fd = reserve_stdout() if options["transport"] == "stdio" else 1
    top = make(
        options["config"],
        transport=options["transport"],
        stdout_fd=stdout_fd,
        endpoint=options["endpoint"],
        allowed_hosts=options["allowed_hosts"],
    )
    if twistd is None:
        return top
    if options["transport"] == "http":
        # A daemon reports start-up errors through twistd's status pipe.
        exit_on_listen_error(top, bool(twistd["nodaemon"]))
        if not twistd["nodaemon"]:
            with contextlib.suppress(KeyError):
                top.getServiceNamed("http").daemonized = True
    root = _TwistdRoot(observer)
    top.setServiceParent(root)
    return root


def exit_if_cannot_listen(endpoint: str) -> None:
    """
    End the process with one line on standard error and status 2 when
    C{endpoint} cannot listen (a port in use, one this user may not bind),
    as far as that can be known before listening (see
    L{gophergem.http.listen.listen_problem}).

    Daemonized, twistd would report a failure to listen from inside the
    daemon, as the first 100 bytes of a Python bytes literal; checked
    before, it is the same line as in the foreground.
    """
    from gophergem.http.listen import listen_problem

    problem = listen_problem(endpoint)
    if problem is None:
        return
    stream = sys.__stderr__ or sys.stderr
    stream.write(f"gophergem: {problem}\n")
    stream.flush()
    raise SystemExit(2)


def exit_on_listen_error(top: MultiService, enabled: bool = True) -> None:
    """
    Make the HTTP listener of C{top} (from L{gophergem.service.makeService})
    end the process with one line and status 2 when it cannot listen,
    instead of raising L{gophergem.http.listen.ListenError}; and a replica's
    shared state, with status 1 when it cannot be reached, instead of
    raising L{gophergem.state.service.StateStartError}.
    """
    for name in ("http", "state"):
        try:
            service = top.getServiceNamed(name)
        except KeyError:
            continue
        service.exit_on_error = enabled
