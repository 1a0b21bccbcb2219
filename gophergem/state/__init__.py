# -*- test-case-name: tests.test_state_postgres,tests.test_cli_db -*-
"""
Where gophergem keeps what it remembers, when that is more than files.

The store interfaces (L{gophergem.interfaces}) let a method return its value
or a L{Deferred} firing with it: the file and memory stores answer at once,
while the shared backends of a team server, PostgreSQL
(L{gophergem.state.postgres}) and Redis (L{gophergem.state.redis}), answer
over the network.  Callers wrap every store call in
L{gophergem._defer.settle} and wait for it, so that one code path serves
both.

The backend modules import their drivers (psycopg, redis-py); nothing
imports them unless a database or Redis URL is configured.
"""

from __future__ import annotations

__all__ = ["SchemaBehind"]


class SchemaBehind(Exception):
    """
    The shared database's schema is older than this version; the message is
    one line saying what to run.
    """

    def __init__(self) -> None:
        super().__init__("the database schema is behind this version: run gophergem db upgrade")
