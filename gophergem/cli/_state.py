# -*- test-case-name: tests.test_cli_stores,tests.test_cli_team -*-
"""
The state the daemon uses, opened for the C{trust}, C{identity} and
C{feeds} commands: PostgreSQL on a team server, else the files of this
machine; for the owner or for the principal C{--principal} names.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from gophergem.cli._runner import (
    _error_line,
    _fail,
    _format_options,
    _on_own_reactor,
    _principal_option,
)
from gophergem.config import Config
from gophergem.errors import GophergemError


class _Refusal(Exception):
    """A command that cannot run, said in one line, with its exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _principal(args: argparse.Namespace, config: Config) -> str | None:
    """
    The principal C{--principal} names (C{None}: the owner).

    @raise _Refusal: For an empty name, or a principal given to C{trust}
        while pins are shared by everyone.
    """
    principal: str | None = getattr(args, "principal", None)
    if principal is None:
        return None
    if not principal.strip() or not principal.isprintable():
        raise _Refusal("--principal needs a name, such as token:alice or https://idp#sub.")
    if args.command == "trust" and not config.state.pins_per_principal:
        raise _Refusal(
            "trust --principal: pins are shared by every principal unless "
            "GOPHERGEM_PINS_PER_PRINCIPAL is true; leave --principal out."
        )
    return principal


async def _open_state(
    config: Config, environ: Mapping[str, str], reactor: Any, *, identities: bool
) -> Any:
    """
    The state the daemon uses, an L{IStateBackend<gophergem.interfaces.IStateBackend>}
    picked by L{gophergem.state.backends.open_backend}: the database when
    C{GOPHERGEM_DATABASE_URL} is set (connected, its schema checked), else
    the files of this machine.

    @param identities: Whether the command uses client identities (then a
        database needs C{GOPHERGEM_DATABASE_KEY_FILE}).
    @raise _Refusal: When the schema is behind.
    @raise GophergemError: C{STATE_UNAVAILABLE} when the database cannot be
        reached.
    @raise ValueError: A setting that cannot be used (a bad path or key file).
    """
    from gophergem.state.backends import open_backend

    if config.state.database_url is None:
        return await open_backend(config, reactor, environ=environ)
    import logging

    from gophergem.state import SchemaBehind

    # The driver's own warnings (a refused connection) would be lines besides
    # ours: they go to the log file, when there is one, and nowhere else.
    level = logging.getLogger().getEffectiveLevel() if config.log.file else logging.CRITICAL
    logging.getLogger("psycopg").setLevel(level)
    try:
        return await open_backend(config, reactor, environ=environ, identities=identities)
    except SchemaBehind as behind:
        raise _Refusal(f"{behind}.", 1) from None


def _with_state(
    config: Config,
    args: argparse.Namespace,
    environ: Mapping[str, str],
    use: Callable[[Any, str | None, Any], Awaitable[int]],
    *,
    identities: bool,
) -> int:
    """
    Open the state the daemon uses (L{_open_state}) on a reactor of the
    command's own, run C{use(state, principal, reactor)}, close the state,
    and return the exit status.

    A state that cannot be opened is one line: status 2 for a setting or
    argument, 1 for a database that cannot be reached or used.
    """
    from gophergem._defer import settle

    try:
        principal = _principal(args, config)
    except _Refusal as refusal:
        return _fail(refusal.message, refusal.status)

    async def work(reactor: Any) -> int:
        try:
            state = await _open_state(config, environ, reactor, identities=identities)
        except _Refusal as refusal:
            return _fail(refusal.message, refusal.status)
        except GophergemError as error:
            return _fail(_error_line(error), 1)
        except ValueError as error:  # ConfigError too
            return _fail(str(error))
        try:
            return await use(state, principal, reactor)
        except GophergemError as error:
            return _fail(_error_line(error), 1)
        except ValueError as error:
            return _fail(str(error))
        except OSError as error:  # a principal's directory that cannot be made
            return _fail(f"{error.strerror or error}: {error.filename}", 1)
        finally:
            # The answer is given: a pool that ends badly is no news.
            with contextlib.suppress(Exception):
                await settle(state.close())

    return _on_own_reactor(work)


def _on_store(
    config: Config,
    args: argparse.Namespace,
    environ: Mapping[str, str],
    store: Callable[[Any, str | None], Any],
    action: Callable[[Any, argparse.Namespace, float], Awaitable[int]],
    *,
    identities: bool,
) -> int:
    """
    Run one action of a store command (C{trust}, C{identity}) on the state
    the daemon uses (L{_with_state}): C{action(store(state, principal),
    args, now)}, where C{store} picks the owner's or C{--principal}'s pins
    or identities; return the exit status.
    """

    async def use(state: Any, principal: str | None, reactor: Any) -> int:
        return await action(store(state, principal), args, time.time())

    return _with_state(config, args, environ, use, identities=identities)


def _store_actions(actions: Any, note: str = "", *, but: Any = None) -> None:
    """
    Give every action of a store command (C{trust}, C{identity}), C{but}
    one, C{--format readable|json} and C{--principal NAME}.
    """
    for sub in actions.choices.values():
        if sub is not but:
            _format_options(sub)
            _principal_option(sub, note)
