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
    "BlockedByRobots",
    "BlockedError",
    "CertificateChanged",
    "CertificateExists",
    "CertificateExpired",
    "CertificateNotYetValid",
    "CertificateStoreUnavailable",
    "CertificateUnverified",
    "ClientCertsDisabled",
    "ConnectionFailed",
    "ConsentUnavailable",
    "ContentFiltered",
    "DNSError",
    "FeedStoreUnavailable",
    "FetchError",
    "FetchTimeout",
    "FingerprintMismatch",
    "GophergemError",
    "InputTimeout",
    "InvalidRedirect",
    "InvalidRequest",
    "InvalidStatus",
    "NotFetchable",
    "NotPinned",
    "NotSubscribed",
    "PermanentError",
    "PinExists",
    "ProtocolError",
    "RobotsUnavailable",
    "SlowDown",
    "StateUnavailable",
    "TLSError",
    "TemporaryError",
    "TofuDisabled",
    "UserDeclined",
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
    @ivar path: The local file the failure is about, if any: for a person at
        a terminal (the CLI names it).  Never part of a result, since a
        store's location is the operator's business (L{fields} leaves it
        out).
    """

    code: ClassVar[str] = "FETCH_ERROR"

    message: str
    next_step: str | None = None
    meta: str | None = None
    status: int | None = None
    temporary: bool | None = None
    retry_after_seconds: float | None = None
    path: str | None = attrs.field(default=None, repr=False)

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


class BlockedByRobots(GophergemError):
    """The host's robots.txt excludes this path for us."""

    code = "BLOCKED_BY_ROBOTS"


class RobotsUnavailable(GophergemError):
    """robots.txt could not be read, and the protocol fails closed (Gemini)."""

    code = "ROBOTS_UNAVAILABLE"


class DNSError(GophergemError):
    """The host name did not resolve."""

    code = "DNS_ERROR"


class ConnectionFailed(GophergemError):
    """No connection could be made, or it broke before a response arrived."""

    code = "CONNECTION_FAILED"


class FetchTimeout(GophergemError):
    """
    The fetch did not finish within its deadline.  (Named so as not to
    shadow the builtin C{TimeoutError}.)
    """

    code = "TIMEOUT"


class TLSError(GophergemError):
    """The TLS handshake or session failed."""

    code = "TLS_ERROR"


class ProtocolError(GophergemError):
    """The server answered with something the protocol does not allow."""

    code = "PROTOCOL_ERROR"


class FetchError(GophergemError):
    """Anything else that went wrong on the wire."""

    code = "FETCH_ERROR"


class ContentFiltered(GophergemError):
    """The response's MIME type is on the configured deny list."""

    code = "CONTENT_FILTERED"


class TemporaryError(GophergemError):
    """A Gemini 4x status."""

    code = "TEMPORARY_ERROR"


class PermanentError(GophergemError):
    """A Gemini 5x status."""

    code = "PERMANENT_ERROR"


class SlowDown(GophergemError):
    """The host asked us to slow down (Gemini 44); nothing was sent."""

    code = "SLOW_DOWN"


class InvalidRedirect(GophergemError):
    """A redirect whose target cannot be used."""

    code = "INVALID_REDIRECT"


class InvalidStatus(GophergemError):
    """A Gemini status outside the defined ranges."""

    code = "INVALID_STATUS"


@attrs.define(auto_exc=True, kw_only=True)
class CertificateChanged(GophergemError):
    """
    The host presented a new key, not the pinned one.

    @ivar pinned_fingerprint: The pinned certificate's fingerprint.
    @ivar presented_fingerprint: The new certificate's fingerprint.
    @ivar pinned_expires: When the pinned certificate expires (ISO-8601 UTC).
    @ivar pinned_expired: Whether it already has, which makes a reissue plausible.
    """

    code: ClassVar[str] = "CERTIFICATE_CHANGED"

    pinned_fingerprint: str | None = None
    presented_fingerprint: str | None = None
    pinned_expires: str | None = None
    pinned_expired: bool | None = None
    #: The certificate presented, for re-pinning on the user's word: the
    #: trust decision's C{PresentedCertificate}, typed C{object} here since
    #: this module imports nothing else from gophergem (its reader checks).
    presented: object | None = attrs.field(default=None, eq=False, repr=False)

    def fields(self) -> dict[str, Any]:
        out = super().fields()
        for name in (
            "pinned_fingerprint",
            "presented_fingerprint",
            "pinned_expires",
            "pinned_expired",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


class CertificateExpired(GophergemError):
    """The host's certificate has expired (and expired ones are refused)."""

    code = "CERTIFICATE_EXPIRED"


class CertificateNotYetValid(GophergemError):
    """The host's certificate is not valid yet."""

    code = "CERTIFICATE_NOT_YET_VALID"


class CertificateUnverified(GophergemError):
    """The certificate could not be checked at all."""

    code = "CERTIFICATE_UNVERIFIED"


class CertificateStoreUnavailable(GophergemError):
    """A pin or identity store could not be locked, read or written."""

    code = "CERTIFICATE_STORE_UNAVAILABLE"


class CertificateExists(GophergemError):
    """An identity already covers that scope."""

    code = "CERTIFICATE_EXISTS"


class FingerprintMismatch(GophergemError):
    """The fingerprint given does not match the stored one; nothing changed."""

    code = "FINGERPRINT_MISMATCH"


class NotPinned(FingerprintMismatch):
    """
    A pin was to be removed from a host that has none; nothing changed.
    The code stays C{FINGERPRINT_MISMATCH} (no fingerprint given can match
    an absent pin, and the code is part of the compatible surface); the
    class lets a caller say plainly that the host is not pinned.
    """


class UserDeclined(GophergemError):
    """The user said no when asked; nothing changed."""

    code = "USER_DECLINED"


class TofuDisabled(GophergemError):
    """Trust on first use is switched off, so there is no pin store."""

    code = "TOFU_DISABLED"


class ClientCertsDisabled(GophergemError):
    """Client identities are switched off."""

    code = "CLIENT_CERTS_DISABLED"


@attrs.define(auto_exc=True, kw_only=True)
class PinExists(GophergemError):
    """
    The host already has a pin for another certificate; nothing changed.

    A pin is replaced only on the user's say-so, or after the current one
    was removed by naming its fingerprint.

    @ivar pinned_fingerprint: The fingerprint pinned now.
    """

    code: ClassVar[str] = "PIN_EXISTS"

    pinned_fingerprint: str | None = None

    def fields(self) -> dict[str, Any]:
        out = super().fields()
        if self.pinned_fingerprint is not None:
            out["pinned_fingerprint"] = self.pinned_fingerprint
        return out


class InputTimeout(GophergemError):
    """
    The user was asked for a capsule's sensitive input and gave no answer in
    time; nothing was sent to the capsule.
    """

    code = "INPUT_TIMEOUT"


class StateUnavailable(GophergemError):
    """
    A store of what gophergem remembers could not be reached, read or
    written in time: a shared backend (PostgreSQL, Redis) that is down or
    slow, or a local store that cannot be locked.  Nothing was half-written.
    """

    code = "STATE_UNAVAILABLE"


class FeedStoreUnavailable(StateUnavailable):
    """
    The feed subscription store could not be locked, read or written.
    """


class NotSubscribed(GophergemError):
    """The URL given is not one of the subscriptions; nothing changed."""

    code = "NOT_SUBSCRIBED"


class ConsentUnavailable(GophergemError):
    """
    An act that needs the user's yes was refused because nobody could be
    asked (the client cannot put a question to the user); nothing was done.
    """

    code = "CONSENT_UNAVAILABLE"
