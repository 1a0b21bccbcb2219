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
  - C{gophergem --version}.

The trust, identity and feeds commands act on the state the daemon uses:
PostgreSQL when C{GOPHERGEM_DATABASE_URL} is set (a team server), else the
files; for the owner, or for the principal C{--principal} names.

Every setting can come from its environment variable or from the option of
the same name (C{GOPHER_TIMEOUT_SECONDS} / C{--gopher-timeout-seconds}),
before or after the command; the option wins.  A user error (a bad option,
setting or argument, a log file that cannot be written, a port in use) ends
the program with one line naming it and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from gophergem._plural import counted
from gophergem._time import format_utc
from gophergem._version import __version__
from gophergem.config import (
    DEFAULT_ENDPOINT,
    SETTINGS,
    Config,
    ConfigError,
    misspelled_settings,
)
from gophergem.errors import GophergemError, InvalidRequest, NotPinned, PinExists

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from gophergem.results import FetchResult, GeminiResult

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, not a page of usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _settings() -> argparse.ArgumentParser:
    """The settings, as a parent parser every command shares."""
    parent = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = parent.add_argument_group(
        "settings (each also read from its environment variable; accepted before or after "
        "the command)"
    )
    for setting in SETTINGS:
        group.add_argument(
            f"--{setting.option}",
            dest=setting.variable,
            metavar="VALUE",
            # Unset stays unset, so a setting given before the command is not
            # overwritten by the command's own default.
            default=argparse.SUPPRESS,
            help=f"{setting.help} [{setting.variable}]",
        )
    return parent


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

    fetch = command(
        commands,
        "fetch",
        "[--search TERMS] [--input ANSWER] [--offset N] [--format readable|json] [settings] URL",
        "Fetch one gopher:// or gemini:// URL, under the same policy, and print it.",
    )
    fetch.add_argument("url")
    fetch.add_argument("--search", metavar="TERMS", help="Search terms for a Gopher type-7 item.")
    fetch.add_argument(
        "--input",
        metavar="ANSWER",
        help="The answer to a Gemini input prompt. The URL is first asked without it, to "
        "learn whether the prompt is sensitive (status 11): only then is the answer redacted.",
    )
    fetch.add_argument(
        "--offset", metavar="N", type=int, default=0, help="Where the window starts."
    )
    _format_options(
        fetch,
        "How to print the result: readable (the default at a terminal) or json (the "
        "default when the output is piped: the JSON payload of the tools).",
    )

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
    for group in (trust_commands, identity_commands):
        for sub in group.choices.values():
            if sub is not import_:
                _format_options(sub)
                _principal_option(
                    sub,
                    " (pins are shared unless GOPHERGEM_PINS_PER_PRINCIPAL is true)"
                    if group is trust_commands
                    else "",
                )
    _feeds_parser(commands, command)
    _token_parser(commands, command)
    _db_parser(commands, command)
    return parser


def _db_parser(commands: Any, command: Any) -> None:
    """The C{gophergem db …} commands."""
    db = command(
        commands,
        "db",
        "ACTION ...",
        "Manage the PostgreSQL schema of a team server (GOPHERGEM_DATABASE_URL).",
    )
    actions = db.add_subparsers(
        dest="db_command", metavar="ACTION", required=True, prog="gophergem db"
    )
    command(
        actions,
        "upgrade",
        "[settings]",
        "Apply the pending schema migrations and print each one (or: up to date).",
        "Apply the pending schema migrations, each in one transaction under an advisory "
        "lock (safe to run from several replicas at once), printing one line per migration "
        "applied, or 'up to date'. Exit status 1 when the database cannot be reached.",
    )
    command(
        actions,
        "status",
        "[settings]",
        "Print whether the schema is up to date (exit status 1 when migrations are pending).",
    )


def _token_parser(commands: Any, command: Any) -> None:
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


def _feeds_parser(commands: Any, command: Any) -> None:
    """The C{gophergem feeds …} commands."""
    feeds = command(
        commands,
        "feeds",
        "ACTION ...",
        "Follow capsules and phlogs: subscriptions, and what is new on them.",
    )
    actions = feeds.add_subparsers(
        dest="feeds_command", metavar="ACTION", required=True, prog="gophergem feeds"
    )
    listing = command(
        actions,
        "list",
        "[--format readable|json] [settings]",
        "List the subscriptions (nothing is fetched).",
    )
    _format_options(listing)
    updates = command(
        actions,
        "updates",
        "[--url URL] [--since WHEN] [--no-mark-read] [--limit N] [--format readable|json] "
        "[settings]",
        "Check the subscriptions (or one) and print what is new, newest first.",
        "Check the subscriptions (or one) and print what is new, newest first: date, feed, "
        "entry title, URL. Feeds that could not be checked are listed on standard error, one "
        "line each; the exit status is 1 when every one of them failed.",
    )
    updates.add_argument("--url", metavar="URL", help="Only this subscription.")
    updates.add_argument(
        "--since",
        metavar="WHEN",
        help="An ISO 8601 date or time: every entry after it, read or not.",
    )
    updates.add_argument(
        "--no-mark-read",
        dest="mark_read",
        action="store_false",
        help="Leave the entries printed unread.",
    )
    updates.add_argument(
        "--limit", metavar="N", type=int, default=50, help="At most N entries (1 to 500; 50)."
    )
    _format_options(updates)
    subscribe = command(
        actions,
        "subscribe",
        "[--title TITLE] [--format readable|json] [settings] URL",
        "Follow a gemini:// or gopher:// page; what it lists now counts as read.",
    )
    subscribe.add_argument("url")
    subscribe.add_argument("--title", metavar="TITLE", help="A title of your own.")
    _format_options(subscribe)
    unsubscribe = command(
        actions, "unsubscribe", "[--format readable|json] [settings] URL", "Stop following a page."
    )
    unsubscribe.add_argument("url", help="The URL as gophergem feeds list shows it.")
    _format_options(unsubscribe)
    import_ = command(
        actions,
        "import",
        "[settings] FILE",
        "Subscribe to the gemini:// and gopher:// feeds of an OPML file.",
        "Subscribe to every gemini:// and gopher:// feed (outline xmlUrl) of an OPML file, "
        "each fetched once; other schemes are listed as skipped. The exit status is 1 when "
        "a subscription failed.",
    )
    import_.add_argument("file", metavar="FILE")
    import_.set_defaults(json=False)
    export = command(
        actions,
        "export",
        "[settings] [FILE]",
        "Write the subscriptions as OPML 2.0, to FILE (replaced atomically) or standard output.",
    )
    export.add_argument("file", metavar="FILE", nargs="?")
    export.set_defaults(json=False)
    for sub in actions.choices.values():
        _principal_option(sub)


def _format_options(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """
    Add C{--format readable|json} and its shorthand C{--json} (one or the
    other): the readable rendering or the JSON payload, whatever the output
    is (L{_wants_json}).
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--format",
        choices=("readable", "json"),
        metavar="readable|json",
        help=help or "How to print: readable (the default) or json.",
    )
    group.add_argument("--json", action="store_true", help="Short for --format json.")


def _wants_json(args: argparse.Namespace) -> bool:
    """
    Whether to print JSON: C{--json} or C{--format json}; without either,
    C{fetch} prints JSON when its output is not a terminal (for programs),
    every other command its readable rendering.
    """
    chosen: str | None = getattr(args, "format", None)
    if args.json or chosen == "json":
        return True
    if chosen is None and args.command == "fetch":
        return not sys.stdout.isatty()
    return False


def _principal_option(parser: argparse.ArgumentParser, note: str = "") -> None:
    """Add C{--principal NAME}: act for someone of a team server, not the owner."""
    parser.add_argument(
        "--principal",
        metavar="NAME",
        help="Act for this principal of a team server (token:NAME, or ISSUER#SUBJECT as "
        f"an identity provider names them) instead of the owner{note}.",
    )


def _config(args: argparse.Namespace, environ: Mapping[str, str]) -> Config:
    return Config.from_env({**environ, **_given_settings(args)})


def _given_settings(args: argparse.Namespace) -> dict[str, str]:
    """The settings given as options, by variable name."""
    return {
        setting.variable: getattr(args, setting.variable)
        for setting in SETTINGS
        if getattr(args, setting.variable, None) is not None
    }


def _fail(message: str, status: int = 2) -> int:
    print(f"gophergem: {message}", file=sys.stderr)
    return status


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
    early = _answer_early() if args.command is None else None
    if args.command is None and _at_a_terminal():
        # A person typed bare gophergem: say what is going on (stdout stays MCP's).
        print(
            "gophergem: serving MCP on stdin/stdout for an MCP client (Ctrl-C ends it); "
            "to read a page try: gophergem fetch URL (gophergem --help for more)",
            file=sys.stderr,
            flush=True,
        )
    from gophergem._log import LogFileError, start_logging

    quiet = "WARN" if config.log_level in ("DEBUG", "INFO") else config.log_level
    if args.command in ("feeds", "db", "trust", "identity") and not config.log_file:
        # Each problem is already one line of its own, naming the file; the
        # store's log lines go to GOPHERGEM_LOG_FILE when set.
        quiet = "CRITICAL"
    try:
        if args.command in ("fetch", "trust", "identity", "feeds", "db"):
            start_logging(quiet, config.log_file)
        elif args.command is None:
            start_logging(config.log_level, config.log_file)
    except LogFileError as error:
        return _fail(str(error))
    if args.command == "fetch":
        return _fetch(config, args)
    if args.command == "serve":
        return _serve(args, environ)
    if args.command == "trust":
        if args.trust_command == "import":
            return _trust_import(config, args, environ)
        return _trust(config, args, environ)
    if args.command == "identity":
        return _identity(config, args, environ)
    if args.command == "feeds":
        return _feeds(config, args, environ)
    if args.command == "token":
        return _token(config, args)
    if args.command == "db":
        return _db(config, args)
    assert early is not None
    return _serve_stdio(config, *early)


def _at_a_terminal() -> bool:
    """Whether standard input is a terminal (a person, not an MCP client, started us)."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def _db(config: Config, args: argparse.Namespace) -> int:
    """
    C{gophergem db upgrade|status}, on a private asyncio loop with Twisted's
    asyncio reactor over it (the global reactor is not involved).
    """
    url = config.database_url
    if url is None:
        return _fail("GOPHERGEM_DATABASE_URL is not set: there is no database to manage.")
    import asyncio
    import logging

    from twisted.internet.asyncioreactor import AsyncioSelectorReactor

    from gophergem.state.postgres import PostgresState

    # psycopg gives its logger a level of its own (WARNING) unless one is
    # set first: follow ours, so a refused connection is our one line only.
    logging.getLogger("psycopg").setLevel(logging.getLogger().getEffectiveLevel())

    async def work() -> list[str]:
        loop = asyncio.get_running_loop()
        reactor = AsyncioSelectorReactor(loop)
        timeout = config.state_timeout_seconds
        connecting = PostgresState.connect(url, key=None, timeout=timeout, reactor=reactor)
        state = await connecting.asFuture(loop)
        try:
            if args.db_command == "upgrade":
                return await state.upgrade().asFuture(loop)
            return await state.pending().asFuture(loop)
        finally:
            await state.close().asFuture(loop)

    try:
        names = asyncio.run(work())
    except GophergemError as error:
        return _fail(f"{error.code}: {error.message}", 1)
    if args.db_command == "upgrade":
        for name in names:
            print(f"applied {name}")
        if not names:
            print("up to date")
        return 0
    for name in names:
        print(f"pending {name}")
    if not names:
        print("up to date")
    return 1 if names else 0


def _answer_early() -> tuple[int, Any]:
    """
    Before anything heavy is imported: reserve stdout for the MCP wire and
    start answering what never changes (L{gophergem.mcp.ready}).
    """
    from gophergem.mcp.ready import EarlyResponder, load_answers, reserve_stdout

    wire = reserve_stdout()
    responder = EarlyResponder(load_answers(), wire)
    responder.start()
    return wire, responder


def _stdout_gone() -> int:
    """
    Standard output was closed by its reader (C{gophergem fetch … | head}):
    stop quietly, as a well-behaved filter does, without a traceback.  The
    interpreter's last flush must not fail again, so stdout is pointed at
    the null device.  The reader chose to stop reading, which is no failure
    of ours: C{fetch} keeps the status its result gives, anything else ends
    with 0.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


def _serve_stdio(config: Config, wire: int, early: Any) -> int:
    from gophergem.service import install_asyncio_reactor, makeService

    install_asyncio_reactor()
    from twisted.internet import reactor

    top = makeService(config, reactor, transport="stdio", stdout_fd=wire, early=early)
    return _run(top)


def _serve(args: argparse.Namespace, environ: dict[str, str]) -> int:
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
        start_logging(config.log_level, config.log_file)
    except LogFileError as error:
        return _fail(str(error))
    with _sigint_heard():
        return _run(tap.makeService(options), announce=options["transport"] == "http")


@contextlib.contextmanager
def _sigint_heard() -> Iterator[None]:
    """
    Hear SIGINT while this runs even when the process was started with it
    ignored, as a shell without job control starts a command run in the
    background (C{gophergem serve &} in a script, a test suite run that
    way): Python and Twisted both leave an ignored SIGINT ignored, so serve,
    which says SIGINT stops it, would go on serving.  The bare C{gophergem}
    an MCP client starts keeps what its client chose (it ends at the end of
    its input).
    """
    import signal

    ignored = _in_main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _run(top: Any, *, announce: bool = False, reactor: Any = None) -> int:
    """
    Start C{top} on the reactor and run until it ends (stdin closed,
    SIGTERM or SIGINT, whenever it comes: see L{_StopOnSignal}); return the
    exit status.

    A listening failure is one line and status 2; replies the stdio
    transport owed but could not write make the status 1.  A signal that
    comes before the services have started makes it 128 plus the signal's
    number (130 for SIGINT), as a C{KeyboardInterrupt} earlier does; once
    they have started, a signal is the ordinary way to stop (0).

    @param announce: Once the HTTP transport listens, say where, in one
        line on standard error (L{_listening_at}).
    @param reactor: The reactor to run; the global one when omitted.
    """
    if reactor is None:
        from twisted.internet import reactor as installed

        reactor = installed
    from twisted.logger import Logger

    from gophergem.mcp.stdio import StdioMCPService
    from gophergem.service import ListenError, SharedStateService, StateStartError

    try:
        top.privilegedStartService()
    except ListenError as error:
        return _fail(str(error))
    except StateStartError as error:
        return _fail(str(error), 1)
    except OSError as error:  # e.g. a unix: socket in a directory that does not exist
        listener = top.namedServices.get("http")
        where = f" on {listener.description}" if listener is not None else ""
        return _fail(f"cannot listen{where}: {error.strerror or error}")
    status = {"code": 0}
    signals = _StopOnSignal(reactor)

    def start() -> None:
        # Twisted has just put its SIGTERM handler in place of ours.
        signals.install()
        try:
            top.startService()
            listener = top.namedServices.get("http")
            if announce and listener is not None and listener.listening is not None:
                print(f"gophergem: {_listening_at(listener.listening)}", file=sys.stderr)
                sys.stderr.flush()
        except ListenError as error:
            _fail(str(error))
            status["code"] = 2
            reactor.stop()
        except Exception:
            Logger().failure("gophergem could not start")
            status["code"] = 1
            reactor.stop()
        finally:
            signals.started = True

    reactor.callWhenRunning(start)
    reactor.addSystemEventTrigger("before", "shutdown", top.stopService)
    # From here to the end a signal stops the reactor, whenever it comes: a
    # KeyboardInterrupt raised inside the reactor's start-up would be caught
    # and logged by Twisted, and the signal lost.
    signals.install()
    try:
        reactor.run()
    finally:
        signals.uninstall()
    if signals.early is not None:
        status["code"] = status["code"] or 128 + signals.early
    # Non-zero when owed replies were lost (stdout gone, a drain limit, SIGTERM).
    # (and 1 when a replica could not reach its shared state).
    owed = [service.exit_status for service in top if isinstance(service, StdioMCPService)]
    shared = [service.exit_status for service in top if isinstance(service, SharedStateService)]
    return status["code"] or max(owed + shared, default=0)


class _StopOnSignal:
    """
    SIGINT and SIGTERM while L{_run} runs the reactor: the first one stops
    it, from inside its loop; later ones change nothing (the shutdown is
    under way, bounded by the drain).

    Twisted installs handlers of its own only in the middle of starting the
    reactor; before that, a SIGINT raises C{KeyboardInterrupt} wherever the
    main thread is, and where that is inside the reactor's start-up (a
    system event trigger, a Deferred's callback) Twisted catches it: the
    signal was lost and the process went on serving.  These handlers are in
    place before the reactor starts, and after, instead of Twisted's.

    As Twisted does, a SIGINT that is ignored, or handled by someone else
    (a debugger), is left alone.

    @ivar started: Whether the services have started (set by L{_run}).
    @ivar early: The signal that came before they had, if one did.
    """

    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor
        self.started = False
        self.early: int | None = None
        self._heard: int | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Handle SIGTERM, and SIGINT unless it is ignored or someone else's."""
        import signal

        if not _in_main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            if (
                signum == signal.SIGINT
                and signum not in self._previous
                and signal.getsignal(signum) != signal.default_int_handler
            ):
                continue
            previous = signal.signal(signum, self._received)
            self._previous.setdefault(signum, previous)

    def uninstall(self) -> None:
        """Put back the handlers there were before L{install}."""
        import signal

        previous, self._previous = self._previous, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _received(self, signum: int, frame: Any) -> None:
        # Runs between two bytecodes of the main thread, anywhere: only note
        # the signal and wake the reactor (as Twisted's own handlers do).
        if self._heard is not None:
            return
        self._heard = signum
        if not self.started:
            self.early = signum
        self.reactor.callFromThread(self._stop)

    def _stop(self) -> None:
        import signal

        from twisted.internet.error import ReactorNotRunning
        from twisted.logger import Logger

        assert self._heard is not None
        Logger().info("Received {signal}, shutting down.", signal=signal.Signals(self._heard).name)
        with contextlib.suppress(ReactorNotRunning):  # already stopping
            self.reactor.stop()


def _listening_at(port: Any) -> str:
    """Where a listening HTTP port serves MCP, said for a person: its URL, or its socket."""
    from twisted.internet.address import IPv4Address, IPv6Address

    from gophergem.url import format_host

    address = port.getHost()
    if isinstance(address, IPv4Address | IPv6Address):
        where = format_host(address.host, address.port, 0)
        return f"serving MCP at http://{where}/mcp (and /health)"
    name = getattr(address, "name", None)
    name = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
    return f"serving MCP over HTTP at /mcp on the socket {name or address}"


def _fetch(config: Config, args: argparse.Namespace) -> int:
    from twisted.internet import reactor
    from twisted.python.failure import Failure

    from gophergem.fetcher import Fetcher
    from gophergem.mcp.payloads import payload
    from gophergem.url import scheme_of

    outcome: dict[str, Any] = {}

    def done(result: Any) -> None:
        outcome["result"] = result
        # A request refused before any I/O (BLOCKED, INVALID_REQUEST…) is
        # answered at once, before the reactor runs: then there is nothing to stop.
        if reactor.running:
            reactor.stop()

    fetcher = Fetcher.from_config(config, reactor)
    d: Deferred[GeminiResult] | Deferred[FetchResult]
    if scheme_of(args.url) == "gemini":
        # This process never saw the prompt: learn whether it was an 11.
        d = fetcher.gemini(args.url, input=args.input, offset=args.offset, learn_prompt=True)
    else:
        d = fetcher.gopher(args.url, search=args.search, offset=args.offset)
    d.addBoth(done)
    if "result" not in outcome:
        reactor.run()
    if "result" not in outcome:
        return _fail("stopped before the fetch finished.", 130)
    result = outcome["result"]
    if isinstance(result, Failure):
        from twisted.logger import Logger

        Logger().failure("the fetch failed unexpectedly", result)
        return _fail(f"the fetch failed unexpectedly: {result.getErrorMessage()}", 1)
    data = payload(result)
    status = 1 if data["kind"] == "error" else 0
    as_json = _wants_json(args)
    if status and data["error"]["code"] == "INVALID_REQUEST":
        # The request itself is wrong (a bad URL, an unknown scheme): a usage
        # error, one line and status 2; programs still get the payload.
        status = 2
        if not as_json:
            return _fail(f"INVALID_REQUEST: {data['error']['message']}", 2)
    try:
        print(json.dumps(data, indent=2, ensure_ascii=False) if as_json else render(data))
        sys.stdout.flush()  # a reader gone (| head) shows here, not at exit
    except BrokenPipeError:
        _stdout_gone()
    if status and as_json:  # the payload is for programs; a person watching gets one line
        error = data["error"]
        _fail(f"{error['code']}: {error['message']}")
    return status


def _trust_import(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
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
    if args.command == "trust" and not config.pins_per_principal:
        raise _Refusal(
            "trust --principal: pins are shared by every principal unless "
            "GOPHERGEM_PINS_PER_PRINCIPAL is true; leave --principal out."
        )
    return principal


async def _open_state(
    config: Config, environ: Mapping[str, str], reactor: Any, *, identities: bool
) -> Any:
    """
    The state the daemon uses: a L{gophergem.state.postgres.PostgresState}
    when C{GOPHERGEM_DATABASE_URL} is set (connected, its schema checked),
    else the L{gophergem.state.files.FileState} of this machine.  Either way
    it gives C{pins(principal)}, C{identities(principal)},
    C{feeds(principal)} and C{close()}.

    @param identities: Whether the command uses client identities (then a
        database needs C{GOPHERGEM_DATABASE_KEY_FILE}).
    @raise _Refusal: When the schema is behind.
    @raise GophergemError: C{STATE_UNAVAILABLE} when the database cannot be
        reached.
    @raise ValueError: A setting that cannot be used (a bad path or key file).
    """
    if config.database_url is None:
        from gophergem.state.files import FileState

        return FileState.from_config(config, environ)
    import logging

    from gophergem.state.postgres import PostgresState, SchemaBehind

    # The driver's own warnings (a refused connection) would be lines besides
    # ours: they go to the log file, when there is one, and nowhere else.
    level = logging.getLogger().getEffectiveLevel() if config.log_file else logging.CRITICAL
    logging.getLogger("psycopg").setLevel(level)
    try:
        return await PostgresState.from_config(config, reactor, identities=identities)
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


def _on_own_reactor(work: Callable[[Any], Coroutine[Any, Any, int]]) -> int:
    """
    Run C{work(reactor)} with Twisted's asyncio reactor over an event loop
    of its own, until it returns; return its exit status.

    One path for the file stores and PostgreSQL: the database driver needs
    the asyncio loop, the fetches of C{feeds} any reactor.  The reactor is
    not installed as the global one and is run only when the work waits
    for something (the file stores answer at once), so a command may run
    more than once in one process.
    """
    import asyncio

    from twisted.internet.asyncioreactor import AsyncioSelectorReactor
    from twisted.internet.defer import Deferred

    loop = asyncio.new_event_loop()
    reactor = AsyncioSelectorReactor(loop)
    try:
        return _drive(Deferred.fromCoroutine(work(reactor)), reactor)
    finally:
        _dispose(reactor, loop)


def _dispose(reactor: Any, loop: Any) -> None:
    """Close what a reactor of L{_on_own_reactor} opened, and its loop."""
    waker = getattr(reactor, "waker", None)
    if waker is not None:
        reactor.removeReader(waker)
        waker.connectionLost(None)  # closes its pipe
    loop.close()


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


def _error_line(error: GophergemError) -> str:
    """
    An error as one line for a person: C{CODE: message}, and for a file
    store's error the file first and the advice after (the path a result
    never names is the person's own here).
    """
    if error.path is None:
        return f"{error.code}: {error.message}"
    advice = f" {error.next_step}" if error.next_step else ""
    return f"{error.path}: {error.code}: {error.message}{advice}"


def _refused(error: GophergemError, args: argparse.Namespace, hint: str | None = None) -> int:
    """Report a trust operation that did not happen: 2 for bad arguments, else 1."""
    status = 2 if isinstance(error, InvalidRequest) else 1
    if _wants_json(args):
        fields = error.fields()
        if hint:
            fields["next_step"] = hint
        if error.path is not None:
            fields["path"] = error.path
        print(json.dumps({"kind": "error", "error": fields}, indent=2, ensure_ascii=False))
        return status
    if isinstance(error, NotPinned):
        return _fail(error.message, status)  # the code would speak of a mismatch
    step = hint or error.next_step  # phrased for a terminal (gophergem.advice)
    where = f"{error.path}: " if error.path is not None else ""
    return _fail(f"{where}{error.code}: {error.message}" + (f" {step}" if step else ""), status)


def _show(args: argparse.Namespace, data: dict[str, Any], lines: list[str]) -> int:
    print(json.dumps(data, indent=2, ensure_ascii=False) if _wants_json(args) else "\n".join(lines))
    return 0


def _trust(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem trust list|remove|pin}: the operations the trust tools run,
    on the pins the daemon uses (PostgreSQL on a team server, else the file).
    """

    async def use(state: Any, principal: str | None, reactor: Any) -> int:
        return await _trust_with(state.pins(principal), args, time.time())

    return _with_state(config, args, environ, use, identities=False)


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


def _token(config: Config, args: argparse.Namespace) -> int:
    """C{gophergem token add|remove|list}: the token file of the HTTP endpoint."""
    from gophergem.auth import tokens

    path = config.auth_tokens_file
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


def _identity(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem identity list|create|remove}: the operations the identity
    tools run, on the identities of the owner or of C{--principal}, where the
    daemon keeps them.
    """

    async def use(state: Any, principal: str | None, reactor: Any) -> int:
        return await _identity_with(state.identities(principal), args, time.time())

    return _with_state(config, args, environ, use, identities=True)


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


def render(data: dict[str, Any]) -> str:
    """
    A readable rendering of a payload for a person at a terminal.

    Nothing the payload says about the result is dropped: the size-cap and
    incomplete notes, a TOFU or client-certificate warning, and an error's
    status, the capsule's own text (C{meta}, marked as theirs) and when to
    try again all have a line.
    """
    kind = data["kind"]
    lines: list[str] = []
    if kind == "menu":
        for item in data["items"]:
            if item["type"] == "i" or not item["next_url"]:
                lines.append(f"      {item['title']}")
            else:
                lines.append(f"[{item['type']}]   {item['title']}  <{item['next_url']}>")
    elif kind == "text":
        lines.append(data["text"])
    elif kind == "binary":
        size: int = data["bytes"] if "bytes" in data else data["size"]
        lines.append(f"binary: {counted(size, 'byte')}, {data['mime_type']}")
    elif kind == "gemtext":
        if "text" in data:
            lines.append(data["text"])
        for line in (data.get("document") or {}).get("lines", []):
            if line["type"] == "link":
                label = line["link"].get("text") or line["link"]["url"]
                lines.append(f"=> {label}  <{line['link']['url']}>")
            else:
                lines.append(line["content"])
    elif kind == "success":
        lines.append(data["content"])
    elif kind == "input":
        lines.append(f"input wanted: {data['prompt']}  (answer with --input)")
    elif kind == "redirect":
        lines.append(
            f"redirect ({'permanent' if data['permanent'] else 'temporary'}): {data['new_url']}"
        )
    elif kind == "certificate":
        lines.append(f"certificate {data['status']}: {data['message']}")
        lines.append(f"next: {data['next_step']}")
    else:
        lines.extend(_render_error(data["error"]))
    info = data.get("request_info") or {}
    for name in ("tofu_warning", "client_cert_warning"):
        if info.get(name):
            lines.append(f"-- warning: {info[name]}")
    if data.get("incomplete"):
        lines.append(f"-- incomplete ({data.get('incomplete_reason') or 'reason unknown'})")
    if data.get("note"):
        lines.append(f"-- note: {data['note']}")
    if data.get("next_offset") is not None:
        lines.append(f"-- more: --offset {data['next_offset']}")
    return "\n".join(lines)


def _render_error(error: dict[str, Any]) -> list[str]:
    status = f" (status {error['status']})" if error.get("status") is not None else ""
    lines = [f"error {error['code']}{status}: {error['message']}"]
    if error.get("meta"):
        lines.append(f"the server said: {error['meta']}")
    for name, label in (
        ("pinned_fingerprint", "pinned"),
        ("presented_fingerprint", "presented"),
        ("pinned_expires", "pinned certificate expires"),
    ):
        if error.get(name):
            lines.append(f"{label}: {error[name]}")
    if error.get("retry_after_seconds") is not None:
        seconds = error["retry_after_seconds"]
        lines.append(f"try again in {seconds:g} s")
    if error.get("next_step"):
        lines.append(f"next: {error['next_step']}")
    return lines


# -- gophergem feeds ------------------------------------------------------------------------


def _feeds(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem feeds …}: the subscriptions of the owner or of
    C{--principal}, where the daemon keeps them, through a fetcher and a
    follower built as the MCP server builds them (presenting that
    principal's identities).  The actions that fetch nothing get a fetcher
    without pins or identities: it is never asked.
    """
    fetching = args.feeds_command in ("updates", "subscribe", "import")

    async def use(state: Any, principal: str | None, reactor: Any) -> int:
        import attrs

        from gophergem.feeds.follow import Follower
        from gophergem.fetcher import Fetcher

        if fetching:
            fetcher = Fetcher.from_config(
                config,
                reactor,
                pins=state.pins(principal),
                identities=state.identities(principal),
            )
        else:
            idle = attrs.evolve(config.gemini, tofu_enabled=False, client_certs_enabled=False)
            fetcher = Fetcher.from_config(attrs.evolve(config, gemini=idle), reactor)
        return await feeds_command(Follower(fetcher, state.feeds(principal)), args)

    return _with_state(config, args, environ, use, identities=fetching)


def _drive(work: Deferred[int], reactor: Any) -> int:
    """
    Run C{reactor} until C{work} fires (not at all when it has fired
    already); return its exit status.

    Anything unexpected is one line (and the log), never a traceback.
    """
    from twisted.python.failure import Failure

    outcome: dict[str, Any] = {}

    def done(result: int | Failure) -> None:
        outcome["result"] = result
        if "ran" in outcome:  # work done before any I/O needs no reactor at all
            reactor.stop()

    work.addBoth(done)
    if "result" not in outcome:
        outcome["ran"] = True
        reactor.run()
    if "result" not in outcome:
        return _fail("stopped before the command finished.", 130)
    result = outcome["result"]
    if isinstance(result, Failure):
        if result.check(BrokenPipeError):
            return _stdout_gone()
        from twisted.logger import Logger

        Logger().failure("gophergem failed unexpectedly", result)
        return _fail(f"failed unexpectedly: {result.getErrorMessage()}", 1)
    status: int = result
    return status


async def feeds_command(follower: Any, args: argparse.Namespace) -> int:
    """
    Run one C{gophergem feeds} action with C{follower} (a
    L{gophergem.feeds.follow.Follower}); return the exit status.

    What it prints goes to standard output, problems to standard error, one
    line each.  A L{GophergemError} (C{STATE_UNAVAILABLE}, C{NOT_SUBSCRIBED},
    a fetch's error) is one line and status 1; a bad argument
    (C{INVALID_REQUEST}) status 2.
    """
    action = args.feeds_command
    try:
        if action == "list":
            return await _feeds_list(follower, args)
        if action == "updates":
            return await _feeds_updates(follower, args)
        if action == "subscribe":
            return await _feeds_subscribe(follower, args)
        if action == "unsubscribe":
            key = await follower.unsubscribe(args.url)
            data = {"kind": "subscription_removed", "url": key}
            return _show(args, data, [f"Unsubscribed from {key}."])
        if action == "import":
            return await _feeds_import(follower, args)
        return await _feeds_export(follower, args)
    except GophergemError as error:
        return _refused(error, args)


def _clean(text: str | None) -> str:
    """Text written by strangers, safe for a terminal and on one line."""
    from gophergem.wire.text import sanitise_line

    return " ".join(sanitise_line(text or "").split())


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


async def _feeds_list(follower: Any, args: argparse.Namespace) -> int:
    from gophergem.mcp.payloads import subscriptions_payload

    subscriptions = await follower.subscriptions()
    rows = [["URL", "TYPE", "UNREAD", "LAST CHECKED", "LAST ERROR"]] + [
        [
            _clean(sub.url),
            sub.feed_type,
            str(sub.unread),
            sub.last_checked or "never",
            sub.last_error or "-",
        ]
        for sub in subscriptions
    ]
    lines = _table(rows) if subscriptions else ["No subscriptions."]
    return _show(args, subscriptions_payload(subscriptions), lines)


async def _feeds_updates(follower: Any, args: argparse.Namespace) -> int:
    from gophergem.mcp.payloads import updates_payload

    updates = await follower.updates(
        args.url, since=args.since, mark_read=args.mark_read, limit=args.limit
    )
    lines = [
        "  ".join(
            (
                (entry.published or entry.first_seen)[:10],
                _clean(entry.feed_title or entry.feed_url),
                _clean(entry.title) or "(untitled)",
                _clean(entry.url),
            )
        )
        for entry in updates.entries
    ]
    if not lines:
        lines.append(f"Nothing new ({updates.checked} checked).")
    if updates.more:
        lines.append(f"-- more: only the newest {args.limit} shown; run again for the rest.")
    _show(args, updates_payload(updates), lines)
    sys.stdout.flush()
    for failed in updates.errors:
        error = failed.error
        _fail(f"{_clean(failed.feed_url)}: {error.code}: {_clean(error.message)}", 1)
    every_one_failed = bool(updates.errors) and len(updates.errors) >= updates.checked
    return 1 if every_one_failed else 0


async def _feeds_subscribe(follower: Any, args: argparse.Namespace) -> int:
    from gophergem.mcp.payloads import subscription_payload

    subscription, new = await follower.subscribe(args.url, args.title)
    about = f"{_clean(subscription.title) or 'untitled'} ({subscription.feed_type})"
    if new:
        said = (
            f"Subscribed to {subscription.url}: {about}, "
            f"{counted(subscription.entries_known, 'entry', 'entries')} known, all counted as read."
        )
    else:
        said = f"Already subscribed to {subscription.url}: {about}; what was seen is kept."
    return _show(args, subscription_payload(subscription), [said])


async def _feeds_import(follower: Any, args: argparse.Namespace) -> int:
    from twisted.internet.defer import DeferredList

    from gophergem.feeds.opml import MAX_OPML_BYTES, OPMLError, parse_opml
    from gophergem.url import scheme_of

    try:
        with open(args.file, "rb") as stream:
            data = stream.read(MAX_OPML_BYTES + 1)
    except OSError as error:
        return _fail(f"feeds import: cannot read {args.file!r}: {error.strerror or error}")
    try:
        outlines = parse_opml(data)
    except OPMLError as error:
        return _fail(f"feeds import: {args.file!r} is not usable OPML: {error}")
    wanted = [o for o in outlines if scheme_of(o.url) in ("gemini", "gopher")]
    outcomes = await DeferredList(
        [follower.subscribe(o.url, o.title) for o in wanted], consumeErrors=True
    )
    done = dict(zip((o.url for o in wanted), outcomes, strict=True))
    counts = {"ok": 0, "error": 0, "skipped": 0}
    for outline in outlines:
        url = _clean(outline.url)
        if outline.url not in done:
            counts["skipped"] += 1
            print(f"skipped  {url}  not a gemini:// or gopher:// URL")
            continue
        ok, value = done[outline.url]
        if ok:
            subscription, new = value
            counts["ok"] += 1
            state = "" if new else ", already followed"
            about = f"{_clean(subscription.title) or 'untitled'} ({subscription.feed_type}{state})"
            print(f"ok       {url}  {about}")
        else:
            value.trap(GophergemError)  # anything else is a bug: let it out
            counts["error"] += 1
            print(f"error    {url}  {value.value.code}: {_clean(value.value.message)}")
    print(f"{counts['ok']} subscribed, {counts['error']} failed, {counts['skipped']} skipped.")
    return 1 if counts["error"] else 0


async def _feeds_export(follower: Any, args: argparse.Namespace) -> int:
    from pathlib import Path

    from gophergem.feeds.opml import Outline, write_opml
    from gophergem.state.documents import write_atomically

    subscriptions = await follower.subscriptions()
    document = write_opml([Outline(sub.url, sub.title) for sub in subscriptions])
    if args.file is None:
        sys.stdout.write(document.decode("utf-8"))
        sys.stdout.flush()
        return 0
    try:
        write_atomically(Path(args.file), document)
    except OSError as error:
        return _fail(f"feeds export: cannot write {args.file!r}: {error.strerror or error}")
    print(f"Wrote {counted(len(subscriptions), 'subscription')} to {args.file}.")
    return 0
