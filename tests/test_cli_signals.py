"""
C{gophergem serve} (and bare C{gophergem}) stop on SIGINT or SIGTERM whenever
it comes while they start (L{gophergem.cli._runner._run}): before the reactor has
put its own handlers in place, while the services start, once serving.

The reactor is Twisted's asyncio one on a loop of the test's own.  A signal
is delivered by calling the handler in place for it, which is what Python
does between two bytecodes of the main thread when one arrives; the moment
is chosen with a system event trigger or a service, not with time.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from twisted.application.service import MultiService, Service
from twisted.internet.asyncioreactor import AsyncioSelectorReactor

from gophergem.cli import _runner

TURNS = 50
"""Loop turns a signal gets to stop the reactor before it counts as lost (it needs about 4)."""


@pytest.fixture
def fresh_signals() -> Iterator[None]:
    """
    SIGINT and SIGTERM as a freshly started gophergem has them; all put back
    afterwards.  (Set again in the test's body by L{fresh}: pytest-twisted's
    reactor puts its own handlers in place when it starts, between the two.)
    """
    saved = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)}
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(wakeup)


def fresh(sigint: Any = signal.default_int_handler) -> None:
    """SIGINT and SIGTERM as a freshly started gophergem has them (unless told otherwise)."""
    signal.signal(signal.SIGINT, sigint)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def deliver(signum: int) -> None:
    """What Python does when C{signum} arrives: call the handler in place."""
    handler = signal.getsignal(signum)
    assert callable(handler), f"nothing handles {signal.Signals(signum).name}"
    handler(signum, None)


class Probe(Service):
    """
    A service that delivers a signal while it starts, or once started; and
    stops the reactor itself, noting the signal lost, if the reactor is
    still running L{TURNS} loop turns later.
    """

    def __init__(self, reactor: Any, signum: int, moment: str) -> None:
        self.reactor = reactor
        self.signum = signum
        self.moment = moment
        self.lost = False
        self.stopped = False

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if self.moment == "starting":
            deliver(self.signum)
        elif self.moment == "serving":
            self.reactor.callLater(0, deliver, self.signum)
        self.reactor.callLater(0, self._watch, TURNS)

    def _watch(self, turns: int) -> None:
        if not self.running:  # the shutdown has begun
            return
        if turns:
            self.reactor.callLater(0, self._watch, turns - 1)
            return
        self.lost = True
        self.reactor.stop()

    def stopService(self) -> None:
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.stopped = True


def run(
    signum: int,
    moment: str,
    prepare: Callable[[Any], None] | None = None,
    sigint: Any = signal.default_int_handler,
) -> tuple[int, Probe]:
    """
    Run L{_runner._run} with a probe delivering C{signum} at C{moment}, SIGINT
    handled by C{sigint} to begin with; the status and the probe.
    """
    fresh(sigint)
    loop = asyncio.new_event_loop()
    reactor = AsyncioSelectorReactor(loop)
    probe = Probe(reactor, signum, moment)
    top = MultiService()
    probe.setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted: unannotated
    if moment == "starting up":
        # Before the reactor's own handlers are in place: the first thing it does.
        reactor.addSystemEventTrigger("before", "startup", deliver, signum)
    if prepare is not None:
        prepare(reactor)
    try:
        status = _runner._run(top, reactor=reactor)
    finally:
        reactor._signals.uninstall()  # the SIGCHLD waker's pipe (asyncio's run leaves it)
        _runner._dispose(reactor, loop)
    return status, probe


@pytest.mark.usefixtures("fresh_signals")
@pytest.mark.parametrize(
    ("moment", "status"),
    [("starting up", 130), ("starting", 130), ("serving", 0)],
)
def test_sigint_stops_whenever_it_comes(moment: str, status: int) -> None:
    """
    SIGINT before the reactor's handlers are in place stops it too (it was
    lost: Twisted caught the KeyboardInterrupt and went on serving); before
    the services have started the status is 130, once serving 0.
    """
    got, probe = run(signal.SIGINT, moment)
    assert not probe.lost, "the signal was lost: still serving"
    assert probe.stopped
    assert got == status


@pytest.mark.usefixtures("fresh_signals")
@pytest.mark.parametrize(
    ("moment", "status"),
    [("starting up", 143), ("starting", 143), ("serving", 0)],
)
def test_sigterm_stops_whenever_it_comes(moment: str, status: int) -> None:
    """SIGTERM likewise: the services stop; 143 before they have started, 0 once serving."""
    got, probe = run(signal.SIGTERM, moment)
    assert not probe.lost
    assert probe.stopped
    assert got == status


@pytest.mark.usefixtures("fresh_signals")
def test_a_second_signal_changes_nothing() -> None:
    """A second signal while the first one's shutdown is under way neither fails nor restarts it."""

    def twice(reactor: Any) -> None:
        reactor.addSystemEventTrigger("before", "shutdown", deliver, signal.SIGINT)

    got, probe = run(signal.SIGINT, "serving", twice)
    assert (got, probe.lost, probe.stopped) == (0, False, True)


@pytest.mark.usefixtures("fresh_signals")
def test_handlers_are_put_back() -> None:
    """Once the reactor has stopped, SIGINT and SIGTERM are handled as they were before."""
    run(signal.SIGINT, "serving")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.usefixtures("fresh_signals")
def test_an_ignored_sigint_is_left_to_bare_gophergem() -> None:
    """
    An MCP client may start bare gophergem with SIGINT ignored (so Ctrl-C at
    its terminal does not end its servers): it stays ignored; SIGTERM stops it.
    """
    seen = []

    def look(reactor: Any) -> None:
        reactor.callWhenRunning(lambda: seen.append(signal.getsignal(signal.SIGINT)))

    got, probe = run(signal.SIGTERM, "serving", look, sigint=signal.SIG_IGN)
    assert seen == [signal.SIG_IGN]
    assert (got, probe.stopped) == (0, True)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


@pytest.mark.usefixtures("fresh_signals")
def test_serve_hears_sigint_it_was_started_ignoring() -> None:
    """
    serve, started with SIGINT ignored (a shell without job control starts a
    command run in the background so), hears it while it runs, as it says;
    the disposition is put back afterwards.
    """
    fresh(signal.SIG_IGN)
    with _runner._sigint_heard():
        heard = signal.getsignal(signal.SIGINT)
        got, probe = run(signal.SIGINT, "serving", sigint=heard)
    assert heard is signal.default_int_handler
    assert (got, probe.lost, probe.stopped) == (0, False, True)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
