# -*- test-case-name: tests.test_cli -*-
"""
Logging set-up: C{twisted.logger} to stderr or a file, never stdout.

Standard output of the stdio server is MCP protocol only, so nothing here
may write to it.  The SDK (and every other library using the standard
library's C{logging}) is routed through C{twisted.logger} by
L{TwistedLogHandler}, so its lines look like ours, go where ours go and pass
the same level (see L{log_through_twisted}).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import IO

from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    Logger,
    LogLevel,
    LogLevelFilterPredicate,
    globalLogBeginner,
    textFileLogObserver,
)
from twisted.python.failure import Failure

__all__ = [
    "LogFileError",
    "TwistedLogHandler",
    "log_through_twisted",
    "observer_for",
    "open_log_file",
    "start_logging",
    "stderr_observer",
]

_LEVELS = {
    "DEBUG": LogLevel.debug,
    "INFO": LogLevel.info,
    "WARN": LogLevel.warn,
    "ERROR": LogLevel.error,
    "CRITICAL": LogLevel.critical,
}


def observer_for(stream: IO[str], level: str = "INFO") -> ILogObserver:
    """A text observer on C{stream} that passes events at C{level} and above."""
    predicate = LogLevelFilterPredicate(defaultLogLevel=_LEVELS[level])
    return FilteringLogObserver(textFileLogObserver(stream), [predicate])


def stderr_observer() -> ILogObserver:
    """For C{twistd --logger=gophergem._log.stderr_observer}: log to stderr."""
    return observer_for(sys.stderr)


class LogFileError(Exception):
    """The log file cannot be opened for writing; the message is one line saying why."""


def open_log_file(path: str) -> IO[str]:
    """
    Open C{path} for appending log lines.

    @raise LogFileError: Naming the file and the reason, when it cannot be
        written (a missing directory, no permission, a directory).
    """
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as error:
        raise LogFileError(
            f"GOPHERGEM_LOG_FILE {path!r}: cannot write to it ({error.strerror or error})."
        ) from None


def start_logging(level: str = "INFO", path: str | None = None) -> None:
    """
    Send Twisted's and the standard library's logs to stderr or C{path}.

    @raise LogFileError: When C{path} cannot be opened; nothing was started.
    """
    stream: IO[str] = open_log_file(path) if path else sys.stderr
    globalLogBeginner.beginLoggingTo([observer_for(stream, level)], redirectStandardIO=False)
    log_through_twisted(level)


_STDLIB_LEVELS = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
}


_FROM_STDLIB: tuple[tuple[int, LogLevel], ...] = (
    (logging.CRITICAL, LogLevel.critical),
    (logging.ERROR, LogLevel.error),
    (logging.WARNING, LogLevel.warn),
)


def twisted_level(levelno: int) -> LogLevel:
    """
    The C{twisted.logger} level of a standard library record's level number.

    A library's C{INFO} is our C{debug}: the SDK says "Processing request of
    type ..." at C{INFO} for every call, which is a detail of its workings,
    not news for the person running gophergem (and its session ids do not
    belong in an ordinary log).
    """
    for threshold, level in _FROM_STDLIB:
        if levelno >= threshold:
            return level
    debug: LogLevel = LogLevel.debug
    return debug


class TwistedLogHandler(logging.Handler):
    """
    Hands the standard library's log records to C{twisted.logger}: each
    becomes an event in the record's logger's namespace (C{mcp.server...}),
    at the matching level, with its exception as a failure.

    Records of the C{twisted} logger (which C{twisted.logger}'s own bridge
    to the standard library writes to) and records made while one is being
    handed on are dropped, so the two bridges never chase each other.
    """

    def __init__(self, observer: ILogObserver | None = None) -> None:
        super().__init__()
        self._observer = observer
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "twisted" or record.name.startswith("twisted."):
            return
        if getattr(self._busy, "now", False):
            return
        self._busy.now = True
        try:
            extra: dict[str, object] = {}
            if record.exc_info is not None and record.exc_info[1] is not None:
                kind, error, traceback = record.exc_info
                extra["log_failure"] = Failure(error, kind, traceback)
            Logger(namespace=record.name, observer=self._observer).emit(
                twisted_level(record.levelno), "{message}", message=record.getMessage(), **extra
            )
        except Exception:
            self.handleError(record)
        finally:
            self._busy.now = False


def log_through_twisted(level: str | None = None, *, unless_configured: bool = False) -> bool:
    """
    Route the standard library's logging (the SDK's, the database drivers')
    through C{twisted.logger}: one L{TwistedLogHandler} on the root logger,
    in place of any other handler (the SDK installs its own on stderr when
    the root logger has none).  Calling it again keeps that one handler.

    @param level: gophergem's log level (C{DEBUG} ... C{CRITICAL}): records
        below it are dropped where they are made; a library's C{INFO} and
        C{DEBUG} records pass only at C{DEBUG}.  C{None}: the root
        logger's level is left as it is.
    @param unless_configured: Leave a program that set up the standard
        library's logging itself alone (its root logger has handlers,
        including ours), as a library mounted in it should.
    @return: Whether the handler is in place and the level set.
    """
    root = logging.getLogger()
    if unless_configured and root.handlers:
        return False
    ours = [h for h in root.handlers if isinstance(h, TwistedLogHandler)]
    root.handlers[:] = ours[:1] or [TwistedLogHandler()]
    if level is not None:
        # Below WARNING a library's records are our debug (see twisted_level),
        # so they are not even made unless we log at DEBUG.
        root.setLevel(
            logging.DEBUG if level == "DEBUG" else max(_STDLIB_LEVELS[level], logging.WARNING)
        )
    return True
