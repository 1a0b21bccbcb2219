"""
The providers of L{gophergem.interfaces.ISecretInput}
(L{gophergem.http.secret_input}): the daemon's one-time pages for secret
input, offered only on a loopback TCP bind, served under C{/input/} of its
own site, never logged; and the stdio server's loopback pages.
"""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock

from gophergem import service
from gophergem.config import Config
from gophergem.http.listen import page_host
from gophergem.http.secret_input import LoopbackSecretInput, SiteSecretInput
from gophergem.http.secret_page import SecretPages
from gophergem.http.site import BoundedSite
from gophergem.interfaces import ISecretInput
from gophergem.mcp.stdio import StdioMCPService


@pytest.mark.parametrize(
    ("endpoint", "host"),
    [
        ("tcp:8000:interface=127.0.0.1", "127.0.0.1"),
        ("tcp:0:interface=localhost", "127.0.0.1"),
        ("tcp6:8000:interface=\\:\\:1", "[::1]"),
        ("tcp:8000:interface=0.0.0.0", None),
        ("tcp:8000", None),
        ("unix:/tmp/gophergem.sock", None),
        ("ssl:8443:interface=127.0.0.1", None),
    ],
)
def test_pages_only_on_loopback_tcp(endpoint: str, host: str | None) -> None:
    assert page_host(endpoint) == host


def test_site_pages_use_the_base_once_listening() -> None:
    pages = SecretPages(Clock())
    base: list[str | None] = [None]
    site_input = SiteSecretInput(pages, lambda: base[0])
    failures: list[Any] = []
    site_input.open("Password?", "gemini://c.example/").addErrback(failures.append)
    assert failures and pages.pending() == 0
    base[0] = "http://127.0.0.1:8000/input/"
    opened: list[Any] = []
    site_input.open("Password?", "gemini://c.example/").addCallback(opened.append)
    ((url, answer),) = opened
    assert url.startswith("http://127.0.0.1:8000/input/") and len(url) > 40
    assert pages.pending() == 1
    answer.cancel()


class _Request:
    def __init__(self, path: bytes) -> None:
        self.path = path


def test_input_pages_are_not_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    logged: list[bytes] = []
    monkeypatch.setattr(
        "twisted.web.server.Site.log", lambda self, request: logged.append(request.path)
    )
    site = BoundedSite(object(), unlogged=(b"/input/",))  # type: ignore[arg-type]
    site.log(_Request(b"/input/SECRETTOKEN"))
    site.log(_Request(b"/mcp"))
    assert logged == [b"/mcp"]


def test_stdio_asks_on_loopback_pages() -> None:
    """
    The stdio service the wiring builds asks for secret input on loopback
    pages, through the interface alone; nothing listens before a capsule asks.
    """
    reactor = MemoryReactorClock()
    offline = Config.from_mapping(
        {"GEMINI_TOFU_ENABLED": "false", "GEMINI_CLIENT_CERTS_ENABLED": "false"}
    )
    top = service.makeService(offline, reactor, transport="stdio")
    (stdio,) = list(top)
    assert isinstance(stdio, StdioMCPService)
    assert isinstance(stdio.secret_input, LoopbackSecretInput)
    assert ISecretInput.providedBy(stdio.secret_input)
    assert reactor.tcpServers == []
