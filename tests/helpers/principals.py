"""
Shared helpers for the per-principal tests: two principals, and a stand-in
for the access token of the request being served.
"""

from __future__ import annotations

import pytest

from gophergem.mcp import caller as mcp_caller
from gophergem.mcp import server as mcp_server

ALICE = "token:alice"
BOB = "token:bob"


class Caller:
    """Stands in for the access token of the request being served."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.principal: str | None = None
        # The one reader, and the name the server module imported from it.
        for module in (mcp_caller, mcp_server):
            monkeypatch.setattr(module, "current_principal", lambda: self.principal)
