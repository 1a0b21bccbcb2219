# -*- test-case-name: tests.test_mcp_principals -*-
"""
Who is calling, and the fetcher and follower that work for them.

Behind authentication, every call carries the principal its access token
names (L{gophergem.mcp.auth.principal_of}): C{token:alice} for a token
file's entry, C{<issuer>#<subject>} for an identity provider's.  Client
identities and subscriptions belong to that principal: L{Principals} hands
each one a view of the server's L{IFetcher} whose Gemini pipeline presents
only that principal's identities (and, with C{GOPHERGEM_PINS_PER_PRINCIPAL},
checks only their pins), and a L{Follower} over their own subscription
store.  Everything else (caches, robots.txt, pacing, the caps, the 44 board)
is shared: it describes hosts, not people.

Without authentication (stdio, a loopback daemon) there is no principal
(C{None}): the server's own fetcher and follower serve every call, exactly
as before.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol

import attrs

from gophergem.feeds.follow import Follower
from gophergem.interfaces import IFeedStore, IFetcher, IIdentityStore, IPinStore

__all__ = ["MAX_VIEWS", "Principals", "StateStores", "current_principal"]

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


def current_principal() -> str | None:
    """
    The principal of the HTTP request being served, or C{None} when it
    carried no access token (stdio, or no authentication configured).
    """
    from gophergem.mcp.auth import current_principal as of_request

    return of_request()


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
