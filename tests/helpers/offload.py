"""
An L{gophergem.fetcher.Offload} that holds the work until the test lets it run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred


class HeldOffload:
    """An offload that holds every piece of work until the test runs it."""

    def __init__(self) -> None:
        self.held: list[tuple[Callable[[], Any], Deferred[Any]]] = []

    def __call__(self, work: Callable[[], Any], /) -> Deferred[Any]:
        d: Deferred[Any] = Deferred()
        self.held.append((work, d))
        return d

    def run_all(self) -> None:
        for work, d in self.held:
            d.callback(work())
