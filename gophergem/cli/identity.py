# -*- test-case-name: tests.test_cli,tests.test_cli_team -*-
"""
C{gophergem identity list|create|remove}: the identity tools' operations
on the client identities the daemon uses, for the person at the terminal.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from gophergem.cli._runner import _refused, _show
from gophergem.cli._state import _on_store, _store_actions
from gophergem.config import Config
from gophergem.errors import GophergemError


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem identity …} commands."""
    identity = command(
        commands, "identity", "ACTION ...", "Manage Gemini client identities (certificates)."
    )
    identity_commands = identity.add_subparsers(
        dest="identity_command", metavar="ACTION", required=True, prog="gophergem identity"
    )
    listing = command(
        identity_commands,
        "list",
        "[--format readable|json] [settings] [HOST]",
        "List identities, optionally of one host.",
    )
    listing.add_argument("host", nargs="?")
    create = command(
        identity_commands,
        "create",
        "[--format readable|json] [settings] URL",
        "Create an identity for a URL's scope (host, port and path prefix).",
    )
    create.add_argument("url", help="gemini://host/ covers the whole capsule.")
    remove = command(
        identity_commands,
        "remove",
        "[--format readable|json] [settings] URL FINGERPRINT",
        "Remove an identity, naming its fingerprint.",
    )
    remove.add_argument("url", help="The identity's scope, as listed.")
    remove.add_argument("fingerprint")
    _store_actions(identity_commands)


def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem identity list|create|remove}: the operations the identity
    tools run, on the identities of the owner or of C{--principal}, where the
    daemon keeps them.
    """
    return _on_store(config, args, environ, _identities, _identity_with, identities=True)


def _identities(state: Any, principal: str | None) -> Any:
    return state.identities(principal)


async def _identity_with(identities: Any, args: argparse.Namespace, now: float) -> int:
    """Run one C{gophergem identity} action on C{identities}; return the exit status."""
    from gophergem.trust import operations as ops

    action = args.identity_command
    try:
        if action == "list":
            listed = await ops.list_identities(identities, args.host)
            entries = [ops.identity_entry(i, now) for i in listed]
            lines = [_identity_line(entry) for entry in entries] or ["No identities."]
            return _show(args, {"kind": "client_cert_list", "entries": entries}, lines)
        if action == "create":
            identity = await ops.create_identity(identities, args.url, now)
        else:
            identity = await ops.remove_identity(identities, args.url, args.fingerprint)
    except GophergemError as error:
        return _refused(error, args)
    entry = ops.identity_entry(identity, now)
    verb = "Created" if action == "create" else "Removed"
    data = {"kind": "client_cert_update", "action": action, "entry": entry}
    return _show(args, data, [f"{verb} the identity {_identity_line(entry)}"])


def _identity_line(entry: dict[str, Any]) -> str:
    return (
        f"{entry['url']}  {entry['fingerprint']}\n"
        f"    valid {entry['not_before']} to {entry['not_after']}"
        f"{' (expired)' if entry['expired'] else ''}"
    )
