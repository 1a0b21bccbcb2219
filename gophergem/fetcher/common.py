# -*- test-case-name: tests.test_fetcher -*-
"""
What both pipelines share: the one deadline, the allowlists, and the rule
that a fetch never fails (an unexpected exception becomes a logged
C{FETCH_ERROR} result).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gophergem.errors import BlockedError, FetchError
from gophergem.errors import TimeoutError as FetchTimeout
from gophergem.results import FetchFailure

__all__ = ["check_allowlists", "internal_failure", "within_deadline"]

log = Logger()
T = TypeVar("T")


async def within_deadline(work: Coroutine[Any, Any, T], seconds: float, clock: IReactorTime) -> T:
    """
    Run C{work} under one overall deadline on C{clock}; cancel it when the
    deadline passes.

    @raise FetchTimeout: When it did not finish in time.
    """
    attempt = Deferred.fromCoroutine(work)
    attempt.addTimeout(seconds, clock)
    try:
        return await attempt
    except defer.TimeoutError:
        raise FetchTimeout(
            message=f"The fetch did not finish within {seconds:g} seconds.",
            temporary=True,
            next_step="Try again later; the server may be slow or overloaded.",
        ) from None


def check_allowlists(config: Any, host: str, port: int) -> None:
    """
    Refuse a host or port off the configured allowlists (unset = no limit).

    @raise BlockedError: When either is not allowed.
    """
    if config.allowed_hosts is not None and host not in config.allowed_hosts:
        raise BlockedError(message="This host is not on the configured allowlist.")
    if config.allowed_ports is not None and port not in config.allowed_ports:
        raise BlockedError(message=f"Port {port} is not on the configured allowlist.")


def internal_failure(info: Any) -> FetchFailure:
    """Log the exception being handled and turn it into a coded result."""
    log.failure("unexpected failure fetching {url}", url=getattr(info, "url", ""))
    return FetchFailure(
        request_info=info,
        error=FetchError(message="An internal error stopped this fetch; it is logged."),
    )
