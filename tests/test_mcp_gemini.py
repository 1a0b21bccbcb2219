"""
Tests for L{gophergem.mcp.tools.gemini}: the Gemini fetch tools driven by the
SDK's in-process C{mcp.Client}, in the legacy (initialize) era and the
2026-07-28 era, with and without an elicitation callback.  Every structured
result is checked against the tool's outputSchema with jsonschema; the
Gemini capsule is a fake on an in-memory network with real TLS.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from gophergem.mcp.server import build_server
from gophergem.testing import EPOCH, FakeGeminiServer, MemoryNetwork, ServerTLS, make_certificate
from tests.helpers.fetcher import fingerprint_of
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import (
    ERAS,
    HOST_IP,
    KINDS,
    PAGE,
    STALE,
    Asker,
    capsule,
    data,
    error_code,
    one,
    session,
    validator,
)


def restart_with_new_key(net: MemoryNetwork) -> FakeGeminiServer:
    """Restart localhost's capsule with a certificate for a new key."""
    return net.listen_gemini(
        HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), ServerTLS(*make_certificate(now=EPOCH))
    )


# --- gemini_fetch -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
def test_fetch_every_kind_validates(mode: str) -> None:
    """Every result kind validates against gemini_fetch's schema; only errors set isError."""
    net, _, _ = capsule({path: response for path, (response, _) in KINDS.items()})
    calls = [("gemini_fetch", {"url": f"gemini://localhost{path}"}) for path in KINDS]
    calls.append(("gemini_fetch", {"url": "gemini://localhost/long", "offset": 0}))
    results = session(net, calls, mode=mode, max_rendered_chars=1000)
    kinds = [data(r)["kind"] for r in results]
    assert kinds == [kind for _, kind in KINDS.values()] + ["gemtext"]
    assert [r.is_error for r in results] == [kind == "error" for kind in kinds]
    by_path = dict(zip(KINDS, results, strict=False))
    assert data(by_path["/plain"])["content"] == "caf\u00e9"
    assert data(by_path["/ask"])["sensitive"] is True
    assert data(by_path["/moved"])["cross_host"] is True
    assert data(by_path["/who"])["required"] is True
    assert data(by_path["/gone"])["error"]["status"] == 52
    assert data(by_path["/long"])["partial_line"] is True
    assert "PNG" not in json.dumps(data(by_path["/png"]))
    assert data(by_path["/gemtext"])["document"]["links"] == [
        {"url": "gemini://localhost/next", "text": "Next"}
    ]


def test_fetch_input_not_echoed() -> None:
    """An answer given through input is sent percent-encoded and never echoed in the result."""
    net, server, _ = capsule({"/ask": b"20 text/plain\r\nwelcome"})
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/ask", "input": "s3cr3t pw"})
    assert server.requests == [b"gemini://localhost/ask?s3cr3t%20pw"]
    assert "s3cr3t" not in json.dumps(data(result)) and "s3cr3t" not in result.content[0].text
    assert data(result)["request_info"]["has_query"] is True


def test_fetch_echoed_secret_redacted_in_both_blocks() -> None:
    """
    A capsule that echoes a status-11 answer in its page and links: neither
    the text block nor structuredContent carries it, and request_info says
    how often it was replaced.
    """
    echo = b"20 text/gemini\r\n# Welcome back, s3cr3t pw\n=> /home?k=s3cr3t%20pw Home S3CR3T+PW\n"
    net, _, _ = capsule({"/ask": b"11 Password\r\n", "/login": echo})
    calls = [
        ("gemini_fetch", {"url": "gemini://localhost/ask"}),
        ("gemini_fetch", {"url": "gemini://localhost/login", "input": "s3cr3t pw"}),
    ]
    _, result = session(net, calls)
    text = result.content[0].text
    structured = json.dumps(data(result))
    for shown in (text, structured):
        assert "s3cr3t" not in shown.lower() and "[redacted]" in shown
    assert data(result)["request_info"]["input_redacted"] == 3
    assert json.loads(text)["request_info"]["input_redacted"] == 3


def test_gopher_url_names_gopher_fetch() -> None:
    """A gopher:// URL handed to gemini_fetch is INVALID_REQUEST naming gopher_fetch."""
    net, _, _ = capsule()
    result = one(net, "gemini_fetch", {"url": "gopher://localhost/1/"})
    assert error_code(result) == "INVALID_REQUEST"
    assert "gopher_fetch" in data(result)["error"]["message"]


# --- CERTIFICATE_CHANGED and the user's consent -------------------------------------------

_CONSENT_BUG = (
    "BUG: the consent parameters are annotated ElicitationResult[Consent] | None, which the "
    "SDK does not see as an ElicitationResult: an accepted answer arrives unwrapped (a "
    "Consent model, which _confirmed() treats as a refusal) and a declined one aborts the "
    "call with a ToolError instead of reaching the tool"
)


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_without_elicitation(mode: str) -> None:
    """A client without elicitation gets CERTIFICATE_CHANGED; nobody is asked, nothing sent."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode)
    assert error_code(result) == "CERTIFICATE_CHANGED"
    error = data(result)["error"]
    assert error["pinned_fingerprint"] == STALE.fingerprint
    assert error["presented_fingerprint"].startswith("sha256:")
    assert error["pinned_expired"] is False
    assert net.pins.all() == [STALE] and server.requests == []


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_question_shows_the_facts(mode: str) -> None:
    """The user is asked once, shown the host, both fingerprints and the old expiry."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    tls = ServerTLS(*make_certificate(now=EPOCH))
    net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), tls)
    asker = Asker("accept")
    one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode, asker=asker)
    (question,) = asker.questions
    assert "localhost:1965" in question and STALE.fingerprint in question
    assert "2027-02-14T08:00:00Z" in question  # the pinned certificate's expiry
    assert fingerprint_of(tls.certificate_pem) in question


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_accepted_repins_and_fetches(mode: str) -> None:
    """When the user accepts the new key it is pinned and the page comes back."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    asker = Asker("accept")
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode, asker=asker)
    assert data(result)["kind"] == "gemtext" and result.is_error is False
    pin = net.pins.get("localhost", 1965)
    assert pin.fingerprint == data(result)["request_info"]["cert_fingerprint"]
    assert server.requests == [b"gemini://localhost/"]


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_declined_changes_nothing(mode: str) -> None:
    """When the user declines, the result is still CERTIFICATE_CHANGED and the pin stays."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    asker = Asker("decline")
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode, asker=asker)
    assert len(asker.questions) == 1
    assert net.pins.all() == [STALE] and server.requests == []
    assert error_code(result) == "CERTIFICATE_CHANGED"


def test_changed_key_accepted_with_no_still_declines() -> None:
    """An accepted form that says confirm=false re-pins nothing."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    asker = Asker("accept", confirm=False)
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, asker=asker)
    assert error_code(result) == "CERTIFICATE_CHANGED"
    assert net.pins.all() == [STALE] and server.requests == []


# --- batch and the tool list ----------------------------------------------------------


def test_batch_in_input_order() -> None:
    """gemini_batch_fetch returns one result per URL in input order and never sets isError."""
    net, _, _ = capsule({"/a": PAGE, "/b": b"51 missing\r\n", "/c": b"10 Name?\r\n"})
    urls = [f"gemini://localhost/{p}" for p in ("c", "b", "a", "b")]
    result = one(net, "gemini_batch_fetch", {"urls": urls})
    assert result.is_error is False
    assert [r["kind"] for r in data(result)["result"]] == ["input", "error", "gemtext", "error"]
    assert [r["request_info"]["url"] for r in data(result)["result"]] == urls


@pytest.mark.parametrize("count", [0, 51])
def test_batch_size_refused(count: int) -> None:
    """A batch of zero or 51 URLs is refused as INVALID_REQUEST without fetching."""
    net, server, _ = capsule()
    result = one(net, "gemini_batch_fetch", {"urls": ["gemini://localhost/"] * count})
    assert result.is_error is True
    assert data(result)["error"]["code"] == "INVALID_REQUEST" and data(result)["result"] == []
    assert server.requests == []


def test_tool_annotations() -> None:
    """Fetch tools are read-only and open-world; lists read-only local; updates destructive."""
    net, _, _ = capsule()
    server = build_server(net.fetcher())

    async def body() -> Any:
        async with Client(server, mode="legacy") as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = run_with_network(net, body)
    hints = {
        name: (
            tools[name].annotations.read_only_hint,
            tools[name].annotations.destructive_hint,
            tools[name].annotations.open_world_hint,
        )
        for name in tools
        if name.startswith("gemini_")
    }
    assert hints == {
        "gemini_fetch": (True, False, True),
        "gemini_batch_fetch": (True, False, True),
        "gemini_trust_list": (True, False, False),
        "gemini_client_cert_list": (True, False, False),
        "gemini_trust_update": (False, True, False),
        "gemini_client_cert_update": (False, True, False),
    }
    assert tools["gemini_trust_update"].annotations.idempotent_hint is True
    for name in hints:
        assert tools[name].output_schema["type"] == "object"


def test_page_cut_by_the_deadline_is_marked_incomplete() -> None:
    """
    A capsule that sends a page and holds the connection: gemini_fetch
    returns the page at the deadline, marked incomplete (deadline), valid
    against the output schema, the mark kept in the compact text block.
    """

    net = MemoryNetwork()
    net.resolver.add("localhost", HOST_IP)
    tls = ServerTLS(*make_certificate(now=EPOCH))
    net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}, close=False), tls)
    server = build_server(net.fetcher(gemini={"respect_robots_txt": False, "timeout_seconds": 3}))

    async def body() -> tuple[Any, Any]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools, await client.call_tool("gemini_fetch", {"url": "gemini://localhost/"})

    tools, result = run_with_network(net, body, advance=0.25)
    data = result.structured_content
    validator(tools["gemini_fetch"].output_schema).validate(data)
    assert data["kind"] == "gemtext" and data["document"]["lines"][0]["content"] == "# Hello"
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    compact = json.loads(result.content[0].text)
    assert compact["incomplete_reason"] == "deadline"
