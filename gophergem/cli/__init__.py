# -*- test-case-name: tests.test_cli -*-
"""
The C{gophergem} console script.

  - C{gophergem}: an MCP server on stdin/stdout (what MCP clients launch);
  - C{gophergem serve}: the service tree of C{twistd gophergem} (stdio or
    Streamable HTTP) in the foreground, with the same options;
  - C{gophergem fetch URL}: fetch one URL under the same policy and print it;
  - C{gophergem trust list|remove|pin|import} and C{gophergem identity
    list|create|remove}: the trust and identity tools' operations, with the
    same interlocks, for the person at the terminal;
  - C{gophergem feeds list|updates|subscribe|unsubscribe|import|export}:
    the subscriptions of the feed tools, through the same follower;
  - C{gophergem token add|remove|list}: the bearer tokens of the HTTP
    endpoint's token file (C{GOPHERGEM_AUTH_TOKENS_FILE});
  - C{gophergem titan upload URL FILE|-}: one Titan upload, on the yes of
    the person at the terminal (or C{--yes});
  - C{gophergem --version}.

The trust, identity and feeds commands act on the state the daemon uses:
PostgreSQL when C{GOPHERGEM_DATABASE_URL} is set (a team server), else the
files; for the owner, or for the principal C{--principal} names.

Every setting can come from its environment variable or from the option of
the same name (C{GOPHER_TIMEOUT_SECONDS} / C{--gopher-timeout-seconds}),
before or after the command; the option wins.  A user error (a bad option,
setting or argument, a log file that cannot be written, a port in use) ends
the program with one line naming it and exit status 2, never a traceback.

The package holds one module per command (L{fetch}, L{serve} with the bare
stdio start, L{trust}, L{identity}, L{feeds}, L{token}, L{db}, L{titan}), the shared
runner (L{_runner}) and the opening of the daemon's state for the commands
that act on it (L{_state}).  Whatever a command needs beyond argparse is
imported when it runs, so the bare stdio start loads no more than it must.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from gophergem._version import __version__
from gophergem.cli import db, feeds, fetch, identity, serve, titan, token, trust
from gophergem.cli._runner import _config, _fail, _Parser, _settings, _stdout_gone
from gophergem.cli.feeds import feeds_command as feeds_command
from gophergem.config import ConfigError, misspelled_settings

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    settings = _settings()
    parser = _Parser(
        prog="gophergem",
        usage="%(prog)s [--version] [settings] [COMMAND ...]",
        description="Gopher and Gemini for AI assistants over MCP. With no command, "
        "serve MCP on stdin/stdout.",
        epilog="Exit status: 0 done; 1 a fetch whose result is an error, a trust or feeds "
        "operation refused or failed; 2 a usage error (a bad option, setting or argument). "
        "COMMAND --help shows each command's options.",
        parents=[settings],
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"gophergem {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", prog="gophergem")

    def command(
        group: Any, name: str, usage: str, help: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = group.add_parser(
            name,
            usage=f"%(prog)s {usage}",
            help=help,
            description=description or help,
            parents=[settings],
            allow_abbrev=False,
        )
        return made

    for module in (fetch, serve, trust, identity, feeds, token, db, titan):
        module.add_parser(commands, command)
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """
    Run the console script; return the exit status.

    0: done; 1: a fetch whose result is an error, or a trust operation that
    was refused; 2: a usage error, said in one line on standard error.
    """
    try:
        return _main(argv, dict(os.environ if environ is None else environ))
    except BrokenPipeError:
        return _stdout_gone()
    except KeyboardInterrupt:  # Ctrl-C before the reactor handles SIGINT (still starting)
        return 130


def _main(argv: Sequence[str] | None, environ: dict[str, str]) -> int:
    from gophergem import advice

    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit:  # --help, --version, or a one-line usage error
        return exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 2
    # A command's advice names commands (gophergem identity create URL); the
    # MCP server's, with or without serve, names tools.
    serving = args.command in (None, "serve")
    with advice.phrased_for(advice.TOOLS if serving else advice.COMMANDS):
        return _command(args, environ)


def _command(args: argparse.Namespace, environ: dict[str, str]) -> int:
    """Run the command C{args} names (none: serve MCP on stdin/stdout)."""
    try:
        config = _config(args, environ)
    except ConfigError as exc:
        return _fail(str(exc))
    if args.command != "serve":  # serve parses twistd's options, which warn
        for warning in misspelled_settings(environ):
            print(f"gophergem: warning: {warning}", file=sys.stderr)
    early = serve.answer_early() if args.command is None else None
    if args.command is None and serve.at_a_terminal():
        # A person typed bare gophergem: say what is going on (stdout stays MCP's).
        print(
            "gophergem: serving MCP on stdin/stdout for an MCP client (Ctrl-C ends it); "
            "to read a page try: gophergem fetch URL (gophergem --help for more)",
            file=sys.stderr,
            flush=True,
        )
    from gophergem._log import LogFileError, start_logging

    quiet = "WARN" if config.log.level in ("DEBUG", "INFO") else config.log.level
    if args.command in ("feeds", "db", "trust", "identity") and not config.log.file:
        # Each problem is already one line of its own, naming the file; the
        # store's log lines go to GOPHERGEM_LOG_FILE when set.
        quiet = "CRITICAL"
    try:
        if args.command in ("fetch", "trust", "identity", "feeds", "db", "titan"):
            start_logging(quiet, config.log.file)
        elif args.command is None:
            start_logging(config.log.level, config.log.file)
    except LogFileError as error:
        return _fail(str(error))
    if args.command == "fetch":
        return fetch.run(config, args)
    if args.command == "serve":
        return serve.run(args, environ)
    if args.command == "trust":
        if args.trust_command == "import":
            return trust.run_import(config, args, environ)
        return trust.run(config, args, environ)
    if args.command == "identity":
        return identity.run(config, args, environ)
    if args.command == "feeds":
        return feeds.run(config, args, environ)
    if args.command == "token":
        return token.run(config, args)
    if args.command == "db":
        return db.run(config, args)
    if args.command == "titan":
        return titan.run(config, args)
    assert early is not None
    return serve.run_stdio(config, *early)
