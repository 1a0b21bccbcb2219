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
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from twisted.internet.defer import Deferred, fail
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem._plural import counted
from gophergem.errors import GophergemError, StateUnavailable

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PROBE_INTERVAL", "PROBE_TIMEOUT", "Runner", "run_bounded", "unavailable"]

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
        return unavailable(f"PostgreSQL did not answer within {counted(timeout, 'second')}.")
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


#: While PostgreSQL cannot be reached, how often a replica tries it again.
PROBE_INTERVAL = 0.25

#: The longest one try (connect and C{SELECT 1}) may take.
PROBE_TIMEOUT = 1.0


@attrs.define
class Runner:
    """
    Runs units of work against the pool, each bounded by C{timeout}.

    A call that fails because PostgreSQL may be gone (the connection broke,
    no connection came in time, the deadline passed) makes the runner try
    the server at once on a connection of its own.  When that fails too,
    the runner is L{down}: the calls under way and every call after them
    fail at once with L{StateUnavailable} instead of waiting out their
    deadline (a replica under load would otherwise queue behind calls that
    each wait their full bound), and the server is tried every
    L{PROBE_INTERVAL} seconds
    until it answers; then the pool is told to replace its broken
    connections at once (its own reconnection backs off for many seconds).

    @ivar pool: The open connection pool.
    @ivar timeout: Seconds one call may take, waiting for a connection included.
    @ivar loop: The asyncio loop under the reactor, where the calls run.
    @ivar probe: Asks the server one trivial question on a connection of
        its own, raising when it cannot; by default a new psycopg
        connection with the pool's settings.
    @ivar probe_interval: Seconds between tries while the server is down.
    @ivar down: Whether the server is known to be unreachable.
    """

    pool: AsyncConnectionPool[Any]
    timeout: float
    loop: asyncio.AbstractEventLoop
    probe: Callable[[], Awaitable[None]] | None = None
    probe_interval: float = PROBE_INTERVAL
    down: bool = attrs.field(default=False, init=False)
    _checking: asyncio.Task[None] | None = attrs.field(default=None, init=False)
    _running: set[Callable[[Exception], None]] = attrs.field(factory=set, init=False)

    def call(self, work: Work[_T]) -> Deferred[_T]:
        """
        Run C{work(connection)} in one transaction (committed when it returns,
        rolled back when it raises); the Deferred fails with
        L{StateUnavailable} when PostgreSQL is down, slow or refuses, and
        with whatever coded error C{work} raises.
        """
        if self.down:
            return fail(unavailable("PostgreSQL could not be reached."))
        answer, give_up = _bounded(self.loop, self._transaction(work), self.timeout, self.suspect)
        if not answer.called:
            self._running.add(give_up)

            def answered(result: object) -> object:
                self._running.discard(give_up)
                return result

            answer.addBoth(answered)
        return answer

    async def _transaction(self, work: Work[_T]) -> _T:
        async with self.pool.connection() as connection:
            return await work(connection)

    def suspect(self) -> None:
        """A call failed as if the server were gone: find out, unless already doing so."""
        if self._checking is None and not self.down:
            self._checking = self.loop.create_task(self._watch())

    async def check_now(self) -> None:
        """
        Try the server on a connection of its own, within L{PROBE_TIMEOUT};
        raise L{StateUnavailable} when it does not answer.  Success ends
        L{down}.
        """
        if not await self._answers():
            raise unavailable("PostgreSQL could not be reached.")
        if self.down:
            self._came_back()

    def stop(self) -> None:
        """Stop trying the server (the pool is closing)."""
        checking, self._checking = self._checking, None
        if checking is not None:
            checking.cancel()

    async def _watch(self) -> None:
        try:
            if await self._answers():
                return
            if not self.down:
                self.down = True
                log.warn(
                    "PostgreSQL cannot be reached: calls that need it answer "
                    "STATE_UNAVAILABLE at once until it answers again"
                )
                # The calls under way wait for a connection that will not
                # come, or for an answer from a server that is gone.
                for give_up in list(self._running):
                    give_up(unavailable("PostgreSQL could not be reached."))
            while self.down:
                await asyncio.sleep(self.probe_interval)
                if await self._answers():
                    self._came_back()
        finally:
            self._checking = None

    def _came_back(self) -> None:
        if not self.down:
            return
        self.down = False
        log.info("PostgreSQL answers again")

        async def renew() -> None:
            # Broken connections go, and the pool grows now, not after its backoff.
            try:
                await self.pool.check()
            except Exception as error:
                log.info("the pool check failed: {kind}", kind=type(error).__name__)

        self.loop.create_task(renew())

    async def _answers(self) -> bool:
        try:
            async with asyncio.timeout(min(PROBE_TIMEOUT, self.timeout)):
                await (self.probe or self._ask)()
        except Exception:
            return False
        return True

    async def _ask(self) -> None:
        import psycopg

        conninfo, kwargs = self.pool.conninfo, self.pool.kwargs
        if not isinstance(conninfo, str) or not isinstance(kwargs, dict):
            raise TypeError("the pool must be made with a URL and a settings dict")
        connection = await psycopg.AsyncConnection.connect(
            conninfo, **{**kwargs, "autocommit": True}
        )
        try:
            await connection.execute("SELECT 1")
        finally:
            await connection.close()


def _lost(error: BaseException) -> bool:
    """Whether C{error} may mean that the server is gone."""
    import psycopg
    from psycopg_pool import PoolTimeout

    return isinstance(error, TimeoutError | PoolTimeout | psycopg.OperationalError | OSError)


def run_bounded(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, _T],
    timeout: float,
    lost: Callable[[], None] | None = None,
) -> Deferred[_T]:
    """
    Run C{coroutine} on C{loop}; the Deferred fires with its result, or
    fails with its coded error, or with L{StateUnavailable} once C{timeout}
    seconds have passed, whichever comes first.

    At the deadline the coroutine is cancelled, but the answer does not
    wait for it to finish: psycopg answers a cancellation by asking the
    server to cancel the query and waiting for that (seconds more when the
    server is gone).  The Deferred's own cancellation cancels the
    coroutine.  C{lost} is called when the failure may mean the server is
    gone.
    """
    answer, _ = _bounded(loop, coroutine, timeout, lost)
    return answer


def _bounded(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, _T],
    timeout: float,
    lost: Callable[[], None] | None,
) -> tuple[Deferred[_T], Callable[[Exception], None]]:
    """L{run_bounded}, and a function that fails the call now with an error."""
    task = loop.create_task(coroutine)

    def cancel(_: Deferred[_T]) -> None:
        task.cancel()

    answer: Deferred[_T] = Deferred(cancel)

    def give_up(error: Exception) -> None:
        if task.done() or answer.called:
            return
        task.cancel()
        answer.errback(Failure(error))

    def expire() -> None:
        if not (task.done() or answer.called) and lost is not None:
            lost()
        give_up(unavailable(f"PostgreSQL did not answer within {counted(timeout, 'second')}."))

    deadline = loop.call_later(timeout, expire)

    def finished(done: asyncio.Task[_T]) -> None:
        deadline.cancel()
        if done.cancelled():
            return  # by expire(), or by cancelling the Deferred (then it has fired)
        error = done.exception()
        if answer.called:
            if error is not None:
                log.debug(
                    "a PostgreSQL call ended after its deadline: {kind}", kind=type(error).__name__
                )
            return
        if error is None:
            answer.callback(done.result())
            return
        if lost is not None and _lost(error):
            lost()
        coded = error if not isinstance(error, Exception) else translate(error, timeout)
        answer.errback(Failure(coded))

    task.add_done_callback(finished)
    return answer, give_up
