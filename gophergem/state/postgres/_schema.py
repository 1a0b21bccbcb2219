# -*- test-case-name: tests.test_state_postgres -*-
"""
The PostgreSQL schema of gophergem, as an ordered list of migrations, and
the two things done with it: L{upgrade} (apply what is missing) and
L{pending} (what is missing).

Every migration runs in its own transaction under a transaction-scoped
advisory lock, so two C{gophergem db upgrade} runs (or two replicas) never
apply one twice; the table C{gophergem_schema} records each applied name.

The rows mirror the file stores' records (C{docs/stores.md}): a pin per
(principal, host, port), an identity per (principal, host, port, path) with
its certificate in clear and its private key sealed with AES-GCM, and the
feed store's subscriptions and entries per principal.  Principal C{''} is
the local owner (and the shared pins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MIGRATIONS", "applied", "pending", "upgrade"]

#: The advisory lock every schema change takes ("gophergem" in a bigint).
LOCK_KEY = 0x676F70686572

_INITIAL = """
CREATE TABLE gophergem_pins (
    principal   text NOT NULL,
    host        text NOT NULL CHECK (host <> ''),
    port        integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    fingerprint text NOT NULL,
    spki        text NOT NULL,
    first_seen  double precision NOT NULL,
    last_seen   double precision NOT NULL,
    not_before  double precision NOT NULL,
    expires     double precision NOT NULL,
    PRIMARY KEY (principal, host, port)
);

CREATE TABLE gophergem_identities (
    principal       text NOT NULL,
    host            text NOT NULL CHECK (host <> ''),
    port            integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    path            text NOT NULL CHECK (path LIKE '/%/' OR path = '/'),
    fingerprint     text NOT NULL,
    not_before      double precision NOT NULL,
    not_after       double precision NOT NULL,
    certificate_pem text NOT NULL,
    key_nonce       bytea NOT NULL,
    key_sealed      bytea NOT NULL,
    created         double precision NOT NULL,
    PRIMARY KEY (principal, host, port, path)
);

CREATE TABLE gophergem_subscriptions (
    principal    text NOT NULL,
    url          text NOT NULL CHECK (url <> ''),
    title        text,
    feed_type    text NOT NULL,
    added        text NOT NULL,
    last_checked text,
    last_error   text,
    PRIMARY KEY (principal, url)
);

CREATE TABLE gophergem_entries (
    principal  text NOT NULL,
    feed_url   text NOT NULL,
    url        text NOT NULL CHECK (url <> ''),
    title      text NOT NULL,
    published  text,
    first_seen text NOT NULL,
    read       boolean NOT NULL,
    PRIMARY KEY (principal, feed_url, url),
    FOREIGN KEY (principal, feed_url)
        REFERENCES gophergem_subscriptions (principal, url) ON DELETE CASCADE
);

CREATE INDEX gophergem_entries_unread
    ON gophergem_entries (principal, feed_url) WHERE NOT read;
"""

#: Every migration, oldest first: (name, SQL).  Never edit one that shipped;
#: add the next.
MIGRATIONS: tuple[tuple[str, str], ...] = (("0001_initial", _INITIAL),)

_SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS gophergem_schema (
    name       text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


async def applied(connection: AsyncConnection[Any]) -> list[str]:
    """The names of the migrations applied, in order; none when there is no schema table."""
    cursor = await connection.execute("SELECT to_regclass('gophergem_schema') IS NOT NULL")
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return []
    cursor = await connection.execute("SELECT name FROM gophergem_schema ORDER BY name")
    return [name for (name,) in await cursor.fetchall()]


async def pending(connection: AsyncConnection[Any]) -> list[str]:
    """The names of the migrations this version knows that are not applied yet."""
    done = set(await applied(connection))
    return [name for name, _ in MIGRATIONS if name not in done]


async def upgrade(connection: AsyncConnection[Any]) -> list[str]:
    """
    Apply every pending migration, each in its own transaction under the
    advisory lock; return the names applied (none when up to date).

    C{connection} must not be in a transaction (the caller's work is
    committed first).
    """
    await connection.commit()
    done: list[str] = []
    for name, sql in MIGRATIONS:
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            await connection.execute(_SCHEMA_TABLE)
            cursor = await connection.execute(
                "SELECT 1 FROM gophergem_schema WHERE name = %s", (name,)
            )
            if await cursor.fetchone() is not None:
                continue
            await connection.execute(sql.encode())
            await connection.execute("INSERT INTO gophergem_schema (name) VALUES (%s)", (name,))
        done.append(name)
    return done
