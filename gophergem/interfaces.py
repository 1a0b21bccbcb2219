# -*- test-case-name: tests.test_interfaces -*-
"""
Every zope Interface of gophergem: the seams where a real provider and a
memory provider (in L{gophergem.testing}) can be swapped.

The stores (L{IPinStore}, L{IIdentityStore}, L{IFeedStore},
L{IResponseCache}) and the 44 board (L{ISlowDownBoard}) may answer later:
each method returns its value, or a L{Deferred} firing with it.  The file
and memory providers return plain values; a networked one (PostgreSQL,
Redis) returns Deferreds.  An error is raised, or fails the Deferred, with
the same coded error either way.  Callers wrap every call in
L{gophergem._defer.settle} and wait for it: one code path for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from twisted.internet.interfaces import IReactorTime

    from gophergem.feeds.values import FeedEntry, StoredEntry, Subscription
    from gophergem.policy.addresses import IPAddress
    from gophergem.policy.robots import RobotsFetch
    from gophergem.results import FetchResult, GeminiResult
    from gophergem.trust import Identity, Pin
    from gophergem.trust.decision import PresentedCertificate

__all__ = [
    "IAddressPolicy",
    "IConcurrencyCap",
    "IFeedStore",
    "IFetcher",
    "IHostConnectionLimit",
    "IHostPacer",
    "IIdentityStore",
    "IPinStore",
    "IPolicyBackend",
    "IResolver",
    "IResponseCache",
    "ISecretInput",
    "ISlowDownBoard",
    "IStateBackend",
]


class IResolver(Interface):
    """Turns a host name into the addresses it names."""

    def resolve(host: str) -> Deferred[list[IPAddress]]:
        """
        Look C{host} up.

        @return: A Deferred firing with every address found (never empty),
            or failing with L{gophergem.errors.DNSError}.
        """


class IAddressPolicy(Interface):
    """Decides which resolved addresses may be dialled (SSRF protection)."""

    def permits(address: IPAddress) -> bool:
        """Return whether a connection to C{address} is allowed."""


class IResponseCache(Interface):
    """
    A bounded store of parsed responses, keyed by normalised URL.

    Each method returns its value or a L{Deferred} firing with it (see the
    module docstring); a shared cache may decline to keep a value it cannot
    share, which only costs a later miss.
    """

    ttl = Attribute("Seconds an entry stays fresh; 0 disables the cache.")

    def get(key: str) -> tuple[object, float] | Deferred[tuple[object, float] | None] | None:
        """Return C{(value, stored_at)} for a fresh entry, or C{None}."""

    def put(key: str, value: object) -> float | Deferred[float]:
        """Store C{value}; return the time it was stored at."""

    def discard(key: str) -> Deferred[None] | None:
        """Forget C{key}, if it is stored."""


class IHostPacer(Interface):
    """Spaces request starts to one host (C{*_REQUESTS_PER_MINUTE})."""

    def turn(host: str) -> Deferred[None]:
        """
        Fire when a request to C{host} may start.  Cancelling the Deferred
        while it waits gives the turn up.
        """


class IHostConnectionLimit(Interface):
    """
    Bounds how many operations are open at once to one host
    (C{*_MAX_CONNECTIONS_PER_HOST}), always in this process: it counts this
    process's sockets.
    """

    def open(host: str) -> int:
        """How many operations hold a place for C{host} now."""

    def queued(host: str) -> int:
        """How many operations wait for a place for C{host}."""

    def run(host: str, f: Callable[[], Deferred[Any]]) -> Deferred[Any]:
        """
        Call C{f()} once C{host} has a free place, holding the place until
        its Deferred ends.  Cancelling while it waits gives the place up
        without calling C{f}.
        """


class IConcurrencyCap(Interface):
    """Bounds how many operations run at once (C{*_MAX_CONCURRENT_REQUESTS})."""

    def run(f: Callable[..., object], *args: object, **kwargs: object) -> Deferred[object]:
        """
        Call C{f(*args, **kwargs)} once a place is free, holding the place
        until its result (a Deferred or coroutine is awaited) is ready.
        Cancelling while it waits gives the place up without calling C{f}.
        """


class ISlowDownBoard(Interface):
    """
    Which Gemini hosts answered 44 (SLOW DOWN) and for how long to leave them
    alone.  Each method returns its value or a L{Deferred} firing with it.
    """

    def note(host: str, port: int, meta: str) -> float | Deferred[float]:
        """Record a 44 with its C{meta}; return the seconds to wait from now."""

    def retry_after(host: str, port: int) -> float | Deferred[float | None] | None:
        """The seconds left before C{host}:C{port} may be asked again, or C{None}."""

    def clear(host: str, port: int) -> Deferred[None] | None:
        """Forget C{host}:C{port}'s 44s after it answered normally."""


class IPolicyBackend(Interface):
    """
    Where the politeness state of the pipelines lives: in this process
    (L{gophergem.policy.local.LocalPolicy}) or shared by every replica.
    A pipeline calls each factory once, when it is built; C{scheme} is
    C{"gopher"}, C{"gemini"} or C{"smolweb"} (Finger, Nex and Spartan).

    Pacing and the per-host connection limit are per host across every
    scheme: the pacers and limits one backend hands out share one table per
    host, each applying its own scheme's interval and limit.
    """

    def pacer(scheme: str, clock: IReactorTime, requests_per_minute: int) -> IHostPacer:
        """
        The per-host pacer of C{scheme} (0 requests per minute: no pacing).
        Every pacer of one backend paces a host together: a start keeps the
        host's next start, whatever its scheme, C{60 / requests_per_minute}
        seconds away.
        """

    def connection_limit(scheme: str, limit: int) -> IHostConnectionLimit:
        """
        The per-host connection limit of C{scheme}: C{limit} operations open
        at once to one host, counting those of every scheme this backend
        serves together.  Always in this process, whatever the backend: it
        counts this process's sockets.
        """

    def cap(scheme: str, limit: int) -> IConcurrencyCap:
        """The concurrency cap of C{scheme} (0: no cap)."""

    def board(scheme: str, clock: IReactorTime) -> ISlowDownBoard:
        """The 44 board (Gemini only)."""

    def cache(
        scheme: str, clock: IReactorTime, ttl_seconds: float, max_entries: int
    ) -> IResponseCache | None:
        """The response cache of C{scheme}, or C{None} for none."""

    def robots_probe(scheme: str, probe: RobotsFetch, ttl_seconds: float) -> RobotsFetch:
        """
        Wrap C{probe}, the function fetching a host's robots.txt (bytes, or
        C{None} for no policy); a shared backend lets replicas share the
        answers, for C{ttl_seconds}.  In one process: C{probe} itself.
        """

    def claim(name: str, seconds: float) -> Deferred[bool]:
        """
        Whether this process takes the turn C{name} (a periodic job, say)
        for the next C{seconds}: C{True} for the first to ask in that time,
        C{False} for the others that share the backend.
        """

    def health() -> Deferred[dict[str, object]]:
        """Fire with C{{"ok": bool, "detail": str}}: whether the backend answers."""

    def close() -> Deferred[None]:
        """Let go of any connection the backend holds."""


class IPinStore(Interface):
    """
    Server certificate pins, keyed by host and port.

    Every method returns its value or a L{Deferred} firing with it (see the
    module docstring), and raises (or fails with)
    L{gophergem.errors.CertificateStoreUnavailable} when the store cannot be
    read, locked or written (a networked store: L{gophergem.errors.StateUnavailable}).
    The pin is read before connecting, so the decision inside the TLS
    callback needs no store.  Several processes may share one store: a write
    never loses another process's pins.
    """

    def get(host: str, port: int) -> Pin | Deferred[Pin | None] | None:
        """Return the L{gophergem.trust.Pin} for C{host}:C{port}, or C{None}."""

    def put(pin: Pin) -> Deferred[None] | None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}, durably."""

    def put_new(pin: Pin) -> Pin | Deferred[Pin | None] | None:
        """
        Store C{pin} only if C{pin.host}:C{pin.port} has no pin yet, in one
        step (no other process can pin that host in between).  Return
        C{None} when stored, else the pin already there, left unchanged.
        """

    def remove(host: str, port: int) -> bool | Deferred[bool]:
        """Forget the pin for C{host}:C{port}; return whether there was one."""

    def all(host: str | None = None) -> list[Pin] | Deferred[list[Pin]]:
        """Every pin (for C{host} only, when given), sorted by host then port."""


class IIdentityStore(Interface):
    """
    Client identities (certificate and private key) with their scopes.

    Values now or later, process-safe and crash-safe like L{IPinStore}.
    Private keys never leave the store except through L{credentials}.
    """

    def find(host: str, port: int, path: str) -> Identity | Deferred[Identity | None] | None:
        """
        Return the L{gophergem.trust.Identity} whose scope covers the request,
        the one with the longest path prefix when several do, or C{None}.
        """

    def create(host: str, port: int, path: str, now: float) -> Identity | Deferred[Identity]:
        """
        Mint a key and a self-signed certificate for the scope and store them.

        @raise gophergem.errors.CertificateExists: When an identity already
            covers exactly that scope.
        """

    def remove(host: str, port: int, path: str) -> bool | Deferred[bool]:
        """Delete the identity of exactly that scope; return whether one existed."""

    def all(host: str | None = None) -> list[Identity] | Deferred[list[Identity]]:
        """Every identity (for C{host} only, when given)."""

    def credentials(identity: Identity) -> tuple[bytes, bytes] | Deferred[tuple[bytes, bytes]]:
        """Return C{(certificate_pem, private_key_pem)} for C{identity}."""


class IFetcher(Interface):
    """
    The one fetch pipeline: what the MCP tools, the CLI and a library user
    call.  Every fetch applies the same policy (SSRF, allowlists, robots.txt,
    pacing, one deadline, caps, sanitising) and its Deferred always fires
    with a result value, never fails; only a refused batch fails as a whole.
    """

    clock = Attribute("The IReactorTime that deadlines, timestamps and caches read.")
    pins = Attribute("The IPinStore Gemini trust on first use keeps, or None when TOFU is off.")
    identities = Attribute(
        "The IIdentityStore of Gemini client identities, or None when they are off."
    )
    gemini_enabled = Attribute("Whether this fetcher fetches gemini:// URLs at all.")

    def gopher(
        url: str, *, search: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[FetchResult]:
        """Fetch one gopher:// URL; C{offset} counts items (menus) or characters."""

    def gopher_batch(
        urls: Sequence[str],
        *,
        refresh: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> Deferred[list[FetchResult]]:
        """
        Fetch 1 to 50 gopher:// URLs, results in input order; for a batch of
        another size the Deferred fails with L{gophergem.errors.InvalidRequest}
        (nothing is raised on the call).  C{progress}, if given, is called
        with a URL's index as soon as its result is there.
        """

    def gemini(
        url: str, *, input: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[GeminiResult]:
        """Fetch one gemini:// URL; C{input} answers a 10/11 prompt."""

    def gemini_batch(
        urls: Sequence[str],
        *,
        refresh: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> Deferred[list[GeminiResult]]:
        """Fetch 1 to 50 gemini:// URLs; see L{gopher_batch}."""

    def smolweb(
        url: str, *, input: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[FetchResult | GeminiResult]:
        """
        Fetch one URL of any scheme read (gopher, gemini, finger, nex,
        spartan), by its scheme: gopher:// and gemini:// as L{gopher} and
        L{gemini} do (C{input} their search or answer), C{input} a Spartan
        data block; another scheme is an C{INVALID_REQUEST} result.
        """

    def trust_presented(host: str, port: int, presented: PresentedCertificate) -> Deferred[Pin]:
        """
        Pin the certificate C{host}:C{port} presented, replacing its pin; the
        Deferred fires with the pin once it is stored.
        Only for the user's explicit consent (an elicitation answer), never
        on the say-so of a model or a page.
        """

    def titan_plan(
        url: str, content: bytes, *, mime: str | None = None, token: str | None = None
    ) -> Any:
        """
        Check a titan:// upload without dialling: its
        L{TitanUpload<gophergem.fetcher.titan.TitanUpload>} (what the user is
        asked about), or raise a L{gophergem.errors.GophergemError}
        (C{BLOCKED} when C{TITAN_ALLOWED_HOSTS} does not name the host or the
        upload is over C{TITAN_MAX_UPLOAD_BYTES}).
        """

    def titan_upload(
        url: str, content: bytes, *, mime: str | None = None, token: str | None = None
    ) -> Deferred[GeminiResult]:
        """
        Upload C{content} to a titan:// URL over the Gemini host's TLS, pins,
        identity and pacing, and return the server's Gemini answer (a
        redirect is reported, never followed).  Only on the user's yes.
        """


class IFeedStore(Interface):
    """
    The user's feed subscriptions and which of their entries were seen.

    Values now or later, process-safe and crash-safe like L{IPinStore}; every
    method raises (or fails with) L{gophergem.errors.FeedStoreUnavailable}
    (C{STATE_UNAVAILABLE}; a networked store L{gophergem.errors.StateUnavailable})
    when the store cannot be locked, read or written.  C{now} is the current
    time in epoch seconds, given by the caller; times come back as ISO 8601
    UTC text.  See L{gophergem.feeds.values} for the values.
    """

    def subscribe(
        url: str, title: str | None, feed_type: str, entries: Iterable[FeedEntry], now: float
    ) -> tuple[Subscription, bool] | Deferred[tuple[Subscription, bool]]:
        """
        Follow C{url} with C{entries} (objects with C{url}, C{title} and
        C{published}) as the baseline, all marked read.  Subscribing again
        keeps the entries and read state, updates C{feed_type}, and the title
        when one is given.  Return the subscription and whether it is new.

        @raise gophergem.errors.InvalidRequest: When the store is full.
        """

    def unsubscribe(url: str) -> bool | Deferred[bool]:
        """Stop following C{url}; return whether it was followed."""

    def get(url: str) -> Subscription | Deferred[Subscription | None] | None:
        """The subscription to C{url}, or C{None}."""

    def subscriptions() -> list[Subscription] | Deferred[list[Subscription]]:
        """Every subscription, sorted by URL."""

    def record_check(
        url: str, entries: Iterable[FeedEntry], now: float, error: str | None = None
    ) -> list[StoredEntry] | Deferred[list[StoredEntry]]:
        """
        Record a check of C{url} in one step: C{last_checked}, C{last_error}
        and, when C{error} is C{None}, the entries found.  Return the entries
        that are new or whose title or date changed (now unread), in the
        order given.  Entries that left the page are kept.  An unknown
        C{url} changes nothing and returns C{[]}.
        """

    def unread(
        url: str | None = None, since: str | None = None
    ) -> list[tuple[Subscription, StoredEntry]] | Deferred[list[tuple[Subscription, StoredEntry]]]:
        """
        The unread entries (of C{url} only, when given), and with C{since}
        (ISO 8601) every entry dated, or first seen, after it; newest first.

        @raise gophergem.errors.InvalidRequest: When C{since} is not a date or time.
        """

    def mark_read(items: Iterable[tuple[str, str]]) -> int | Deferred[int]:
        """Mark the C{(feed_url, entry_url)} entries read; return how many were unread."""


class ISecretInput(Interface):
    """
    Where the gemini tools ask a person for a capsule's secret input (a
    status 11: a password, a token) outside the model's sight: a one-time
    page the person opens, whose answer goes straight back to the tool and
    never passes through MCP, a log or a store.

    The stdio server serves its pages on an ephemeral loopback port
    (L{gophergem.http.secret_input.LoopbackSecretInput}); the HTTP daemon
    under its own site (L{gophergem.http.secret_input.SiteSecretInput}).
    """

    pages = Attribute(
        "The pending pages: C{pages.cancel(token)} declines the page C{token} (its answer "
        "fails with UserDeclined); an unknown, answered or expired token is ignored."
    )

    def open(prompt: str, capsule_url: str) -> Deferred[tuple[str, Deferred[str]]]:
        """
        Make a new page asking C{prompt} on behalf of C{capsule_url} (both
        sanitised already).

        @return: A Deferred firing with the page's full URL (its last path
            segment is the page's token) and a Deferred of the answer given
            on it, which fails with L{gophergem.errors.InputTimeout} or
            L{gophergem.errors.UserDeclined} when there is none.  The first
            fails when no page can be offered now.
        """


class IStateBackend(Interface):
    """
    Where a daemon keeps the stores of each principal: the files of this
    machine (L{gophergem.state.files.FileState}) or one database shared by
    every replica (L{gophergem.state.postgres.PostgresState}).
    L{gophergem.state.backends.open_backend} picks one from the
    configuration.

    A principal is the text an access token names (an issuer and a
    subject); C{None} is the machine's own user (stdio, or a daemon without
    authentication).  A principal's stores are made on first use and kept,
    so that its calls share one store object.
    """

    def pins(principal: str | None = None) -> IPinStore | None:
        """
        The pin store C{principal} uses (the shared one unless pins are kept
        per principal); C{None} when trust on first use is off.
        """

    def identities(principal: str | None) -> IIdentityStore | None:
        """C{principal}'s client identity store; C{None} when identities are off."""

    def feeds(principal: str | None) -> IFeedStore:
        """C{principal}'s feed subscription store."""

    def feed_principals() -> Deferred[list[str | None]]:
        """
        Fire with every principal that has subscriptions: the owner
        (C{None}) first, then the others in a stable order.
        """

    def health() -> Deferred[dict[str, object]]:
        """Fire with C{{"ok": bool, "detail": str}}: whether the backend answers."""

    def close() -> Deferred[None]:
        """Let go of any connection the backend holds."""
