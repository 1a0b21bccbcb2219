# -*- test-case-name: tests.test_auth_principals -*-
"""
Who is calling, and the fetcher and follower that work for them.

Behind authentication, every call carries the principal its access token
names (L{principal_of}): C{token:alice} for a token file's entry,
C{<issuer>#<subject>} for an identity provider's.  Client identities and
subscriptions belong to that principal: L{Principals} hands each one a view
of the server's L{IFetcher} whose Gemini pipeline presents only that
principal's identities (and, with C{GOPHERGEM_PINS_PER_PRINCIPAL}, checks
only their pins), and a L{Follower} over their own subscription store.
Everything else (caches, robots.txt, pacing, the caps, the 44 board) is
shared: it describes hosts, not people.

Without authentication (stdio, a loopback daemon) there is no principal
(C{None}): the server's own fetcher and follower serve every call, exactly
as before.  The principal of the MCP request being served is
L{gophergem.mcp.caller.current_principal}: it reads the SDK's request
context, which this package does not import.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from gophergem.feeds.follow import Follower
from gophergem.interfaces import IFeedStore, IFetcher, IIdentityStore, IPinStore

__all__ = ["MAX_VIEWS", "Principals", "StateStores", "Token", "principal_of"]

MAX_VIEWS = 1024
"""Principals whose views are kept at once; the least recently used goes first."""


class StateStores(Protocol):
    """
    Where each principal's state is kept: L{gophergem.state.files.FileState}
    or L{gophergem.state.postgres.PostgresState}.
    """

    def pins(self, principal: str | None = None) -> IPinStore | None: ...

    def identities(self, principal: str | None) -> IIdentityStore | None: ...

    def feeds(self, principal: str | None) -> IFeedStore: ...


class Token(Protocol):
    """
    What L{principal_of} reads of an access token (the SDK's C{AccessToken}
    has these fields).
    """

    @property
    def client_id(self) -> str: ...

    @property
    def subject(self) -> str | None: ...

    @property
    def claims(self) -> Mapping[str, Any] | None: ...


def principal_of(access_token: Token) -> str:
    """
    The principal C{access_token} stands for, the same on every replica:
    C{token:<name>} for the token file, C{<iss>#<sub>} for a provider's
    token (C{<iss>#<client_id>} when it has no subject).
    """
    issuer = (access_token.claims or {}).get("iss")
    if issuer:
        return f"{issuer}#{access_token.subject or access_token.client_id}"
    return f"token:{access_token.client_id}"


@attrs.define
class _View:
    fetcher: IFetcher
    follower: Follower | None


@attrs.define
class Principals:
    """
    The views of the server's fetcher and follower, one per principal.

    @ivar fetcher: The owner's fetcher (principal C{None}); every view
        shares its pipelines.
    @ivar stores: Where principals' identities, subscriptions and (when kept
        per principal) pins are.
    @ivar follower: The owner's follower, or C{None} when the server has no
        feed tools.
    """

    fetcher: IFetcher
    stores: StateStores
    follower: Follower | None = None
    max_views: int = MAX_VIEWS
    _views: OrderedDict[str, _View] = attrs.field(factory=OrderedDict, init=False)

    def _view(self, principal: str) -> _View:
        view = self._views.get(principal)
        if view is not None:
            self._views.move_to_end(principal)
            return view
        fetcher: Any = self.fetcher
        if fetcher.gemini_enabled:
            pins = self.stores.pins(principal)
            if pins is self.stores.pins(None):  # shared pins: the fetcher's own
                pins = fetcher.pins
            fetcher = fetcher.with_stores(pins=pins, identities=self.stores.identities(principal))
        follower = None
        if self.follower is not None:
            follower = attrs.evolve(
                self.follower, fetcher=fetcher, store=self.stores.feeds(principal)
            )
        view = self._views[principal] = _View(fetcher, follower)
        while len(self._views) > self.max_views:
            self._views.popitem(last=False)
        return view

    def fetcher_for(self, principal: str | None) -> IFetcher:
        """The fetcher that works for C{principal} (the owner's for C{None})."""
        if principal is None:
            return self.fetcher
        return self._view(principal).fetcher

    def follower_for(self, principal: str | None) -> Follower | None:
        """The follower of C{principal}'s subscriptions (the owner's for C{None})."""
        if principal is None:
            return self.follower
        return self._view(principal).follower
