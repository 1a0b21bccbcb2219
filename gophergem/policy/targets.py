# -*- test-case-name: tests.test_policy_addresses -*-
"""
The policy objects the connector consults about targets, built from the
pure rules in L{gophergem.policy.addresses}.
"""

from __future__ import annotations

import attrs
from zope.interface import implementer

from gophergem.interfaces import IAddressPolicy
from gophergem.policy.addresses import IPAddress, is_public

__all__ = ["AddressPolicy"]


@implementer(IAddressPolicy)
@attrs.frozen
class AddressPolicy:
    """
    The address rules in force.

    @ivar allow_local: Lift the SSRF rules (C{*_ALLOW_LOCAL_HOSTS=true}).
    """

    allow_local: bool = False

    def permits(self, address: IPAddress) -> bool:
        """Return whether C{address} may be dialled."""
        return self.allow_local or is_public(address)
