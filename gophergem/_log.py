# -*- test-case-name: tests.test_cli -*-
"""
Logging set-up: C{twisted.logger} to stderr or a file, never stdout.

Standard output of the stdio server is MCP protocol only, so nothing here
may write to it; the SDK's own C{logging} records go to the same place.
"""

from __future__ import annotations

import logging
import sys
from typing import IO

from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    LogLevel,
    LogLevelFilterPredicate,
    globalLogBeginner,
    textFileLogObserver,
)

__all__ = ["LogFileError", "observer_for", "open_log_file", "start_logging", "stderr_observer"]

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
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(
        logging.WARNING
        if level in ("DEBUG", "INFO")
        else getattr(logging, level.replace("WARN", "WARNING"))
    )
