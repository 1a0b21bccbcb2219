# -*- test-case-name: tests.test_cli,tests.test_cli_signals -*-
"""
Serving MCP: bare C{gophergem} on stdin/stdout (what MCP clients launch),
and C{gophergem serve}, the service tree of C{twistd gophergem} in the
foreground with the same options.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from gophergem.cli._runner import _fail, _given_settings, _run, _sigint_heard
from gophergem.config import DEFAULT_ENDPOINT, Config


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem serve} command."""
    serve = command(
        commands,
        "serve",
        "[--transport stdio|http] [--endpoint STRPORT] [--allowed-host NAME ...] [settings]",
        "Serve MCP on stdin/stdout or over Streamable HTTP, as twistd gophergem does.",
        "Serve MCP: on stdin/stdout (--transport stdio, the default) or over Streamable HTTP "
        "at /mcp with /health and /.well-known/agent.gopher (--transport http). The same "
        "service tree as twistd gophergem, in the foreground; logs go to stderr or "
        "GOPHERGEM_LOG_FILE; SIGTERM or SIGINT stops it.",
    )
    serve.add_argument(
        "--transport",
        metavar="stdio|http",
        help="stdio (MCP on stdin/stdout) or http (Streamable HTTP).",
    )
    serve.add_argument(
        "--endpoint",
        metavar="STRPORT",
        help=f"Where HTTP listens, as a Twisted strports description (default {DEFAULT_ENDPOINT}).",
    )
    serve.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        default=[],
        metavar="NAME",
        help="A name (or name:port) HTTP clients may use besides loopback ones; repeatable.",
    )


def run(args: argparse.Namespace, environ: dict[str, str]) -> int:
    """C{gophergem serve}: the options of C{twistd gophergem}, in the foreground."""
    from twisted.python import usage

    from gophergem import tap
    from gophergem._log import LogFileError, start_logging

    argv: list[str] = []
    if args.transport is not None:
        argv += ["--transport", args.transport]
    if args.endpoint is not None:
        argv += ["--endpoint", args.endpoint]
    for name in args.allowed_hosts:
        argv += ["--allowed-host", name]
    options = tap.Options()
    options.environ = {**environ, **_given_settings(args)}
    try:
        options.parseOptions(argv)
    except usage.UsageError as error:
        return _fail(f"serve: {error}")
    config: Config = options["config"]
    try:
        start_logging(config.log.level, config.log.file)
    except LogFileError as error:
        return _fail(str(error))
    with _sigint_heard():
        return _run(tap.makeService(options), announce=options["transport"] == "http")


def answer_early() -> tuple[int, Any]:
    """
    Before anything heavy is imported: reserve stdout for the MCP wire and
    start answering what never changes (L{gophergem.mcp.early}).
    """
    from gophergem.mcp.early import EarlyResponder, load_answers, reserve_stdout

    wire = reserve_stdout()
    responder = EarlyResponder(load_answers(), wire)
    responder.start()
    return wire, responder


def at_a_terminal() -> bool:
    """Whether standard input is a terminal (a person, not an MCP client, started us)."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def run_stdio(config: Config, wire: int, early: Any) -> int:
    from gophergem.service import install_asyncio_reactor, makeService

    install_asyncio_reactor()
    from twisted.internet import reactor

    top = makeService(config, reactor, transport="stdio", stdout_fd=wire, early=early)
    return _run(top)
