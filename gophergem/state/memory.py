# -*- test-case-name: tests.test_state_pins,tests.test_state_identities,tests.test_state_feeds -*-
"""
The memory stores: the contract of the file stores without files, for tests
and for library users who keep nothing between runs.

Each applies the same rules as its file store (L{gophergem.trust.pins},
L{gophergem.trust.identities}, L{gophergem.feeds.subscriptions}), so the
contract test of each interface runs against both and against PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs
from zope.interface import implementer

from gophergem.errors import CertificateStoreUnavailable
from gophergem.feeds.subscriptions import DocumentFeedStore, FeedDocument
from gophergem.interfaces import IFeedStore, IIdentityStore, IPinStore
from gophergem.trust import Identity, Pin
from gophergem.trust.identities import (
    as_identity,
    best_identity,
    check_scope,
    exists_error,
    mint_identity,
    normalise_scope,
    sorted_identities,
)
from gophergem.trust.pins import encode_pin, sorted_pins

__all__ = ["MemoryFeedStore", "MemoryIdentityStore", "MemoryPinStore"]

_T = TypeVar("_T")


@implementer(IPinStore)
@attrs.define
class MemoryPinStore:
    """
    Pins in a dictionary, for tests: the same contract as
    L{FilePinStore<gophergem.state.files.FilePinStore>}, without files.

    @ivar pins: The pins by C{(host, port)}; tests may read it directly.
    """

    pins: dict[tuple[str, int], Pin] = attrs.field(factory=dict)

    def get(self, host: str, port: int) -> Pin | None:
        """Return the pin for C{host}:C{port}, or C{None}."""
        return self.pins.get((host, port))

    def put(self, pin: Pin) -> None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}."""
        encode_pin(pin)  # the same validation as every pin store
        assert isinstance(pin, Pin)
        self.pins[pin.host, pin.port] = pin

    def put_new(self, pin: Pin) -> Pin | None:
        """Store C{pin} unless its host and port are pinned; else return that pin."""
        encode_pin(pin)
        assert isinstance(pin, Pin)
        existing = self.pins.get((pin.host, pin.port))
        if existing is None:
            self.pins[pin.host, pin.port] = pin
        return existing

    def remove(self, host: str, port: int) -> bool:
        """Forget the pin for C{host}:C{port}; return whether there was one."""
        return self.pins.pop((host, port), None) is not None

    def all(self, host: str | None = None) -> list[Pin]:
        """Every pin (for C{host} only, when given), sorted by host then port."""
        return sorted_pins([pin for pin in self.pins.values() if host is None or pin.host == host])


@implementer(IIdentityStore)
@attrs.define
class MemoryIdentityStore:
    """
    Identities in a dictionary, for tests: the same contract as
    L{FileIdentityStore<gophergem.state.files.FileIdentityStore>} (real keys
    and certificates), without files.

    @ivar identities: C{(identity, certificate_pem, key_pem)} by
        C{(host, port, scope)}.
    """

    identities: dict[tuple[str, int, str], tuple[Identity, bytes, bytes]] = attrs.field(
        factory=dict
    )

    def find(self, host: str, port: int, path: str) -> Identity | None:
        """The identity with the longest scope covering the request, or C{None}."""
        return best_identity([i for i, _, _ in self.identities.values()], host, port, path)

    def create(self, host: str, port: int, path: str, now: float) -> Identity:
        """
        Mint and keep an identity for the scope.

        @raise CertificateExists: When that exact scope already has one.
        """
        check_scope(host, port)
        scope = normalise_scope(path)
        existing = self.identities.get((host, port, scope))
        if existing is not None:
            raise exists_error(existing[0])
        minted = mint_identity(host, port, scope, now)
        self.identities[host, port, scope] = minted
        return minted[0]

    def remove(self, host: str, port: int, path: str) -> bool:
        """Delete the identity of exactly that scope; return whether there was one."""
        return self.identities.pop((host, port, normalise_scope(path)), None) is not None

    def all(self, host: str | None = None) -> list[Identity]:
        """Every identity (for C{host} only, when given), by host, port and path."""
        return sorted_identities(
            [i for i, _, _ in self.identities.values() if host is None or i.host == host]
        )

    def credentials(self, identity: Identity) -> tuple[bytes, bytes]:
        """Return C{(certificate_pem, private_key_pem)} for C{identity}."""
        identity = as_identity(identity)
        stored = self.identities.get((identity.host, identity.port, identity.path))
        if stored is None or stored[0].fingerprint != identity.fingerprint:
            raise CertificateStoreUnavailable(
                message="That identity is no longer in the client identity store."
            )
        return stored[1], stored[2]


@implementer(IFeedStore)
@attrs.define
class MemoryFeedStore(DocumentFeedStore):
    """
    Subscriptions in a dictionary: the same contract as
    L{FileFeedStore<gophergem.state.files.FileFeedStore>}, without a file,
    for tests and for library users who keep nothing.
    """

    _document: FeedDocument = attrs.field(factory=dict, init=False)

    def _view(self, inspect: Callable[[FeedDocument], _T]) -> _T:
        return inspect(self._document)

    def _update(self, change: Callable[[FeedDocument], _T]) -> _T:
        return change(self._document)
