# -*- test-case-name: tests.test_cli,tests.test_cli_stores -*-
"""
C{gophergem trust list|remove|pin|import}: the trust tools' operations on
the pins the daemon uses, with the same interlocks, for the person at the
terminal; and the import of gopher-mcp's pins.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any

from gophergem.cli._runner import _fail, _refused, _show
from gophergem.cli._state import _on_store, _store_actions, _with_state
from gophergem.config import Config
from gophergem.errors import GophergemError, InvalidRequest, PinExists


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem trust …} commands."""
    trust = command(commands, "trust", "ACTION ...", "Manage Gemini certificate pins.")
    trust_commands = trust.add_subparsers(
        dest="trust_command", metavar="ACTION", required=True, prog="gophergem trust"
    )
    import_ = command(
        trust_commands,
        "import",
        "[settings] [PATH]",
        "Import pins from a gopher-mcp tofu.json (its default place if no PATH).",
    )
    import_.add_argument("path", nargs="?")
    listing = command(
        trust_commands,
        "list",
        "[--format readable|json] [settings] [HOST]",
        "List pinned certificates, optionally of one host.",
    )
    listing.add_argument("host", nargs="?")
    remove = command(
        trust_commands,
        "remove",
        "[--port N] [--format readable|json] [settings] HOST FINGERPRINT",
        "Remove a pin, naming the fingerprint pinned now.",
    )
    pin = command(
        trust_commands,
        "pin",
        "[--port N] [--replace] [--format readable|json] [settings] HOST FINGERPRINT",
        "Pin a fingerprint you got from a trusted channel (the capsule's operator).",
        "Pin a fingerprint you got from a trusted channel (the capsule's operator). A host "
        "pinned to another certificate keeps its pin unless you agree to replace it: with "
        "--replace, or by answering y when asked at a terminal. Without either, nothing "
        "changes (PIN_EXISTS, exit status 1).",
    )
    for parser_ in (remove, pin):
        parser_.add_argument("host")
        parser_.add_argument("fingerprint", help="SHA-256: hex, colons and sha256: optional.")
        parser_.add_argument("--port", metavar="N", type=int, default=1965, help="The port (1965).")
    pin.add_argument(
        "--replace",
        action="store_true",
        help="Replace the host's current pin, if it has one for another certificate.",
    )
    _store_actions(
        trust_commands,
        " (pins are shared unless GOPHERGEM_PINS_PER_PRINCIPAL is true)",
        but=import_,
    )


def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem trust list|remove|pin}: the operations the trust tools run,
    on the pins the daemon uses (PostgreSQL on a team server, else the file).
    """
    return _on_store(config, args, environ, _pins, _trust_with, identities=False)


def _pins(state: Any, principal: str | None) -> Any:
    return state.pins(principal)


async def _trust_with(pins: Any, args: argparse.Namespace, now: float) -> int:
    """Run one C{gophergem trust} action on C{pins}; return the exit status."""
    from gophergem.trust import operations as ops

    action = args.trust_command
    try:
        if action == "list":
            entries = [ops.pin_entry(p, now) for p in await ops.list_pins(pins, args.host)]
            lines = [_pin_line(entry) for entry in entries] or ["No pins."]
            return _show(args, {"kind": "trust_list", "entries": entries}, lines)
        if action == "remove":
            pin = await ops.remove_pin(pins, args.host, args.port, args.fingerprint)
            said = f"Removed the pin of {_where(pin.host, pin.port)} ({pin.fingerprint})."
        else:
            in_the_way = await ops.pin_in_the_way(pins, args.host, args.port, args.fingerprint)
            agreed: str | None = None
            if in_the_way is not None:
                where = _where(in_the_way.host, in_the_way.port)
                if args.replace or _terminal_yes(
                    f"{where} is pinned to {in_the_way.fingerprint}.\nReplace it with "
                    f"{args.fingerprint}? Only if you got it from the capsule's operator."
                ):
                    agreed = in_the_way.fingerprint
            pin = await ops.pin_fingerprint(
                pins, args.host, args.port, args.fingerprint, now, agreed
            )
            said = f"Pinned {_where(pin.host, pin.port)} to {pin.fingerprint}."
    except PinExists as error:
        return _refused(
            error,
            args,
            "To replace it, run again with --replace (or answer y at a terminal), or first "
            f"gophergem trust remove {args.host} {error.pinned_fingerprint}"
            + (f" --port {args.port}" if args.port != 1965 else "")
            + ".",
        )
    except GophergemError as error:
        return _refused(error, args)
    return _show(args, ops.pin_update(action, pin), [said])


def _terminal_yes(question: str) -> bool | None:
    """
    Ask the person at the terminal a yes/no question; C{None} when there is
    no terminal to ask on (consent is then never assumed).
    """
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        sys.stderr.write("\n")
        return False
    return answer.strip().lower() in ("y", "yes")


def _where(host: str, port: int) -> str:
    from gophergem.url import format_host

    return format_host(host, port, 0)


def _pin_line(entry: dict[str, Any]) -> str:
    expires = entry["expires"] or "not known yet"
    return (
        f"{_where(entry['host'], entry['port'])}  {entry['fingerprint']}\n"
        f"    first seen {entry['first_seen']}, last seen {entry['last_seen']}, "
        f"expires {expires}{' (expired)' if entry['expired'] else ''}"
    )


def run_import(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem trust import [PATH]}: gopher-mcp's pins into the pin store
    the daemon uses (the pin file, or PostgreSQL on a team server).

    A file that is missing, unreadable or not a gopher-mcp pin file is a
    usage error (status 2), as is finding none when no PATH is given; a pin
    store that cannot take the pins is status 1.
    """
    from pathlib import Path

    from gophergem.state.paths import gopher_mcp_pin_paths
    from gophergem.trust.importing import ImportReport, import_gopher_mcp_pins

    if args.path:
        source = Path(args.path)
    else:
        found = [Path(p) for p in gopher_mcp_pin_paths(environ) if Path(p).is_file()]
        if not found:
            return _fail(
                "trust import: no gopher-mcp tofu.json found in its usual places; name its path."
            )
        source = found[0]
    report: list[ImportReport] = []

    async def use(state: Any, principal: str | None, reactor: Any) -> int:
        store = state.pins(principal)
        if store is None:
            return _fail("Trust on first use is switched off (GEMINI_TOFU_ENABLED): no pins.")
        try:
            report.append(await import_gopher_mcp_pins(source, store, time.time()))
        except InvalidRequest as error:
            return _fail(f"trust import: {source}: {error.message}")
        return 0

    status = _with_state(config, args, environ, use, identities=False)
    if status or not report:
        return status
    done = report[0]
    for pin in done.imported:
        print(f"imported  {pin.host}:{pin.port}  {pin.fingerprint}")
    for skipped in done.skipped:
        print(f"skipped   {skipped.host}:{skipped.port}  {skipped.reason}")
    for problem in done.problems:
        print(f"problem   {problem}")
    print(
        f"{len(done.imported)} imported, {len(done.skipped)} skipped, "
        f"{len(done.problems)} not understood."
    )
    return 0
