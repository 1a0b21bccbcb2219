# -*- test-case-name: tests.test_state_redis,tests.integration.test_replicas -*-
"""
The shared state of a replica, started before its endpoint: PostgreSQL and
Redis connected (and the schema checked) before the HTTP endpoint is built
and listens (L{SharedStateService}).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, Protocol

from twisted.application.service import MultiService
from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem._defer import settle
from gophergem.config import Config

__all__ = ["SharedStateService", "StateStartError"]


class _Endpoint(Protocol):
    """What L{SharedStateService} builds once the state is there."""

    @property
    def config(self) -> Config: ...

    @property
    def reactor(self) -> Any: ...

    def add_to(self, top: MultiService, state: Any, policy: Any) -> None:
        """Build the endpoint on C{state} and C{policy}; add its services to C{top}."""


class SharedStateService(MultiService):
    """
    The HTTP transport of a replica that shares its state: connects to
    PostgreSQL (C{GOPHERGEM_DATABASE_URL}) and Redis (C{GOPHERGEM_REDIS_URL}),
    checks the database schema, and only then builds the endpoint and
    listens.

    Under twistd and C{gophergem serve} the connections are made before the
    reactor runs (on the asyncio loop it will run), so a replica that
    cannot share its state never listens: L{privilegedStartService} raises
    L{StateStartError} naming what is wrong in one line or, with
    C{exit_on_error} set (as under C{twistd -n}), writes that line to
    standard error and exits with status 1.  Started on a running loop (an
    application that mounts gophergem), it connects then, and a failure
    logs the line, sets C{exit_status} to 1 and stops the reactor.
    Stopping closes the connections after the endpoint has drained.

    @param http: What builds the endpoint once the state is there (the
        composer's HTTP parts, see L{_Endpoint}).
    @param cacheable: Gives the values the Redis response cache may hold
        (L{gophergem.state.redis.Cacheable}); asked only when Redis is
        configured.
    @param one_line: Errors, besides a setting that cannot be used and a
        schema that is behind, whose message already is the one line to
        show (the HTTP listener's).
    """

    log = Logger()
    exit_on_error = False

    def __init__(
        self,
        http: _Endpoint,
        *,
        cacheable: Callable[[], list[Any]],
        one_line: tuple[type[BaseException], ...] = (),
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.http = http
        self.cacheable = cacheable
        self.one_line = one_line
        self.exit_status = 0
        self.ready: Deferred[None] | None = None
        self._backends: list[Any] = []
        self._built = False

    def privilegedStartService(self) -> None:
        # Twisted's asyncio reactor (the one the endpoint needs) names its loop.
        loop = getattr(self.http.reactor, "_asyncioEventloop", None)
        if loop is not None and not loop.is_running():
            connecting = Deferred.fromCoroutine(self._connect())
            try:
                state, policy = loop.run_until_complete(connecting.asFuture(loop))
            except Exception as error:
                message = self._one_line(error)
                if not self.exit_on_error:
                    raise StateStartError(message) from None
                self.log.error("gophergem {message}", message=message)
                stream = sys.__stderr__
                if stream is not None:
                    stream.write(f"gophergem: {message}\n")
                    stream.flush()
                raise SystemExit(1) from None
            self._build(state, policy)
        super().privilegedStartService()  # type: ignore[no-untyped-call]  # Twisted: unannotated

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if not self._built:
            self.ready = Deferred.fromCoroutine(self._start())
            self.ready.addErrback(self._refuse)

    def _build(self, state: Any, policy: Any) -> None:
        self._built = True
        self.http.add_to(self, state, policy)
        self.log.info("shared state ready")

    async def _start(self) -> None:
        state, policy = await self._connect()
        if self.running:
            self._build(state, policy)

    async def _connect(self) -> tuple[Any, Any]:
        """Open the configured backends; on a failure, close what was opened."""
        try:
            return await self._open()
        except BaseException:
            await self._close_backends()
            raise

    async def _open(self) -> tuple[Any, Any]:
        config, reactor = self.http.config, self.http.reactor
        # psycopg's pool reports each failed attempt through the logging
        # module; gophergem says it once, in its own words.
        logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
        from gophergem.state.backends import open_backend

        state = await open_backend(config, reactor)
        if config.state.database_url is not None:
            self._backends.append(state)
        policy = None
        if config.state.redis_url is not None:
            from gophergem.state.redis import RedisPolicy

            policy = await RedisPolicy.connect(
                config.state.redis_url,
                timeout=config.state.timeout_seconds,
                reactor=reactor,
                cacheable=self.cacheable(),
            )
            self._backends.append(policy)
        return state, policy

    def _one_line(self, error: BaseException) -> str:
        from gophergem.config import ConfigError
        from gophergem.errors import GophergemError
        from gophergem.state import SchemaBehind

        if isinstance(error, (ConfigError, SchemaBehind, *self.one_line)):
            return str(error)
        if isinstance(error, GophergemError):
            return f"{error.code}: {error.message}"
        self.log.failure("could not start the shared state", failure=Failure(error))
        return f"could not start the shared state: {type(error).__name__}"

    def _refuse(self, failure: Failure) -> None:
        message = self._one_line(failure.value or Exception("unknown"))
        self.log.error("gophergem {message}", message=message)
        stream = sys.__stderr__
        if stream is not None:
            stream.write(f"gophergem: {message}\n")
            stream.flush()
        self.exit_status = 1
        reactor = self.http.reactor
        if getattr(reactor, "running", False):
            reactor.stop()

    def stopService(self) -> Deferred[None]:
        stopped = super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        done: Deferred[None] = Deferred.fromCoroutine(self._close(stopped))
        return done

    async def _close(self, stopped: Any) -> None:
        if stopped is not None:
            await stopped
        await self._close_backends()

    async def _close_backends(self) -> None:
        backends, self._backends = self._backends, []
        for backend in reversed(backends):
            try:
                await settle(backend.close())
            except Exception:
                self.log.warn("a backend did not close cleanly")


class StateStartError(Exception):
    """A replica could not reach its shared state; the message is one line."""
