"""
Tests for L{gophergem.mcp.tools.smolweb}: C{smolweb_fetch} through the SDK's
own in-process client, which checks every structured result against the
tool's output schema.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from mcp import Client

from gophergem.mcp.server import build_server
from gophergem.mcp.tools.smolweb import SMOLWEB_FETCH
from gophergem.testing import FakeSmolServer, MemoryNetwork
from tests.helpers.mcp import HOST_IP, network, run_with_network

PAGE = b"# Hi\r\n=> /a.gmi A\r\n=: /ask Ask me\r\n=> finger://g.example/bob Bob\r\n"


def _net() -> MemoryNetwork:
    net, _ = network()
    net.listen(HOST_IP, 79, FakeSmolServer({b"bob": b"Bob's plan\r\n"}))
    net.listen(HOST_IP, 1900, FakeSmolServer({b"/": b"=> /x.txt x\r\n", b"/bin.zip": b"PK"}))
    net.listen(
        HOST_IP,
        300,
        FakeSmolServer(
            {
                b"g.example / 0": b"2 text/gemini\r\n" + PAGE,
                b"g.example /ask 3": lambda data: b"2 text/plain\r\nGot " + data + b"\r\n",
                b"g.example /old 0": b"3 /new\r\n",
                b"g.example /oops 0": b"5 oops\r\n",
            },
            spartan=True,
            missing=b"4 not here\r\n",
        ),
    )
    return net


def calls(*arguments: dict[str, Any]) -> tuple[Any, list[Any]]:
    net = _net()
    server = build_server(net.fetcher())

    async def body() -> tuple[Any, list[Any]]:
        async with Client(server) as client:
            tools = await client.list_tools()
            return tools, [await client.call_tool("smolweb_fetch", a) for a in arguments]

    return run_with_network(net, body)


def _schema(tools: Any) -> dict[str, Any]:
    return next(t.output_schema for t in tools.tools if t.name == "smolweb_fetch")


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"url": "finger://bob@g.example"}, "text"),
        ({"url": "finger://g.example/bob"}, "text"),
        ({"url": "nex://g.example/"}, "gemtext"),
        ({"url": "nex://g.example/bin.zip"}, "binary"),
        ({"url": "spartan://g.example/"}, "gemtext"),
        ({"url": "spartan://g.example/ask", "input": "hey"}, "success"),
        ({"url": "spartan://g.example/old"}, "redirect"),
        ({"url": "spartan://g.example/missing"}, "error"),
        ({"url": "spartan://g.example/oops"}, "error"),
        ({"url": "gopher://g.example/"}, "menu"),
        ({"url": "gopher://g.example/9/bin"}, "binary"),
        ({"url": "finger://127.0.0.1/"}, "error"),
        ({"url": "titan://g.example/x"}, "error"),
    ],
)
def test_results_validate(arguments: dict[str, Any], kind: str) -> None:
    """Every kind of result validates against the tool's output schema."""
    tools, (result,) = calls(arguments)
    data = result.structured_content
    jsonschema.validate(data, _schema(tools))
    assert data["kind"] == kind, data
    assert result.is_error is (kind == "error")


def test_input_links_marked_in_both_blocks() -> None:
    """A Spartan =: link says takes_input, in structured content and the text block."""
    _, (result,) = calls({"url": "spartan://g.example/"})
    links = result.structured_content["document"]["links"]
    assert links[1] == {"url": "spartan://g.example/ask", "text": "Ask me", "takes_input": True}
    assert "takes_input" not in links[0]
    assert links[2]["url"] == "finger://g.example/bob"
    compact = json.loads(result.content[0].text)
    ask = [line for line in compact["document"]["lines"] if line.get("takes_input")]
    assert ask == [
        {"type": "link", "url": "spartan://g.example/ask", "text": "Ask me", "takes_input": True}
    ]


def test_spartan_errors_have_their_own_codes() -> None:
    """4 and 5 come back under different codes, each with its status."""
    _, (missing, oops) = calls(
        {"url": "spartan://g.example/missing"}, {"url": "spartan://g.example/oops"}
    )
    assert missing.structured_content["error"]["code"] == "PERMANENT_ERROR"
    assert missing.structured_content["error"]["status"] == 4
    assert oops.structured_content["error"]["code"] == "TEMPORARY_ERROR"
    assert oops.structured_content["error"]["status"] == 5


def test_gopher_is_what_gopher_fetch_gives() -> None:
    """A gopher:// URL gives exactly what gopher_fetch gives."""
    net = _net()
    server = build_server(net.fetcher(cache_enabled=False))

    async def body() -> tuple[Any, Any]:
        async with Client(server) as client:
            one = await client.call_tool("smolweb_fetch", {"url": "gopher://g.example/"})
            two = await client.call_tool("gopher_fetch", {"url": "gopher://g.example/"})
            return one, two

    one, two = run_with_network(net, body)
    for result in (one, two):
        result.structured_content["request_info"].pop("timestamp")
    assert one.structured_content == two.structured_content


def test_description_is_short() -> None:
    """The description the model reads stays short."""
    assert len(SMOLWEB_FETCH) < 400


def test_gemini_is_what_gemini_fetch_gives() -> None:
    """A gemini:// URL gives exactly what gemini_fetch gives, through the same tool code."""
    from tests.helpers.mcp_gemini import capsule

    net, _, _ = capsule()
    server = build_server(net.fetcher(gemini={"cache_enabled": False}))

    async def body() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            tools = await client.list_tools()
            one = await client.call_tool("smolweb_fetch", {"url": "gemini://localhost/"})
            two = await client.call_tool("gemini_fetch", {"url": "gemini://localhost/"})
            return tools, one, two

    tools, one, two = run_with_network(net, body)
    jsonschema.validate(one.structured_content, _schema(tools))
    assert one.structured_content["kind"] == "gemtext"
    for result in (one, two):
        result.structured_content["request_info"].pop("timestamp")
    assert one.structured_content == two.structured_content
