# -*- test-case-name: tests.test_http_secret_input -*-
"""
The two providers of L{ISecretInput}, where the gemini tools ask a person
for a capsule's secret input on a one-time page
(L{gophergem.http.secret_page}): L{LoopbackSecretInput} for the stdio
server, L{SiteSecretInput} for the HTTP daemon.

This module loads no C{twisted.web}: the stdio server builds its pages'
site only when a capsule first asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred, fail, succeed
from zope.interface import implementer

from gophergem.interfaces import ISecretInput

__all__ = ["LoopbackSecretInput", "SiteSecretInput"]


@implementer(ISecretInput)
@attrs.define(eq=False)
class LoopbackSecretInput:
    """
    The stdio server's one-time pages for secret input: a
    L{LoopbackListener<gophergem.http.secret_page.LoopbackListener>} on
    127.0.0.1, built on first use (its module loads C{twisted.web}, which a
    session that never meets a status 11 need not pay for at start-up).
    """

    reactor: Any
    _listener: Any = attrs.field(default=None, init=False)

    def _get(self) -> Any:
        if self._listener is None:
            from gophergem.http.secret_page import LoopbackListener, SecretPages

            self._listener = LoopbackListener(SecretPages(self.reactor), self.reactor)
        return self._listener

    @property
    def pages(self) -> Any:
        """The pending pages (see L{SecretPages<gophergem.http.secret_page.SecretPages>})."""
        return self._get().pages

    def open(self, prompt: str, capsule_url: str) -> Any:
        """A new page: a Deferred of its URL and of the answer given on it."""
        return self._get().open(prompt, capsule_url)


@implementer(ISecretInput)
@attrs.define(eq=False)
class SiteSecretInput:
    """
    The daemon's one-time pages for a capsule's secret input, served by its
    own site under C{/input/} (see L{ISecretInput}):
    offered only when the daemon listens on loopback alone, so that whoever
    opens a page is on this machine.

    @ivar base: Gives the pages' base URL (C{http://127.0.0.1:PORT/input/})
        once the daemon listens.
    """

    pages: Any
    base: Callable[[], str | None]

    def open(self, prompt: str, capsule_url: str) -> Deferred[tuple[str, Deferred[str]]]:
        """A new page: its URL, and a Deferred of the answer given on it."""
        base = self.base()
        if base is None:
            return fail(RuntimeError("the daemon is not listening yet"))
        token, answer = self.pages.open(prompt, capsule_url)
        return succeed((base + token, answer))
