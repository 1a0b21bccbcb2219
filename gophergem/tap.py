# -*- test-case-name: tests.test_tap -*-
"""
C{twistd gophergem}: command-line options turned into a L{Config}.

All wiring happens in L{gophergem.service.makeService}; this module only
reads options.  The MCP endpoint needs Twisted's asyncio reactor: it is
installed here when no reactor was chosen, and choosing another one is a
usage error.  L{options_from_env} reads the same options from environment
variables, for C{tac/gophergem.tac}.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Mapping
from typing import ClassVar

from twisted.application.service import IService
from twisted.python import usage

from gophergem.config import SETTINGS, Config, ConfigError

__all__ = ["DEFAULT_ENDPOINT", "Options", "makeService", "options_from_env"]

DEFAULT_ENDPOINT = "tcp:8000:interface=127.0.0.1"
TRANSPORTS = ("stdio", "http")

_HOST_NAME = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?)(:[0-9]{1,5})?$")


class Options(usage.Options):
    """Options of C{twistd gophergem}."""

    synopsis = "[options]"
    longdesc = (
        "Serve gophergem's MCP endpoint: on stdin/stdout (--transport stdio, run as "
        "twistd -n --pidfile= gophergem; logs go to stderr), or over Streamable HTTP at /mcp "
        "with /health and /.well-known/agent.gopher (--transport http). Every setting also "
        "reads its environment variable (GOPHER_*, GEMINI_*, GOPHERGEM_*); an option wins "
        "over the variable."
    )
    optParameters: ClassVar[list[list[str | None]]] = [
        ["transport", None, "stdio", "stdio (MCP on stdin/stdout) or http (Streamable HTTP)."],
        ["endpoint", None, DEFAULT_ENDPOINT, "Where HTTP listens, as a strports description."],
        *[[s.option, None, None, f"{s.help} [{s.variable}]"] for s in SETTINGS],
    ]

    environ: Mapping[str, str] | None = None
    """Where settings not given as options are read; the process environment by default."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self["allowed_hosts"] = []

    def opt_allowed_host(self, name: str) -> None:
        """A name (or name:port) HTTP clients may use besides loopback ones; repeatable."""
        self["allowed_hosts"].append(_host_name(name))

    def postOptions(self) -> None:
        if self["transport"] not in TRANSPORTS:
            raise usage.UsageError(f"--transport must be stdio or http, not {self['transport']!r}.")
        values = dict(os.environ if self.environ is None else self.environ)
        for setting in SETTINGS:
            if self[setting.option] is not None:
                values[setting.variable] = self[setting.option]
        try:
            self["config"] = Config.from_env(values)
        except ConfigError as exc:
            raise usage.UsageError(str(exc)) from None
        self["allowed_hosts"] = tuple(dict.fromkeys(self["allowed_hosts"]))
        _ensure_asyncio_reactor()
        if self["transport"] == "http":
            _check_endpoint(self["endpoint"])


def _host_name(name: str) -> str:
    text = name.strip().lower()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address
    if not _HOST_NAME.match(text):
        raise usage.UsageError(
            f"--allowed-host {name!r}: give a host name or address, optionally with :port "
            "(not a URL)."
        )
    return text


def _check_endpoint(endpoint: str) -> None:
    from twisted.internet import endpoints, reactor

    try:
        endpoints.serverFromString(reactor, endpoint)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise usage.UsageError(
            f"--endpoint {endpoint!r} is not a strports description ({exc})."
        ) from None


def options_from_env(environ: Mapping[str, str]) -> Options:
    """
    The options of C{twistd gophergem}, read from C{environ}: C{GOPHERGEM_TRANSPORT}
    (C{http} unless set), C{GOPHERGEM_ENDPOINT}, C{GOPHERGEM_ALLOWED_HOSTS} (a,b)
    and every setting's own variable.

    @raise usage.UsageError: Naming what is wrong.
    """
    argv = ["--transport", environ.get("GOPHERGEM_TRANSPORT", "http").strip()]
    if environ.get("GOPHERGEM_ENDPOINT", "").strip():
        argv += ["--endpoint", environ["GOPHERGEM_ENDPOINT"].strip()]
    for name in environ.get("GOPHERGEM_ALLOWED_HOSTS", "").split(","):
        if name.strip():
            argv += ["--allowed-host", name.strip()]
    options = Options()
    options.environ = environ
    options.parseOptions(argv)  # type: ignore[no-untyped-call]  # Twisted: unannotated
    return options


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
    return make(
        options["config"],
        transport=options["transport"],
        stdout_fd=stdout_fd,
        endpoint=options["endpoint"],
        allowed_hosts=options["allowed_hosts"],
    )
