# -*- test-case-name: tests.test_state_redis -*-
"""
How every Redis call runs: on redis-py's asyncio client, within the state
timeout, its failures turned into L{StateUnavailable}, its result handed
back as a L{Deferred}.

The client runs on the asyncio loop under Twisted's asyncio reactor.
Cancelling a returned Deferred cancels the call.  The Lua scripts are
registered once (C{EVALSHA}); redis-py loads a script again when the server
answers C{NOSCRIPT} (after a restart, a failover or C{SCRIPT FLUSH}).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from twisted.internet.defer import CancelledError, Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem._plural import counted
from gophergem.errors import GophergemError, StateUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisClient", "unavailable"]

log = Logger(namespace="gophergem.state.redis")

_T = TypeVar("_T")


def unavailable(message: str) -> StateUnavailable:
    """A temporary L{StateUnavailable} about Redis, in our own words."""
    return StateUnavailable(
        message=message,
        next_step="Try again shortly; if it persists, check the Redis server.",
        temporary=True,
    )


def translate(error: BaseException, timeout: float) -> BaseException:
    """
    The coded error a driver failure becomes.  The driver's text is logged
    by class name only; the error names Redis and what happened, never the
    URL (which may hold a password).
    """
    import redis.exceptions

    if isinstance(error, GophergemError | CancelledError | asyncio.CancelledError):
        return error
    if isinstance(error, TimeoutError | redis.exceptions.TimeoutError):
        return unavailable(f"Redis did not answer within {counted(timeout, 'second')}.")
    if isinstance(error, redis.exceptions.AuthenticationError):
        return unavailable("Redis refused the credentials in the Redis URL.")
    if isinstance(error, redis.exceptions.ConnectionError | OSError):
        return unavailable("Redis could not be reached.")
    if isinstance(error, redis.exceptions.ResponseError):
        return unavailable("Redis refused a command (a read-only replica, or out of memory?).")
    return unavailable(f"Redis could not be used ({type(error).__name__}).")


@attrs.frozen
class RedisClient:
    """
    One redis-py asyncio client and the scripts registered on it.

    @ivar redis: The client (its pool holds the connections).
    @ivar loop: The asyncio loop under the reactor, where the calls run.
    @ivar timeout: Seconds each call may take before it fails.
    @ivar prefix: Prepended to every key, so several deployments may share a
        server.
    """

    redis: Redis
    loop: asyncio.AbstractEventLoop
    timeout: float
    prefix: str
    _scripts: dict[str, AsyncScript] = attrs.field(factory=dict, init=False)

    @classmethod
    async def open(cls, url: str, timeout: float, prefix: str) -> RedisClient:
        """
        A client for C{url} with explicit timeouts and one quick retry (the
        driver's defaults retry for about a minute).  Nothing is sent yet.

        @raise StateUnavailable: When C{url} is not a Redis URL.
        """
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff

        try:
            client = Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=1),
                decode_responses=False,
                health_check_interval=30,
                max_connections=64,
            )
        except ValueError:
            raise unavailable("The Redis URL is not one Redis accepts.") from None
        return cls(client, asyncio.get_running_loop(), timeout, prefix)

    def key(self, *parts: str | int) -> str:
        """The key made of C{parts}, under the prefix."""
        return self.prefix + ":".join(str(part) for part in parts)

    def script(self, name: str, source: str) -> AsyncScript:
        """The script C{name}, registered on first use."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.redis.register_script(source)
        return script

    def call(self, work: Callable[[Redis], Awaitable[_T]]) -> Deferred[_T]:
        """Run C{work(redis)} within the timeout, as a Deferred of coded errors."""
        return run_bounded(self.loop, work(self.redis), self.timeout)

    def run_script(
        self, name: str, source: str, keys: Sequence[str], args: Sequence[str | int | float]
    ) -> Deferred[Any]:
        """Run the Lua script C{name} (EVALSHA, loading it again on NOSCRIPT)."""
        script = self.script(name, source)
        return self.call(lambda redis: script(keys=list(keys), args=list(args), client=redis))

    def close(self) -> Deferred[None]:
        """Close the client's connections."""
        return run_bounded(self.loop, self.redis.aclose(), self.timeout)


def run_bounded(
    loop: asyncio.AbstractEventLoop, awaitable: Awaitable[_T], timeout: float
) -> Deferred[_T]:
    """Run C{awaitable} on C{loop} within C{timeout}, as a Deferred of coded errors."""

    async def bounded() -> _T:
        async with asyncio.timeout(timeout):
            return await awaitable

    def coded(reason: Failure) -> Failure:
        value = reason.value
        if value is None:
            return reason
        error = translate(value, timeout)
        if error is not value:
            log.info(
                "Redis call failed: {kind}; answered {code}",
                kind=type(reason.value).__name__,
                code=getattr(error, "code", "?"),
            )
            return Failure(error)
        return reason

    task = loop.create_task(bounded())
    if inspect.iscoroutine(awaitable):
        # Cancelled before it ran (the caller gave up): C{awaitable} was
        # never started; close it, or Python warns that it was never awaited.
        task.add_done_callback(lambda _: awaitable.close())
    return Deferred.fromFuture(task).addErrback(coded)
