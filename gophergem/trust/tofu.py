# -*- test-case-name: tests.test_trust_tofu -*-
"""
Trust on first use, in one object: L{TrustOnFirstUse}.

The Gemini pipeline makes one call per step of a connection:

  1. L{TrustOnFirstUse.judge}, from the TLS verify callback when the
     server's certificate arrives: read the pin and decide (pure,
     L{gophergem.trust.decision.decide}).
  2. L{TrustOnFirstUse.commit}, once the handshake has completed and before
     any request byte: write the pin, settling the first-use race with
     another process sharing the store (C{put_new}).
  3. L{TrustOnFirstUse.facts}, for the result's C{request_info}: the TLS
     version and cipher, the fingerprint, the warnings.

L{TrustOnFirstUse.trust_presented} re-pins a host on the user's explicit
consent, and only then.
"""

from __future__ import annotations

from typing import TypedDict

import attrs
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

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

    def judge(self, host: str, port: int, presented: PresentedCertificate) -> TrustDecision:
        """
        Decide on the certificate C{host}:C{port} presented, against its pin.

        @raise gophergem.errors.CertificateStoreUnavailable: When the store
            cannot be read (the handshake then fails closed).
        """
        pinned = self.pins.get(host, port) if self.pins is not None else None
        return self._decide(host, port, pinned, presented)

    def commit(self, decision: TrustDecision | None) -> None:
        """
        Store what C{decision} pins, once the handshake has completed.

        On first use the pin is written only if no other process sharing the
        store has pinned this host since the handshake began (one locked
        step); if one has, the certificate is judged again against that pin.

        @raise gophergem.errors.GophergemError: The refusal of that second
            judgement, or the store's failure: the request is then never sent.
        """
        if decision is None or decision.pin is None or self.pins is None:
            return
        if decision.verdict is not Verdict.FIRST_USE:
            self.pins.put(decision.pin)
            return
        existing = self.pins.put_new(decision.pin)
        if existing is None:
            return
        again = self._decide(decision.pin.host, decision.pin.port, existing, decision.presented)
        if again.refusal is not None:
            raise again.refusal
        if again.pin is not None:
            self.pins.put(again.pin)

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

    def trust_presented(self, host: str, port: int, presented: PresentedCertificate) -> Pin:
        """
        Pin C{presented} for C{host}:C{port}, replacing the old pin.

        Only for the user's explicit consent (an elicitation answer), never
        on a model's or a page's say-so.

        @raise TofuDisabled: When trust on first use is off.
        """
        if self.pins is None:
            raise TofuDisabled(message="Trust on first use is switched off.")
        now = self.clock.seconds()
        pin = presented.pin(host, port, first_seen=now, now=now)
        self.pins.put(pin)
        log.info("re-pinned {host}:{port} on the user's consent", host=host, port=port)
        return pin
