# -*- test-case-name: tests.test_cli_db -*-
"""
C{gophergem db upgrade|status}: the PostgreSQL schema of a team server
(C{GOPHERGEM_DATABASE_URL}).
"""

from __future__ import annotations

import argparse
from typing import Any

from gophergem.cli._runner import _fail
from gophergem.config import Config
from gophergem.errors import GophergemError


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem db …} commands."""
    db = command(
        commands,
        "db",
        "ACTION ...",
        "Manage the PostgreSQL schema of a team server (GOPHERGEM_DATABASE_URL).",
    )
    actions = db.add_subparsers(
        dest="db_command", metavar="ACTION", required=True, prog="gophergem db"
    )
    command(
        actions,
        "upgrade",
        "[settings]",
        "Apply the pending schema migrations and print each one (or: up to date).",
        "Apply the pending schema migrations, each in one transaction under an advisory "
        "lock (safe to run from several replicas at once), printing one line per migration "
        "applied, or 'up to date'. Exit status 1 when the database cannot be reached.",
    )
    command(
        actions,
        "status",
        "[settings]",
        "Print whether the schema is up to date (exit status 1 when migrations are pending).",
    )


def run(config: Config, args: argparse.Namespace) -> int:
    """
    C{gophergem db upgrade|status}, on a private asyncio loop with Twisted's
    asyncio reactor over it (the global reactor is not involved).
    """
    url = config.state.database_url
    if url is None:
        return _fail("GOPHERGEM_DATABASE_URL is not set: there is no database to manage.")
    import asyncio
    import logging

    from twisted.internet.asyncioreactor import AsyncioSelectorReactor

    from gophergem.state.postgres import PostgresState

    # psycopg gives its logger a level of its own (WARNING) unless one is
    # set first: follow ours, so a refused connection is our one line only.
    logging.getLogger("psycopg").setLevel(logging.getLogger().getEffectiveLevel())

    async def work() -> list[str]:
        loop = asyncio.get_running_loop()
        reactor = AsyncioSelectorReactor(loop)
        timeout = config.state.timeout_seconds
        connecting = PostgresState.connect(url, key=None, timeout=timeout, reactor=reactor)
        state = await connecting.asFuture(loop)
        try:
            if args.db_command == "upgrade":
                return await state.upgrade().asFuture(loop)
            return await state.pending().asFuture(loop)
        finally:
            await state.close().asFuture(loop)

    try:
        names = asyncio.run(work())
    except GophergemError as error:
        return _fail(f"{error.code}: {error.message}", 1)
    if args.db_command == "upgrade":
        for name in names:
            print(f"applied {name}")
        if not names:
            print("up to date")
        return 0
    for name in names:
        print(f"pending {name}")
    if not names:
        print("up to date")
    return 1 if names else 0
