# -*- test-case-name: tests.test_errors -*-
"""
The one exception hierarchy of gophergem.

Every failure a fetch can meet is a L{GophergemError} with a stable C{code}
(the codes of the specification, shared with gopher-mcp) and structured fields.
Callers branch on C{code} or on the class, never on the message text.  The
message is always ours; text that came from a server travels separately in
C{meta} so that it can never be mistaken for our advice.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

__all__ = [
    "BlockedError",
    "ConnectionFailed",
    "DNSError",
    "FetchError",
    "GophergemError",
    "InvalidRequest",
    "NotFetchable",
    "ProtocolError",
    "TimeoutError",
]


@attrs.define(auto_exc=True, kw_only=True)
class GophergemError(Exception):
    """
    Base of every error gophergem reports.

    @ivar message: A sentence written by us, safe to show to a model.
    @ivar next_step: Our advice on what to do about it, if any.
    @ivar meta: Untrusted text the server sent with the failure, if any.
    @ivar status: A protocol status number (Gemini), if any.
    @ivar temporary: Whether trying again later may succeed, if known.
    @ivar retry_after_seconds: How long to wait before trying again, if known.
    """

    code: ClassVar[str] = "FETCH_ERROR"

    message: str
    next_step: str | None = None
    meta: str | None = None
    status: int | None = None
    temporary: bool | None = None
    retry_after_seconds: float | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def fields(self) -> dict[str, Any]:
        """
        Return the error as the C{error} object of a result: C{code},
        C{message} and whichever optional fields are set.
        """
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        for name in ("status", "temporary", "meta", "next_step", "retry_after_seconds"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


class InvalidRequest(GophergemError):
    """The caller's request is malformed or asks for something we never do."""

    code = "INVALID_REQUEST"


class NotFetchable(GophergemError):
    """The item is interactive (telnet, tn3270, CSO) and has no content to fetch."""

    code = "NOT_FETCHABLE"


class BlockedError(GophergemError):
    """The target is refused by policy: SSRF rules, a host or port allowlist."""

    code = "BLOCKED"


class DNSError(GophergemError):
    """The host name did not resolve."""

    code = "DNS_ERROR"


class ConnectionFailed(GophergemError):
    """No connection could be made, or it broke before a response arrived."""

    code = "CONNECTION_FAILED"


class TimeoutError(GophergemError):
    """The fetch did not finish within its deadline."""

    code = "TIMEOUT"


class ProtocolError(GophergemError):
    """The server answered with something the protocol does not allow."""

    code = "PROTOCOL_ERROR"


class FetchError(GophergemError):
    """Anything else that went wrong on the wire."""

    code = "FETCH_ERROR"
