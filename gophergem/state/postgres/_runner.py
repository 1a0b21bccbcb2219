# -*- test-case-name: tests.test_state_postgres -*-
"""
How every PostgreSQL call runs: on a connection from the pool, in one
transaction, within the state timeout, its failures turned into
L{StateUnavailable} and its result handed back as a L{Deferred}.

The pool is psycopg's asyncio pool, so the calls run on the asyncio loop
under Twisted's asyncio reactor; L{Runner.call} bridges a coroutine to a
Deferred (cancelling the Deferred cancels the coroutine).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from gophergem.errors import GophergemError, StateUnavailable

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["Runner", "unavailable"]

log = Logger(namespace="gophergem.state.postgres")

_T = TypeVar("_T")

Work = Callable[["AsyncConnection[Any]"], Awaitable[_T]]


def unavailable(message: str, next_step: str | None = None) -> StateUnavailable:
    """A temporary L{StateUnavailable} about PostgreSQL, in our own words."""
    return StateUnavailable(
        message=message,
        next_step=next_step or "Try again shortly; if it persists, check the database server.",
        temporary=True,
    )


def translate(error: Exception, timeout: float) -> Exception:
    """
    The coded error a driver failure becomes.  The driver's own text goes to
    the log (it names the server, never the password); the error says only
    what happened.
    """
    import psycopg
    from psycopg_pool import PoolTimeout

    if isinstance(error, GophergemError | TypeError | ValueError) and not isinstance(
        error, psycopg.Error
    ):
        return error  # ours: a coded error, or an argument refused before any write
    if isinstance(error, TimeoutError | PoolTimeout):
        return unavailable(f"PostgreSQL did not answer within {timeout:g} seconds.")
    if isinstance(error, psycopg.errors.UndefinedTable):
        return StateUnavailable(
            message="The PostgreSQL database has no gophergem schema (or an old one).",
            next_step="Run `gophergem db upgrade` with the same database URL.",
            temporary=False,
        )
    log.warn(
        "PostgreSQL call failed: {kind}: {reason}",
        kind=type(error).__name__,
        reason=str(error).strip().splitlines()[0] if str(error).strip() else "",
    )
    if isinstance(error, psycopg.OperationalError | OSError):
        return unavailable("PostgreSQL could not be reached.")
    return unavailable("PostgreSQL refused the request.")


@attrs.define
class Runner:
    """
    Runs units of work against the pool, each bounded by C{timeout}.

    @ivar pool: The open connection pool.
    @ivar timeout: Seconds one call may take, waiting for a connection included.
    @ivar loop: The asyncio loop under the reactor, where the calls run.
    """

    pool: AsyncConnectionPool[Any]
    timeout: float
    loop: asyncio.AbstractEventLoop

    def call(self, work: Work[_T]) -> Deferred[_T]:
        """
        Run C{work(connection)} in one transaction (committed when it returns,
        rolled back when it raises); the Deferred fails with
        L{StateUnavailable} when PostgreSQL is down, slow or refuses, and
        with whatever coded error C{work} raises.
        """
        return run_bounded(self.loop, self._transaction(work), self.timeout)

    async def _transaction(self, work: Work[_T]) -> _T:
        async with self.pool.connection() as connection:
            return await work(connection)


def run_bounded(
    loop: asyncio.AbstractEventLoop, coroutine: Awaitable[_T], timeout: float
) -> Deferred[_T]:
    """Run C{coroutine} on C{loop} within C{timeout}, as a Deferred of coded errors."""

    async def bounded() -> _T:
        try:
            async with asyncio.timeout(timeout):
                return await coroutine
        except Exception as e:
            raise translate(e, timeout) from None

    return Deferred.fromFuture(loop.create_task(bounded()))
