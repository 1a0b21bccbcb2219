# -*- test-case-name: tests.test_trust_tofu -*-
"""
Trust on first use, in one object: L{TrustOnFirstUse}.

The Gemini pipeline makes one call per step of a connection:

  1. L{TrustOnFirstUse.pinned}, before connecting: read the host's pin (the
     store may answer later, so it is not read inside the handshake).
  2. L{TrustOnFirstUse.judge}, from the TLS verify callback when the
     server's certificate arrives: decide against that pin (pure,
     L{gophergem.trust.decision.decide}).
  3. L{TrustOnFirstUse.commit}, once the handshake has completed and before
     any request byte: write the pin, settling the first-use race with
     another process sharing the store (C{put_new}).  The request waits for
     the write.
  4. L{TrustOnFirstUse.facts}, for the result's C{request_info}: the TLS
     version and cipher, the fingerprint, the warnings.

L{TrustOnFirstUse.trust_presented} re-pins a host on the user's explicit
consent, and only then.
"""

from __future__ import annotations

from typing import TypedDict

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gophergem._defer import settle
from gophergem.errors import TofuDisabled
from gophergem.interfaces import IPinStore
from gophergem.trust import Pin
from gophergem.trust.decision import PresentedCertificate, TrustDecision, Verdict, decide

__all__ = ["TLS_1_2_CLIENT_CERT_WARNING", "TLSFacts", "TrustOnFirstUse"]

log = Logger()

#: C{request_info.client_cert_warning} when an identity went over TLS 1.2.
TLS_1_2_CLIENT_CERT_WARNING = (
    "A client certificate was presented over TLS 1.2, where it travels unencrypted."
)


class TLSFacts(TypedDict, total=False):
    """What C{request_info} says of one TLS connection (the names are its fields)."""

    tls_version: str | None
    cipher: str | None
    cert_fingerprint: str
    tofu_warning: str
    client_cert_warning: str


@attrs.frozen
class TrustOnFirstUse:
    """
    Judge server certificates against their pins and keep the pins.

    @ivar clock: Where "now" is read for validity and pin times.
    @ivar pins: The pin store, or C{None} when trust on first use is off
        (certificates are then judged for validity only, and nothing is
        pinned).
    @ivar reject_expired: Refuse an expired certificate rather than warn.
    """

    clock: IReactorTime
    pins: IPinStore | None
    reject_expired: bool = False

    def _decide(
        self, host: str, port: int, pinned: Pin | None, presented: PresentedCertificate
    ) -> TrustDecision:
        return decide(
            host,
            port,
            pinned,
            presented,
            self.clock.seconds(),
            reject_expired=self.reject_expired,
            pinning=self.pins is not None,
        )

    def pinned(self, host: str, port: int) -> Deferred[Pin | None]:
        """
        Read the pin of C{host}:C{port}, before connecting to it: C{None}
        when there is none, or trust on first use is off.  The Deferred
        fails with the store's error when it cannot be read (nothing is then
        sent, nor even connected).
        """
        if self.pins is None:
            return succeed(None)
        return settle(self.pins.get(host, port))

    def judge(
        self, host: str, port: int, presented: PresentedCertificate, pinned: Pin | None
    ) -> TrustDecision:
        """
        Decide on the certificate C{host}:C{port} presented, against
        C{pinned} (what L{pinned} read before connecting).  Pure: it is
        called inside the TLS handshake.
        """
        return self._decide(host, port, pinned, presented)

    def commit(self, decision: TrustDecision | None) -> Deferred[None] | None:
        """
        Store what C{decision} pins, once the handshake has completed.

        On first use the pin is written only if no other process sharing the
        store has pinned this host since its pin was read (one step of the
        store, C{put_new}); if one has, the certificate is judged again
        against that pin.

        @return: C{None} when there is nothing to store, else a Deferred
            firing once the pin is stored, or failing with the refusal of
            that second judgement or with the store's error: the request
            must then never be sent.
        """
        if decision is None or decision.pin is None or self.pins is None:
            return None
        return Deferred.fromCoroutine(self._commit(self.pins, decision.pin, decision))

    async def _commit(self, pins: IPinStore, pin: Pin, decision: TrustDecision) -> None:
        if decision.verdict is not Verdict.FIRST_USE:
            await settle(pins.put(pin))
            return
        existing = await settle(pins.put_new(pin))
        if existing is None:
            return
        again = self._decide(pin.host, pin.port, existing, decision.presented)
        if again.refusal is not None:
            raise again.refusal
        if again.pin is not None:
            await settle(pins.put(again.pin))

    @staticmethod
    def facts(
        decision: TrustDecision | None,
        tls_version: str | None,
        cipher: str | None,
        *,
        identity_presented: bool = False,
    ) -> TLSFacts:
        """
        What C{request_info} says of the connection: C{tls_version},
        C{cipher}, and when a certificate was judged its C{cert_fingerprint}
        and any C{tofu_warning}; C{client_cert_warning} when a client
        identity was presented over TLS 1.2.
        """
        facts: TLSFacts = {"tls_version": tls_version, "cipher": cipher}
        if decision is not None:
            facts["cert_fingerprint"] = decision.presented.fingerprint
            if decision.warnings:
                facts["tofu_warning"] = " ".join(decision.warnings)
        if identity_presented and tls_version == "TLSv1.2":
            facts["client_cert_warning"] = TLS_1_2_CLIENT_CERT_WARNING
        return facts

    def trust_presented(
        self, host: str, port: int, presented: PresentedCertificate
    ) -> Deferred[Pin]:
        """
        Pin C{presented} for C{host}:C{port}, replacing the old pin; the
        Deferred fires with the pin once it is stored.

        Only for the user's explicit consent (an elicitation answer), never
        on a model's or a page's say-so.

        @raise TofuDisabled: When trust on first use is off (raised on the
            call, nothing is stored).
        """
        pins = self.pins
        if pins is None:
            raise TofuDisabled(message="Trust on first use is switched off.")
        now = self.clock.seconds()
        pin = presented.pin(host, port, first_seen=now, now=now)

        async def store() -> Pin:
            await settle(pins.put(pin))
            log.info("re-pinned {host}:{port} on the user's consent", host=host, port=port)
            return pin

        return Deferred.fromCoroutine(store())
