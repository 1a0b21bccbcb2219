"""
A capsule's secret input (status 11) through URL-mode elicitation
(L{gophergem.mcp.tools.gemini}): the user types it on a one-time page, the
capsule gets it, and the answer appears in no MCP message; declined or
expired, nothing is sent; a client without URL mode gets the input result
with advice.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types
import pytest
from mcp import Client
from twisted.internet.defer import Deferred, succeed

from gophergem.errors import InputTimeout
from gophergem.mcp.server import build_server
from gophergem.mcp.tools.gemini import url_mode
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import ERAS, capsule

SECRET = "correct horse battery"


def ask(url: str) -> bytes:
    """Status 11 without a query; with one, a page that echoes it (to be scrubbed)."""
    query = url.partition("?")[2]
    if not query:
        return b"11 Passphrase?\r\n"
    return b"20 text/gemini\r\n# Welcome, " + query.encode() + b"\n"


class FakePages:
    """Stands in for the loopback pages: the test plays the user who submits the form."""

    def __init__(self, answer: str | None, fail: Exception | None = None) -> None:
        self.answer_text = answer
        self.fail = fail
        self.opened: list[tuple[str, str]] = []
        self.cancelled: list[str] = []
        self.answer: Deferred[str] = Deferred()
        self.pages = self

    def open(self, prompt: str, url: str) -> Deferred[tuple[str, Deferred[str]]]:
        self.opened.append((prompt, url))
        return succeed(("http://127.0.0.1:5555/TOKEN", self.answer))

    def cancel(self, token: str) -> None:
        self.cancelled.append(token)

    def submit(self) -> None:
        if self.fail is not None:
            self.answer.errback(self.fail)
        elif self.answer_text is not None:
            self.answer.callback(self.answer_text)


def run(pages: FakePages | None, *, action: str = "accept", mode: str = "legacy") -> Any:
    net, server, _ = capsule({"/ask": ask})
    fetcher = net.fetcher(gemini={"respect_robots_txt": False, "requests_per_minute": 0})
    mcp_server = build_server(fetcher, secret_input=pages)
    seen: list[Any] = []
    wire: list[str] = []

    async def elicit(context: Any, params: Any) -> mcp_types.ElicitResult:
        seen.append(params)
        if pages is not None and action == "accept":
            pages.submit()
        return mcp_types.ElicitResult(action=action)  # type: ignore[arg-type]

    async def body() -> Any:
        async with Client(mcp_server, mode=mode, elicitation_callback=elicit) as client:
            result = await client.call_tool("gemini_fetch", {"url": "gemini://localhost/ask"})
            wire.append(result.model_dump_json())
            return result

    result = run_with_network(net, body)
    return result, seen, server.requests, wire


@pytest.mark.parametrize("mode", ERAS)
def test_secret_goes_to_the_capsule_and_nowhere_else(mode: str) -> None:
    pages = FakePages(SECRET)
    result, seen, requests, wire = run(pages, mode=mode)
    (params,) = seen
    assert params.mode == "url"
    assert params.url == "http://127.0.0.1:5555/TOKEN"
    assert "never shown to the assistant" in params.message
    assert pages.opened == [("Passphrase?", "gemini://localhost/ask")]
    assert requests[-1] == b"gemini://localhost/ask?correct%20horse%20battery"
    assert b"?" not in b"".join(requests[:-1])  # the secret was sent once, last
    data = result.structured_content
    assert data["kind"] == "gemtext"
    shown = " ".join(wire)
    assert "correct" not in shown and "horse" not in shown
    assert "[redacted]" in json.dumps(data)


@pytest.mark.parametrize("mode", ERAS)
def test_declined_sends_nothing(mode: str) -> None:
    pages = FakePages(SECRET)
    result, _, requests, _ = run(pages, action="decline", mode=mode)
    assert result.structured_content["error"]["code"] == "USER_DECLINED"
    assert pages.cancelled == ["TOKEN"]
    assert all(b"?" not in request for request in requests)


@pytest.mark.parametrize("mode", ERAS)
def test_expired_sends_nothing(mode: str) -> None:
    pages = FakePages(None, fail=InputTimeout(message="late"))
    result, _, requests, _ = run(pages, mode=mode)
    assert result.structured_content["error"]["code"] == "INPUT_TIMEOUT"
    assert requests == [b"gemini://localhost/ask"]


def test_without_pages_the_input_result_warns() -> None:
    result, seen, requests, _ = run(None)
    assert seen == []
    data = result.structured_content
    assert data["kind"] == "input" and data["sensitive"] is True
    assert "in front of the assistant" in data["next_step"]
    assert requests == [b"gemini://localhost/ask"]


_PAGES = object()


class _Ctx:
    def __init__(self, elicitation: Any, version: str | None, pages: Any = _PAGES) -> None:
        self.client_capabilities = mcp_types.ClientCapabilities(elicitation=elicitation)
        self.protocol_version = version
        self.mcp_server = type("S", (), {"secret_input": pages})()


def test_url_mode_needs_the_clients_word_and_pages() -> None:
    both = mcp_types.ElicitationCapability(form=mcp_types.FormElicitationCapability(), url={})
    form = mcp_types.ElicitationCapability(form=mcp_types.FormElicitationCapability())
    assert url_mode(_Ctx(both, "2025-11-25"))  # type: ignore[arg-type]
    assert not url_mode(_Ctx(form, "2025-11-25"))  # type: ignore[arg-type]
    assert not url_mode(_Ctx(None, "2025-11-25"))  # type: ignore[arg-type]
    assert url_mode(_Ctx(both, "2026-07-28"))  # type: ignore[arg-type]
    assert not url_mode(_Ctx(both, "2025-11-25", pages=None))  # type: ignore[arg-type]
