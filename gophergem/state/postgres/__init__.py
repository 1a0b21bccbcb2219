# -*- test-case-name: tests.test_state_postgres -*-
"""
PostgreSQL as the shared store of a team server: pins, client identities
and feed subscriptions, for every replica at once.

L{PostgresState.connect} opens one psycopg asyncio connection pool; from
the state come the stores (L{PostgresPinStore}, L{PostgresIdentityStore},
L{PostgresFeedStore}), each for one principal, each method returning a
L{Deferred}.  Every call is one transaction bounded by the state timeout:
a server that is down, slow or refusing gives
L{StateUnavailable<gophergem.errors.StateUnavailable>}, never a hang, and
no message names the URL or its password.

This package imports psycopg, so only the team mode (a database URL is
configured) imports it; it needs Twisted's asyncio reactor.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import math
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from twisted.internet.defer import Deferred
from zope.interface import implementer

from gophergem._plural import counted
from gophergem.config import Config, ConfigError
from gophergem.interfaces import IStateBackend
from gophergem.state import SchemaBehind
from gophergem.state.postgres._feeds import PostgresFeedStore
from gophergem.state.postgres._identities import PostgresIdentityStore
from gophergem.state.postgres._pins import PostgresPinStore
from gophergem.state.postgres._runner import Runner, run_bounded, unavailable
from gophergem.state.postgres._schema import MIGRATIONS, pending, upgrade

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "MIGRATIONS",
    "PostgresFeedStore",
    "PostgresIdentityStore",
    "PostgresPinStore",
    "PostgresState",
    "SchemaBehind",
    "load_database_key",
]

#: How long L{PostgresState.health} waits at most.
HEALTH_TIMEOUT = 1.0

#: Connections the pool keeps open, and the most it opens.
MIN_CONNECTIONS = 1
MAX_CONNECTIONS = 10


def load_database_key(path: str | os.PathLike[str]) -> bytes:
    """
    Read the 32-byte key that seals identity private keys from C{path}: the
    raw 32 bytes, or them written as 64 hexadecimal digits or in base64.

    @raise ConfigError: One line saying what is wrong (never the key).
    """
    try:
        with open(path, "rb") as f:
            content = f.read(4096)
    except OSError as e:
        raise ConfigError(
            f"GOPHERGEM_DATABASE_KEY_FILE cannot be read ({e.strerror or 'error'})"
        ) from None
    if len(content) == 32:
        return content
    text = content.strip()
    for decode in (bytes.fromhex, base64.b64decode, base64.urlsafe_b64decode):
        try:
            key = decode(text.decode("ascii"))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            continue
        if len(key) == 32:
            return key
    raise ConfigError(
        "GOPHERGEM_DATABASE_KEY_FILE must hold a 32-byte key "
        "(raw, 64 hex digits or base64; e.g. `openssl rand -hex 32`)"
    )


def _loop_of(reactor: object) -> asyncio.AbstractEventLoop:
    loop = getattr(reactor, "_asyncioEventloop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop):
        raise TypeError("the PostgreSQL stores need Twisted's asyncio reactor")
    return loop


@implementer(IStateBackend)
@attrs.define
class PostgresState:
    """
    One connection pool to the database and the stores on it.

    Make it with L{connect}; stop it with L{close}.

    @ivar timeout: Seconds one call may take.
    """

    _runner: Runner
    _key: bytes | None = attrs.field(repr=False)
    timeout: float
    pins_per_principal: bool = False
    tofu_enabled: bool = True
    identities_enabled: bool = True
    _stores: dict[tuple[str, str], Any] = attrs.field(factory=dict, init=False)

    @classmethod
    def from_config(
        cls, config: Config, reactor: object, *, identities: bool = True
    ) -> Deferred[PostgresState]:
        """
        The state C{config} names (C{GOPHERGEM_DATABASE_URL}), connected and
        its schema checked: what the daemon and the admin commands open.

        @param identities: Whether client identities are used (then, with
            them switched on, the key file is required).
        @raise ConfigError: When the key file is needed and not named, or
            does not hold a key (at once, before connecting).
        @return: A Deferred failing with L{StateUnavailable} when the
            database cannot be reached, or L{SchemaBehind} (the pool closed).
        """
        if config.state.database_url is None:
            raise ConfigError("GOPHERGEM_DATABASE_URL is not set")
        key = None
        if identities and config.gemini.client_certs_enabled:
            if config.state.database_key_file is None:
                raise ConfigError(
                    "GOPHERGEM_DATABASE_KEY_FILE must name the key that encrypts client "
                    "identities' private keys in the database"
                )
            key = load_database_key(config.state.database_key_file)
        connecting = cls.connect(
            config.state.database_url,
            key=key,
            timeout=config.state.timeout_seconds,
            reactor=reactor,
            pins_per_principal=config.state.pins_per_principal,
            tofu_enabled=config.gemini.tofu_enabled,
            identities_enabled=config.gemini.client_certs_enabled,
        )

        async def checked() -> PostgresState:
            state = await connecting
            try:
                current = await state.schema_current()
            except BaseException:
                await state.close()
                raise
            if not current:
                await state.close()
                raise SchemaBehind()
            return state

        return Deferred.fromCoroutine(checked())

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        key: bytes | None,
        timeout: float,
        reactor: object,
        pins_per_principal: bool = False,
        tofu_enabled: bool = True,
        identities_enabled: bool = True,
    ) -> Deferred[PostgresState]:
        """
        Open a pool to C{url} (a C{postgresql://} URL) and wait for its first
        connection, within C{timeout}.

        @param key: The 32-byte key sealing identity private keys, or C{None}
            when identities are not kept here (then L{identities} refuses).
        @param reactor: Twisted's asyncio reactor; the pool lives on its loop.
        @param pins_per_principal: Give each principal pins of their own
            (else L{pins} is the shared store whoever asks).
        @param tofu_enabled: Whether pins are kept (else L{pins} is C{None}).
        @param identities_enabled: Whether identities are kept (else
            L{identities} is C{None}).
        @return: A Deferred firing with the state, or failing with
            L{StateUnavailable} when the server cannot be reached in time.
        """
        if key is not None and len(key) != 32:
            raise ValueError("the database key must be 32 bytes")
        loop = _loop_of(reactor)

        async def opening() -> PostgresState:
            from psycopg_pool import PoolTimeout

            alarm: list[Callable[[], None]] = []
            pool = _pool(url, timeout, lambda: alarm[0]() if alarm else None)
            try:
                await pool.open(wait=True, timeout=timeout)
            except PoolTimeout:
                await pool.close(timeout=0)
                raise unavailable(
                    f"PostgreSQL could not be reached within {counted(timeout, 'second')}."
                ) from None
            except BaseException:
                await pool.close(timeout=0)
                raise
            runner = Runner(pool, timeout, loop)
            alarm.append(runner.suspect)
            return cls(
                runner,
                key,
                timeout,
                pins_per_principal,
                tofu_enabled,
                identities_enabled,
            )

        bound = timeout + 1.0

        async def bounded() -> PostgresState:
            # The pool waits for its first connection for at most C{timeout};
            # this bound leaves it room to say so itself.  Unlike a query,
            # opening waits for its own clean-up once cancelled (closing a
            # pool that never connected takes a loop turn or two): a command
            # that gives up then ends with nothing of it left running, which
            # its loop, closed at exit, would report as an ignored exception.
            try:
                return await asyncio.wait_for(opening(), bound)
            except TimeoutError:
                raise unavailable(
                    f"PostgreSQL did not answer within {counted(bound, 'second')}."
                ) from None

        # A last resort, should the clean-up itself hang.
        return run_bounded(loop, bounded(), bound + 2.0)

    def _store(self, kind: str, principal: str, make: Any) -> Any:
        store = self._stores.get((kind, principal))
        if store is None:
            store = self._stores[kind, principal] = make()
        return store

    def pins(self, principal: str | None = None) -> PostgresPinStore | None:
        """
        The pin store C{principal} uses: the shared pins unless pins are kept
        per principal; C{None} when trust on first use is off.
        """
        if not self.tofu_enabled:
            return None
        owner = (principal or "") if self.pins_per_principal else ""
        store: PostgresPinStore = self._store(
            "pins", owner, lambda: PostgresPinStore(self._runner, owner)
        )
        return store

    def identities(self, principal: str | None) -> PostgresIdentityStore | None:
        """
        The identity store of C{principal} (C{None}: the local owner), or
        C{None} when identities are off.

        @raise ConfigError: When the state has no database key.
        """
        if not self.identities_enabled:
            return None
        if self._key is None:
            raise ConfigError(
                "GOPHERGEM_DATABASE_KEY_FILE is required to keep client identities in "
                "PostgreSQL (or turn client certificates off)"
            )
        key, owner = self._key, principal or ""
        store: PostgresIdentityStore = self._store(
            "identities", owner, lambda: PostgresIdentityStore(self._runner, key, owner)
        )
        return store

    def feeds(self, principal: str | None) -> PostgresFeedStore:
        """The feed store of C{principal} (C{None}: the local owner)."""
        owner = principal or ""
        store: PostgresFeedStore = self._store(
            "feeds", owner, lambda: PostgresFeedStore(self._runner, owner)
        )
        return store

    def feed_principals(self) -> Deferred[list[str | None]]:
        """Every principal with a subscription: the owner (C{None}) first, then the others."""

        async def work(connection: AsyncConnection[Any]) -> list[str | None]:
            cursor = await connection.execute(
                "SELECT DISTINCT principal FROM gophergem_subscriptions "
                "WHERE principal <> '' ORDER BY principal"
            )
            found: list[str | None] = [None]
            found.extend(row[0] for row in await cursor.fetchall())
            return found

        return self._runner.call(work)

    def health(self) -> Deferred[dict[str, Any]]:
        """
        Fire, never fail, with C{{"ok": bool, "detail": str}} after asking the
        server a trivial question within L{HEALTH_TIMEOUT}: through the pool,
        or, while the server is known to be down, on a connection of its own
        (so the answer turns the moment the server is back).
        """

        async def ping(connection: AsyncConnection[Any]) -> None:
            await connection.execute("SELECT 1")

        runner = self._runner
        budget = min(HEALTH_TIMEOUT, runner.timeout)
        if runner.down:
            d: Deferred[Any] = run_bounded(runner.loop, runner.check_now(), budget)
        else:
            d = run_bounded(runner.loop, runner._transaction(ping), budget, runner.suspect)

        def ok(_: object) -> dict[str, Any]:
            return {"ok": True, "detail": "PostgreSQL answers."}

        def down(failure: Any) -> dict[str, Any]:
            error = failure.value
            return {"ok": False, "detail": getattr(error, "message", "PostgreSQL failed.")}

        return d.addCallbacks(ok, down)

    def upgrade(self) -> Deferred[list[str]]:
        """
        Apply the pending migrations, each in one transaction under an
        advisory lock; fire with the names applied (C{[]}: up to date).
        """
        runner = self._runner
        # Migrations may take longer than a store call; still bounded.
        return run_bounded(runner.loop, runner._transaction(upgrade), max(runner.timeout, 60.0))

    def pending(self) -> Deferred[list[str]]:
        """The names of the migrations not applied yet."""
        return self._runner.call(pending)

    def schema_current(self) -> Deferred[bool]:
        """Fire with whether every migration this version knows is applied."""
        return self.pending().addCallback(lambda names: not names)

    def close(self) -> Deferred[None]:
        """Close the pool: its connections are closed, calls after this fail."""
        runner = self._runner
        runner.stop()
        return Deferred.fromFuture(runner.loop.create_task(runner.pool.close(timeout=5.0)))


def _pool(url: str, timeout: float, broken: Callable[[], None]) -> AsyncConnectionPool[Any]:
    """
    The pool; C{broken} is called when a connection it was about to hand
    out fails its check (the server may be gone: the pool itself would only
    try others, and a call would learn nothing until its deadline).
    """
    from psycopg_pool import AsyncConnectionPool

    async def check(connection: AsyncConnection[Any]) -> None:
        try:
            await AsyncConnectionPool.check_connection(connection)
        except Exception:
            broken()
            raise

    return AsyncConnectionPool(
        url,
        min_size=MIN_CONNECTIONS,
        max_size=MAX_CONNECTIONS,
        open=False,
        timeout=timeout,
        check=check,
        # The pool's reconnection doubles its wait after each failure
        # (1, 2, 4, 8... s) until this; a short cycle, restarted by the next
        # call, keeps it from sleeping through the server's return.
        reconnect_timeout=max(2.0, 2 * timeout),
        kwargs=connection_settings(timeout),
        name="gophergem",
    )


def connection_settings(timeout: float) -> dict[str, Any]:
    """
    libpq settings of every connection: a connect timeout (whole seconds,
    at least 2), and TCP keepalives and a TCP user timeout, so that a
    connection to a server that vanished without closing it (a crashed
    host, a dropped route) is found dead in seconds, not after the
    kernel's two hours.
    """
    return {
        "connect_timeout": max(2, math.ceil(timeout)),
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": 10_000,  # milliseconds unacknowledged
    }
