# -*- test-case-name: tests.test_fetcher_smolweb -*-
"""
The Nex pipeline: URL, policy, cache, client, result.

The peer of L{gophergem.fetcher.gopher}: check the request, take the steps
the small web shares (L{gophergem.fetcher.smolweb.SmolwebPipeline}; Nex has
no robots.txt), send the path through L{gophergem.client.nex}, and decode
what came before the close by what the path names
(L{gophergem.wire.nex.kind_of}): a directory (a path ending in C{/}) is a
gemtext document whose links are absolute C{nex://} URLs (links of other
schemes stay as written), a C{.gmi} file gemtext, a text file a C{text}
result, anything else a binary, described and never returned.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import attrs
from twisted.internet.defer import CancelledError

from gophergem._time import format_utc
from gophergem.client.nex import NexClientProtocol
from gophergem.errors import InvalidRequest
from gophergem.fetcher._pipeline import Deadline, check_offset, failure_of
from gophergem.fetcher._smoltext import (
    Form,
    SmolDownload,
    SmolFetcher,
    SmolWindow,
    render,
)
from gophergem.results import FetchFailure, GeminiRequestInfo, RequestInfo
from gophergem.url import safe_echo
from gophergem.wire.gemini import parse_mime
from gophergem.wire.nex import NexKind, NexURL, mime_type_of

__all__ = ["NexPipeline"]

_FORMS: dict[NexKind, Form] = {
    NexKind.DIRECTORY: "gemtext",
    NexKind.GEMTEXT: "gemtext",
    NexKind.TEXT: "text",
    NexKind.BINARY: "binary",
}


@attrs.define
class NexPipeline(SmolFetcher):
    """
    Fetch nex:// URLs under the small web's shared steps (its fields are
    L{SmolFetcher}'s).
    """

    async def fetch(
        self, text: str, answer: str | None, offset: int, refresh: bool
    ) -> SmolWindow | FetchFailure:
        """Fetch one nex:// URL; always a result, never an exception."""
        info: RequestInfo | GeminiRequestInfo
        info = RequestInfo(url=safe_echo(text) if isinstance(text, str) else "")
        try:
            url = NexURL.from_text(text)
            if answer is not None:
                raise InvalidRequest(
                    message="A nex:// URL takes no input: Nex has no queries or prompts."
                )
            check_offset(offset)
            self.steps.check_allowlists(url.host, url.port)
            form = _FORMS[url.kind]
            if form == "gemtext":
                info = GeminiRequestInfo(
                    url=url.to_text(),
                    host=url.host,
                    port=url.port,
                    path=url.path,
                    has_query=url.query is not None,
                )
            else:
                info = RequestInfo(url=url.to_text(), host=url.host, port=url.port)
            download, from_cache = await self.steps.within_deadline(
                lambda deadline: self._obtain(url, form, refresh, deadline)
            )
            info = attrs.evolve(info, timestamp=format_utc(download.fetched_at))
            return render(self.steps, download, info, url, offset, from_cache)
        except CancelledError:
            raise
        except Exception as error:
            return failure_of(info, error)

    def _obtain(
        self, url: NexURL, form: Form, refresh: bool, deadline: Deadline
    ) -> Coroutine[Any, Any, tuple[SmolDownload, bool]]:
        def protocol(limit: int, keep: Callable[[], bool] | None) -> NexClientProtocol:
            return NexClientProtocol(url, limit, keep_partial=keep)

        return self.read_until_close(
            url,
            protocol,
            refresh,
            deadline,
            form=form,
            mime=parse_mime(mime_type_of(url.path)),
            # A listing has at least a line; nothing at all is a failure,
            # never an empty directory.  (An empty file is an empty text.)
            nothing="The server closed the connection without sending a listing."
            if url.kind is NexKind.DIRECTORY
            else None,
        )
