# -*- test-case-name: tests.test_http_asgi -*-
"""
How many sessions the SDK's Streamable HTTP session manager keeps, and
whose: L{SessionLimit}, an ASGI application in front of the manager's
C{handle_request} (served by L{gophergem.http.endpoint.mcp_resource}).

It reads and closes the manager's sessions through L{gophergem.mcp._sdk},
the one module that touches the SDK's private names.
"""

from __future__ import annotations

import collections
import itertools
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from mcp.server.auth.provider import principal_components
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from twisted.logger import Logger

from gophergem.mcp._sdk import discard_session, live_sessions

if TYPE_CHECKING:
    from gophergem.http.asgi import ASGIApp

__all__ = [
    "MAX_SESSIONS",
    "SESSION_IDLE_SECONDS",
    "SessionLimit",
    "hide_refused_session_id",
    "scope_principal",
]

log = Logger()

MAX_SESSIONS = 2000
"""Live MCP sessions at most, by default: about 100 MB of a small host's memory."""

SESSION_IDLE_SECONDS = 1800.0
"""How long a session may go without any request before it is closed, by default."""


def _header(scope: MutableMapping[str, Any], name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class SessionLimit:
    """
    Caps the live sessions of the SDK's Streamable HTTP session manager.

    An ASGI application in front of C{manager.handle_request}.  The rules:

      - A session is never closed before the answer to the request that
        opened it (its C{initialize}) has been sent; until then it is not
        idle, whatever the clock says.
      - Closing never crosses principals: a request that needs room closes
        the session idle for longest (no request in flight, no open event
        stream) I{of its own principal}, never another's.  Without
        authentication every caller is the one anonymous principal.
      - Each principal holds at most its share of the cap: the cap divided
        by the number of principals holding sessions (counting the one
        asking), at least one.  A principal at its share replaces its own
        idle sessions even while the cap has room, which keeps that room
        for the others.
      - When nothing may be closed the request gets HTTP 503, a JSON-RPC
        error and C{Retry-After}.

    Requests of the stateless 2026-07-28 era open no session and are never
    limited.  A refused request never carries an C{Mcp-Session-Id}.

    It reads which sessions are live from the manager, and closes one the
    way the manager does itself (L{gophergem.mcp._sdk}, where the SDK's
    private names are kept and tested).

    @param principal_of: The principal of a request's ASGI scope; by
        default the one its bearer token names (L{scope_principal}).
    """

    def __init__(
        self,
        manager: Any,
        max_sessions: int,
        principal_of: Callable[[MutableMapping[str, Any]], str | None] | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self._manager = manager
        self._app = hide_refused_session_id(manager.handle_request)
        self.max_sessions = max_sessions
        self._principal_of = principal_of or scope_principal
        self._owner: dict[str, str | None] = {}  # answered sessions: their principal
        self._held: collections.Counter[str | None] = collections.Counter()  # by principal
        self._opening: collections.Counter[str | None] = collections.Counter()  # not answered yet
        self._busy: dict[str, int] = {}  # session id: requests in flight
        self._last_used: dict[str, int] = {}  # session id: when its last request ended
        self._clock = itertools.count()

    @property
    def _live(self) -> dict[str, Any]:
        return live_sessions(self._manager)

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[..., Any],
    ) -> None:
        session_id = _header(scope, b"mcp-session-id")
        if session_id is not None:
            if session_id not in self._live:
                await self._app(scope, receive, send)
                return
            self._hold(session_id)
            try:
                await self._app(scope, receive, send)
            finally:
                self._release(session_id)
            return
        if not self._may_open_session(scope):
            await self._app(scope, receive, send)
            return
        principal = self._principal_of(scope)
        admitted, victim, share = self._admit(principal)
        if not admitted:
            log.warn(
                "Refused a new MCP session{whose}: {reason}",
                whose="" if principal is None else f" for {principal}",
                reason=f"it holds its share ({share}) of the {self.max_sessions} sessions "
                "and none is idle"
                if share
                else f"{len(self._owner)} sessions are open and none of its own is idle",
            )
            await _refuse_session(send, self.max_sessions, share)
            return
        self._opening[principal] += 1
        opened: list[str] = []

        async def watch(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and not opened:
                opened.append("")
                self._opening[principal] -= 1
                if int(message["status"]) < 400:
                    for key, value in message.get("headers", ()):
                        if bytes(key).lower() == b"mcp-session-id":
                            opened[0] = bytes(value).decode("latin-1")
                            self._record(opened[0], principal)
            await send(message)

        try:
            if victim is not None:
                transport = self._live.get(victim)
                if transport is not None:
                    log.info(
                        "Closing the MCP session idle for longest{whose} to make room for "
                        "a new one ({count} open, the limit is {limit})",
                        whose="" if principal is None else f" of {principal}",
                        count=len(self._live),
                        limit=self.max_sessions,
                    )
                    # Forgets the session at once, then ends its streams.
                    await discard_session(self._manager, victim, transport)
            await self._app(scope, receive, watch)
        finally:
            if not opened:
                self._opening[principal] -= 1
            elif opened[0]:
                self._release(opened[0])
            if self._opening[principal] <= 0:
                del self._opening[principal]

    def _may_open_session(self, scope: MutableMapping[str, Any]) -> bool:
        if getattr(self._manager, "stateless", False) or scope.get("method") != "POST":
            return False
        version = _header(scope, b"mcp-protocol-version")
        return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

    def _admit(self, principal: str | None) -> tuple[bool, str | None, int]:
        """
        Whether a new session of C{principal} may open, and which of its own
        idle sessions it replaces (if any); decided at once, with no await,
        so that concurrent requests see each other's decisions.

        @return: Admitted, the session to close first, and the principal's
            share when that is what refused it (else 0).
        """
        live = self._live
        for gone in [s for s in self._owner if s not in live]:
            self._forget(gone)
        holders = {p for p, n in self._held.items() if n > 0}
        holders.update(p for p, n in self._opening.items() if n > 0)
        holders.add(principal)
        share = max(1, self.max_sessions // len(holders))
        mine = self._held[principal] + self._opening[principal]
        total = len(self._owner) + sum(self._opening.values())
        if mine < share and total < self.max_sessions:
            return True, None, 0
        idle = [s for s, p in self._owner.items() if p == principal and not self._busy.get(s)]
        if not idle:
            return False, None, share if mine >= share else 0
        victim = min(idle, key=lambda s: self._last_used.get(s, -1))
        self._forget(victim)
        return True, victim, 0

    def _record(self, session_id: str, principal: str | None) -> None:
        """C{session_id} has answered the request that opened it: it counts, and is in use."""
        if session_id not in self._owner:
            self._owner[session_id] = principal
            self._held[principal] += 1
        self._hold(session_id)

    def _forget(self, session_id: str) -> None:
        if session_id in self._owner:
            principal = self._owner.pop(session_id)
            self._held[principal] -= 1
            if self._held[principal] <= 0:
                del self._held[principal]
        self._last_used.pop(session_id, None)

    def _hold(self, session_id: str) -> None:
        self._busy[session_id] = self._busy.get(session_id, 0) + 1

    def _release(self, session_id: str) -> None:
        left = self._busy.get(session_id, 1) - 1
        if left > 0:
            self._busy[session_id] = left
        else:
            self._busy.pop(session_id, None)
        if session_id in self._live:
            self._last_used[session_id] = next(self._clock)
        else:
            self._forget(session_id)


def scope_principal(scope: MutableMapping[str, Any]) -> str | None:
    """
    The principal of an ASGI request behind the SDK's bearer authentication,
    as the SDK binds sessions to it (client, issuer and subject of the
    token), or C{None} without a token.  The daemon passes
    L{gophergem.auth.principals.principal_of}'s instead (see
    L{gophergem.http.endpoint.build_site}).
    """
    token = getattr(scope.get("user"), "access_token", None)
    if token is None:
        return None
    client, issuer, subject = principal_components(token)
    return f"{issuer or ''}#{subject or ''}#{client}"


def hide_refused_session_id(app: ASGIApp) -> ASGIApp:
    """
    C{app}, except that a request sent without a session which is refused
    (status 400 or more) carries no C{Mcp-Session-Id}.

    The SDK registers a session for every request that names none (a C{GET}
    or C{DELETE} included), answers from that session's transport, which
    stamps its id on the refusal, and then forgets it again: the id handed
    out names nothing.
    """

    async def hiding(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[..., Any],
    ) -> None:
        if _header(scope, b"mcp-session-id") is not None:
            await app(scope, receive, send)
            return

        async def without_id(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and int(message["status"]) >= 400:
                message = dict(message)
                message["headers"] = [
                    (key, value)
                    for key, value in message.get("headers", ())
                    if bytes(key).lower() != b"mcp-session-id"
                ]
            await send(message)

        await app(scope, receive, without_id)

    return hiding


async def _refuse_session(send: Callable[..., Any], limit: int, share: int = 0) -> None:
    if share:
        text = (
            f"Too many MCP sessions for one client: you hold your share ({share}) of the "
            f"{limit} this server allows, and none of them is idle to close."
        )
    else:
        text = f"Too many MCP sessions: all {limit} are in use, none of yours is idle to close."
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32603,
                "message": text + " Try again later, or end sessions you no longer use "
                "(HTTP DELETE).",
            },
        },
        separators=(",", ":"),
    ).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                (b"retry-after", b"10"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
