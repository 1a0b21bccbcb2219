# -*- test-case-name: tests.test_defer -*-
"""
One code path for stores that answer now and stores that answer later.

The store interfaces (L{gophergem.interfaces}) let a method return its value
or a L{Deferred} firing with it: the file and memory stores answer at once,
while the shared backends of a team server (L{gophergem.state.postgres},
L{gophergem.state.redis}) answer over the network.  Callers wrap every
store call in L{settle} and wait for it.
"""

from __future__ import annotations

from typing import TypeVar

from twisted.internet.defer import Deferred, succeed

__all__ = ["settle"]

_T = TypeVar("_T")


def settle(value: _T | Deferred[_T]) -> Deferred[_T]:
    """
    Return C{value} as a L{Deferred}: a Deferred passes through unchanged, any
    other value becomes one that has already fired with it.
    """
    if isinstance(value, Deferred):
        return value
    return succeed(value)
