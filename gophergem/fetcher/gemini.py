# -*- test-case-name: tests.test_fetcher_gemini -*-
"""
The Gemini half of the fetcher: URL, policy, trust, cache, client, result.

Every status becomes a result kind (SPEC §5).  Redirects are reported, never
followed; input prompts are returned for the model to answer; a 44 backs the
host off.  Trust on first use is decided inside the TLS handshake
(L{gophergem.tls}); the decision is committed to the pin store only once the
handshake has completed, before the request is written.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from typing import Any
from urllib.parse import unquote

import attrs
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gophergem.client.connect import Connector
from gophergem.client.gemini import GeminiClientFactory, GeminiResponse
from gophergem.config import GeminiConfig
from gophergem.errors import (
    ConnectionFailed,
    ContentFiltered,
    DNSError,
    GophergemError,
    InvalidRedirect,
    InvalidRequest,
    PermanentError,
    RobotsUnavailable,
    SlowDown,
    TemporaryError,
    TLSError,
    TofuDisabled,
)
from gophergem.errors import TimeoutError as FetchTimeout
from gophergem.fetcher.budget import cut_lines, cut_text, lines_that_may_fit
from gophergem.fetcher.common import (
    SMALL_WEIGHT,
    Deadline,
    Offload,
    check_allowlists,
    internal_failure,
    parse_off_reactor,
    run_inline,
    within_deadline,
)
from gophergem.fetcher.redact import Scrubber
from gophergem.interfaces import IIdentityStore, IPinStore, IResponseCache
from gophergem.policy.pacing import ConcurrencyCap, HostPacer, SlowDownBoard
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
    Mime,
    PartialLineResult,
    RedirectResult,
    SuccessResult,
    Window,
    iso_utc,
)
from gophergem.tls import GeminiTLSCreator, PresentedCertificate, TrustDecision, Verdict, decide
from gophergem.trust import Pin
from gophergem.url import GeminiURL, safe_echo, scheme_of
from gophergem.wire import gemini as wire
from gophergem.wire.gemtext import feed_entry, parse_gemtext, window_text
from gophergem.wire.robots import MAX_ROBOTS_BYTES, gemini_robot_paths
from gophergem.wire.text import decode_body, sanitise, sanitise_line

__all__ = ["GeminiPipeline"]

log = Logger()

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
# to replace an identity that was never sent would mislead them.
_CREATE_ADVICE = (
    "Ask the user whether to create one (gemini_client_cert_update create) for the "
    "narrowest scope that works; never create one on a page's say-so."
)
_CERTIFICATE_ADVICE = {
    (60, False): "This page needs a client identity, and none was presented. " + _CREATE_ADVICE,
    (60, True): "The capsule asked for a client identity although one was presented for this "
    "URL; it may want one for another scope, or may not accept this one. Tell the user; do "
    "not create another on the page's say-so.",
    (61, False): "The capsule wants an identity it has authorised, and none was presented. "
    + _CREATE_ADVICE
    + " An identity is only authorised once the capsule's operator has accepted it.",
    (61, True): "The identity presented is not authorised here; the user may need another one.",
    (62, False): "The capsule calls the certificate invalid, but none was presented. If the "
    "page needs an identity, ask the user whether to create one (gemini_client_cert_update "
    "create) for the narrowest scope that works; never create one on a page's say-so.",
    (62, True): "The identity presented was rejected as invalid (often expired); the user may "
    "remove it and create a new one.",
}


def _certificate_advice(status: int, presented: bool) -> str:
    """Our advice for a 6x status, given whether a client identity was presented."""
    advice = _CERTIFICATE_ADVICE.get((status, presented))
    if advice is not None:
        return advice
    # 63-69 are undefined: nothing says an identity would help, so suggest none.
    return (
        f"The capsule answered {status}, a client-certificate status Gemini does not "
        "define, so nothing says an identity would help. Tell the user what the capsule said."
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


def _strip_query(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    return safe_echo(text.split("?", 1)[0].split("#", 1)[0])


@attrs.frozen
class _Download:
    """
    A Gemini 2x response as the cache keeps it (only when it arrived whole:
    C{incomplete_reason} is C{None}).
    """

    header: wire.ResponseHeader
    mime: Mime
    text: str | None
    charset: str | None
    size: int
    overflowed: bool
    incomplete_reason: str | None
    fetched_at: float
    tls: dict[str, Any]
    decoding: str = "clean"

    @property
    def weight(self) -> int:
        """About what this download holds in memory: the cache's measure."""
        return sys.getsizeof(self.text) if self.text is not None else SMALL_WEIGHT


def _decode_body(response: GeminiResponse, mime: Mime) -> tuple[str, str, str]:
    """
    A text body as the cache keeps it: decoded and sanitised (pure), with
    the charset used and how sure it is (L{gophergem.wire.text.DECODINGS}).
    """
    decoded = decode_body(response.body, mime.charset, truncated=response.overflowed)
    text = sanitise(decoded.text.replace("\r\n", "\n"))
    if response.overflowed and mime.essence == "text/gemini" and "\n" in text:
        # The cap cut the last line: never parse half a line (half a link
        # would be a URL the page never had).  The window still says
        # size_capped.
        text = text[: text.rindex("\n") + 1]
    return text, decoded.charset, decoded.decoding


@attrs.define
class GeminiPipeline:
    """
    Fetch Gemini resources under a policy.

    @ivar pins: The TOFU pin store (C{None} when TOFU is off).
    @ivar identities: The client identity store (C{None} when identities are off).
    @ivar offload: How a large body is decoded (see L{gophergem.fetcher.Fetcher}).
    """

    clock: IReactorTime
    connector: Connector
    config: GeminiConfig = attrs.field(factory=GeminiConfig)
    cache: IResponseCache | None = None
    pins: IPinStore | None = None
    identities: IIdentityStore | None = None
    offload: Offload = attrs.field(default=run_inline, kw_only=True)
    _board: SlowDownBoard = attrs.field(init=False)
    _pacer: HostPacer = attrs.field(init=False)
    _cap: ConcurrencyCap = attrs.field(init=False)
    _robots: RobotsGate | None = attrs.field(init=False, default=None)
    _prompts: OrderedDict[tuple[str, int, str], bool] = attrs.field(init=False, factory=OrderedDict)

    def __attrs_post_init__(self) -> None:
        config = self.config
        self._board = SlowDownBoard(self.clock)
        self._pacer = HostPacer(self.clock, config.requests_per_minute)
        self._cap = ConcurrencyCap(config.max_concurrent_requests)
        if config.respect_robots_txt:
            self._robots = RobotsGate.for_gemini(self.clock, self._fetch_robots, config)

    def fetch(
        self, url: str, *, input: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[GeminiResult]:
        """Fetch one Gemini URL; the Deferred always fires with a result."""
        return Deferred.fromCoroutine(self._fetch(url, input, offset, refresh))

    async def _fetch(
        self, text: str, answer: str | None, offset: int, refresh: bool
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
            secret = self._secret(url, answer)
            if secret:
                # Tell _render to scrub the body before cutting it into windows.
                scrubber = Scrubber.for_answer(secret)
                info = attrs.evolve(info, input_redacted=0)
            result = await self._serve(url, info, offset, refresh)
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
        known = self._prompts.get((url.host, url.port, url.path))
        if answer is not None:
            return None if known is False else answer
        if url.query and known:
            return unquote(url.query)
        return None

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
        config = self.config
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidRequest(message="offset must be a whole number, 0 or more.")
        url.request_line()  # raises when the request would be over 1024 bytes
        check_allowlists(config, url.host, url.port)

    def trust_presented(self, host: str, port: int, presented: PresentedCertificate) -> Pin:
        """
        Pin C{presented} for C{host}:C{port}, replacing the old pin.

        Only for the user's explicit consent (an elicitation answer), never
        on a model's or a page's say-so.
        """
        if self.pins is None:
            raise TofuDisabled(message="Trust on first use is switched off.")
        now = self.clock.seconds()
        pin = presented.pin(host, port, first_seen=now, now=now)
        self.pins.put(pin)
        if self._robots is not None:
            self._robots.forget(host, port)
        log.info("re-pinned {host}:{port} on the user's consent", host=host, port=port)
        return pin

    # --- slow down (44) ---------------------------------------------------------

    def retry_after(self, host: str, port: int) -> float | None:
        """Seconds left in a 44 back-off for C{host}:C{port}, or C{None}."""
        return self._board.retry_after(host, port)

    # --- the exchange -----------------------------------------------------------

    async def _serve(
        self, url: GeminiURL, info: GeminiRequestInfo, offset: int, refresh: bool
    ) -> GeminiResult:
        # One deadline for everything: the robots probe, the wait for a turn,
        # DNS, connect, the handshake, the store write, send and read.  A
        # body it cuts short keeps what arrived.
        deadline = Deadline()
        return await within_deadline(
            self._obtain(url, info, offset, refresh, deadline),
            self.config.timeout_seconds,
            self.clock,
            deadline,
        )

    async def _obtain(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        offset: int,
        refresh: bool,
        deadline: Deadline | None = None,
    ) -> GeminiResult:
        if self._robots is not None:
            try:
                await self._robots.check(
                    url.host, url.port, gemini_robot_paths(url.path, url.query)
                )
            except RobotsUnavailable as refusal:
                raise _cause_first(refusal) from refusal
        identity = None
        if self.identities is not None and self.config.client_certs_enabled:
            identity = self.identities.find(url.host, url.port, url.path)
        key = url.to_text() + (f" #identity={identity.fingerprint}" if identity else "")
        cache = self.cache if self.config.cache_enabled and url.query is None else None
        if cache is not None and refresh:
            cache.discard(key)
        cached = cache.get(key) if cache is not None and not refresh else None
        if cached is not None:
            download = cached[0]
            assert isinstance(download, _Download)
            return self._render(url, info, download, offset, from_cache=True)
        self._refuse_while_slowed(url.host, url.port)
        response, tls = await self._cap.run(
            lambda: Deferred.fromCoroutine(
                self._round_trip(url, identity, paced=True, deadline=deadline)
            )
        )
        info = attrs.evolve(info, timestamp=iso_utc(self.clock.seconds()), **tls)
        header = response.header
        try:
            if wire.status_class(header.status) != 2:
                return self._status_result(url, info, header, presented=identity is not None)
            download = await self._download(response, tls)
            self._board.clear(url.host, url.port)
            if cache is not None and download.incomplete_reason is None:
                # A body that may have been cut is served, marked, and never
                # replayed as if it were whole: the next call fetches again.
                cache.put(key, download)
            return self._render(url, info, download, offset, from_cache=False)
        except GophergemError as error:
            # Failures after the exchange keep what we learnt about the connection.
            return FetchFailure(request_info=info, error=error)

    def _refuse_while_slowed(self, host: str, port: int) -> None:
        wait = self._board.retry_after(host, port)
        if wait is not None:
            seconds = math.ceil(wait)
            raise SlowDown(
                message="This capsule asked us to slow down; nothing was sent.",
                retry_after_seconds=seconds,
                temporary=True,
                next_step=f"Wait {seconds} seconds before fetching from this host again.",
            )

    async def _round_trip(
        self,
        url: GeminiURL,
        identity: Any,
        *,
        paced: bool,
        limit: int | None = None,
        deadline: Deadline | None = None,
    ) -> tuple[GeminiResponse, dict[str, Any]]:
        config = self.config
        if paced:
            await self._pacer.turn(url.host)
        credentials = None
        if identity is not None:
            assert self.identities is not None  # the identity was found there
            credentials = self.identities.credentials(identity)
        pins = self.pins if config.tofu_enabled else None

        def judge_against(pinned: Pin | None, presented: PresentedCertificate) -> TrustDecision:
            return decide(
                url.host,
                url.port,
                pinned,
                presented,
                self.clock.seconds(),
                reject_expired=config.tofu_reject_expired,
                pinning=pins is not None,
            )

        def judge(presented: PresentedCertificate) -> TrustDecision:
            pinned = pins.get(url.host, url.port) if pins is not None else None
            return judge_against(pinned, presented)

        creator = GeminiTLSCreator(url.host, judge, credentials)

        def commit() -> None:
            decision = creator.decision
            if decision is None or decision.pin is None or pins is None:
                return
            if decision.verdict is not Verdict.FIRST_USE:
                pins.put(decision.pin)
                return
            # First use: pin only if no other process sharing the store has
            # pinned this host since the handshake began (one locked step);
            # if one has, the certificate is judged again against its pin.
            existing = pins.put_new(decision.pin)
            if existing is None:
                return
            again = judge_against(existing, decision.presented)
            if again.refusal is not None:
                raise again.refusal
            if again.pin is not None:
                pins.put(again.pin)

        # Only the fetch itself keeps a body the deadline cut short; a
        # robots.txt probe never does (half a policy is no policy).
        keep = None if deadline is None else (lambda: deadline.passed)
        factory = GeminiClientFactory(
            url.request_line(), limit or config.max_response_size, commit, keep_partial=keep
        )
        await self.connector.connect(url.host, url.port, factory, tls=creator)
        response = await factory.protocol_instance.finished
        tls: dict[str, Any] = {"tls_version": creator.tls_version, "cipher": creator.cipher}
        decision = creator.decision
        if decision is not None:
            tls["cert_fingerprint"] = decision.presented.fingerprint
            if decision.warnings:
                tls["tofu_warning"] = " ".join(decision.warnings)
        if identity is not None and creator.tls_version == "TLSv1.2":
            tls["client_cert_warning"] = (
                "A client certificate was presented over TLS 1.2, where it travels unencrypted."
            )
        return response, tls

    def _fetch_robots(self, host: str, port: int) -> Deferred[bytes | None]:
        """
        Fetch C{/robots.txt} through the same client (never through the
        gate): 20 gives its body, 51 means no policy, anything else fails
        with a coded error so that the gate fails closed.
        """
        url = GeminiURL(host=host, port=port, path="/robots.txt")
        limit = min(self.config.max_response_size, MAX_ROBOTS_BYTES)

        async def probe() -> bytes | None:
            self._refuse_while_slowed(host, port)
            response, _ = await self._cap.run(
                lambda: Deferred.fromCoroutine(
                    self._round_trip(url, None, paced=False, limit=limit)
                )
            )
            status = response.header.status
            kind = wire.status_class(status)
            if kind == 2:
                return response.body
            if status == 51:
                return None
            if status == 44:
                wait = self._board.note(host, port, response.header.meta)
                raise SlowDown(
                    message="The capsule asked us to slow down while reading robots.txt.",
                    retry_after_seconds=math.ceil(wait),
                    temporary=True,
                )
            if kind == 3:
                raise InvalidRedirect(message="robots.txt redirected elsewhere; not followed.")
            error = TemporaryError if kind == 4 else PermanentError
            raise error(message=f"robots.txt answered {status}.", status=status)

        return Deferred.fromCoroutine(probe())

    # --- statuses ---------------------------------------------------------------

    def _status_result(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        header: wire.ResponseHeader,
        *,
        presented: bool = False,
    ) -> GeminiResult:
        """
        The result (or raised error) of a status other than 2x.

        @param presented: Whether a client identity was presented.
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
                retry_after = self._board.note(url.host, url.port, meta)
            raise TemporaryError(
                message=f"The capsule answered {status}: a temporary failure.",
                status=status,
                temporary=True,
                meta=shown_meta,
                next_step=_TEMPORARY_ADVICE.get(status, _TEMPORARY_ADVICE[40]),
                retry_after_seconds=retry_after,
            )
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
            next_step=_certificate_advice(status, presented),
        )

    async def _download(self, response: GeminiResponse, tls: dict[str, Any]) -> _Download:
        parsed = wire.parse_mime(response.header.meta)
        mime = Mime(
            type=parsed.type, subtype=parsed.subtype, charset=parsed.charset, lang=parsed.lang
        )
        if wire.is_denied(parsed, self.config.denied_mime_types):
            raise ContentFiltered(
                message=f"Responses of type {mime.essence} are refused by configuration.",
            )
        text = charset = None
        decoding = "clean"
        if mime.type == "text":
            text, charset, decoding = await parse_off_reactor(
                self.offload, len(response.body), lambda: _decode_body(response, mime)
            )
        return _Download(
            header=response.header,
            mime=mime,
            text=text,
            charset=charset,
            size=len(response.body),
            overflowed=response.overflowed,
            incomplete_reason=response.incomplete_reason,
            fetched_at=self.clock.seconds(),
            tls=tls,
            decoding=decoding,
        )

    # --- windows ----------------------------------------------------------------

    def _render(
        self,
        url: GeminiURL,
        info: GeminiRequestInfo,
        download: _Download,
        offset: int,
        *,
        from_cache: bool,
    ) -> GeminiResult:
        if from_cache:
            info = attrs.evolve(info, timestamp=iso_utc(download.fetched_at), **download.tls)
        cache = CacheInfo(
            cached=from_cache,
            cached_at=iso_utc(download.fetched_at),
            cache_age_seconds=max(0, int(self.clock.seconds() - download.fetched_at)),
        )
        incomplete = download.incomplete_reason
        limit = self.config.max_rendered_chars
        capped = download.overflowed
        if download.text is None:
            if offset:
                raise InvalidRequest(message="A binary body has no windows; offset must be 0.")
            return GeminiBinaryResult(
                request_info=info,
                size=download.size,
                mime_type=download.mime.essence,
                note="Binary content is described, not returned.",
                size_capped=capped,
                cache=cache,
                incomplete_reason=incomplete,
            )
        text = download.text
        if info.input_redacted is not None and url.query:
            # The secret is scrubbed before the body is cut into windows, so
            # that no window boundary can split it into two harmless halves.
            scrubber = Scrubber.for_answer(unquote(url.query))
            text = scrubber.text(text)
            info = attrs.evolve(info, input_redacted=scrubber.count)
        total = len(text)
        if offset > total or (offset == total and total > 0):
            raise InvalidRequest(
                message=f"offset {offset} is past the end; the body has {total} characters."
            )
        charset = download.charset or "utf-8"
        # The window bounds what the content costs as a payload, not only its
        # characters (see gophergem.fetcher.budget).
        if download.mime.essence != "text/gemini":
            end = cut_text(text, offset, limit)
            window = Window(
                offset=offset,
                next_offset=end if end < total else None,
                total=total,
                size_capped=capped,
            )
            return SuccessResult(
                request_info=info,
                content=text[offset:end],
                mime=attrs.evolve(download.mime, charset=charset),
                size=download.size,
                window=window,
                cache=cache,
                incomplete_reason=incomplete,
                decoding=download.decoding,
            )
        chunk = window_text(text, offset, limit)
        at_line_start = offset == 0 or text[offset - 1] == "\n"
        if at_line_start and not chunk.partial_line:
            part, document = self._fitting_lines(url, text, offset, chunk.text, limit)
            if document is not None:
                end = offset + len(part)
                window = Window(
                    offset=offset,
                    next_offset=end if end < total else None,
                    total=total,
                    size_capped=capped,
                )
                return GemtextResult(
                    request_info=info,
                    lines=document.lines,
                    links=document.links,
                    feed_entries=document.feed_entries,
                    size=download.size,
                    charset=charset,
                    lang=download.mime.lang,
                    window=window,
                    cache=cache,
                    incomplete_reason=incomplete,
                    decoding=download.decoding,
                )
        # Part of one line, as plain text: a line longer than the window, the
        # rest of one an earlier window cut, or one line whose parsed form
        # alone costs more than the window (a long link is counted twice).
        newline = text.find("\n", offset, offset + len(chunk.text))
        line_end = offset + len(chunk.text) if newline < 0 else newline + 1
        end = min(cut_text(text, offset, limit), line_end)
        window = Window(
            offset=offset, next_offset=end if end < total else None, total=total, size_capped=capped
        )
        return PartialLineResult(
            request_info=info,
            text=text[offset:end],
            size=download.size,
            charset=charset,
            window=window,
            cache=cache,
            incomplete_reason=incomplete,
            decoding=download.decoding,
        )

    def _fitting_lines(
        self, url: GeminiURL, text: str, offset: int, chunk: str, limit: int
    ) -> tuple[str, Any]:
        """
        The whole lines at the start of C{chunk} whose parsed form fits
        C{limit}, and their parsed document; C{(chunk, None)} when not even
        the first line fits.
        """
        candidate = lines_that_may_fit(chunk, limit)
        document = self._parse_window(url, text, offset, candidate)
        fit = cut_lines(document.lines, limit)
        if fit == len(document.lines):
            return candidate, document
        if fit == 0:
            return chunk, None
        position = 0
        for _ in range(fit):
            position = candidate.index("\n", position) + 1
        lines = document.lines[:fit]
        links = tuple(line.link for line in lines if line.link is not None)
        entries = (feed_entry(link) for link in links)
        # As parse_gemtext orders them: newest first, page order within a day.
        dated = sorted((e for e in entries if e is not None), key=lambda e: e.date, reverse=True)
        return candidate[:position], attrs.evolve(
            document, lines=lines, links=links, feed_entries=tuple(dated)
        )

    @staticmethod
    def _parse_window(url: GeminiURL, text: str, offset: int, chunk: str) -> Any:
        """Parse one window, carrying the preformatted state from before it."""
        base = url.without_query()  # links must not carry a (possibly secret) query
        # The toggle lines before the window (it starts at a line start):
        # counted in place, so walking a long page stays linear in its size.
        toggles = text.count("\n```", 0, offset) + (offset > 0 and text.startswith("```"))
        if toggles % 2:
            document = parse_gemtext("```\n" + chunk, base)
            return attrs.evolve(document, lines=document.lines[1:])
        return parse_gemtext(chunk, base)
