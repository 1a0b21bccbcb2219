# -*- test-case-name: tests.test_mcp_completions -*-
"""
C{completion/complete}: URLs for the prompts' C{url} arguments.

A client asks for completions while the user types an argument; the
candidates are the URLs this caller has reason to mean, most recent first:

  1. the URLs they fetched lately through the tools (L{RecentUrls}: a
     small list kept in memory per principal, never shared between
     principals; without authentication, one list for everyone);
  2. their subscriptions;
  3. their pinned Gemini hosts, as C{gemini://host/};
  4. their client identities' scopes.

The stores are the caller's (see L{gophergem.auth.principals}), reached as
the tools reach them.  The typed prefix filters them (scheme and host
compared without case, the rest exactly), each URL once, at most
L{MAX_VALUES} with C{total} and C{hasMore} saying how many matched.  A store
that fails, or does not answer within L{STORE_WAIT} seconds, adds nothing:
a completion is never an error the client has to show.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Completion, CompletionArgument, PromptReference
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from gophergem.mcp.caller import current_principal
from gophergem.url import format_host

__all__ = [
    "MAX_PRINCIPALS",
    "MAX_RECENT",
    "MAX_VALUES",
    "URL_ARGUMENTS",
    "RecentUrls",
    "complete_url",
    "register",
    "remember",
]

MAX_VALUES = 100
"""Values in one answer, at most (the specification's limit)."""

MAX_RECENT = 50
"""Recently fetched URLs kept per principal."""

MAX_PRINCIPALS = 1024
"""Principals whose recent URLs are kept; the least recently active goes first."""

STORE_WAIT = 2.0
"""Seconds a store may take to answer before its candidates are left out."""

URL_ARGUMENTS = frozenset({("explore_capsule", "url"), ("summarize_gemlog", "url")})
"""The (prompt, argument) pairs completed with URLs."""

_SCHEMES = ("gopher://", "gemini://")

log = Logger()


class RecentUrls:
    """
    The URLs each principal fetched lately, most recent first, bounded per
    principal (L{MAX_RECENT}) and in principals (L{MAX_PRINCIPALS}).  Only
    in memory: a restart forgets them.
    """

    def __init__(self, per_principal: int = MAX_RECENT, principals: int = MAX_PRINCIPALS) -> None:
        self.per_principal = per_principal
        self.max_principals = principals
        self._lists: OrderedDict[str | None, OrderedDict[str, None]] = OrderedDict()

    def add(self, principal: str | None, url: str) -> None:
        """C{principal} fetched C{url} just now."""
        urls = self._lists.get(principal)
        if urls is None:
            urls = self._lists[principal] = OrderedDict()
        self._lists.move_to_end(principal)
        urls[url] = None
        urls.move_to_end(url)
        while len(urls) > self.per_principal:
            urls.popitem(last=False)
        while len(self._lists) > self.max_principals:
            self._lists.popitem(last=False)

    def of(self, principal: str | None) -> list[str]:
        """C{principal}'s URLs, most recent first."""
        return list(reversed(self._lists.get(principal, {})))


def _fetched(data: dict[str, Any]) -> str | None:
    """The URL a fetch payload was read from, when it is worth offering again."""
    if data.get("kind") in (None, "error"):
        return None
    info = data.get("request_info")
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url.startswith(_SCHEMES):
        return None
    if "%09" in url or "\t" in url:  # a Gopher search's terms: not the caller's to keep
        return None
    return url


def remember(ctx: Context[Any, Any] | None, payloads: Iterable[dict[str, Any]]) -> None:
    """Note the URLs of the fetch C{payloads} as fetched by the caller of C{ctx}."""
    recent = getattr(ctx.mcp_server, "recent", None) if ctx is not None else None
    if not isinstance(recent, RecentUrls):
        return
    principal = current_principal()
    for data in payloads:
        url = _fetched(data)
        if url is not None:
            recent.add(principal, url)


# --- the candidates ---------------------------------------------------------------


async def _waited(d: Deferred[Any]) -> Any:
    return await d.asFuture(asyncio.get_running_loop())


async def _subscriptions(follower: Any) -> list[str]:
    if follower is None:
        return []
    return [s.url for s in await _waited(follower.subscriptions())]


async def _pins(fetcher: Any) -> list[str]:
    from gophergem.trust import operations as ops

    if getattr(fetcher, "pins", None) is None:
        return []
    pins = await _waited(Deferred.fromCoroutine(ops.list_pins(fetcher.pins)))
    return [f"gemini://{format_host(p.host, p.port, 1965)}/" for p in pins]


async def _scopes(fetcher: Any) -> list[str]:
    from gophergem.trust import operations as ops

    if getattr(fetcher, "identities", None) is None:
        return []
    found = await _waited(Deferred.fromCoroutine(ops.list_identities(fetcher.identities)))
    return [f"gemini://{format_host(i.host, i.port, 1965)}{i.path}" for i in found]


async def _gently(source: Callable[[], Awaitable[list[str]]], what: str) -> list[str]:
    """What C{source} gives, or nothing when it fails or takes too long."""
    try:
        return await asyncio.wait_for(source(), STORE_WAIT)
    except Exception:
        log.failure("completions: the {what} could not be read", what=what)
        return []


async def candidates(server: Any, principal: str | None) -> list[str]:
    """Every URL to offer C{principal}, in order, each once."""
    fetcher = getattr(server, "fetcher", None)
    follower = getattr(server, "follower", None)
    principals = getattr(server, "principals", None)
    if principals is not None and principal is not None:
        fetcher = principals.fetcher_for(principal)
        follower = principals.follower_for(principal) or follower
    recent = server.recent.of(principal) if isinstance(server.recent, RecentUrls) else []
    found = await asyncio.gather(
        _gently(lambda: _subscriptions(follower), "subscriptions"),
        _gently(lambda: _pins(fetcher), "pins"),
        _gently(lambda: _scopes(fetcher), "identities"),
    )
    return list(dict.fromkeys(url for urls in (recent, *found) for url in urls))


def _matches(candidate: str, typed: str) -> bool:
    """Whether C{candidate} starts with C{typed}: scheme and host without case, the rest exactly."""
    if len(typed) > len(candidate):
        return False
    start = candidate.find("://")
    slash = candidate.find("/", start + 3) if start >= 0 else 0
    head = min(len(typed), slash if slash >= 0 else len(candidate))
    return (
        candidate[:head].lower() == typed[:head].lower()
        and candidate[head : len(typed)] == typed[head:]
    )


def complete_url(urls: list[str], typed: str) -> Completion:
    """The completion of C{typed} among C{urls}: at most L{MAX_VALUES}, with the count."""
    matching = [url for url in urls if _matches(url, typed)]
    return Completion(
        values=matching[:MAX_VALUES],
        total=len(matching),
        has_more=len(matching) > MAX_VALUES,
    )


def register(server: MCPServer[Any]) -> None:
    """Answer C{completion/complete} on C{server} (which then advertises completions)."""

    async def complete(ref: Any, argument: CompletionArgument, context: Any) -> Completion | None:
        if not isinstance(ref, PromptReference) or (ref.name, argument.name) not in URL_ARGUMENTS:
            return None
        try:
            urls = await candidates(server, current_principal())
        except Exception:
            log.failure("completions: the candidates could not be gathered")
            urls = []
        return complete_url(urls, argument.value or "")

    sdk: Any = server  # the SDK's decorator is not typed
    sdk.completion()(complete)
