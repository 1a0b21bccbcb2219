# -*- test-case-name: tests.test_state_pins -*-
"""
L{PostgresPinStore}: certificate pins in PostgreSQL, one row per
(principal, host, port), with the semantics of the file store
(L{gophergem.state.files.pins}) and the rules of L{gophergem.trust.pins};
every method returns a L{Deferred}.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from twisted.internet.defer import Deferred, fail
from zope.interface import implementer

from gophergem.interfaces import IPinStore
from gophergem.trust import Pin
from gophergem.trust.pins import encode_pin

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from gophergem.state.postgres._runner import Runner

__all__ = ["PostgresPinStore"]

_COLUMNS = "host, port, fingerprint, spki, first_seen, last_seen, not_before, expires"


def _pin(row: tuple[Any, ...]) -> Pin:
    host, port, fingerprint, spki, first_seen, last_seen, not_before, expires = row
    return Pin(
        host=host,
        port=port,
        fingerprint=fingerprint,
        spki=spki,
        first_seen=first_seen,
        last_seen=last_seen,
        not_before=not_before,
        expires=expires,
    )


def _values(principal: str, pin: object) -> tuple[Any, ...]:
    entry = encode_pin(pin)  # every pin store's validation: TypeError or ValueError
    return (
        principal,
        entry["host"],
        entry["port"],
        entry["fingerprint"],
        entry["spki"],
        float(entry["first_seen"]),
        float(entry["last_seen"]),
        float(entry["not_before"]),
        float(entry["expires"]),
    )


@implementer(IPinStore)
@attrs.frozen
class PostgresPinStore:
    """
    The pins of one principal (C{''}: shared by everyone) in PostgreSQL.

    First use is one transaction: C{INSERT ... ON CONFLICT DO NOTHING
    RETURNING}, then, when another writer won, a read of its pin (READ
    COMMITTED sees it once the winner has committed; the loser waited for
    that).  Every Deferred fails with L{StateUnavailable} when PostgreSQL
    is down or slow, with C{TypeError}/C{ValueError} for a pin that cannot
    be stored.
    """

    _runner: Runner
    principal: str = ""

    def get(self, host: str, port: int) -> Deferred[Pin | None]:
        """The pin for C{host}:C{port}, or C{None}."""

        async def work(connection: AsyncConnection[Any]) -> Pin | None:
            cursor = await connection.execute(
                f"SELECT {_COLUMNS} FROM gophergem_pins"
                " WHERE principal = %s AND host = %s AND port = %s",
                (self.principal, host, port),
            )
            row = await cursor.fetchone()
            return None if row is None else _pin(row)

        return self._runner.call(work)

    def put(self, pin: Pin) -> Deferred[None]:
        """Insert or replace the pin for C{pin.host}:C{pin.port}."""
        try:
            values = _values(self.principal, pin)
        except (TypeError, ValueError) as e:
            return fail(e)

        async def work(connection: AsyncConnection[Any]) -> None:
            await connection.execute(
                f"INSERT INTO gophergem_pins (principal, {_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (principal, host, port) DO UPDATE SET"
                " fingerprint = excluded.fingerprint, spki = excluded.spki,"
                " first_seen = excluded.first_seen, last_seen = excluded.last_seen,"
                " not_before = excluded.not_before, expires = excluded.expires",
                values,
            )

        return self._runner.call(work)

    def put_new(self, pin: Pin) -> Deferred[Pin | None]:
        """
        Store C{pin} unless its host and port are pinned; fire with C{None}
        when stored, else with the pin already there, unchanged.
        """
        try:
            values = _values(self.principal, pin)
        except (TypeError, ValueError) as e:
            return fail(e)

        async def work(connection: AsyncConnection[Any]) -> Pin | None:
            cursor = await connection.execute(
                f"INSERT INTO gophergem_pins (principal, {_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (principal, host, port) DO NOTHING RETURNING port",
                values,
            )
            if await cursor.fetchone() is not None:
                return None
            cursor = await connection.execute(
                f"SELECT {_COLUMNS} FROM gophergem_pins"
                " WHERE principal = %s AND host = %s AND port = %s",
                values[:3],
            )
            row = await cursor.fetchone()
            if row is None:  # the winner was removed meanwhile: try once more
                await connection.execute(
                    f"INSERT INTO gophergem_pins (principal, {_COLUMNS})"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    values,
                )
                return None
            return _pin(row)

        return self._runner.call(work)

    def remove(self, host: str, port: int) -> Deferred[bool]:
        """Forget the pin for C{host}:C{port}; fire with whether there was one."""

        async def work(connection: AsyncConnection[Any]) -> bool:
            cursor = await connection.execute(
                "DELETE FROM gophergem_pins WHERE principal = %s AND host = %s AND port = %s",
                (self.principal, host, port),
            )
            return cursor.rowcount > 0

        return self._runner.call(work)

    def all(self, host: str | None = None) -> Deferred[list[Pin]]:
        """Every pin (for C{host} only, when given), sorted by host then port."""

        async def work(connection: AsyncConnection[Any]) -> list[Pin]:
            if host is None:
                cursor = await connection.execute(
                    f"SELECT {_COLUMNS} FROM gophergem_pins WHERE principal = %s",
                    (self.principal,),
                )
            else:
                cursor = await connection.execute(
                    f"SELECT {_COLUMNS} FROM gophergem_pins WHERE principal = %s AND host = %s",
                    (self.principal, host),
                )
            # Sorted here, not by the server's collation: the same order as
            # the file store on every database.
            return sorted((_pin(row) for row in await cursor.fetchall()), key=_order)

        return self._runner.call(work)


def _order(pin: Pin) -> tuple[str, int]:
    return (pin.host, pin.port)
