"""
Tests for L{gophergem.mcp.stdio}: line handling, parse errors, and draining
every owed response at end of input.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest
from twisted.internet.testing import StringTransport

from gophergem.mcp.server import build_server
from gophergem.mcp.stdio import MessagePipe, StdioMCPProtocol, classify_line
from tests.mcp_helpers import network, run_with_network

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(id_: int, url: str = "gopher://g.example/") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": "gopher_fetch", "arguments": {"url": url}},
    }


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def session(lines: list[bytes]) -> list[dict[str, Any]]:
    """Feed C{lines}, then end of input; return every message written."""
    net, _ = network()
    server = build_server(net.fetcher())._lowlevel_server
    written: list[bytes] = []

    async def body() -> None:
        pipe = MessagePipe(server, written.append, drain_seconds=30)
        done = pipe.start()
        for raw in lines:
            pipe.feed(raw)
        pipe.eof()
        await done.asFuture(asyncio.get_running_loop())

    run_with_network(net, body)
    assert all(chunk.endswith(b"\n") and chunk.count(b"\n") == 1 for chunk in written)
    return [json.loads(chunk) for chunk in written]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", types.PARSE_ERROR),
        (b"\xff\xfe", types.PARSE_ERROR),
        (b"[1, 2]", types.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 7}', types.INVALID_REQUEST),
        (b"42", types.INVALID_REQUEST),
    ],
)
def test_bad_lines_get_errors(raw: bytes, code: int) -> None:
    """Lines that are not one JSON-RPC message get the matching JSON-RPC error."""
    result = classify_line(raw)
    assert isinstance(result, types.JSONRPCError)
    assert result.error.code == code


def test_invalid_request_keeps_its_id() -> None:
    """An invalid request that has an id is answered under that id."""
    result = classify_line(b'{"jsonrpc": "2.0", "id": 7}')
    assert isinstance(result, types.JSONRPCError) and result.id == 7


@pytest.mark.parametrize("raw", [b"", b"   ", b'{"jsonrpc": "2.0", "method": "x", "params": 5}'])
def test_silent_lines(raw: bytes) -> None:
    """Blank lines and malformed notifications get no answer at all."""
    assert classify_line(raw) is None


def test_burst_then_eof_gets_every_response() -> None:
    """Ten calls and a garbage line cut off by EOF get eleven answers and a parse error."""
    lines = [line(INIT), line(INITIALIZED), b"{not json"] + [line(call(i)) for i in range(2, 12)]
    messages = session(lines)
    ids = sorted(m["id"] for m in messages if m.get("id") is not None)
    assert ids == list(range(1, 12))
    errors = [m for m in messages if "error" in m]
    assert len(errors) == 1
    assert (errors[0]["id"], errors[0]["error"]["code"]) == (None, -32700)
    for message in messages:
        if message.get("id", 0) and message["id"] > 1:
            assert message["result"]["structuredContent"]["kind"] == "menu"


def test_session_continues_after_garbage() -> None:
    """A request sent after a malformed line is still answered."""
    messages = session([line(INIT), b"garbage", line(INITIALIZED), line(call(2))])
    assert any(m.get("id") == 2 and "result" in m for m in messages)


def test_notification_never_answered() -> None:
    """Notifications, even unknown ones, get no reply."""
    messages = session([line(INIT), line(INITIALIZED), line({"jsonrpc": "2.0", "method": "x/y"})])
    assert [m.get("id") for m in messages] == [1]


def test_cancelled_request_not_awaited() -> None:
    """A request cancelled by the client is not waited for at EOF."""
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2},
    }
    messages = session([line(INIT), line(INITIALIZED), line(call(2)), line(cancel)])
    assert 1 in [m.get("id") for m in messages]


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.rejections: list[str] = []
        self.ended = False

    def feed(self, raw: bytes) -> None:
        self.lines.append(raw)

    def reject(self, message: str) -> None:
        self.rejections.append(message)

    def eof(self) -> None:
        self.ended = True


def protocol_with_recorder(max_line: int = 100) -> tuple[StdioMCPProtocol, _Recorder]:
    protocol = StdioMCPProtocol(server=None, max_line=max_line)
    recorder = _Recorder()
    protocol._pipe = recorder  # type: ignore[assignment]
    protocol.transport = StringTransport()
    return protocol, recorder


def test_lines_split_across_chunks() -> None:
    """Lines are reassembled across chunks, split on LF, with a trailing CR dropped."""
    protocol, recorder = protocol_with_recorder()
    protocol.dataReceived(b'{"a"')
    protocol.dataReceived(b': 1}\r\n{"b": 2}\n{"c"')
    protocol.readConnectionLost()
    assert recorder.lines == [b'{"a": 1}', b'{"b": 2}', b'{"c"']
    assert recorder.ended


def test_overlong_line_rejected_and_session_goes_on() -> None:
    """A line over the limit is discarded as it streams in, answered, and the next line is read."""
    protocol, recorder = protocol_with_recorder(max_line=10)
    protocol.dataReceived(b"x" * 8)
    protocol.dataReceived(b"x" * 8)
    protocol.dataReceived(b"x" * 8 + b"\n{}\n")
    assert len(recorder.rejections) == 1
    assert recorder.lines == [b"{}"]
