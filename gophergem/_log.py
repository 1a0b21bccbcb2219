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

__all__ = ["observer_for", "start_logging", "stderr_observer"]

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


def start_logging(level: str = "INFO", path: str | None = None) -> None:
    """Send Twisted's and the standard library's logs to stderr or C{path}."""
    stream: IO[str] = open(path, "a", encoding="utf-8") if path else sys.stderr  # noqa: SIM115
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
