# -*- test-case-name: tests.test_fetcher -*-
"""
The one fetch pipeline: the thin L{Fetcher} façade over its two peers.

L{Fetcher} (an L{IFetcher}) is what the library, the C{gophergem fetch}
command and the MCP tools all call.  It hands each URL to the pipeline of its
protocol, L{gophergem.fetcher.gopher.GopherPipeline} or
L{gophergem.fetcher.gemini.GeminiPipeline}, which share their steps through
L{gophergem.fetcher._pipeline}.  Every fetch returns a Deferred that never
fails: every problem becomes a L{gophergem.results.FetchFailure} carrying a
coded error.  Only a refused batch fails, as a whole.

L{Offload} (where pure, CPU-bound parsing runs) and L{run_inline} (that work
on the calling thread) are public for what parses pages on top of a fetcher,
as L{gophergem.feeds.follow} does.

Build one with L{Fetcher.from_config}.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import attrs
from twisted.internet.defer import Deferred, fail, gatherResults, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from gophergem.client.connect import Connector, TCPReactor, reactor_resolver
from gophergem.config import Config, GeminiConfig, GopherConfig, SmolwebConfig, TitanConfig
from gophergem.errors import GophergemError, InvalidRequest
from gophergem.fetcher._pipeline import Offload, offloader, run_inline
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.fetcher.gopher import GopherPipeline
from gophergem.fetcher.smolweb import (
    SMOLWEB_FETCH_SCHEMES,
    SmolwebPipeline,
    unsupported,
)
from gophergem.fetcher.titan import TitanUpload, plan_upload, send_upload
from gophergem.interfaces import (
    IFetcher,
    IIdentityStore,
    IPinStore,
    IPolicyBackend,
    IResolver,
    IResponseCache,
)
from gophergem.policy.local import LocalPolicy
from gophergem.policy.targets import AddressPolicy
from gophergem.results import FetchFailure, FetchResult, GeminiRequestInfo, GeminiResult
from gophergem.state.files import FileIdentityStore, FilePinStore
from gophergem.state.paths import identity_store_dir, pin_store_path
from gophergem.trust import Pin
from gophergem.trust.decision import PresentedCertificate
from gophergem.url import safe_echo, scheme_of

__all__ = ["MAX_BATCH", "Fetcher", "Offload", "run_inline"]

#: The most URLs one batch may hold.
MAX_BATCH = 50

_R = TypeVar("_R")

_log = Logger()


@implementer(IFetcher)
@attrs.define
class Fetcher:
    """
    Fetch Gopher, Gemini, Finger, Nex and Spartan resources under a policy.

    @ivar clock: The time source for deadlines, timestamps and the caches.
    @ivar gopher_pipeline: Where gopher:// URLs go.
    @ivar gemini_pipeline: Where gemini:// URLs go, or C{None} when this
        fetcher does not fetch them.
    @ivar smolweb_pipeline: Where finger://, nex:// and spartan:// URLs go,
        or C{None} when this fetcher does not fetch them.
    @ivar titan: Which hosts uploads may go to, and how large they may be;
        they go through C{gemini_pipeline}.
    """

    clock: IReactorTime
    gopher_pipeline: GopherPipeline
    gemini_pipeline: GeminiPipeline | None = None
    smolweb_pipeline: SmolwebPipeline | None = None
    titan: TitanConfig = attrs.field(factory=TitanConfig, kw_only=True)

    @classmethod
    def from_config(
        cls,
        config: Config,
        reactor: TCPReactor,
        resolver: IResolver | None = None,
        *,
        pins: IPinStore | None = None,
        identities: IIdentityStore | None = None,
        environ: Mapping[str, str] | None = None,
        policy: IPolicyBackend | None = None,
    ) -> Fetcher:
        """
        Assemble the fetch pipeline for C{config} on C{reactor}.

        @param reactor: Provides L{IReactorTCP<twisted.internet.interfaces.IReactorTCP>}
            and L{IReactorTime}; its thread pool, when it has one, parses
            large responses; its name resolver is the default one.
        @param resolver: Where host names are looked up; the reactor's own
            resolver when omitted.
        @param pins: The TOFU pin store; by default the file store the
            configuration names (none when TOFU is off).
        @param identities: The client identity store; by default the file
            store the configuration names (none when identities are off).
        @param environ: The environment default store locations derive from.
        @param policy: Where pacing, the concurrency caps, the 44 board, the
            caches and the robots.txt probes live: this process
            (L{LocalPolicy}, the default) or a backend shared by replicas.
            Every pipeline built here gets this one backend, so a host is
            paced, and its connections counted, once across every scheme.
        """
        names = resolver if resolver is not None else reactor_resolver(reactor)
        gopher, gemini, smolweb = config.gopher, config.gemini, config.smolweb
        clock: IReactorTime = reactor  # type: ignore[assignment]  # TCPReactor provides it

        def connector(allow_local: bool, timeout: float) -> Connector:
            return Connector(reactor, names, AddressPolicy(allow_local=allow_local), timeout)

        backend: IPolicyBackend = LocalPolicy() if policy is None else policy

        def cache(
            scheme: str, settings: GopherConfig | GeminiConfig | SmolwebConfig
        ) -> IResponseCache | None:
            if settings.cache_enabled and settings.cache_ttl_seconds > 0:
                return backend.cache(
                    scheme, clock, settings.cache_ttl_seconds, settings.max_cache_entries
                )
            return None

        environ = os.environ if environ is None else environ
        if pins is None and gemini.tofu_enabled:
            pins = FilePinStore(str(pin_store_path(gemini.tofu_storage_path, environ)))
        if identities is None and gemini.client_certs_enabled:
            identities = FileIdentityStore(
                str(identity_store_dir(gemini.client_certs_storage_path, environ))
            )
        # Large responses are parsed on the reactor's thread pool, if it has one.
        offload = offloader(reactor)
        gemini_pipeline = GeminiPipeline(
            clock,
            connector(gemini.allow_local_hosts, gemini.timeout_seconds),
            gemini,
            cache("gemini", gemini),
            pins if gemini.tofu_enabled else None,
            identities if gemini.client_certs_enabled else None,
            offload=offload,
            policy=backend,
        )
        gopher_pipeline = GopherPipeline(
            clock,
            connector(gopher.allow_local_hosts, gopher.timeout_seconds),
            gopher,
            cache("gopher", gopher),
            offload=offload,
            policy=backend,
        )
        smolweb_pipeline = SmolwebPipeline(
            clock,
            connector(smolweb.allow_local_hosts, smolweb.timeout_seconds),
            smolweb,
            cache("smolweb", smolweb),
            offload=offload,
            policy=backend,
        )
        return cls(clock, gopher_pipeline, gemini_pipeline, smolweb_pipeline, titan=config.titan)

    # --- what the MCP tools read ------------------------------------------------

    @property
    def offload(self) -> Offload:
        """Where large responses are parsed (the reactor's thread pool, when it has one)."""
        return self.gopher_pipeline.offload

    @property
    def pins(self) -> IPinStore | None:
        """The TOFU pin store, or C{None} (TOFU off, or no Gemini)."""
        return self.gemini_pipeline.pins if self.gemini_pipeline is not None else None

    @property
    def identities(self) -> IIdentityStore | None:
        """The client identity store, or C{None} (identities off, or no Gemini)."""
        return self.gemini_pipeline.identities if self.gemini_pipeline is not None else None

    @property
    def gemini_enabled(self) -> bool:
        """Whether gemini:// URLs are fetched."""
        return self.gemini_pipeline is not None

    def trust_presented(
        self, host: str, port: int, presented: PresentedCertificate
    ) -> Deferred[Pin]:
        """
        Re-pin C{host}:C{port} to what it presented: on the user's explicit
        consent only.  Fires with the pin once it is stored.
        """
        return self._gemini().trust_presented(host, port, presented)

    def with_identities(self, store: IIdentityStore | None) -> Fetcher:
        """
        A fetcher sharing everything with this one (caches, robots.txt
        gates, pacing, caps, pins, the 44 board) but presenting the client
        identities of C{store} (none when C{None}): one per principal.
        """
        return self.with_stores(pins=self.pins, identities=store)

    def with_stores(self, *, pins: IPinStore | None, identities: IIdentityStore | None) -> Fetcher:
        """
        A fetcher sharing everything with this one (caches, robots.txt
        gates, pacing, caps, the 44 board) but judging certificates against
        C{pins} and presenting the identities of C{identities}: a
        principal's view when pins are kept per principal.  C{pins} is
        ignored when trust on first use is off.
        """
        gemini = self.gemini_pipeline
        if gemini is None:
            return self
        return attrs.evolve(self, gemini_pipeline=gemini.with_stores(pins, identities))

    # --- fetching ---------------------------------------------------------------

    def gopher(
        self,
        url: str,
        *,
        search: str | None = None,
        offset: int = 0,
        refresh: bool = False,
    ) -> Deferred[FetchResult]:
        """
        Fetch one Gopher URL.

        @param search: Search terms for a type-7 item, as the user typed them;
            they replace any in the URL.  Ignored (and said so) on other types.
        @param offset: Where the window starts: items for a menu, characters
            for a text body.
        @param refresh: Skip the cached copy and store the fresh one.
        @return: A Deferred that always fires with a result, never fails.
        """
        return self.gopher_pipeline.fetch(url, search=search, offset=offset, refresh=refresh)

    def gopher_batch(
        self,
        urls: Sequence[str],
        *,
        refresh: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> Deferred[list[FetchResult]]:
        """
        Fetch up to L{MAX_BATCH} Gopher URLs; results come back in input order.

        A batch that is empty or too long fails as a whole with
        L{InvalidRequest}; otherwise each URL gets its own result.

        @param progress: Called with a URL's index in C{urls} as soon as its
            result is there, so in the order they complete (what it raises
            is logged and changes nothing).
        """
        return _batch(self.gopher, urls, refresh, progress)

    def gemini(
        self,
        url: str,
        *,
        input: str | None = None,
        offset: int = 0,
        refresh: bool = False,
        learn_prompt: bool = False,
    ) -> Deferred[GeminiResult]:
        """
        Fetch one Gemini URL.

        @param input: An answer to a 10/11 prompt; it replaces the URL's query.
        @param offset: Where the window starts, in characters.
        @param refresh: Skip the cached copy and store the fresh one.
        @param learn_prompt: For an C{input} answering a prompt this fetcher
            never saw (a one-shot command), ask the prompt first: the answer
            to a 10 is then shown, an 11's stays secret.  Otherwise such an
            answer is treated as a secret.
        @return: A Deferred that always fires with a result, never fails.
        @raise RuntimeError: When this fetcher was built without Gemini.
        """
        return self._gemini().fetch(
            url, input=input, offset=offset, refresh=refresh, learn_prompt=learn_prompt
        )

    def gemini_batch(
        self,
        urls: Sequence[str],
        *,
        refresh: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> Deferred[list[GeminiResult]]:
        """Fetch up to L{MAX_BATCH} Gemini URLs; see L{gopher_batch}."""
        return _batch(self.gemini, urls, refresh, progress)

    def smolweb(
        self,
        url: str,
        *,
        input: str | None = None,
        offset: int = 0,
        refresh: bool = False,
    ) -> Deferred[FetchResult | GeminiResult]:
        """
        Fetch one URL of any scheme gophergem reads, by its scheme:
        gopher:// and gemini:// exactly as L{gopher} and L{gemini} do
        (C{input} is a type-7 item's search, or the answer to a 10/11
        prompt), finger://, nex:// and spartan:// through the small web's
        pipelines (C{input} is Spartan's data block).  Any other scheme is
        an C{INVALID_REQUEST} result.

        @return: A Deferred that always fires with a result, never fails.
        """
        scheme = scheme_of(url) if isinstance(url, str) else ""
        fetched: Deferred[Any]  # each pipeline's own results, all of them in the union
        if scheme == "gopher":
            fetched = cast(
                "Deferred[Any]", self.gopher(url, search=input, offset=offset, refresh=refresh)
            )
        elif scheme == "gemini" and self.gemini_pipeline is not None:
            fetched = cast(
                "Deferred[Any]", self.gemini(url, input=input, offset=offset, refresh=refresh)
            )
        elif self.smolweb_pipeline is not None and scheme in SMOLWEB_FETCH_SCHEMES:
            fetched = cast(
                "Deferred[Any]",
                self.smolweb_pipeline.fetch(url, input=input, offset=offset, refresh=refresh),
            )
        else:
            fetched = succeed(unsupported(url))
        return fetched

    # --- uploading --------------------------------------------------------------

    def titan_plan(
        self, url: str, content: bytes, *, mime: str | None = None, token: str | None = None
    ) -> TitanUpload:
        """
        Check a Titan upload without dialling (L{plan_upload}): what to ask
        the user about before L{titan_upload}.

        @raise GophergemError: C{INVALID_REQUEST}, or C{BLOCKED} when
            C{TITAN_ALLOWED_HOSTS} does not name the host or the upload is
            over C{TITAN_MAX_UPLOAD_BYTES}.
        """
        return plan_upload(self.titan, url, content, mime=mime, token=token)

    def titan_upload(
        self, url: str, content: bytes, *, mime: str | None = None, token: str | None = None
    ) -> Deferred[GeminiResult]:
        """
        Upload C{content} to the C{titan://} URL C{url}: only once the user
        has said yes.  Checked as L{titan_plan}, then sent over the Gemini
        host's TLS, pins, identity, pacing and deadline.

        @return: A Deferred that always fires with a result (the server's
            Gemini answer, a redirect reported, not followed), never fails.
        """
        try:
            upload = self.titan_plan(url, content, mime=mime, token=token)
        except GophergemError as error:
            echo = safe_echo(url.split(";", 1)[0]) if isinstance(url, str) else ""
            return succeed(FetchFailure(request_info=GeminiRequestInfo(url=echo), error=error))
        return send_upload(self.gemini_pipeline, self.titan, upload)

    def _gemini(self) -> GeminiPipeline:
        if self.gemini_pipeline is None:
            raise RuntimeError("this fetcher was built without Gemini support")
        return self.gemini_pipeline


def _batch(
    fetch_one: Callable[..., Deferred[_R]],
    urls: Sequence[str],
    refresh: bool,
    progress: Callable[[int], object] | None = None,
) -> Deferred[list[_R]]:
    """
    Fetch every URL of a batch with C{fetch_one}, results in input order; a
    batch of another size than 1 to L{MAX_BATCH} fails with L{InvalidRequest}.
    C{progress}, if given, hears each URL's index as its result arrives.
    """
    if isinstance(urls, str) or not urls or len(urls) > MAX_BATCH:
        count = 1 if isinstance(urls, str) else len(urls)
        return fail(
            InvalidRequest(
                message=f"A batch takes 1 to {MAX_BATCH} URLs; this one has {count}.",
                next_step=f"Split the list into batches of at most {MAX_BATCH}.",
            )
        )
    # Concurrency and per-host pacing are enforced inside each fetch.
    fetches = [fetch_one(url, refresh=refresh) for url in urls]
    if progress is not None:
        for index, fetch in enumerate(fetches):
            fetch.addCallback(_told, progress, index)
    return gatherResults(fetches)


def _told(result: _R, progress: Callable[[int], object], index: int) -> _R:
    """Tell C{progress} that the fetch at C{index} is done; pass its result on unchanged."""
    try:
        progress(index)
    except Exception:
        _log.failure("a batch's progress callback failed")
    return result
