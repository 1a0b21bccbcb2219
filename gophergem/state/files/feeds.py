# -*- test-case-name: tests.test_state_feeds -*-
"""
L{FileFeedStore}: feed subscriptions (L{IFeedStore}) in one JSON document,
on the same file machinery as the pin store
(L{gophergem.state.documents.DocumentFile}: a C{flock} per change, atomic
replace, lock-free reads that create nothing, a file that is not a valid
store refused and left alone), so several gophergem processes can share it
and a crash never tears it.

The rules it applies are those of every feed store
(L{gophergem.feeds.subscriptions}); one contract test
(C{tests/test_state_feeds.py}) runs against them all.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import attrs
from zope.interface import implementer

from gophergem.errors import FeedStoreUnavailable
from gophergem.feeds.subscriptions import DocumentFeedStore, FeedDocument, check_document
from gophergem.interfaces import IFeedStore
from gophergem.state.documents import LOCK_TIMEOUT, DocumentFile

__all__ = ["FileFeedStore"]

_KIND = "gophergem-feeds"
_NOUN = "feed subscription store"
_FOREIGN = "Point the feed store setting at a new file."

_T = TypeVar("_T")


@implementer(IFeedStore)
@attrs.define
class FileFeedStore(DocumentFeedStore):
    """
    Subscriptions in one JSON file, safe for several processes and for crashes.

    Every change is made under a lock and replaces the file whole, so
    processes sharing the file see each other's changes at once and lose
    none; a read takes no lock and creates nothing.  Every method raises
    L{FeedStoreUnavailable} when the file cannot be locked, read or written,
    or is not a valid feed store (which is left as it is; see
    C{docs/stores.md}).

    @ivar path: The JSON file; its parent directory is created (mode 0700)
        when missing.
    @ivar lock_timeout: Seconds to wait for another process's lock.
    @ivar prepare: Called before the first change creates the store's
        directory (see L{DocumentFile.prepare}).
    """

    path: str | os.PathLike[str]
    lock_timeout: float = LOCK_TIMEOUT
    prepare: Callable[[], None] | None = attrs.field(default=None, kw_only=True)
    _file: DocumentFile = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._file = DocumentFile(
            self.path,
            kind=_KIND,
            noun=_NOUN,
            check=check_document,
            lock_timeout=self.lock_timeout,
            prepare=self.prepare,
            error=FeedStoreUnavailable,
            foreign_next_step=_FOREIGN,
        )

    def _view(self, inspect: Callable[[FeedDocument], _T]) -> _T:
        return self._file.view(inspect)

    def _update(self, change: Callable[[FeedDocument], _T]) -> _T:
        return self._file.update(change)
