# -*- test-case-name: tests.test_state_backends,tests.test_cli_db -*-
"""
Where gophergem keeps what it remembers: every store implementation.

  - L{gophergem.state.documents}: one JSON document in one file, locked
    and replaced atomically, under every file store;
  - L{gophergem.state.paths}: where the files are by default;
  - L{gophergem.state.files}: the file stores, and C{FileState}, those of
    every principal on one machine;
  - L{gophergem.state.memory}: the same stores without files, for tests;
  - L{gophergem.state.postgres}: the stores of a team server, in one
    database shared by every replica;
  - L{gophergem.state.redis}: the politeness state (pacing, cap, 44 board,
    caches) shared by every replica;
  - L{gophergem.state.backends}: the one place the daemon's
    L{IStateBackend<gophergem.interfaces.IStateBackend>} (files or
    PostgreSQL) is chosen;
  - L{gophergem.state.keys}: the secret keys replicas share.

The rules the stores apply live with the values they keep
(L{gophergem.trust}, L{gophergem.feeds}).

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
