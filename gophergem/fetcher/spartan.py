# -*- test-case-name: tests.test_fetcher_smolweb -*-
"""
The Spartan pipeline: URL, policy, robots.txt, cache, client, result.

The peer of L{gophergem.fetcher.gemini}, with the same shape: check the
request, take the steps the small web shares
(L{gophergem.fetcher.smolweb.SmolwebPipeline}: robots.txt read over
Spartan, cache, cap, pacing per host across Finger, Nex and Spartan, one
deadline), exchange one request through L{gophergem.client.spartan},
decode and cut one window.

Every status becomes a result kind: 2 by its MIME type (gemtext whose
C{=:} links are marked as taking input, other text, a binary described and
never returned), 3 a redirect reported and never followed, 4 (client
error) C{PERMANENT_ERROR} and 5 (server error) C{TEMPORARY_ERROR}, each
with the status and the server's message.  An C{input} is sent as the
data block, as a URL's query is; the URL echoed back never shows it (only
whether there was one), and an answer with input is never cached.
"""

from __future__ import annotations

import attrs
from twisted.internet.defer import CancelledError, Deferred

from gophergem._time import format_utc
from gophergem.client.spartan import SpartanClientProtocol, SpartanResponse
from gophergem.errors import (
    GophergemError,
    InvalidRedirect,
    InvalidRequest,
    PermanentError,
    TemporaryError,
)
from gophergem.fetcher._pipeline import (
    Deadline,
    check_offset,
    failure_of,
    keep_partial,
)
from gophergem.fetcher._smoltext import Form, SmolFetcher, SmolWindow, cached, keep, render
from gophergem.fetcher.gemini import TEXT_LIKE_TYPES
from gophergem.results import FetchFailure, GeminiRequestInfo, RedirectResult
from gophergem.url import safe_echo, scheme_of
from gophergem.wire import spartan as wire
from gophergem.wire.gemini import MimeType, parse_mime
from gophergem.wire.robots import gemini_robot_paths
from gophergem.wire.text import is_plain_ascii, sanitise_line

__all__ = ["SpartanPipeline"]

SpartanResult = SmolWindow | RedirectResult | FetchFailure


def _form(mime: MimeType) -> Form:
    if mime.essence == "text/gemini":
        return "gemtext"
    if mime.type == "text" or mime.essence in TEXT_LIKE_TYPES:
        return "success"
    return "binary"


def _strip_query(text: object) -> str:
    if not isinstance(text, str):
        return ""
    return safe_echo(text.split("?", 1)[0].split("#", 1)[0])


@attrs.define
class SpartanPipeline(SmolFetcher):
    """
    Fetch spartan:// URLs under the small web's shared steps (its fields
    are L{SmolFetcher}'s; the robots.txt gate of C{steps} reads
    C{/robots.txt} through L{fetch_robots}).
    """

    async def fetch(
        self, text: str, answer: str | None, offset: int, refresh: bool
    ) -> SpartanResult:
        """
        Fetch one spartan:// URL, C{answer} (when given) sent as the data
        block instead of the URL's query; always a result, never an exception.
        """
        info = GeminiRequestInfo(url=_strip_query(text))
        try:
            url = wire.SpartanURL.from_text(text)
            if answer is not None:
                if not isinstance(answer, str):
                    raise InvalidRequest(message="input must be a string.")
                url = url.with_input(answer)
            check_offset(offset)
            self.steps.check_allowlists(url.host, url.port)
            info = GeminiRequestInfo(
                url=url.without_query().to_text(),
                host=url.host,
                port=url.port,
                path=url.path,
                has_query=url.query is not None,
            )
            return await self.steps.within_deadline(
                lambda deadline: self._obtain(url, info, offset, refresh, deadline)
            )
        except CancelledError:
            raise
        except Exception as error:
            return failure_of(info, error)

    async def _obtain(
        self,
        url: wire.SpartanURL,
        info: GeminiRequestInfo,
        offset: int,
        refresh: bool,
        deadline: Deadline,
    ) -> SpartanResult:
        steps = self.steps
        await steps.check_robots(url.host, url.port, gemini_robot_paths(url.path, url.query))
        key = url.to_text()
        cache = steps.cache_for(url.query is None)
        base = url.without_query()  # links must not carry the (input) query
        hit = await cached(steps, cache, key, refresh)
        if hit is not None:
            info = attrs.evolve(info, timestamp=format_utc(hit.fetched_at))
            return render(steps, hit, info, base, offset, True, input_links=True)
        started = self.clock.seconds()
        limit = steps.config.max_response_size
        response = await steps.exchange(
            url.host, lambda: self._exchange(url, limit, deadline), paced=True
        )
        info = attrs.evolve(info, timestamp=format_utc(started))
        try:
            header = response.header
            if header.status is not wire.SpartanStatus.SUCCESS:
                return self._status_result(url, info, header)
            mime = parse_mime(header.meta or wire.DEFAULT_SUCCESS_META)
            download = await keep(
                steps,
                self.offload,
                cache,
                key,
                response.body,
                form=_form(mime),
                mime=mime,
                overflowed=response.overflowed,
                incomplete_reason=response.incomplete_reason,
                fetched_at=started,
                plain=is_plain_ascii(response.body),
            )
            return render(steps, download, info, base, offset, False, input_links=True)
        except GophergemError as error:
            # Failures after the exchange keep when it happened.
            return FetchFailure(request_info=info, error=error)

    def _status_result(
        self, url: wire.SpartanURL, info: GeminiRequestInfo, header: wire.ResponseHeader
    ) -> RedirectResult:
        """The result of a 3, or the error of a 4 or a 5 (raised)."""
        meta = sanitise_line(header.meta) or None
        if header.status is wire.SpartanStatus.REDIRECT:
            target = header.meta.strip()
            if not target:
                raise InvalidRedirect(message="The server redirected without naming a target.")
            new_url = sanitise_line(url.without_query().resolve(target))
            try:
                cross_host = wire.SpartanURL.from_text(new_url).host != url.host
            except GophergemError:
                cross_host = True
            return RedirectResult(
                request_info=info,
                new_url=new_url,
                permanent=False,
                cross_host=cross_host,
                scheme=scheme_of(new_url) or "spartan",
            )
        if header.status is wire.SpartanStatus.CLIENT_ERROR:
            raise PermanentError(
                message="The Spartan server answered 4: a client error (the request cannot "
                "be served as it is, often not found).",
                status=4,
                temporary=False,
                meta=meta,
                next_step="Check the URL (and any input); do not retry it unchanged.",
            )
        raise TemporaryError(
            message="The Spartan server answered 5: a server error.",
            status=5,
            temporary=True,
            meta=meta,
            next_step="The server failed to answer; try again later or tell the user.",
        )

    async def _exchange(
        self, url: wire.SpartanURL, limit: int, deadline: Deadline | None
    ) -> SpartanResponse:
        protocol = SpartanClientProtocol.for_url(url, limit, keep_partial=keep_partial(deadline))
        await self.connector.connect(url, protocol)
        return await protocol.finished

    def fetch_robots(self, host: str, port: int) -> Deferred[bytes | None]:
        """
        Fetch C{/robots.txt} over Spartan through the same client (never
        through the gate): 2 gives its body, 4 means no policy, anything
        else fails with a coded error (the gate fails open on it).
        """
        url = wire.SpartanURL(host, port, "/robots.txt")
        limit = self.steps.probe_limit()

        async def probe() -> bytes | None:
            response = await self.steps.exchange(
                host, lambda: self._exchange(url, limit, None), paced=False
            )
            status = response.header.status
            if status is wire.SpartanStatus.SUCCESS:
                return bytes(response.body)
            if status is wire.SpartanStatus.CLIENT_ERROR:
                return None
            if status is wire.SpartanStatus.REDIRECT:
                raise InvalidRedirect(message="robots.txt redirected elsewhere; not followed.")
            raise TemporaryError(message=f"robots.txt answered {int(status)}.", status=int(status))

        return Deferred.fromCoroutine(probe())
