"""
Tests for L{gophergem.mcp.stdio}: line handling, parse errors, draining
every owed response at end of input however long it takes, and ending at
once (counting what is lost) when stdout is gone or on shutdown.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.error import ConnectionLost
from twisted.internet.protocol import Protocol
from twisted.internet.testing import MemoryReactor, StringTransport

from gophergem.config import Config
from gophergem.mcp._sdk import lowlevel_server
from gophergem.mcp.server import build_server
from gophergem.mcp.stdio import MessagePipe, StdioMCPProtocol, classify_line, write_through
from tests.helpers.mcp import network, run_with_network
from tests.helpers.stdio import HeldFetcher, StdioHarness, WarpLoop, run_warped, turns, until

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
    server = lowlevel_server(build_server(net.fetcher()))
    written: list[bytes] = []

    async def body() -> None:
        pipe = MessagePipe(server, written.append)
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


# --- end of input, stdout gone, shutdown ------------------------------------------


def replies(chunks: list[bytes], kind: str | None = None) -> list[Any]:
    """The ids of every reply written (of C{kind} C{"result"} or C{"error"}), in order."""
    messages = [json.loads(chunk) for chunk in b"".join(chunks).splitlines()]
    return [m.get("id") for m in messages if kind is None or kind in m]


def error_messages(chunks: list[bytes]) -> list[str]:
    messages = [json.loads(chunk) for chunk in b"".join(chunks).splitlines()]
    return [m["error"]["message"] for m in messages if "error" in m]


def opening(calls: int) -> list[bytes]:
    return [line(INIT), line(INITIALIZED)] + [line(call(i)) for i in range(2, 2 + calls)]


def test_eof_waits_for_replies_however_long_they_take() -> None:
    """
    Replies owed at end of input are all written even when their handlers
    run for an hour after it (the old pipe gave up after 10 s).
    """
    fetcher = HeldFetcher()
    server = lowlevel_server(build_server(fetcher))  # type: ignore[arg-type]
    written: list[bytes] = []

    async def body(loop: WarpLoop) -> None:
        pipe = MessagePipe(server, written.append)
        done = pipe.start()
        for raw in opening(200):
            pipe.feed(raw)
        pipe.eof()
        await until(lambda: len(fetcher.pending) == 200)
        loop.skipped += 3600
        await turns()
        assert not done.called
        fetcher.answer()
        await done.asFuture(loop)

    run_warped(body)
    assert sorted(replies(written, "result")) == list(range(1, 202))
    assert replies(written, "error") == []


def test_eof_arms_no_timer_by_default() -> None:
    """At end of input nothing is timed: the session waits for every reply."""

    async def body(h: StdioHarness) -> None:
        h.receive(*opening(3))
        h.protocol.readConnectionLost()
        await until(lambda: len(h.fetcher.pending) == 3)
        assert h.clock.getDelayedCalls() == []
        h.clock.advance(86400)
        h.loop.skipped += 86400
        await turns()
        assert not h.protocol.finished.called
        h.fetcher.answer()
        await h.protocol.finished.asFuture(h.loop)
        assert sorted(replies(h.stdio.written, "result")) == [1, 2, 3, 4]
        assert (h.protocol.replies_lost, h.protocol.exit_status) == (0, 0)

    assert StdioHarness.run(body) == []


def test_drain_limit_gives_up_counts_and_logs() -> None:
    """With a drain limit set, replies still owed when it runs out are counted and logged."""

    async def body(h: StdioHarness) -> None:
        h.receive(*opening(3))
        h.protocol.readConnectionLost()
        await until(lambda: len(h.fetcher.pending) == 3)
        h.fetcher.answer(1)
        await until(lambda: len(replies(h.stdio.written)) == 2)
        h.clock.advance(4.9)
        await turns()
        assert not h.protocol.finished.called
        h.clock.advance(0.1)
        await h.protocol.finished.asFuture(h.loop)
        assert (h.protocol.replies_lost, h.protocol.exit_status) == (2, 1)
        assert h.fetcher.cancelled == 2
        assert sorted(replies(h.stdio.written, "result")) == [1, 2]
        assert sorted(replies(h.stdio.written, "error")) == [3, 4]
        assert all("GOPHERGEM_STDIO_DRAIN_SECONDS" in m for m in error_messages(h.stdio.written))

    logged = StdioHarness.run(body, drain_seconds=5)
    [warning] = [text for text in logged if "gave up 2 requests" in text]
    assert "GOPHERGEM_STDIO_DRAIN_SECONDS (5 s) ran out" in warning


def test_stdout_closed_ends_the_session_at_once() -> None:
    """
    Once stdout is gone no reply can be delivered: handlers in flight are
    cancelled, the loss is logged, and the session ends without waiting.
    """

    async def body(h: StdioHarness) -> None:
        h.receive(*opening(4))
        await until(lambda: len(h.fetcher.pending) == 4)
        h.stdio.close_stdout()
        await h.protocol.finished.asFuture(h.loop)
        assert (h.protocol.replies_lost, h.protocol.exit_status) == (4, 1)
        assert h.fetcher.cancelled == 4
        assert not h.stdio.reading

    logged = StdioHarness.run(body)
    assert any("standard output closed: gave up 4 requests" in text for text in logged), logged


def test_stdout_closed_then_stdin_closed_finishes() -> None:
    """
    A client that closes our stdout, then stdin, with nothing owed: the
    session finishes (it used to wait forever for a stdout flush that could
    never come).
    """

    async def body(h: StdioHarness) -> None:
        h.receive(line(INIT))
        await until(lambda: len(h.stdio.written) == 1)
        h.stdio.close_stdout()
        h.receive(line({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        h.protocol.readConnectionLost()
        await h.protocol.finished.asFuture(h.loop)
        assert h.protocol.exit_status == 0

    assert StdioHarness.run(body) == []


def test_stop_gives_a_grace_then_gives_up() -> None:
    """
    On shutdown, replies that arrive within the grace are written; the rest
    are given up, counted and logged, and the stop completes.
    """

    async def body(h: StdioHarness) -> None:
        h.receive(*opening(3))
        await until(lambda: len(h.fetcher.pending) == 3)
        stopped = h.protocol.stop(2)
        h.receive(line(call(99)))  # read no more requests
        h.clock.advance(1)
        h.fetcher.answer(1)
        await until(lambda: len(replies(h.stdio.written)) == 2)
        assert not stopped.called
        h.clock.advance(1)
        await stopped.asFuture(h.loop)
        assert h.protocol.finished.called
        assert (h.protocol.replies_lost, h.protocol.exit_status) == (2, 1)
        assert sorted(replies(h.stdio.written, "result")) == [1, 2]
        assert sorted(replies(h.stdio.written, "error")) == [3, 4]
        assert error_messages(h.stdio.written) == ["Not completed: gophergem is shutting down."] * 2
        assert len(h.fetcher.pending) == 3  # the call sent after the stop was not read

    logged = StdioHarness.run(body)
    assert any("shutting down: gave up 2 requests" in text for text in logged), logged


def test_stop_when_idle_completes_at_once() -> None:
    """Shutting down with nothing owed needs no timer."""

    async def body(h: StdioHarness) -> None:
        h.receive(line(INIT))
        await until(lambda: len(h.stdio.written) == 1)
        await h.protocol.stop(2).asFuture(h.loop)
        assert h.protocol.exit_status == 0
        assert h.clock.getDelayedCalls() == []

    assert StdioHarness.run(body) == []


def test_stop_is_bounded_when_stdout_takes_nothing() -> None:
    """A stop completes even if stdout never drains: after a second grace at most."""

    async def body(h: StdioHarness) -> None:
        h.receive(*opening(1))
        await until(lambda: len(h.fetcher.pending) == 1)
        stopped = h.protocol.stop(2)
        h.clock.advance(2)
        await turns()
        assert not stopped.called
        h.clock.advance(2)
        await stopped.asFuture(h.loop)
        assert h.protocol.exit_status == 1

    StdioHarness.run(body, stuck=True)


def test_reused_ids_all_answered_before_eof_ends() -> None:
    """A client that reuses an id still in flight gets every reply before the session ends."""
    ping = line({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    messages = session([line(INIT), line(INITIALIZED), ping, ping, ping])
    assert [m.get("id") for m in messages].count(7) == 3


def test_id_that_is_not_unicode_is_refused() -> None:
    """An id holding a lone surrogate cannot be echoed: it is refused with id null."""
    result = classify_line(b'{"jsonrpc": "2.0", "id": "a\\ud800", "method": "ping"}')
    assert isinstance(result, types.JSONRPCError)
    assert (result.id, result.error.code) == (None, types.INVALID_REQUEST)


def test_reply_that_is_not_unicode_becomes_an_error() -> None:
    """A reply that cannot be written as JSON is replaced by an error, not dropped."""
    written: list[bytes] = []
    pipe = MessagePipe(server=None, write_line=written.append)
    pipe._emit(types.JSONRPCResponse(jsonrpc="2.0", id=3, result={"text": "\ud800"}))
    [reply] = [json.loads(chunk) for chunk in written]
    assert (reply["id"], reply["error"]["code"]) == (3, types.INTERNAL_ERROR)


any_text = st.text(st.characters(exclude_categories=()), max_size=10)  # lone surrogates too
json_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    any_text,
    st.lists(st.integers(), max_size=2),
)


@given(
    request_id=json_ids,
    method=st.text(max_size=20),
    extra=st.dictionaries(st.text(max_size=5), json_ids, max_size=3),
)
def test_any_request_line_is_read_or_answered(
    request_id: Any, method: str, extra: dict[str, Any]
) -> None:
    """
    Whatever the id and fields, reading a line never raises, and an error it
    yields can always be written.
    """
    raw = json.dumps({**extra, "jsonrpc": "2.0", "id": request_id, "method": method}).encode()
    result = classify_line(raw)
    if isinstance(result, types.JSONRPCError):
        result.model_dump_json(by_alias=True, exclude_unset=True).encode()


@given(st.binary(max_size=200))
def test_any_bytes_are_read_or_answered(raw: bytes) -> None:
    """Arbitrary bytes never make line reading raise."""
    result = classify_line(raw)
    if isinstance(result, types.JSONRPCError):
        result.model_dump_json(by_alias=True, exclude_unset=True).encode()


@pytest.mark.parametrize(("text", "seconds"), [("0", 0.0), ("2.5", 2.5), ("604800", 604800.0)])
def test_drain_setting(text: str, seconds: float) -> None:
    """GOPHERGEM_STDIO_DRAIN_SECONDS: 0 (the default) waits for every reply; else a limit."""
    assert Config().stdio.drain_seconds == 0
    assert Config.from_env({"GOPHERGEM_STDIO_DRAIN_SECONDS": text}).stdio.drain_seconds == seconds


# --- replies written straight to an idle pipe --------------------------------------


closed_by_test: set[int] = set()


@pytest.fixture
def piped_stdio() -> Iterator[tuple[Any, MemoryReactor, int]]:
    """
    A real C{StandardIO} on two pipes, driven by a memory reactor: the
    standard output's writer, the reactor (whose C{getWriters} says whether
    anything is queued) and the read end of the standard output.
    """
    from twisted.internet.stdio import StandardIO

    closed_by_test.clear()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    reactor = MemoryReactor()
    stdio = StandardIO(Protocol(), stdin=stdin_r, stdout=stdout_w, reactor=reactor)
    os.set_blocking(stdout_r, False)
    try:
        yield stdio, reactor, stdout_r
    finally:
        for fd in (stdin_r, stdin_w, stdout_r, stdout_w):
            if fd not in closed_by_test:
                os.close(fd)


def _drain(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_write_through_sends_at_once_on_an_idle_pipe(
    piped_stdio: tuple[Any, MemoryReactor, int],
) -> None:
    """
    The installed Twisted gets the fast path: a reply leaves without
    waiting for the reactor, and nothing is left queued.
    """
    stdio, reactor, out = piped_stdio
    write = write_through(stdio)
    assert write != stdio.write
    write(b'{"id":1}\n')
    assert _drain(out) == b'{"id":1}\n'
    assert reactor.getWriters() == []


def test_write_through_keeps_order_when_the_pipe_fills(
    piped_stdio: tuple[Any, MemoryReactor, int],
) -> None:
    """
    What a full pipe does not take is queued, and later replies queue
    behind it rather than overtaking it; the reactor then sends the rest
    in order.
    """
    stdio, reactor, out = piped_stdio
    write = write_through(stdio)
    big = bytes(range(256)) * 2048  # 512 KiB: more than a pipe holds
    write(big)
    write(b"second\n")
    assert reactor.getWriters() != []  # the rest waits for the reactor
    received = _drain(out)
    while reactor.getWriters():
        (writer,) = reactor.getWriters()
        writer.doWrite()
        received += _drain(out)
    assert received == big + b"second\n"
    write(b"third\n")  # idle again: straight out
    assert _drain(out) == b"third\n"
    assert reactor.getWriters() == []


def test_write_through_leaves_a_closed_pipe_to_the_transport(
    piped_stdio: tuple[Any, MemoryReactor, int],
) -> None:
    """
    Writing to a pipe whose reader is gone raises nothing here: the bytes
    are queued, and the transport's next write turn meets the error and
    hands the reactor the connection loss, as it always did.
    """
    stdio, reactor, out = piped_stdio
    os.close(out)
    closed_by_test.add(out)
    write = write_through(stdio)
    write(b"nobody reads this\n")
    (writer,) = reactor.getWriters()
    assert isinstance(writer.doWrite(), ConnectionLost)


def test_write_through_falls_back_without_a_twisted_writer() -> None:
    """A transport that is not Twisted's C{StandardIO} is written to as it is."""
    transport = StringTransport()
    assert write_through(transport) == transport.write
