# -*- test-case-name: tests.test_policy_robots -*-
"""
The robots.txt gate: may this path on this host be fetched?

L{RobotsGate} asks each host for its robots.txt once (however many fetches
ask at the same moment), remembers the answer on the injected clock, and
decides each fetch with L{gophergem.wire.robots}.

Gopher has no status codes, so a failed probe or a file with no group for us
means "no rules" (it fails open).  Gemini can say "no such file" (51), so
everything else that goes wrong fails closed with C{ROBOTS_UNAVAILABLE}
naming the real cause.  After a failed probe the host is left alone for a
back-off period: fail-closed checks are refused at once, fail-open checks
pass, and nothing is sent.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence

import attrs
from twisted.internet import defer
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem import advice
from gophergem._plural import counted
from gophergem.config import GeminiConfig, GopherConfig
from gophergem.errors import (
    BlockedByRobots,
    BlockedError,
    CertificateChanged,
    CertificateExpired,
    CertificateNotYetValid,
    CertificateStoreUnavailable,
    DNSError,
    FetchTimeout,
    GophergemError,
    RobotsUnavailable,
    SlowDown,
)
from gophergem.wire.robots import (
    AI_AGENTS,
    GEMINI_AGENTS,
    GOPHER_AGENTS,
    RobotsRules,
    parse_robots,
)
from gophergem.wire.text import sanitise_line

__all__ = ["RobotsFetch", "RobotsGate"]

log = Logger()

RobotsFetch = Callable[[str, int], Deferred[bytes | None]]
"""
Fetch C{robots.txt} from C{host}:C{port} through the normal client (but not
through the gate): fires with the file's bytes, or C{None} when the host
states it has none (Gemini 51); fails with a L{GophergemError} otherwise.
"""

_Key = tuple[str, int]


@attrs.frozen
class _Known:
    """A robots.txt that was read (or stated absent), fresh until C{expires}."""

    rules: RobotsRules
    expires: float


@attrs.frozen
class _Failed:
    """
    A probe that failed; the host is left alone until C{until}.

    @ivar as_is: The failure belongs to the target (refused, unresolvable,
        its certificate): checks report C{cause} itself, whatever the gate's
        fail-open setting.
    """

    cause: GophergemError
    until: float
    as_is: bool = False


@attrs.define
class _Probe:
    """One robots.txt fetch in flight, and the checks waiting on it."""

    deferred: Deferred[bytes | None]
    waiters: list[tuple[Deferred[None], tuple[str, ...]]] = attrs.field(factory=list)
    outcome: _Known | _Failed | None = None


@attrs.define
class RobotsGate:
    """
    Decide fetches by the host's robots.txt.

    @ivar clock: Where time is read.
    @ivar fetch: How robots.txt is fetched (see L{RobotsFetch}).
    @ivar fail_open: C{True} for Gopher (a failed probe means no rules),
        C{False} for Gemini (it means C{ROBOTS_UNAVAILABLE}).
    @ivar agents: The agent tokens we obey (L{GOPHER_AGENTS} or
        L{GEMINI_AGENTS}).
    @ivar honor_ai_tokens: Also obey groups naming AI crawlers (L{AI_AGENTS}).
    @ivar ttl: Seconds a robots.txt stays fresh; 0 probes for every check.
    @ivar failure_backoff: Seconds a host is left alone after a failed probe
        (a L{SlowDown} carrying C{retry_after_seconds} sets its own).
    @ivar max_hosts: How many hosts are remembered; the least recently used
        is forgotten first.
    """

    clock: IReactorTime
    fetch: RobotsFetch
    fail_open: bool
    agents: Sequence[str]
    honor_ai_tokens: bool = True
    ttl: float = 86400
    failure_backoff: float = 60
    max_hosts: int = 10_000
    _known: OrderedDict[_Key, _Known | _Failed] = attrs.field(factory=OrderedDict, init=False)
    _probes: dict[_Key, _Probe] = attrs.field(factory=dict, init=False)

    @classmethod
    def for_gopher(
        cls, clock: IReactorTime, fetch: RobotsFetch, config: GopherConfig
    ) -> RobotsGate:
        """A fail-open gate obeying L{GOPHER_AGENTS}, set up from C{config}."""
        return cls(
            clock,
            fetch,
            fail_open=True,
            agents=GOPHER_AGENTS,
            honor_ai_tokens=config.robots_honor_ai_tokens,
            ttl=config.robots_cache_ttl_seconds,
            failure_backoff=config.robots_failure_backoff_seconds,
        )

    @classmethod
    def for_gemini(
        cls, clock: IReactorTime, fetch: RobotsFetch, config: GeminiConfig
    ) -> RobotsGate:
        """A fail-closed gate obeying L{GEMINI_AGENTS}, set up from C{config}."""
        return cls(
            clock,
            fetch,
            fail_open=False,
            agents=GEMINI_AGENTS,
            honor_ai_tokens=config.robots_honor_ai_tokens,
            ttl=config.robots_cache_ttl_seconds,
            failure_backoff=config.robots_failure_backoff_seconds,
        )

    @property
    def effective_agents(self) -> tuple[str, ...]:
        """Every agent token whose rules are obeyed."""
        return (*self.agents, *(AI_AGENTS if self.honor_ai_tokens else ()))

    def check(self, host: str, port: int, paths: Sequence[str]) -> Deferred[None]:
        """
        Decide whether any spelling in C{paths} may be fetched from
        C{host}:C{port}.

        Fires with C{None} when allowed.  Fails with L{BlockedByRobots} when a
        rule for one of our agents covers a path, or, on a fail-closed gate,
        with L{RobotsUnavailable} when robots.txt could not be read (now, or
        by a probe whose back-off is still running).

        At most one probe per host is in flight: concurrent checks wait on
        the same one.  Cancelling the returned Deferred (the fetch's deadline)
        fails this check with L{CancelledError}; the probe carries on for the
        other checks waiting on it, and is cancelled only when none is left.
        A probe cancelled that way leaves nothing behind: no rules and no
        back-off, so the next check probes again.
        """
        key = (host.lower(), port)
        wanted = tuple(paths)
        now = self.clock.seconds()
        entry = self._known.get(key)
        if (isinstance(entry, _Known) and now < entry.expires) or (
            isinstance(entry, _Failed) and now < entry.until
        ):
            self._known.move_to_end(key)
            return _fired(self._verdict(entry, wanted, now))
        probe = self._probes.get(key)
        if probe is None:
            probe = self._start(key, host, port)
        if probe.outcome is not None:
            # The fetch answered synchronously.
            return _fired(self._verdict(probe.outcome, wanted, now))

        def leave(waiter: Deferred[None]) -> None:
            self._leave(key, probe, waiter)

        waiter: Deferred[None] = Deferred(leave)
        probe.waiters.append((waiter, wanted))
        return waiter

    def forget(self, host: str, port: int) -> None:
        """Drop what is known about C{host}:C{port}; the next check probes again."""
        self._known.pop((host.lower(), port), None)

    # --- probing ------------------------------------------------------------

    def _start(self, key: _Key, host: str, port: int) -> _Probe:
        try:
            deferred = self.fetch(host, port)
        except Exception as exc:
            deferred = fail(exc)
        probe = _Probe(deferred)
        self._probes[key] = probe
        deferred.addCallbacks(
            self._probed, self._probe_failed, callbackArgs=(key, probe), errbackArgs=(key, probe)
        )
        return probe

    def _probed(self, data: bytes | None, key: _Key, probe: _Probe) -> None:
        rules = RobotsRules() if data is None else parse_robots(data)
        self._settle(key, probe, _Known(rules, self.clock.seconds() + max(self.ttl, 0)))

    def _probe_failed(self, reason: Failure, key: _Key, probe: _Probe) -> None:
        if self._probes.get(key) is not probe:
            return  # abandoned and cancelled: nobody waits, nothing to remember
        cause = _as_error(reason)
        if isinstance(cause, _TARGET_ERRORS) or cause.status == 53:
            # The host itself is refused or unreachable, or its certificate is,
            # or (a Gemini 53) the server does not serve that host name: the
            # fetch would meet the same error, so report it as it is (a
            # CERTIFICATE_CHANGED must reach the user's consent flow) and
            # back off not at all: the next check probes again.
            self._settle(key, probe, _Failed(cause, self.clock.seconds(), as_is=True))
            return
        backoff = self.failure_backoff
        if isinstance(cause, SlowDown) and cause.retry_after_seconds is not None:
            backoff = cause.retry_after_seconds
        log.info(
            "robots.txt probe of {host}:{port} failed: {code}",
            host=key[0],
            port=key[1],
            code=cause.code,
        )
        self._settle(key, probe, _Failed(cause, self.clock.seconds() + max(backoff, 0)))

    def _settle(self, key: _Key, probe: _Probe, outcome: _Known | _Failed) -> None:
        """Remember what a probe found and answer everyone waiting on it."""
        if self._probes.get(key) is not probe:
            return
        del self._probes[key]
        probe.outcome = outcome
        self._known[key] = outcome
        self._known.move_to_end(key)
        while len(self._known) > self.max_hosts:
            self._known.popitem(last=False)
        now = self.clock.seconds()
        waiters, probe.waiters = probe.waiters, []
        for waiter, paths in waiters:
            if waiter.called:
                continue  # cancelled by an earlier waiter's callbacks
            error = self._verdict(outcome, paths, now)
            if error is None:
                waiter.callback(None)
            else:
                waiter.errback(error)

    def _leave(self, key: _Key, probe: _Probe, waiter: Deferred[None]) -> None:
        probe.waiters[:] = [(w, p) for w, p in probe.waiters if w is not waiter]
        if probe.waiters or self._probes.get(key) is not probe:
            return
        del self._probes[key]
        probe.deferred.cancel()

    # --- decisions ----------------------------------------------------------

    def _verdict(
        self, entry: _Known | _Failed, paths: tuple[str, ...], now: float
    ) -> GophergemError | None:
        """The error refusing C{paths}, or C{None} when they may be fetched."""
        if isinstance(entry, _Failed):
            if entry.as_is:
                return entry.cause
            return None if self.fail_open else _unavailable(entry.cause, entry.until - now)
        rule = entry.rules.blocking_rule(self.effective_agents, paths)
        if rule is None:
            return None
        return BlockedByRobots(
            message="The operator of this host excluded this path for automated "
            "clients like this one in robots.txt.",
            next_step="Do not retry it, and do not try another spelling of the same "
            "address; tell the user the operator asked clients like this one to stay out.",
            meta=_quote_rule(rule),
            temporary=False,
        )


#: Probe failures that belong to the target, not to its robots.txt.
_TARGET_ERRORS = (
    BlockedError,
    DNSError,
    CertificateChanged,
    CertificateExpired,
    CertificateNotYetValid,
    CertificateStoreUnavailable,
)


def _unavailable(cause: GophergemError, left: float) -> RobotsUnavailable:
    """
    Refuse because robots.txt could not be read, naming why and for how long.

    The probe's own error is the refusal's C{__cause__}, so a caller can still
    act on it (a C{CERTIFICATE_CHANGED} met by the probe, say).
    """
    wait = math.ceil(left) if left > 0 else 0
    error = RobotsUnavailable(
        message=f"This host's robots.txt could not be read ({cause.code}: {cause.message}), "
        "so its policy is unknown and nothing was requested.",
        next_step=(
            f"Try again in {counted(wait, 'second')}"
            # Only a process that lives on remembers the failure (advice).
            + ("; robots.txt is not asked for again before then." if advice.long_lived() else ".")
            if wait
            else "Try again later."
        ),
        status=cause.status,
        meta=cause.meta,
        temporary=True,
        retry_after_seconds=wait or None,
    )
    error.__cause__ = cause
    return error


def _fired(error: GophergemError | None) -> Deferred[None]:
    return succeed(None) if error is None else fail(error)


def _as_error(reason: Failure) -> GophergemError:
    """The probe's failure as one of ours; anything else is logged and generalised."""
    if isinstance(reason.value, GophergemError):
        return reason.value
    if isinstance(reason.value, defer.TimeoutError):
        return FetchTimeout(message="The robots.txt request timed out.", temporary=True)
    if isinstance(reason.value, CancelledError):
        return GophergemError(message="The robots.txt request was cancelled.")
    log.failure("unexpected robots.txt probe failure", reason)
    return GophergemError(message="An internal error stopped the robots.txt request; it is logged.")


def _quote_rule(rule: str) -> str:
    """The rule that matched, as untrusted server text for C{meta}."""
    text = sanitise_line(rule)
    return "Disallow: " + (text if len(text) <= 200 else text[:200] + "…")
