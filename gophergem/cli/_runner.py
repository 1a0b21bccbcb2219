# -*- test-case-name: tests.test_cli,tests.test_cli_signals -*-
"""
What every command of the console script shares: the settings as options
(from the one L{SETTINGS} table), the choice between the readable and the
JSON output, the one-line report of a user error, a reactor of a command's
own (L{_on_own_reactor}), and the run of a service tree in the foreground
until a signal or the end of its input stops it (L{_run}).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from gophergem.config import SETTINGS, Config
from gophergem.errors import GophergemError, InvalidRequest, NotPinned

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred


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

    from gophergem.http.listen import ListenError
    from gophergem.mcp.stdio import StdioMCPService
    from gophergem.state.service import SharedStateService, StateStartError

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
