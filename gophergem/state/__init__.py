# -*- test-case-name: tests.test_state -*-
"""
Where gophergem keeps what it remembers, when that is more than files.

The store interfaces (L{gophergem.interfaces}) let a method return its value
or a L{Deferred} firing with it: the file and memory stores answer at once,
while the shared backends of a team server, PostgreSQL
(L{gophergem.state.postgres}) and Redis (L{gophergem.state.redis}), answer
over the network.  Callers wrap every store call in L{settle} and wait for
it, so that one code path serves both.

The backend modules import their drivers (psycopg, redis-py); nothing
imports them unless a database or Redis URL is configured.
"""

from __future__ import annotations

from typing import TypeVar

from twisted.internet.defer import Deferred, succeed

__all__ = ["SchemaBehind", "settle"]

_T = TypeVar("_T")


def settle(value: _T | Deferred[_T]) -> Deferred[_T]:
    """
    Return C{value} as a L{Deferred}: a Deferred passes through unchanged, any
    other value becomes one that has already fired with it.
    """
    if isinstance(value, Deferred):
        return value
    return succeed(value)


class SchemaBehind(Exception):
    """
    The shared database's schema is older than this version; the message is
    one line saying what to run.
    """

    def __init__(self) -> None:
        super().__init__("the database schema is behind this version: run gophergem db upgrade")
