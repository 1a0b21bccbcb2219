"""
Run a test module's stores as a networked backend would answer: the
C{answers} fixture makes every fetcher built during the test see its pin
store, identity store, response caches and 44 board through
L{gophergem.testing.DeferringStore}, answering plainly, with Deferreds, or
with Deferreds fired only when the reactor's clock next moves.

A module opts in with C{pytestmark = pytest.mark.usefixtures("answers")}
after importing L{answers}.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.internet.interfaces import IReactorTime

from gophergem.fetcher import Fetcher
from gophergem.interfaces import IResponseCache, ISlowDownBoard
from gophergem.policy.local import LocalPolicy
from gophergem.testing import DeferringStore

__all__ = ["CURRENT", "MODES", "DeferringPolicy", "answers", "wrap"]

#: The answering modes: plain values, Deferreds fired at once, Deferreds on the clock.
MODES = ("plain", "deferred", "clocked")

#: The mode of the test running now, for stores a test builds itself
#: (C{wrap(store, CURRENT, clock)}).
CURRENT = "plain"


def wrap(store: Any, mode: str, clock: IReactorTime | None) -> Any:
    """C{store} as C{mode} has it answer (C{None} stays C{None})."""
    if store is None or mode == "plain":
        return store
    return DeferringStore(store, clock if mode == "clocked" else None)


@attrs.frozen
class DeferringPolicy(LocalPolicy):
    """L{LocalPolicy} whose caches and 44 boards answer as C{mode} says."""

    mode: str = "deferred"
    clock: IReactorTime | None = None

    def board(self, scheme: str, clock: IReactorTime) -> ISlowDownBoard:
        board: ISlowDownBoard = wrap(super().board(scheme, clock), self.mode, self.clock)
        return board

    def cache(
        self, scheme: str, clock: IReactorTime, ttl_seconds: float, max_entries: int
    ) -> IResponseCache | None:
        cache = super().cache(scheme, clock, ttl_seconds, max_entries)
        wrapped: IResponseCache | None = wrap(cache, self.mode, self.clock)
        return wrapped


@pytest.fixture(params=MODES)
def answers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every fetcher built in the test sees its stores answer as the parameter says."""
    mode = str(request.param)
    monkeypatch.setattr(f"{__name__}.CURRENT", mode)
    if mode == "plain":
        return mode
    original = Fetcher.from_config.__func__  # type: ignore[attr-defined]

    def from_config(cls: type[Fetcher], config: Any, reactor: Any, *a: Any, **kw: Any) -> Any:
        clock = reactor
        for name in ("pins", "identities"):
            kw[name] = wrap(kw.get(name), mode, clock)
        kw.setdefault("policy", DeferringPolicy(mode, clock))
        return original(cls, config, reactor, *a, **kw)

    monkeypatch.setattr(Fetcher, "from_config", classmethod(from_config))
    return mode
