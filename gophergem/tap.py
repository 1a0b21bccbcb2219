# -*- test-case-name: tests.test_tap -*-
"""
C{twistd gophergem}: command-line options turned into a L{Config}.

All wiring happens in L{gophergem.service.makeService}; this module only
reads options.  The MCP endpoint needs Twisted's asyncio reactor: it is
installed here when no reactor was chosen, and choosing another one is a
usage error.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import ClassVar

from twisted.application.service import IService
from twisted.python import usage

from gophergem.config import SETTINGS, Config, ConfigError

__all__ = ["Options", "makeService"]


class Options(usage.Options):
    """Options of C{twistd gophergem}."""

    synopsis = "[options]"
    longdesc = (
        "Serve gophergem's MCP endpoint. Every setting also reads its environment "
        "variable (GOPHER_*, GEMINI_*, GOPHERGEM_*); an option wins over the variable. "
        "In stdio mode run as: twistd -n --pidfile= gophergem (logs go to stderr)."
    )
    optParameters: ClassVar[list[list[str | None]]] = [
        ["transport", None, "stdio", "stdio: MCP on stdin/stdout."],
        *[[s.option, None, None, f"{s.help} [{s.variable}]"] for s in SETTINGS],
    ]

    def postOptions(self) -> None:
        if self["transport"] != "stdio":
            raise usage.UsageError(f"--transport must be stdio, not {self['transport']!r}.")
        values = dict(os.environ)
        for setting in SETTINGS:
            if self[setting.option] is not None:
                values[setting.variable] = self[setting.option]
        try:
            self["config"] = Config.from_env(values)
        except ConfigError as exc:
            raise usage.UsageError(str(exc)) from None
        _ensure_asyncio_reactor()


def _ensure_asyncio_reactor() -> None:
    if "twisted.internet.reactor" in sys.modules:
        from twisted.internet import reactor
        from twisted.internet.asyncioreactor import AsyncioSelectorReactor

        if not isinstance(reactor, AsyncioSelectorReactor):
            raise usage.UsageError(
                "gophergem needs the asyncio reactor; run twistd with -r asyncio or no -r at all."
            )
        return
    from twisted.internet import asyncioreactor

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    asyncioreactor.install(loop)


def makeService(options: Options) -> IService:
    """Build the service tree for C{twistd gophergem}."""
    from gophergem.service import makeService as make
    from gophergem.service import reserve_stdout

    stdout_fd = reserve_stdout() if options["transport"] == "stdio" else 1
    return make(options["config"], transport=options["transport"], stdout_fd=stdout_fd)
