# -*- test-case-name: tests.test_cli_token -*-
"""
C{gophergem token add|remove|list}: the bearer tokens of the HTTP
endpoint's token file (C{GOPHERGEM_AUTH_TOKENS_FILE}).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from gophergem._time import format_utc
from gophergem.cli._runner import _error_line, _fail
from gophergem.config import Config
from gophergem.errors import GophergemError, InvalidRequest


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem token …} commands."""
    token = command(
        commands,
        "token",
        "ACTION ...",
        "Manage the bearer tokens of the HTTP endpoint (GOPHERGEM_AUTH_TOKENS_FILE).",
    )
    actions = token.add_subparsers(
        dest="token_command", metavar="ACTION", required=True, prog="gophergem token"
    )
    add = command(
        actions,
        "add",
        "[settings] NAME",
        "Make a new token for NAME and print it once; a name that has one gets a new one.",
        "Make a new 256-bit token for NAME and print it on standard output, once: only its "
        "SHA-256 is stored. A NAME that has a token gets a new one and the old one stops "
        "working (rotation).",
    )
    remove = command(
        actions,
        "remove",
        "[settings] NAME",
        "Remove NAME's token (exit status 1 if it has none).",
    )
    for parser_ in (add, remove):
        parser_.add_argument("name", metavar="NAME", help="1-64 of A-Z a-z 0-9 . _ @ -")
    command(actions, "list", "[settings]", "List the names and when their tokens were made.")


def run(config: Config, args: argparse.Namespace) -> int:
    """C{gophergem token add|remove|list}: the token file of the HTTP endpoint."""
    from gophergem.auth import tokens

    path = config.auth.tokens_file
    if path is None:
        return _fail(
            f"token {args.token_command}: set GOPHERGEM_AUTH_TOKENS_FILE "
            "(or --gophergem-auth-tokens-file) to the token file."
        )
    action = args.token_command
    try:
        if action == "list":
            listed = tokens.list_tokens(path)
            for name, created in listed:
                print(f"{name}  created {_utc(created)}")
            if not listed:
                print("No tokens.")
            return 0
        if action == "remove":
            if not tokens.remove_token(path, args.name):
                return _fail(f"token remove: {args.name!r} has no token.", 1)
            print(f"Removed the token of {args.name}.")
            return 0
        issued = tokens.issue_token(path, args.name)
    except InvalidRequest as error:
        return _fail(f"token {action}: {error.message}")
    except GophergemError as error:
        return _fail(f"token {action}: {_error_line(error)}", 1)
    print(issued.token)
    sys.stdout.flush()
    note = (
        f"Replaced the token of {issued.name}: the old one no longer works."
        if issued.replaced
        else f"Made a token for {issued.name}."
    )
    print(f"{note} It is shown only this once; only its hash is kept.", file=sys.stderr)
    return 0


def _utc(seconds: float) -> str:
    """A token's creation time: the UTC second it falls in, or the number."""
    try:
        return format_utc(math.floor(seconds))
    except (OverflowError, OSError, ValueError):  # a hand-edited time out of range
        return f"{seconds:g} (seconds since 1970)"
