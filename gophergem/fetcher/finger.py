# -*- test-case-name: tests.test_fetcher_smolweb -*-
"""
The Finger pipeline: URL, policy, cache, client, result.

The peer of L{gophergem.fetcher.gopher}, with the same shape: check the
request, take the steps the small web shares
(L{gophergem.fetcher.smolweb.SmolwebPipeline}: cache, cap, pacing per host
across Finger, Nex and Spartan, one deadline; Finger has no robots.txt),
send one query line through L{gophergem.client.finger}, decode what came
before the close and cut one window of it.  The answer is a C{text}
result, sanitised.  A forwarding query (C{user@host}) is never sent: it is
refused as C{INVALID_REQUEST} when the URL is read.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import attrs
from twisted.internet.defer import CancelledError

from gophergem._time import format_utc
from gophergem.client.finger import FingerClientProtocol
from gophergem.errors import InvalidRequest
from gophergem.fetcher._pipeline import Deadline, check_offset, failure_of
from gophergem.fetcher._smoltext import SmolDownload, SmolFetcher, SmolWindow, render
from gophergem.results import FetchFailure, RequestInfo
from gophergem.url import safe_echo
from gophergem.wire.finger import FingerURL
from gophergem.wire.gemini import parse_mime

__all__ = ["FingerPipeline"]

_PLAIN = parse_mime("text/plain")


@attrs.define
class FingerPipeline(SmolFetcher):
    """
    Fetch finger:// URLs under the small web's shared steps (its fields
    are L{SmolFetcher}'s).
    """

    async def fetch(
        self, text: str, answer: str | None, offset: int, refresh: bool
    ) -> SmolWindow | FetchFailure:
        """Fetch one finger:// URL; always a result, never an exception."""
        info = RequestInfo(url=safe_echo(text) if isinstance(text, str) else "")
        try:
            url = FingerURL.from_text(text)
            if answer is not None:
                raise InvalidRequest(
                    message="A finger:// URL takes no input; name the user in the URL.",
                    next_step="Fetch finger://host/user (or finger://host/ to list users).",
                )
            check_offset(offset)
            self.steps.check_allowlists(url.host, url.port)
            info = RequestInfo(url=url.to_text(), host=url.host, port=url.port)
            download, from_cache = await self.steps.within_deadline(
                lambda deadline: self._obtain(url, refresh, deadline)
            )
            info = attrs.evolve(info, timestamp=format_utc(download.fetched_at))
            return render(self.steps, download, info, _NoLinks(), offset, from_cache)
        except CancelledError:
            raise
        except Exception as error:
            return failure_of(info, error)

    def _obtain(
        self, url: FingerURL, refresh: bool, deadline: Deadline
    ) -> Coroutine[Any, Any, tuple[SmolDownload, bool]]:
        def protocol(limit: int, keep: Callable[[], bool] | None) -> FingerClientProtocol:
            return FingerClientProtocol(url, limit, keep_partial=keep)

        return self.read_until_close(url, protocol, refresh, deadline, form="text", mime=_PLAIN)


class _NoLinks:
    """A text has no links to resolve."""

    def resolve(self, reference: str) -> str:
        return reference
