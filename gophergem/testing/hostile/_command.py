# -*- test-case-name: tests.test_testing_hostile -*-
"""
The command line of C{python -m gophergem.testing.hostile}: serve one
hostile server on a loopback port until killed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import react

from gophergem.testing.hostile._gemini import GEMINI_BEHAVIOURS
from gophergem.testing.hostile._gopher import GOPHER_BEHAVIOURS
from gophergem.testing.hostile._servers import (
    BEHAVIOURS,
    PLAIN_BEHAVIOURS,
    HostileGeminiServer,
    HostileGopherServer,
    HostilePlainServer,
    HostileServer,
    check_loopback,
    lookup,
    serve_loopback,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gophergem.testing.hostile",
        description="Serve one misbehaving Gopher, Gemini, Finger, Nex or Spartan server "
        "on a loopback port. "
        "Prints the port on the first line of standard output, then serves until killed.",
    )
    parser.add_argument("--protocol", choices=("gopher", "gemini", *PLAIN_BEHAVIOURS))
    parser.add_argument("--behaviour", metavar="NAME", help="See --list.")
    parser.add_argument("--port", type=int, default=0, help="0 (the default): any free port.")
    parser.add_argument(
        "--interface", default="127.0.0.1", help="A loopback address (127.0.0.1 or ::1)."
    )
    parser.add_argument(
        "--hostname", default="localhost", help="The name Gemini certificates are made for."
    )
    parser.add_argument("--list", action="store_true", help="List the behaviours and exit.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; see C{--help}."""
    args = _parser().parse_args(argv)
    if args.list:
        for (protocol, name), behaviour in BEHAVIOURS.items():
            print(f"{protocol:6} {name:24} {behaviour.summary}")
        return 0
    if args.behaviour is None:
        _parser().error("--behaviour is required (see --list)")
    protocol, _, name = args.behaviour.rpartition(":")
    protocol = protocol or args.protocol
    if protocol not in ("gopher", "gemini", *PLAIN_BEHAVIOURS):
        _parser().error(
            "--protocol gopher|gemini|finger|nex|spartan is required (or --behaviour gemini:NAME)"
        )
    tables = {"gopher": GOPHER_BEHAVIOURS, "gemini": GEMINI_BEHAVIOURS, **PLAIN_BEHAVIOURS}
    table = tables[protocol]
    try:
        check_loopback(args.interface)
        behaviour = lookup(table, protocol, name)
    except ValueError as exc:
        _parser().error(str(exc))

    def serve(reactor: Any) -> Deferred[None]:
        server: HostileServer = (
            HostileGeminiServer(behaviour, reactor, args.hostname)
            if protocol == "gemini"
            else HostilePlainServer(behaviour, reactor)
            if protocol in PLAIN_BEHAVIOURS
            else HostileGopherServer(behaviour, reactor)
        )
        listening = serve_loopback(server, reactor, args.port, args.interface)
        sys.stdout.write(f"{getattr(listening.getHost(), 'port', 0)}\n")
        sys.stdout.flush()
        return Deferred()  # never fires: serve until killed

    # react() picks the reactor only now: nothing above may install one.
    react(serve)
    return 0  # pragma: no cover - react() exits
