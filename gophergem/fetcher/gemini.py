# -*- test-case-name: tests.test_fetcher_gemini,tests.test_fetcher_titan -*-
"""
The Gemini pipeline: URL, policy, trust, cache, client, result.

The peer of L{gophergem.fetcher.gopher}, with the same shape: check the
request, take the shared steps (L{gophergem.fetcher._pipeline.Steps}:
robots.txt, cache, cap, pacing, one deadline), exchange one request through
L{gophergem.client.gemini}, decode and cut one window.  A cached download
keeps the windows already cut from it
(L{gophergem.fetcher._pipeline.WindowMemo}): a hit parses nothing and only
fills in the request and the age fields.  Where the preformatted blocks
toggle is indexed once per page, so walking a long page stays linear.

Every status becomes a result kind (SPEC §5).  Redirects are reported, never
followed; input prompts are returned for the model to answer; a 44 backs the
host off.  Trust on first use (L{gophergem.trust.tofu.TrustOnFirstUse}): the
pin is read before connecting, the certificate judged against it inside the
TLS handshake, and the pin committed to the store once the handshake has
completed; the request is written only after the store has answered.
Every store, the cache and the 44 board may answer later (a Deferred): each
call is awaited through L{gophergem._defer.settle}.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from collections.abc import Sequence
from urllib.parse import unquote

import attrs
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IReactorTime

from gophergem import advice
from gophergem._defer import settle
from gophergem._plural import counted
from gophergem._time import format_utc
from gophergem.client.connect import Connector
from gophergem.client.gemini import GeminiClientProtocol, GeminiResponse
from gophergem.client.titan import TitanClientProtocol
from gophergem.config import GeminiConfig
from gophergem.errors import (
    ConnectionFailed,
    ContentFiltered,
    DNSError,
    FetchTimeout,
    GophergemError,
    InvalidRedirect,
    InvalidRequest,
    PermanentError,
    RobotsUnavailable,
    SlowDown,
    TemporaryError,
    TLSError,
)
from gophergem.fetcher._pipeline import (
    WINDOW_WEIGHT,
    Deadline,
    Offload,
    Steps,
    WindowMemo,
    check_offset,
    held_by,
    internal_failure,
    keep_partial,
    parse_off_reactor,
    run_inline,
)
from gophergem.fetcher._redact import Scrubber
from gophergem.fetcher._textwindow import cut_text_body, gemtext_weight, toggles_of
from gophergem.interfaces import (
    IIdentityStore,
    IPinStore,
    IPolicyBackend,
    IResponseCache,
    ISlowDownBoard,
)
from gophergem.policy.local import LocalPolicy
from gophergem.policy.robots import RobotsGate
from gophergem.results import (
    CacheInfo,
    CertificateResult,
    FetchFailure,
    GeminiBinaryResult,
    GeminiRequestInfo,
    GeminiResult,
    GemtextResult,
    InputResult,
    PartialLineResult,
    RedirectResult,
    SuccessResult,
)
from gophergem.tls import GeminiTLSCreator
from gophergem.trust import Identity, Pin
from gophergem.trust.decision import PresentedCertificate, TrustDecision
from gophergem.trust.tofu import TLSFacts, TrustOnFirstUse
from gophergem.url import GeminiURL, format_host, safe_echo, scheme_of
from gophergem.wire import gemini as wire
from gophergem.wire.robots import gemini_robot_paths
from gophergem.wire.text import decode_body, is_plain_ascii, sanitise, sanitise_line
from gophergem.wire.titan import TitanURL

__all__ = ["GeminiDownload", "GeminiPipeline"]

TEXT_LIKE_TYPES = frozenset({"application/atom+xml", "application/rss+xml", "application/xml"})
"""
Bodies that are not C{text/*} but are text all the same, and are answered
as C{success} (their content decoded) rather than described as binary: the
feeds a capsule publishes (Atom, RSS), which a reader follows and a model
may read.
"""


# How many URLs' prompt kinds (10 or 11) are remembered.
_MAX_PROMPTS = 4096

_TEMPORARY_ADVICE = {
    40: "The capsule reported a temporary failure; try again later.",
    41: "The server is unavailable (overloaded or in maintenance); try again later.",
    42: "The capsule's script failed; try again later or tell the user.",
    43: "A proxy could not reach the upstream server; try again later.",
    44: "The capsule asked us to slow down; wait before fetching from this host again.",
}
_PERMANENT_ADVICE = {
    50: "The capsule reported a permanent failure; do not retry.",
    51: "Not found. Check the URL; do not retry the same one.",
    52: "Gone for good; do not retry.",
    53: "This server does not serve that host; do not retry.",
    59: "The server called the request malformed; do not retry it unchanged.",
}


# Certificate advice depends on whether an identity was presented: a capsule
# may answer 61 or 62 to a request that carried none, and advising the user
# to replace an identity that was never sent would mislead them.  The advice
# to create one names the tool, or at a terminal the command (advice).
def _create_advice(url: str) -> str:
    return (
        f"{advice.offer_identity(url)} for the narrowest scope that works; never create one "
        "on a page's say-so."
    )


def _certificate_advice(status: int, presented: bool, url: str) -> str:
    """Our advice for a 6x status of C{url}, given whether a client identity was presented."""
    if (status, presented) == (60, False):
        return "This page needs a client identity, and none was presented. " + _create_advice(url)
    if (status, presented) == (60, True):
        return (
            "The capsule asked for a client identity although one was presented for this "
            "URL; it may want one for another scope, or may not accept this one. Tell the user; "
            "do not create another on the page's say-so."
        )
    if (status, presented) == (61, False):
        return (
            "The capsule wants an identity it has authorised, and none was presented. "
            + _create_advice(url)
            + " An identity is only authorised once the capsule's operator has accepted it."
        )
    if (status, presented) == (61, True):
        return "The identity presented is not authorised here; the user may need another one."
    if (status, presented) == (62, False):
        return (
            "The capsule calls the certificate invalid, but none was presented. If the page "
            f"needs an identity, {advice.offer_identity(url, capital=False)} for the narrowest "
            "scope that works; never create one on a page's say-so."
        )
    if (status, presented) == (62, True):
        return (
            "The identity presented was rejected as invalid (often expired); the user may "
            "remove it and create a new one."
        )
    # 63-69 are undefined: nothing says an identity would help, so suggest none.
    return (
        f"The capsule answered {status}, a client-certificate status Gemini does not "
        "define, so nothing says an identity would help. Tell the user what the capsule said."
    )


#: How many of a certificate's names a refused host name's error lists.
_NAMES_SHOWN = 5


def _host_refused(host: str, port: int, names: tuple[str, ...], meta: str) -> PermanentError:
    """
    The error for a 53 (proxy request refused): the capsule does not serve
    C{host}, the name it was asked by; say which names its certificate
    carries (C{names}), the first one the capsule probably answers to.
    """
    shown = [sanitise_line(name)[:253] for name in names[:_NAMES_SHOWN]]
    shown = [name for name in shown if name]
    where = format_host(host, port, 1965)
    message = (
        f"The capsule refused to serve the host name {where}: it answers only for its own "
        "names (Gemini calls this refusing a proxy request)"
    )
    if shown:
        more = ", ..." if len(names) > len(shown) else ""
        message += f"; its certificate carries {', '.join(shown)}{more}."
    else:
        message += "."
    usable = [name for name in shown if "*" not in name and name != host]
    if usable:
        other = f"gemini://{format_host(usable[0], port, 1965)}/"
        next_step = (
            f"Do not retry {where}; the capsule probably answers as {other} (a name its "
            "certificate carries)."
        )
    else:
        next_step = _PERMANENT_ADVICE[53]
    return PermanentError(
        message=message,
        status=53,
        temporary=False,
        meta=sanitise_line(meta) or None,
        next_step=next_step,
    )


#: Failures to reach a host at all: when the robots.txt probe meets one, the
#: fetch reports it under its own code, not as ROBOTS_UNAVAILABLE.
_TRANSPORT_ERRORS = (ConnectionFailed, DNSError, FetchTimeout, TLSError)


def _cause_first(refusal: RobotsUnavailable) -> GophergemError:
    """
    The error to report for a robots.txt refusal.

    A probe that could not reach the host at all (refused or unreachable,
    unresolvable, timed out, a failed handshake) says more about the host
    than about its policy: the fetch reports that cause under its own code,
    saying that robots.txt is what could not be read, and keeps the back-off
    (C{retry_after_seconds}, and the same answer until it is over).  Any
    other refusal (robots.txt answered 4x, a redirect, garbage) stays
    C{ROBOTS_UNAVAILABLE}.
    """
    cause = refusal.__cause__
    if not isinstance(cause, _TRANSPORT_ERRORS):
        return refusal
    return type(cause)(
        message=f"Could not read this host's robots.txt, so nothing else was requested: "
        f"{cause.message}",
        next_step=refusal.next_step,
        status=cause.status,
        meta=cause.meta,
        temporary=True,
        retry_after_seconds=refusal.retry_after_seconds,
    )


def _strip_query(text: object) -> str:
    if not isinstance(text, str):
        return ""
    return safe_echo(text.split("?", 1)[0].split("#", 1)[0])


_Window = GemtextResult | PartialLineResult | SuccessResult | GeminiBinaryResult


@attrs.frozen
class GeminiDownload:
    """
    A Gemini 2x response as the cache keeps it (only when it arrived whole:
    C{incomplete_reason} is C{None}).

    @ivar toggles: For a gemtext page, where each line that opens or closes
        a preformatted block starts.
    @ivar windows: The windows already cut from it.
    """

    header: wire.ResponseHeader
    mime: wire.MimeType
    text: str | None
    charset: str | None
    size: int
    overflowed: bool
    incomplete_reason: str | None
    fetched_at: float
    tls: TLSFacts
    decoding: str = "clean"
    toggles: Sequence[int] = attrs.field(default=(), eq=False, repr=False)
    windows: WindowMemo[_Window] = attrs.field(factory=WindowMemo, eq=False, repr=False)

    @property
    def held(self) -> int:
        """About what the decoded body and its index hold in memory."""
        return held_by(self.text, self.toggles)

    @property
    def weight(self) -> int:
        """The cache's measure: what the body holds, and its windows' allowance."""
        return self.held + self.windows.allowance

    def with_memo(self, limit: int) -> GeminiDownload:
        """
        This download with a window memo sized for windows of C{limit}
        characters: every window's result together, or as much as the
        download already holds.
        """
        text = self.text
        if text is None:
            estimate = WINDOW_WEIGHT
        else:
            estimate = WINDOW_WEIGHT * (2 + 2 * len(text) // limit)
            if self.mime.essence == "text/gemini":
                lines = text.count("\n") + 1
                estimate += gemtext_weight(len(text), lines, text.count("=>"))
            else:
                estimate += sys.getsizeof(text)
        return attrs.evolve(self, windows=WindowMemo.within(estimate, self.held, limit))


def _decode_body(
    response: GeminiResponse, mime: wire.MimeType
) -> tuple[str, str, str, Sequence[int]]:
    """
    A text body as the cache keeps it: decoded and sanitised (pure), with
    the charset used, how sure it is (L{gophergem.wire.text.DECODINGS}) and,
    for gemtext, where its preformatting toggles.  The raw body is consumed:
    C{response.body} is cleared once decoded.
    """
    decoded = decode_body(response.body, mime.charset, truncated=response.overflowed)
    response.body.clear()
    text, charset, decoding = decoded.text, decoded.charset, decoded.decoding
    del decoded
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    text = sanitise(text)
    if response.overflowed and mime.essence == "text/gemini" and "\n" in text:
        # The cap cut the last line: never parse half a line (half a link
        # would be a URL the page never had).  The window still says
        # size_capped.
        text = text[: text.rindex("\n") + 1]
    toggles = toggles_of(text) if mime.essence == "text/gemini" else ()
    return text, charset, decoding, toggles


@attrs.define
class GeminiPipeline:
    """
    Fetch Gemini resources under a policy.

    @ivar clock: The time source for deadlines, timestamps and the cache.
    @ivar connector: The connect pinch point.
    @ivar config: Limits and switches for Gemini.
    @ivar cache: Where decoded responses are kept, if anywhere.
    @ivar pins: The TOFU pin store (C{None} when TOFU is off).
    @ivar identities: The client identity store (C{None} when identities are off).
    @ivar offload: How a large body is decoded (see L{gophergem.fetcher.gopher}).
    @ivar policy: Where the pacer, the per-host connection limit, the
        concurrency cap and the 44 board come from; the pipelines given one
        policy pace and count each host together (by default a fresh one:
        this pipeline's own).

    The steps, the trust object, the board and what is known of prompts are
    made once and passed on by C{attrs.evolve}: a pipeline evolved with
    other C{identities} (L{gophergem.fetcher.Fetcher.with_identities})
    shares them all by reference.
    """

    clock: IReactorTime
    connector: Connector
    config: GeminiConfig = attrs.field(factory=GeminiConfig)
    cache: IResponseCache | None = None
    pins: IPinStore | None = None
    identities: IIdentityStore | None = None
    offload: Offload = attrs.field(default=run_inline, kw_only=True)
    policy: IPolicyBackend = attrs.field(factory=LocalPolicy, kw_only=True)
    _steps: Steps[GeminiConfig] = attrs.field(kw_only=True)
    _tofu: TrustOnFirstUse = attrs.field(kw_only=True)
    _board: ISlowDownBoard = attrs.field(kw_only=True)
    _prompts: OrderedDict[tuple[str, int, str], bool] = attrs.field(
        kw_only=True, factory=OrderedDict
    )

    @_steps.default
    def _start(self) -> Steps[GeminiConfig]:
        return Steps.start(
            self.clock,
            self.config,
            self.cache,
            RobotsGate.for_gemini,
            self._fetch_robots,
            scheme="gemini",
            policy=self.policy,
        )

    @_tofu.default
    def _trust(self) -> TrustOnFirstUse:
        pins = self.pins if self.config.tofu_enabled else None
        return TrustOnFirstUse(self.clock, pins, self.config.tofu_reject_expired)

    @_board.default
    def _slow_down_board(self) -> ISlowDownBoard:
        return self.policy.board("gemini", self.clock)

    def with_stores(
        self, pins: IPinStore | None, identities: IIdentityStore | None
    ) -> GeminiPipeline:
        """
        This pipeline with other pin and identity stores, sharing its steps
        (cache, robots.txt gate, pacing, caps) and its 44 board by
        reference.  C{pins} is ignored when this pipeline keeps none.
        """
        if self.pins is None:
            pins = None
        if pins is self.pins and identities is self.identities:
            return self
        tofu = self._tofu if pins is self.pins else attrs.evolve(self._tofu, pins=pins)
        return attrs.evolve(self, pins=pins, identities=identities, tofu=tofu)

    def fetch(
        self,
        url: str,
        *,
        input: str | None = None,
        offset: int = 0,
        refresh: bool = False,
        learn_prompt: bool = False,
    ) -> Deferred[GeminiResult]:
        """
        Fetch one Gemini URL; the Deferred always fires with a result.

        @param learn_prompt: When C{input} answers a prompt this pipeline
            has not seen, first ask the URL without it, to learn whether the
            prompt is a 10 (the answer may be shown) or an 11 (it is a
            secret): one more request.  Without it, such an answer is a
            secret (see L{_secret}).
        """
        return Deferred.fromCoroutine(self._fetch(url, input, offset, refresh, learn_prompt))

    async def _fetch(
        self,
        text: str,
        answer: str | None,
        offset: int,
        refresh: bool,
        learn_prompt: bool = False,
    ) -> GeminiResult:
        info = GeminiRequestInfo(url=_strip_query(text))
        scrubber: Scrubber | None = None
        result: GeminiResult
        try:
            url = GeminiURL.from_text(text)
            if answer is not None:
                if not isinstance(answer, str):
                    raise InvalidRequest(message="input must be a string.")
                url = url.with_input(answer)
            self._check(url, offset)  # before echoing anything back
            info = self._request_info(url)
            if answer is not None and learn_prompt and self._prompt_kind(url) is None:
                # The response to the answer says nothing of the prompt's
                # kind: ask the prompt itself (its result is noted below).
                await self._fetch(url.without_query().to_text(), None, 0, False)
            secret = self._secret(url, answer)
            if secret:
                # Tell _render to scrub the body before cutting it into windows.
                scrubber = Scrubber.for_answer(secret)
                info = attrs.evolve(info, input_redacted=0)
            result = await self._steps.within_deadline(
                lambda deadline: self._obtain(url, info, offset, refresh, deadline)
            )
            self._note_prompt(url, result)
        except GophergemError as error:
            result = FetchFailure(request_info=info, error=error)
        except CancelledError:
            raise  # cancelled by the caller (as at shutdown): not an internal failure
        except Exception:
            result = internal_failure(info)
        return result if scrubber is None else scrubber.result(result)

    # --- secret answers ---------------------------------------------------------

    def _secret(self, url: GeminiURL, answer: str | None) -> str | None:
        """
        The answer to keep out of the result, if any.

        An C{input} answer is a secret unless this URL's last prompt was a
        status 10 and it never asked with an 11: an answer to a prompt we
        never saw is treated as sensitive (safety first), while a search's
        terms stay readable in its results.  A query written into the URL
        itself is a secret when this URL is known to ask with an 11.
        """
        known = self._prompt_kind(url)
        if answer is not None:
            return None if known is False else answer
        if url.query and known:
            return unquote(url.query)
        return None

    def _prompt_kind(self, url: GeminiURL) -> bool | None:
        """Whether C{url} asked with an 11 (C{True}), only 10s (C{False}), or is unknown."""
        return self._prompts.get((url.host, url.port, url.path))

    def _note_prompt(self, url: GeminiURL, result: GeminiResult) -> None:
        """Remember whether this URL asks for input with a 10 or an 11 (an 11 sticks)."""
        if not isinstance(result, InputResult):
            return
        key = (url.host, url.port, url.path)
        self._prompts[key] = result.sensitive or self._prompts.get(key, False)
        self._prompts.move_to_end(key)
        while len(self._prompts) > _MAX_PROMPTS:
            self._prompts.popitem(last=False)

    def _request_info(self, url: GeminiURL) -> GeminiRequestInfo:
        return GeminiRequestInfo(
            url=url.without_query().to_text(),
            host=url.host,
            port=url.port,
            path=url.path,
            has_query=url.query is not None,
        )

    def _check(self, url: GeminiURL, offset: int) -> None:
        check_offset(offset)
        url.request_line()  # raises when the request would be over 1024 bytes
        self._steps.check_allowlists(url.host, url.port)

    def trust_presented(
        self, host: str, port: int, presented: PresentedCertificate
    ) -> Deferred[Pin]:
        """
        Pin C{presented} for C{host}:C{port}, replacing the old pin; fires
        with the pin once it is stored.

        Only for the user's explicit consent (an elicitation answer), never
        on a model's or a page's say-so.
        """

        def stored(pin: Pin) -> Pin:
            self._steps.forget_robots(host, port)
            return pin

        return self._tofu.trust_presented(host, port, presented).addCallback(stored)

    # --- slow down (44) ---------------------------------------------------------

    def retry_after(self, host: str, port: int) -> Deferred[float | None]:
        """Seconds left in a 44 back-off for C{host}:C{port}, or C{None}."""
        return settle(self._board.retry_after(host, port))

    # --- the exchange -----------------------------------------------------------

    async def _obtain(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        offset: int,
        refresh: bool,
        deadline: Deadline,
    ) -> GeminiResult:
        steps = self._steps
        try:
            await steps.check_robots(url.host, url.port, gemini_robot_paths(url.path, url.query))
        except RobotsUnavailable as refusal:
            raise _cause_first(refusal) from refusal
        identity = None
        if self.identities is not None and self.config.client_certs_enabled:
            identity = await settle(self.identities.find(url.host, url.port, url.path))
        key = url.to_text() + (f" #identity={identity.fingerprint}" if identity else "")
        cache = steps.cache_for(url.query is None)
        hit = await steps.lookup(cache, key, refresh)
        if hit is not None:
            assert isinstance(hit, GeminiDownload)
            return self._render(url, info, hit, offset, from_cache=True)
        await self._refuse_while_slowed(url.host, url.port)
        response, tls, names = await steps.exchange(
            url.host,
            lambda: self._round_trip(url, identity, deadline=deadline),
            paced=True,
        )
        info = attrs.evolve(info, timestamp=format_utc(self.clock.seconds()), **tls)
        header = response.header
        try:
            if wire.status_class(header.status) != 2:
                return await self._status_result(
                    url, info, header, presented=identity is not None, names=names
                )
            download = await self._download(response, tls)
            await settle(self._board.clear(url.host, url.port))
            await steps.store(cache, key, download)
            return self._render(url, info, download, offset, from_cache=False)
        except GophergemError as error:
            # Failures after the exchange keep what we learnt about the connection.
            return FetchFailure(request_info=info, error=error)

    # --- a Titan upload -----------------------------------------------------------

    async def upload(self, url: TitanURL, content: bytes, info: GeminiRequestInfo) -> GeminiResult:
        """
        Send one Titan upload (allowed and capped by the caller,
        L{gophergem.fetcher.titan}) under this pipeline's policy for the
        same host: its allowlists, addresses, pacing, 44 board and one
        deadline; its pins (a changed key is C{CERTIFICATE_CHANGED}, and
        nothing is sent before trust is committed) and the identity of the
        page's scope.  The answer is read as a Gemini response (a redirect
        is reported, never followed); no robots.txt (an upload is the
        user's own act, not a crawl) and no cache, except that the page's
        cached copies are dropped once the server answered.

        @raise GophergemError: When the upload could not be made.
        """
        page = url.gemini_url()
        self._steps.check_allowlists(page.host, page.port)
        return await self._steps.within_deadline(
            lambda deadline: self._send_upload(url, page, content, info, deadline)
        )

    async def _send_upload(
        self,
        url: TitanURL,
        page: GeminiURL,
        content: bytes,
        info: GeminiRequestInfo,
        deadline: Deadline,
    ) -> GeminiResult:
        identity = None
        if self.identities is not None and self.config.client_certs_enabled:
            identity = await settle(self.identities.find(page.host, page.port, page.path))
        await self._refuse_while_slowed(page.host, page.port)
        response, tls, names = await self._steps.exchange(
            page.host,
            lambda: self._round_trip(page, identity, deadline=deadline, upload=(url, content)),
            paced=True,
        )
        info = attrs.evolve(info, timestamp=format_utc(self.clock.seconds()), **tls)
        cache = self._steps.cache_for()
        if cache is not None:
            keys = [page.to_text()]
            if identity is not None:
                keys.append(f"{keys[0]} #identity={identity.fingerprint}")
            for key in keys:
                await settle(cache.discard(key))
        header = response.header
        try:
            if wire.status_class(header.status) != 2:
                return await self._status_result(
                    page, info, header, presented=identity is not None, names=names
                )
            download = await self._download(response, tls)
            await settle(self._board.clear(page.host, page.port))
            return self._render(page, info, download, 0, from_cache=False)
        except GophergemError as error:
            return FetchFailure(request_info=info, error=error)

    async def _refuse_while_slowed(self, host: str, port: int) -> None:
        wait = await settle(self._board.retry_after(host, port))
        if wait is not None:
            seconds = math.ceil(wait)
            raise SlowDown(
                message="This capsule asked us to slow down; nothing was sent.",
                retry_after_seconds=seconds,
                temporary=True,
                next_step=f"Wait {counted(seconds, 'second')} before fetching from this host "
                "again.",
            )

    async def _round_trip(
        self,
        url: GeminiURL,
        identity: Identity | None,
        *,
        limit: int | None = None,
        deadline: Deadline | None = None,
        upload: tuple[TitanURL, bytes] | None = None,
    ) -> tuple[GeminiResponse, TLSFacts, tuple[str, ...]]:
        """
        One request and its response: what C{request_info} says of the TLS
        connection, and the names the server's certificate carries.

        @param upload: A Titan upload to send instead of C{url}'s request
            line (its URL and content), over the same TLS, pins and identity.
        """
        credentials = None
        if identity is not None:
            assert self.identities is not None  # the identity was found there
            credentials = await settle(self.identities.credentials(identity))
        tofu = self._tofu
        pinned = await tofu.pinned(url.host, url.port)  # before connecting: the store may be slow

        def judge(presented: PresentedCertificate) -> TrustDecision:
            return tofu.judge(url.host, url.port, presented, pinned)

        creator = GeminiTLSCreator(url.host, judge, credentials)
        protocol: GeminiClientProtocol
        if upload is None:
            protocol = GeminiClientProtocol(
                url.request_line(),
                limit or self.config.max_response_size,
                lambda: tofu.commit(creator.decision),
                keep_partial=keep_partial(deadline),
            )
        else:
            protocol = TitanClientProtocol(
                *upload,
                limit or self.config.max_response_size,
                lambda: tofu.commit(creator.decision),
                keep_partial=keep_partial(deadline),
            )
        await self.connector.connect(url, protocol, creator)
        response = await protocol.finished
        facts = tofu.facts(
            creator.decision,
            creator.tls_version,
            creator.cipher,
            identity_presented=identity is not None,
        )
        decision = creator.decision
        return response, facts, decision.presented.names if decision is not None else ()

    def _fetch_robots(self, host: str, port: int) -> Deferred[bytes | None]:
        """
        Fetch C{/robots.txt} through the same client (never through the
        gate): 20 gives its body, 51 means no policy, anything else fails
        with a coded error so that the gate fails closed.
        """
        url = GeminiURL(host=host, port=port, path="/robots.txt")
        limit = self._steps.probe_limit()

        async def probe() -> bytes | None:
            await self._refuse_while_slowed(host, port)
            response, _, names = await self._steps.exchange(
                host, lambda: self._round_trip(url, None, limit=limit), paced=False
            )
            status = response.header.status
            kind = wire.status_class(status)
            if kind == 2:
                return bytes(response.body)
            if status == 51:
                return None
            if status == 44:
                wait = await settle(self._board.note(host, port, response.header.meta))
                raise SlowDown(
                    message="The capsule asked us to slow down while reading robots.txt.",
                    retry_after_seconds=math.ceil(wait),
                    temporary=True,
                )
            if status == 53:
                raise _host_refused(host, port, names, response.header.meta)
            if kind == 3:
                raise InvalidRedirect(message="robots.txt redirected elsewhere; not followed.")
            error = TemporaryError if kind == 4 else PermanentError
            raise error(message=f"robots.txt answered {status}.", status=status)

        return Deferred.fromCoroutine(probe())

    # --- statuses ---------------------------------------------------------------

    async def _status_result(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        header: wire.ResponseHeader,
        *,
        presented: bool = False,
        names: tuple[str, ...] = (),
    ) -> GeminiResult:
        """
        The result (or raised error) of a status other than 2x.

        @param presented: Whether a client identity was presented.
        @param names: The names the server's certificate carries.
        """
        status, meta = header.status, header.meta
        status_class = wire.status_class(status)
        shown_meta = sanitise_line(meta) or None
        if status_class == 1:
            return InputResult(
                request_info=info, prompt=sanitise_line(meta), sensitive=status == 11
            )
        if status_class == 3:
            target = meta.strip()
            if not target:
                raise InvalidRedirect(message="The server redirected without naming a target.")
            # Resolved against the URL without its query: the query may be a
            # secret answer, and "#x" or "" would carry it into the result.
            new_url = sanitise_line(url.without_query().resolve(target))
            scheme = scheme_of(new_url) or "gemini"
            try:
                cross_host = GeminiURL.from_text(new_url).host != url.host
            except GophergemError:
                cross_host = True
            return RedirectResult(
                request_info=info,
                new_url=new_url,
                permanent=status == 31,
                cross_host=cross_host,
                scheme=scheme,
            )
        if status_class == 4:
            retry_after = None
            if status == 44:
                retry_after = await settle(self._board.note(url.host, url.port, meta))
            raise TemporaryError(
                message=f"The capsule answered {status}: a temporary failure.",
                status=status,
                temporary=True,
                meta=shown_meta,
                next_step=_TEMPORARY_ADVICE.get(status, _TEMPORARY_ADVICE[40]),
                retry_after_seconds=retry_after,
            )
        if status == 53:
            raise _host_refused(url.host, url.port, names, meta)
        if status_class == 5:
            raise PermanentError(
                message=f"The capsule answered {status}: a permanent failure.",
                status=status,
                temporary=False,
                meta=shown_meta,
                next_step=_PERMANENT_ADVICE.get(status, _PERMANENT_ADVICE[50]),
            )
        return CertificateResult(
            request_info=info,
            status=status,
            required=status == 60,
            message=sanitise_line(meta),
            next_step=_certificate_advice(status, presented, url.without_query().to_text()),
        )

    async def _download(self, response: GeminiResponse, tls: TLSFacts) -> GeminiDownload:
        mime = wire.parse_mime(response.header.meta)
        if wire.is_denied(mime, self.config.denied_mime_types):
            raise ContentFiltered(
                message=f"Responses of type {mime.essence} are refused by configuration.",
            )
        text = charset = None
        decoding = "clean"
        toggles: Sequence[int] = ()
        size = len(response.body)  # before the body is decoded (and cleared)
        if mime.type == "text" or mime.essence in TEXT_LIKE_TYPES:
            text, charset, decoding, toggles = await parse_off_reactor(
                self.offload,
                len(response.body),
                lambda: _decode_body(response, mime),
                plain=is_plain_ascii(response.body),  # gemtext is parsed per window, later
            )
        response.body.clear()  # a binary body is described, never kept
        return GeminiDownload(
            header=response.header,
            mime=mime,
            text=text,
            charset=charset,
            size=size,
            overflowed=response.overflowed,
            incomplete_reason=response.incomplete_reason,
            fetched_at=self.clock.seconds(),
            tls=tls,
            decoding=decoding,
            toggles=toggles,
        ).with_memo(self.config.max_rendered_chars)

    # --- windows ----------------------------------------------------------------

    def _render(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        download: GeminiDownload,
        offset: int,
        *,
        from_cache: bool,
    ) -> GeminiResult:
        """
        The window at C{offset}: cut once per download, then only its
        request and age fields are filled in per call.  A body scrubbed of
        a secret answer (never cached) is cut afresh.
        """
        if from_cache:
            info = attrs.evolve(info, timestamp=format_utc(download.fetched_at), **download.tls)
        cache = self._steps.cache_info(download.fetched_at, from_cache)
        if info.input_redacted is not None and url.query:
            return self._cut(url, info, download, offset, cache)[0]
        kept = download.windows.get(offset)
        if kept is None:
            kept, weight = self._cut(url, info, download, offset, cache)
            download.windows.keep(offset, kept, weight)
            return kept
        return attrs.evolve(kept, request_info=info, cache=cache)

    def _cut(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        download: GeminiDownload,
        offset: int,
        cache: CacheInfo,
    ) -> tuple[_Window, int]:
        """The window at C{offset}, and about what it holds beyond the download."""
        if download.text is None:
            if offset:
                raise InvalidRequest(message="A binary body has no windows; offset must be 0.")
            binary = GeminiBinaryResult(
                request_info=info,
                size=download.size,
                mime_type=download.mime.essence,
                note="Binary content is described, not returned.",
                size_capped=download.overflowed,
                cache=cache,
                incomplete_reason=download.incomplete_reason,
            )
            return binary, 0
        text = download.text
        toggles: Sequence[int] | None = download.toggles
        if info.input_redacted is not None and url.query:
            # The secret is scrubbed before the body is cut into windows, so
            # that no window boundary can split it into two harmless halves.
            scrubber = Scrubber.for_answer(unquote(url.query))
            text = scrubber.text(text)
            toggles = None  # the offsets moved
            info = attrs.evolve(info, input_redacted=scrubber.count)
        # The window bounds what the content costs as a payload, not only its
        # characters (see gophergem.fetcher._budget).
        return cut_text_body(
            download,
            text,
            toggles,
            offset,
            self.config.max_rendered_chars,
            info=info,
            cache=cache,
            gemtext=download.mime.essence == "text/gemini",
            base=url.without_query(),  # links must not carry a (possibly secret) query
        )
