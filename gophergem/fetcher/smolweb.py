# -*- test-case-name: tests.test_fetcher_smolweb -*-
"""
The small web's pipelines together: Finger, Nex and Spartan under one
policy (the C{SMOLWEB_*} settings).

L{SmolwebPipeline} makes the steps the three share
(L{gophergem.fetcher._pipeline.Steps}: the allowlists, one cache, one
concurrency cap, and pacing and the per-host connection limit keyed by host
name, so a host serving Finger, Nex and Spartan is paced once across the
three) and hands each URL to its scheme's pipeline
(L{gophergem.fetcher.finger}, L{gophergem.fetcher.nex},
L{gophergem.fetcher.spartan}).  robots.txt is read over Spartan only, for
Spartan fetches: Finger and Nex have no such convention.
"""

from __future__ import annotations

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IReactorTime

from gophergem.client.connect import Connector
from gophergem.config import SmolwebConfig
from gophergem.errors import InvalidRequest
from gophergem.fetcher._pipeline import Offload, Steps, run_inline
from gophergem.fetcher._smoltext import SmolDownload, SmolWindow
from gophergem.fetcher.finger import FingerPipeline
from gophergem.fetcher.nex import NexPipeline
from gophergem.fetcher.spartan import SpartanPipeline
from gophergem.interfaces import IPolicyBackend, IResponseCache
from gophergem.policy.local import LocalPolicy
from gophergem.policy.robots import RobotsFetch, RobotsGate
from gophergem.results import FetchFailure, RedirectResult, RequestInfo
from gophergem.url import safe_echo, scheme_of
from gophergem.wire.robots import GEMINI_AGENTS

__all__ = [
    "SMOLWEB_FETCH_SCHEMES",
    "SmolDownload",
    "SmolwebPipeline",
    "SmolwebResult",
]

#: The schemes L{SmolwebPipeline} fetches.
SMOLWEB_FETCH_SCHEMES = ("finger", "nex", "spartan")

SmolwebResult = SmolWindow | RedirectResult | FetchFailure


def spartan_gate(clock: IReactorTime, fetch: RobotsFetch, config: SmolwebConfig) -> RobotsGate:
    """
    The robots.txt gate of Spartan: Gemini's agents (Spartan pages are
    gemtext, read on a person's behalf), failing open as Gopher's does (a
    probe that fails means no rules; the fetch then reports its own error).
    """
    return RobotsGate(
        clock,
        fetch,
        fail_open=True,
        agents=GEMINI_AGENTS,
        honor_ai_tokens=config.robots_honor_ai_tokens,
        ttl=config.robots_cache_ttl_seconds,
        failure_backoff=config.robots_failure_backoff_seconds,
    )


@attrs.define
class SmolwebPipeline:
    """
    Fetch finger://, nex:// and spartan:// URLs under one policy.

    @ivar clock: The time source for deadlines, timestamps and the cache.
    @ivar connector: The connect pinch point (vetting every address).
    @ivar config: The C{SMOLWEB_*} settings.
    @ivar cache: Where decoded answers are kept, if anywhere.
    @ivar offload: How a large answer is decoded.
    @ivar policy: Where the pacer, the per-host connection limit, the
        concurrency cap and the shared robots.txt probes come from (scheme
        C{"smolweb"}); the pipelines given one policy pace and count each
        host together (by default a fresh one: this pipeline's own).
    """

    clock: IReactorTime
    connector: Connector
    config: SmolwebConfig = attrs.field(factory=SmolwebConfig)
    cache: IResponseCache | None = None
    offload: Offload = attrs.field(default=run_inline, kw_only=True)
    policy: IPolicyBackend = attrs.field(factory=LocalPolicy, kw_only=True)
    steps: Steps[SmolwebConfig] = attrs.field(init=False)
    finger: FingerPipeline = attrs.field(init=False)
    nex: NexPipeline = attrs.field(init=False)
    spartan: SpartanPipeline = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.steps = Steps.start(
            self.clock,
            self.config,
            self.cache,
            spartan_gate,
            lambda host, port: self.spartan.fetch_robots(host, port),
            scheme="smolweb",
            policy=self.policy,
        )
        self.finger = FingerPipeline(self.clock, self.connector, self.steps, offload=self.offload)
        self.nex = NexPipeline(self.clock, self.connector, self.steps, offload=self.offload)
        self.spartan = SpartanPipeline(self.clock, self.connector, self.steps, offload=self.offload)

    def fetch(
        self, url: str, *, input: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[SmolwebResult]:
        """
        Fetch one finger://, nex:// or spartan:// URL; the Deferred always
        fires with a result.

        @param input: For Spartan, the data block (it replaces the URL's
            query); Finger and Nex take none (C{INVALID_REQUEST}).
        """
        scheme = scheme_of(url) if isinstance(url, str) else ""
        if scheme == "finger":
            return Deferred.fromCoroutine(self.finger.fetch(url, input, offset, refresh))
        if scheme == "nex":
            return Deferred.fromCoroutine(self.nex.fetch(url, input, offset, refresh))
        if scheme == "spartan":
            return Deferred.fromCoroutine(self.spartan.fetch(url, input, offset, refresh))
        return succeed(unsupported(url))


def unsupported(url: object) -> FetchFailure:
    """The result for a URL of a scheme C{smolweb_fetch} does not read."""
    return FetchFailure(
        request_info=RequestInfo(url=safe_echo(url) if isinstance(url, str) else ""),
        error=InvalidRequest(
            message="Expected a gopher://, gemini://, finger://, nex:// or spartan:// URL, "
            "written with its scheme.",
        ),
    )
