# -*- test-case-name: tests.test_trust_operations -*-
"""
What the trust and identity tools do, as plain functions over the stores.

The MCP tools and the CLI call these; they hold the interlocks (a pin is
removed only by naming its fingerprint, replaced only by naming the one the
user agreed to replace, an identity is never replaced) and raise coded
errors.  Asking the user first is the caller's job.

The functions that read or write a store are coroutines (C{async def}): a
store may answer later (see L{gophergem.interfaces}), so each of its calls
is awaited through L{gophergem._defer.settle}.  The pure ones (entries,
checks) stay plain functions.
"""

from __future__ import annotations

from typing import Any

from gophergem import advice
from gophergem._defer import settle
from gophergem._time import format_utc
from gophergem.errors import (
    CertificateExists,
    ClientCertsDisabled,
    FingerprintMismatch,
    InvalidRequest,
    NotPinned,
    PinExists,
    TofuDisabled,
)
from gophergem.interfaces import IIdentityStore, IPinStore
from gophergem.trust import Identity, Pin
from gophergem.trust.fingerprints import normalise_fingerprint
from gophergem.url import GEMINI_DEFAULT_PORT, GeminiURL, format_host, parse_host

__all__ = [
    "check_host",
    "create_identity",
    "identity_entry",
    "identity_to_remove",
    "list_identities",
    "list_pins",
    "pin_entry",
    "pin_fingerprint",
    "pin_in_the_way",
    "pin_to_remove",
    "pin_update",
    "remove_identity",
    "remove_pin",
]


def check_host(host: Any, port: Any = GEMINI_DEFAULT_PORT) -> tuple[str, int]:
    """Normalise a host and port argument; wildcards and junk are refused."""
    if not isinstance(host, str) or not host.strip() or "*" in host:
        raise InvalidRequest(message="host must be one host name (no wildcards).")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidRequest(message="port must be a number from 1 to 65535.")
    text = host.strip()
    if len(text) > 255:
        raise InvalidRequest(message="host is longer than a host name can be.")
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address
    name, written_port = parse_host(text, 0, "gemini")
    if written_port:
        raise InvalidRequest(message="Give the port in the port argument, not in host.")
    return name, port


def _fingerprint(value: Any) -> str:
    fingerprint = normalise_fingerprint(value) if isinstance(value, str) else None
    if fingerprint is None:
        raise InvalidRequest(
            message="fingerprint must be a SHA-256 fingerprint: 64 hex digits, colons and a "
            "sha256: prefix optional."
        )
    return fingerprint


def _pins(store: IPinStore | None) -> IPinStore:
    if store is None:
        raise TofuDisabled(message="Trust on first use is switched off (GEMINI_TOFU_ENABLED).")
    return store


def _identities(store: IIdentityStore | None) -> IIdentityStore:
    if store is None:
        raise ClientCertsDisabled(
            message="Client identities are switched off (GEMINI_CLIENT_CERTS_ENABLED)."
        )
    return store


async def list_pins(store: IPinStore | None, host: str | None = None) -> list[Pin]:
    """Every pin, or those of C{host}."""
    if host is not None:
        host, _ = check_host(host)
    pins: list[Pin] = await settle(_pins(store).all(host))
    return list(pins)


async def pin_to_remove(store: IPinStore | None, host: Any, port: Any, fingerprint: Any) -> Pin:
    """
    Check a removal without doing it: the pin of C{host}:C{port}, which
    must be C{fingerprint}.  Lets a caller ask the user only about a removal
    that can happen.

    @raise NotPinned: When the host has no pin (code C{FINGERPRINT_MISMATCH}).
    @raise FingerprintMismatch: When its pin is another one.
    """
    store = _pins(store)
    host, port = check_host(host, port)
    wanted = _fingerprint(fingerprint)
    pinned = await settle(store.get(host, port))
    if pinned is None:
        raise NotPinned(
            message=f"{format_host(host, port, 0)} is not pinned: there is no pin to remove, "
            "and nothing was changed.",
            next_step=f"List the pinned hosts with {advice.name(advice.LIST_PINS)}.",
        )
    assert isinstance(pinned, Pin)
    if pinned.fingerprint != wanted:
        raise FingerprintMismatch(
            message=f"The pin for {host}:{port} is {pinned.fingerprint}, not {wanted}; "
            "nothing was changed.",
            next_step=f"Read the current fingerprint with {advice.name(advice.LIST_PINS)} first.",
        )
    return pinned


async def remove_pin(store: IPinStore | None, host: Any, port: Any, fingerprint: Any) -> Pin:
    """
    Remove the pin of C{host}:C{port}, which must be C{fingerprint}.

    @raise NotPinned: When the host has no pin; nothing changes.
    @raise FingerprintMismatch: When its pin is another one; nothing changes.
    """
    pinned = await pin_to_remove(store, host, port, fingerprint)
    await settle(_pins(store).remove(pinned.host, pinned.port))
    return pinned


async def pin_in_the_way(
    store: IPinStore | None, host: Any, port: Any, fingerprint: Any
) -> Pin | None:
    """
    Check a pin without doing it: the pin of C{host}:C{port} that pinning
    C{fingerprint} would replace, or C{None} when the host has no pin or
    already has exactly this one.  Lets a caller ask the user only about a
    replacement that would really happen, naming what it replaces.

    @raise InvalidRequest: For a wildcard host or a malformed fingerprint.
    """
    store = _pins(store)
    host, port = check_host(host, port)
    wanted = _fingerprint(fingerprint)
    pinned = await settle(store.get(host, port))
    if pinned is None or pinned.fingerprint == wanted:
        return None
    assert isinstance(pinned, Pin)
    return pinned


async def pin_fingerprint(
    store: IPinStore | None,
    host: Any,
    port: Any,
    fingerprint: Any,
    now: float,
    replacing: Any = None,
) -> Pin:
    """
    Pin C{fingerprint} for C{host}:C{port}.

    A host with no pin gets this one; a host already pinned to this
    fingerprint keeps its pin as it is (with the key and dates already
    learnt).  A pin for another certificate is replaced only when
    C{replacing} names it: the caller passes it once the user agreed to
    replace exactly that pin.  Otherwise the pin is kept and L{PinExists}
    says how to proceed, so a model talked into "pin this" by a page cannot
    silently switch off trust on first use for a host.

    The new certificate's key and dates are learnt on the next connection
    that presents exactly this certificate.

    @param replacing: The fingerprint of the pin the user agreed to replace.
    @raise PinExists: When another certificate is pinned and C{replacing}
        does not name it; nothing changes.
    """
    store = _pins(store)
    host, port = check_host(host, port)
    pin = Pin(
        host=host,
        port=port,
        fingerprint=_fingerprint(fingerprint),
        spki="",
        first_seen=now,
        last_seen=now,
        not_before=0.0,
        expires=0.0,
    )
    existing = await settle(store.put_new(pin))
    if existing is None:
        return pin
    assert isinstance(existing, Pin)
    if existing.fingerprint == pin.fingerprint:
        return existing
    agreed = normalise_fingerprint(replacing) if isinstance(replacing, str) else None
    if agreed != existing.fingerprint:
        raise PinExists(
            message=f"{format_host(host, port, 0)} is already pinned to {existing.fingerprint}; "
            "nothing was changed.",
            next_step=f"Only if the user asked for it: remove the current pin first, naming "
            f"{existing.fingerprint}, then pin the new fingerprint.",
            pinned_fingerprint=existing.fingerprint,
        )
    await settle(store.put(pin))
    return pin


def pin_entry(pin: Pin, now: float) -> dict[str, Any]:
    """A pin as the trust list shows it (the tool's and the CLI's JSON)."""
    return {
        "host": pin.host,
        "port": pin.port,
        "fingerprint": pin.fingerprint,
        "first_seen": format_utc(pin.first_seen),
        "last_seen": format_utc(pin.last_seen),
        "expires": format_utc(pin.expires) if pin.expires > 0 else None,
        "expired": 0 < pin.expires < now,
    }


def pin_update(action: str, pin: Pin) -> dict[str, Any]:
    """The answer to a pin C{remove} or C{pin}, as the tool and the CLI's JSON give it."""
    return {
        "kind": "trust_update",
        "action": action,
        "host": pin.host,
        "port": pin.port,
        "fingerprint": pin.fingerprint,
    }


def identity_entry(identity: Identity, now: float) -> dict[str, Any]:
    """An identity as the identity list shows it: never its key or where it is kept."""
    authority = format_host(identity.host, identity.port, GEMINI_DEFAULT_PORT)
    return {
        "url": f"gemini://{authority}{identity.path}",
        "host": identity.host,
        "port": identity.port,
        "path": identity.path,
        "fingerprint": identity.fingerprint,
        "not_before": format_utc(identity.not_before),
        "not_after": format_utc(identity.not_after),
        "expired": identity.not_after < now,
    }


def _scope(url: Any) -> GeminiURL:
    if not isinstance(url, str):
        raise InvalidRequest(message="url must be a gemini:// URL.")
    if len(url) > 1024:
        raise InvalidRequest(message="url is longer than a Gemini URL can be (1024 bytes).")
    scope = GeminiURL.from_text(url)
    scope.request_line()  # refuses a URL over the request-line limit
    if scope.query is not None:
        raise InvalidRequest(message="An identity's scope is a URL without a query.")
    return scope


def _scope_path(path: str) -> str:
    return path if path.endswith("/") else path + "/"


async def list_identities(store: IIdentityStore | None, host: str | None = None) -> list[Identity]:
    """Every identity, or those of C{host}; never keys or paths."""
    if host is not None:
        host, _ = check_host(host)
    identities: list[Identity] = await settle(_identities(store).all(host))
    return list(identities)


async def create_identity(store: IIdentityStore | None, url: Any, now: float) -> Identity:
    """
    Mint an identity whose scope is C{url}'s host, port and path prefix.

    @raise CertificateExists: When one already covers exactly that scope.
    """
    store = _identities(store)
    scope = _scope(url)
    path = _scope_path(scope.path)
    for existing in await settle(store.all(scope.host)):
        assert isinstance(existing, Identity)
        if (existing.port, existing.path) == (scope.port, path):
            raise CertificateExists(
                message=f"An identity already covers gemini://{scope.host}:{scope.port}{path} "
                f"({existing.fingerprint}); it was not replaced.",
                next_step="Use it as it is, or remove it (naming its fingerprint) first.",
            )
    identity = await settle(store.create(scope.host, scope.port, path, now))
    assert isinstance(identity, Identity)
    return identity


async def identity_to_remove(store: IIdentityStore | None, url: Any, fingerprint: Any) -> Identity:
    """
    Check a removal without doing it: the identity of C{url}'s scope, which
    must have C{fingerprint}.

    @raise FingerprintMismatch: When none exists there or it is another one.
    """
    store = _identities(store)
    scope = _scope(url)
    path = _scope_path(scope.path)
    wanted = _fingerprint(fingerprint)
    for existing in await settle(store.all(scope.host)):
        assert isinstance(existing, Identity)
        if (existing.port, existing.path) == (scope.port, path):
            if existing.fingerprint != wanted:
                raise FingerprintMismatch(
                    message=f"The identity for that scope is {existing.fingerprint}, not "
                    f"{wanted}; nothing was changed.",
                    next_step=f"Read it with {advice.name(advice.LIST_IDENTITIES)} first.",
                )
            return existing
    raise FingerprintMismatch(message="No identity has exactly that scope; nothing was changed.")


async def remove_identity(store: IIdentityStore | None, url: Any, fingerprint: Any) -> Identity:
    """
    Delete the identity of C{url}'s scope, which must have C{fingerprint}.

    @raise FingerprintMismatch: When none exists there or it is another one.
    """
    existing = await identity_to_remove(store, url, fingerprint)
    await settle(_identities(store).remove(existing.host, existing.port, existing.path))
    return existing
