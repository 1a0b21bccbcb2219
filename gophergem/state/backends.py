# -*- test-case-name: tests.test_state_backends -*-
"""
The one place a state backend is chosen from the configuration.

A daemon (and each admin command working on the daemon's stores) keeps
every principal's stores in one L{IStateBackend}: the files of this machine
(L{gophergem.state.files.FileState}), or, when C{GOPHERGEM_DATABASE_URL} is
set, one PostgreSQL database shared by every replica
(L{gophergem.state.postgres.PostgresState}).  The database driver is
imported only then.
"""

from __future__ import annotations

from collections.abc import Mapping

from twisted.internet.defer import Deferred, succeed

from gophergem.config import Config
from gophergem.interfaces import IStateBackend

__all__ = ["file_backend", "open_backend"]


def open_backend(
    config: Config,
    reactor: object,
    *,
    environ: Mapping[str, str] | None = None,
    identities: bool = True,
) -> Deferred[IStateBackend]:
    """
    The state backend C{config} names, ready for use: the database,
    connected and its schema checked, when C{config.state.database_url} is set;
    else this machine's files, at the places C{config} (and C{environ}'s
    data directory) name.

    @param reactor: Twisted's asyncio reactor (the database driver runs on
        its loop); unused for files.
    @param identities: Whether the caller uses client identities (then a
        database needs C{GOPHERGEM_DATABASE_KEY_FILE}).
    @raise ValueError: At once, for a setting that cannot be used (a data
        directory that cannot be found, a missing or bad key file:
        L{ConfigError<gophergem.config.ConfigError>}).
    @return: A Deferred firing with the backend, or failing with
        L{StateUnavailable<gophergem.errors.StateUnavailable>} when the
        database cannot be reached or
        L{SchemaBehind<gophergem.state.SchemaBehind>} when its schema is
        older than this version.
    """
    if config.state.database_url is None:
        return succeed(file_backend(config, environ))
    from gophergem.state.postgres import PostgresState

    connecting = PostgresState.from_config(config, reactor, identities=identities)

    async def connected() -> IStateBackend:
        return await connecting

    return Deferred.fromCoroutine(connected())


def file_backend(config: Config, environ: Mapping[str, str] | None = None) -> IStateBackend:
    """
    This machine's files as a state backend, at once: what L{open_backend}
    gives without a database URL, for callers that cannot wait (a daemon
    wired before its reactor runs).

    @raise ValueError: For a data directory that cannot be found.
    """
    from gophergem.state.files import FileState

    files: IStateBackend = FileState.from_config(config, environ)
    return files
