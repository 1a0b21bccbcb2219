# -*- test-case-name: tests.test_http_secret_input -*-
"""
Where the gemini tools ask a person for a capsule's secret input: a one-time
page (L{gophergem.http.secret_page}) served by the daemon's own site.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred, fail, succeed

__all__ = ["SiteSecretInput"]


@attrs.define(eq=False)
class SiteSecretInput:
    """
    The daemon's one-time pages for a capsule's secret input, served by its
    own site under C{/input/} (see L{gemini_tools<gophergem.mcp.gemini_tools>}):
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
