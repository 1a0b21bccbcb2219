# -*- test-case-name: tests.test_interfaces -*-
"""
Every zope Interface of gophergem: the seams where a real provider and a
memory provider (in L{gophergem.testing}) can be swapped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from gophergem.feeds.store import FeedEntry, StoredEntry, Subscription
    from gophergem.policy.addresses import IPAddress
    from gophergem.results import FetchResult, GeminiResult
    from gophergem.trust import Identity, Pin
    from gophergem.trust.decision import PresentedCertificate

__all__ = [
    "IAddressPolicy",
    "IFeedStore",
    "IFetcher",
    "IIdentityStore",
    "IPinStore",
    "IResolver",
    "IResponseCache",
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
    """A bounded store of parsed responses, keyed by normalised URL."""

    ttl = Attribute("Seconds an entry stays fresh; 0 disables the cache.")

    def get(key: str) -> tuple[object, float] | None:
        """Return C{(value, stored_at)} for a fresh entry, or C{None}."""

    def put(key: str, value: object) -> float:
        """Store C{value}; return the time it was stored at."""

    def discard(key: str) -> None:
        """Forget C{key}, if it is stored."""


class IPinStore(Interface):
    """
    Server certificate pins, keyed by host and port.

    Every method is synchronous (a pin decision is made inside a TLS
    callback) and raises L{gophergem.errors.CertificateStoreUnavailable} when
    the store cannot be read, locked or written.  Several processes may share
    one store: a write never loses another process's pins.
    """

    def get(host: str, port: int) -> Pin | None:
        """Return the L{gophergem.trust.Pin} for C{host}:C{port}, or C{None}."""

    def put(pin: Pin) -> None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}, durably."""

    def put_new(pin: Pin) -> Pin | None:
        """
        Store C{pin} only if C{pin.host}:C{pin.port} has no pin yet, in one
        step (no other process can pin that host in between).  Return
        C{None} when stored, else the pin already there, left unchanged.
        """

    def remove(host: str, port: int) -> bool:
        """Forget the pin for C{host}:C{port}; return whether there was one."""

    def all(host: str | None = None) -> list[Pin]:
        """Every pin (for C{host} only, when given), sorted by host then port."""


class IIdentityStore(Interface):
    """
    Client identities (certificate and private key) with their scopes.

    Synchronous, process-safe and crash-safe like L{IPinStore}.  Private keys
    never leave the store except through L{credentials}.
    """

    def find(host: str, port: int, path: str) -> Identity | None:
        """
        Return the L{gophergem.trust.Identity} whose scope covers the request,
        the one with the longest path prefix when several do, or C{None}.
        """

    def create(host: str, port: int, path: str, now: float) -> Identity:
        """
        Mint a key and a self-signed certificate for the scope and store them.

        @raise gophergem.errors.CertificateExists: When an identity already
            covers exactly that scope.
        """

    def remove(host: str, port: int, path: str) -> bool:
        """Delete the identity of exactly that scope; return whether one existed."""

    def all(host: str | None = None) -> list[Identity]:
        """Every identity (for C{host} only, when given)."""

    def credentials(identity: Identity) -> tuple[bytes, bytes]:
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

    def gopher_batch(urls: Sequence[str], *, refresh: bool = False) -> Deferred[list[FetchResult]]:
        """
        Fetch 1 to 50 gopher:// URLs, results in input order; for a batch of
        another size the Deferred fails with L{gophergem.errors.InvalidRequest}
        (nothing is raised on the call).
        """

    def gemini(
        url: str, *, input: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[GeminiResult]:
        """Fetch one gemini:// URL; C{input} answers a 10/11 prompt."""

    def gemini_batch(urls: Sequence[str], *, refresh: bool = False) -> Deferred[list[GeminiResult]]:
        """Fetch 1 to 50 gemini:// URLs; see L{gopher_batch}."""

    def trust_presented(host: str, port: int, presented: PresentedCertificate) -> Pin:
        """
        Pin the certificate C{host}:C{port} presented, replacing its pin.
        Only for the user's explicit consent (an elicitation answer), never
        on the say-so of a model or a page.
        """


class IFeedStore(Interface):
    """
    The user's feed subscriptions and which of their entries were seen.

    Synchronous, process-safe and crash-safe like L{IPinStore}; every method
    raises L{gophergem.errors.FeedStoreUnavailable} (C{STATE_UNAVAILABLE})
    when the store cannot be locked, read or written.  C{now} is the current
    time in epoch seconds, given by the caller; times come back as ISO 8601
    UTC text.  See L{gophergem.feeds.store} for the values.
    """

    def subscribe(
        url: str, title: str | None, feed_type: str, entries: Iterable[FeedEntry], now: float
    ) -> tuple[Subscription, bool]:
        """
        Follow C{url} with C{entries} (objects with C{url}, C{title} and
        C{published}) as the baseline, all marked read.  Subscribing again
        keeps the entries and read state, updates C{feed_type}, and the title
        when one is given.  Return the subscription and whether it is new.

        @raise gophergem.errors.InvalidRequest: When the store is full.
        """

    def unsubscribe(url: str) -> bool:
        """Stop following C{url}; return whether it was followed."""

    def get(url: str) -> Subscription | None:
        """The subscription to C{url}, or C{None}."""

    def subscriptions() -> list[Subscription]:
        """Every subscription, sorted by URL."""

    def record_check(
        url: str, entries: Iterable[FeedEntry], now: float, error: str | None = None
    ) -> list[StoredEntry]:
        """
        Record a check of C{url} in one step: C{last_checked}, C{last_error}
        and, when C{error} is C{None}, the entries found.  Return the entries
        that are new or whose title or date changed (now unread), in the
        order given.  Entries that left the page are kept.  An unknown
        C{url} changes nothing and returns C{[]}.
        """

    def unread(
        url: str | None = None, since: str | None = None
    ) -> list[tuple[Subscription, StoredEntry]]:
        """
        The unread entries (of C{url} only, when given), and with C{since}
        (ISO 8601) every entry dated, or first seen, after it; newest first.

        @raise gophergem.errors.InvalidRequest: When C{since} is not a date or time.
        """

    def mark_read(items: Iterable[tuple[str, str]]) -> int:
        """Mark the C{(feed_url, entry_url)} entries read; return how many were unread."""
