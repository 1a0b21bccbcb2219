# -*- test-case-name: tests.test_cli_token -*-
"""
The HTTP endpoint's token file read again while the daemon runs: on
C{SIGHUP} (L{TokenReloadService}).
"""

from __future__ import annotations

import signal
from typing import Any, Protocol

from twisted.application.service import Service
from twisted.logger import Logger

__all__ = ["TokenReloadService"]


class _Reloads(Protocol):
    """A verifier that reads its token file again when told (the endpoint's)."""

    def reload(self) -> None:
        """Read the token file again."""


class TokenReloadService(Service):
    """
    Reads the token file at start-up, and again on C{SIGHUP} while running
    (it also reloads by itself when the file changes).  The previous
    C{SIGHUP} handler comes back when the service stops.

    @ivar verifier: The HTTP endpoint's token verifier (anything with a
        C{reload()} that reads the token file again).
    """

    def __init__(self, verifier: _Reloads, reactor: Any) -> None:
        self.verifier = verifier
        self.reactor = reactor
        self._previous: Any = None

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self.verifier.reload()
        if hasattr(signal, "SIGHUP"):
            self._previous = signal.signal(signal.SIGHUP, self._hangup)

    def stopService(self) -> None:
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if hasattr(signal, "SIGHUP") and self._previous is not None:
            signal.signal(signal.SIGHUP, self._previous)
            self._previous = None

    def _hangup(self, signum: int, frame: Any) -> None:
        Logger().info("SIGHUP: reloading the token file")
        self.reactor.callFromThread(self.verifier.reload)
