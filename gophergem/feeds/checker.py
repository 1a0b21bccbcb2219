# -*- test-case-name: tests.test_feeds_checker -*-
"""
The daemon's periodic check of every subscription (L{FeedCheckService}),
through the follower the MCP server uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from twisted.application.service import Service
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem._defer import settle

if TYPE_CHECKING:
    from gophergem.feeds.follow import Follower

__all__ = ["FeedCheckService"]


class FeedCheckService(Service):
    """
    Checks every subscription once per interval, in the background.

    The first check runs one interval after the service starts, not at
    start-up; a check still running when the next is due delays it (runs
    never overlap).  Each check reads what the capsules serve now, past the
    response cache (L{Follower.check_all}), paced like every fetch.  Each
    run logs one line (C{checked N, new M, failed K}) and each failure at
    warn, without a traceback; a run never stops the schedule.  Every
    person and every feed is checked on its own: a feed that fails is that
    feed's failure (see L{Follower.check_all}), a person whose check fails
    as a whole (their store down, a bug) is logged once and counted as one
    failure, and everyone after them is still checked.  Stopping the
    service cancels a check in flight (the store keeps what was recorded
    before).

    @ivar follower: The follower the MCP server uses, so tools and checks
        share one store.
    @ivar clock: Where time is read and runs are scheduled.
    @ivar interval: Seconds between runs (more than 0).
    @ivar on_checked: Called after each run, e.g. to announce that
        C{gophergem://feeds/updates} changed; C{None}: nothing is called.
    """

    log = Logger()

    def __init__(self, follower: Follower, clock: IReactorTime, interval: float) -> None:
        if interval <= 0:
            raise ValueError("the interval must be more than 0 seconds")
        self.follower = follower
        self.clock = clock
        self.interval = interval
        self.on_checked: Callable[[], None] | None = None
        self.others: Callable[[], Awaitable[list[tuple[str, Follower]]]] | None = None
        """With authentication: every other principal's follower, checked after the owner's."""
        self.on_checked_for: Callable[[str], None] | None = None
        """Called with each other principal after their check."""
        self.claim: Callable[[], Deferred[bool]] | None = None
        """With replicas: whether this one runs the check now (one replica per interval)."""
        self._loop: LoopingCall | None = None
        self._running: Deferred[None] | None = None

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        loop = LoopingCall(self.run_once)
        loop.clock = self.clock
        loop.start(self.interval, now=False)
        self._loop = loop

    def stopService(self) -> Deferred[None]:
        """Stop the schedule; fires once a check in flight has been cancelled."""
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        loop, self._loop = self._loop, None
        if loop is not None and loop.running:
            loop.stop()
        running = self._running
        if running is None:
            return succeed(None)
        settled: Deferred[None] = Deferred()
        running.addBoth(lambda _: settled.callback(None))
        running.cancel()
        return settled

    def run_once(self) -> Deferred[None]:
        """Check every subscription now; fires when done, and never fails."""
        running = Deferred.fromCoroutine(self._check())
        running.addErrback(self._failed)
        self._running = running

        def finished(result: None) -> None:
            self._running = None

        running.addBoth(finished)
        return running

    async def _check(self) -> None:
        if self.claim is not None and not await self.claim():
            self.log.debug("feeds: another replica checks this time")
            return
        checked, new, failed = await self._check_person(None, self.follower)
        if self.on_checked is not None:
            self.on_checked()
        if self.others is not None:
            try:
                others = await self.others()
            except CancelledError:
                raise
            except Exception:
                self._person_failed(Failure(), "the other principals")
                others = []
            for principal, follower in others:
                counts = await self._check_person(principal, follower)
                checked, new, failed = checked + counts[0], new + counts[1], failed + counts[2]
                if self.on_checked_for is not None:
                    self.on_checked_for(principal)
        self.log.info(
            "feeds: checked {checked}, new {new}, failed {failed}",
            checked=checked,
            new=new,
            failed=failed,
        )

    async def _check_person(
        self, principal: str | None, follower: Follower
    ) -> tuple[int, int, int]:
        """L{_check_one}; a failure of the whole is logged once and counts as one."""
        try:
            return await self._check_one(follower)
        except CancelledError:
            raise
        except Exception:
            self._person_failed(Failure(), "the owner" if principal is None else principal)
            return 0, 0, 1

    def _person_failed(self, failure: Failure, who: str) -> None:
        """Log, once, that the check of C{who} failed as a whole."""
        from gophergem.errors import GophergemError

        error = failure.value
        if isinstance(error, GophergemError):
            self.log.warn(
                "feeds: the check of {who} failed: {code}: {message}",
                who=who,
                code=error.code,
                message=error.message,
            )
        else:
            self.log.failure("feeds: the check of {who} failed unexpectedly", failure, who=who)

    async def _check_one(self, follower: Follower) -> tuple[int, int, int]:
        store = follower.store  # may answer later: each call is settled
        before = sum(sub.unread for sub in await settle(store.subscriptions()))
        errors = await follower.check_all()
        subscriptions = await settle(store.subscriptions())
        new = max(0, sum(sub.unread for sub in subscriptions) - before)
        for failed in errors:
            self.log.warn(
                "feed check of {url} failed: {code}: {message}",
                url=failed.feed_url,
                code=failed.error.code,
                message=failed.error.message,
            )
        return len(subscriptions), new, len(errors)

    def _failed(self, failure: Any) -> None:
        if failure.check(CancelledError):
            return
        from gophergem.errors import GophergemError

        error = failure.value
        if isinstance(error, GophergemError):
            self.log.warn(
                "feeds: the check failed: {code}: {message}",
                code=error.code,
                message=error.message,
            )
            return
        self.log.warn(
            "feeds: the check failed unexpectedly: {error}", error=failure.getErrorMessage()
        )
