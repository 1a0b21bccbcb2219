"""
Tests for L{gophergem.mcp.early} and L{gophergem.mcp.prebuilt}: the answers
served before the SDK has loaded are the SDK's own, byte for byte, for
every supported protocol version; the responder answers only what it knows
and passes everything on; the stdio transport takes over without answering
anything twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from twisted.logger import LogLevel, capturedLogs

from gophergem.config import Config
from gophergem.mcp import early, prebuilt
from gophergem.mcp.early import EarlyResponder, load_answers
from gophergem.mcp.stdio import MessagePipe

VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
LATEST = HANDSHAKE_PROTOCOL_VERSIONS[-1]
MODERN = MODERN_PROTOCOL_VERSIONS[-1]


def initialize(id_: Any = 1, version: str = LATEST, **extra: Any) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
        **extra,
    }
    return {"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def request(id_: Any, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params:
        message["params"] = params
    return message


def modern(id_: Any, method: str, version: str = MODERN) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    }
    return request(id_, method, _meta=meta)


def encode(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


# --- the recorded answers are the SDK's ----------------------------------------


def test_recorded_answers_are_the_sdks() -> None:
    """
    C{ready_answers.json} holds what the SDK answers now, for every protocol
    version it supports (run C{python -m gophergem.mcp.prebuilt} when this
    fails after changing a tool, a prompt, a resource or the SDK).
    """
    recorded = json.loads((prebuilt.HERE / early.ANSWERS_FILE).read_text(encoding="utf-8"))
    assert recorded == prebuilt.ready_answers()


def test_every_supported_version_is_recorded() -> None:
    answers = load_answers()
    assert answers is not None
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        assert f"initialize {version}" in answers
        assert f"tools/list {version}" in answers
        assert json.loads(answers[f"initialize {version}"])["protocolVersion"] == version
    for version in MODERN_PROTOCOL_VERSIONS:
        assert f"server/discover {version}" in answers
        assert f"tools/list {version}" in answers


def test_answers_do_not_depend_on_the_configuration() -> None:
    """The console script's settings change no recorded answer (only what tools do)."""
    config = Config.from_mapping(
        {
            "GOPHER_MAX_RESPONSE_SIZE": "2048",
            "GEMINI_TOFU_ENABLED": "false",
            "GEMINI_CLIENT_CERTS_ENABLED": "false",
            "GOPHER_ALLOW_LOCAL_HOSTS": "true",
            "GEMINI_CACHE_ENABLED": "false",
        }
    )
    lines = [
        initialize(1),
        INITIALIZED,
        *(request(n, m) for n, m in enumerate(early.LIST_METHODS, 2)),
    ]
    assert prebuilt.record_session(lines, config) == prebuilt.record_session(lines)


def test_not_loaded_for_other_versions() -> None:
    """Recorded with other versions of the SDK or gophergem: nothing is answered early."""
    assert load_answers(lambda name, version: name != "mcp") is None
    assert load_answers(lambda name, version: True) is not None


@pytest.mark.parametrize("id_", [7, "abc-1", 0, 2**40])
def test_reply_bytes_equal_the_sdks(id_: Any) -> None:
    """The responder's lines are byte for byte the SDK's, for integer and string ids."""
    messages = [initialize(id_), INITIALIZED, request("t", "tools/list")]
    sdk = prebuilt.record_session(messages)
    written, handover = respond(encode(*messages))
    assert written == [line + b"\n" for line in sdk]
    assert handover.answered == {id_: sdk[0], "t": sdk[1]}


# --- the responder -------------------------------------------------------------


def respond(data: bytes, answers: dict[str, str] | None = None) -> tuple[list[bytes], Any]:
    """Run a responder on pipes: C{data} then end of input; return its lines and hand-over."""
    stdin_r, stdin_w = os.pipe()
    table = load_answers() if answers is None else answers
    with tempfile.TemporaryFile() as out:
        responder = EarlyResponder(table, out.fileno(), stdin=stdin_r)
        responder.start()
        os.write(stdin_w, data)
        os.close(stdin_w)
        responder._thread.join(30)  # it stops at end of input
        assert not responder._thread.is_alive()
        handover = responder.hand_over()
        out.seek(0)
        output = out.read()
    os.close(stdin_r)
    return output.splitlines(keepends=True), handover


def ids(lines: list[bytes]) -> list[Any]:
    return [json.loads(line)["id"] for line in lines]


def test_answers_set_up_and_lists_in_lifecycle_order() -> None:
    data = encode(
        initialize(1),
        request(2, "tools/list"),  # before notifications/initialized: the SDK's
        INITIALIZED,
        request(3, "tools/list"),
        request(4, "prompts/list"),
        request(5, "resources/list"),
        request(6, "resources/templates/list"),
        request(7, "ping"),
        request(8, "tools/call", name="gopher_fetch", arguments={"url": "gopher://x/"}),
    )
    written, handover = respond(data)
    assert ids(written) == [1, 3, 4, 5, 6]
    assert handover.data == data
    assert sorted(handover.answered) == [1, 3, 4, 5, 6]


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_each_handshake_version(version: str) -> None:
    written, _ = respond(encode(initialize(1, version), INITIALIZED, request(2, "tools/list")))
    assert ids(written) == [1, 2]
    assert json.loads(written[0])["result"]["protocolVersion"] == version


def test_modern_era() -> None:
    data = encode(modern(1, "server/discover"), modern(2, "tools/list"), modern(3, "ping"))
    written, handover = respond(data)
    assert ids(written) == [1, 2]
    assert handover.data == data


@pytest.mark.parametrize(
    ("messages", "why"),
    [
        ([initialize(1, "1999-01-01")], "without a recorded answer"),
        ([initialize(1), initialize(2)], "after the session was set up"),
        ([initialize(1), request(1, "tools/list")], "used twice"),
    ],
)
def test_odd_sessions_silence_it(messages: list[dict[str, Any]], why: str) -> None:
    data = encode(*messages, INITIALIZED, request(9, "tools/list"))
    written, handover = respond(data)
    assert 9 not in ids(written)
    assert any(why in note for note in handover.notes)
    assert handover.data == data


def test_a_line_that_is_not_json_silences_it() -> None:
    data = b"{oops\n" + encode(initialize(1))
    written, handover = respond(data)
    assert written == []
    assert handover.data == data


@pytest.mark.parametrize(
    "message",
    [
        initialize("ünïcode"),
        initialize(True),
        initialize(None),
        initialize(1.5),
        initialize(1, extra="x"),
        {**initialize(1), "params": {"protocolVersion": LATEST}},
        {**initialize(1), "jsonrpc": "1.0"},
        {**modern(1, "server/discover"), "params": {"_meta": {}}},
        {**modern(1, "server/discover"), "params": {"_meta": {}, "cursor": "x"}},
    ],
)
def test_unfamiliar_shapes_are_left_to_the_sdk(message: dict[str, Any]) -> None:
    written, handover = respond(encode(message))
    assert written == []
    assert handover.answered == {}


def test_list_with_parameters_is_left_to_the_sdk() -> None:
    written, _ = respond(encode(initialize(1), INITIALIZED, request(2, "tools/list", cursor="c")))
    assert ids(written) == [1]


def test_without_answers_it_only_listens() -> None:
    data = encode(initialize(1), INITIALIZED, request(2, "tools/list"))
    responder = EarlyResponder(None, -1)
    responder.received(data)
    handover = responder.hand_over()
    assert handover.answered == {}
    assert handover.data == data
    assert handover.notes


def test_partial_lines_are_passed_on() -> None:
    responder = EarlyResponder(load_answers(), -1)
    responder.received(b'{"jsonrpc": "2.0", "id": 1, "meth')
    handover = responder.hand_over()
    assert handover.data == b'{"jsonrpc": "2.0", "id": 1, "meth'
    assert handover.answered == {}


@given(st.lists(st.binary(max_size=200), max_size=8))
def test_no_input_makes_it_raise(chunks: list[bytes]) -> None:
    """Arbitrary bytes are buffered and passed on; nothing is answered from garbage."""
    responder = EarlyResponder(load_answers(), -1)
    for chunk in chunks:
        responder.received(chunk)
    handover = responder.hand_over()
    assert handover.data == b"".join(chunks)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    ),
    st.sampled_from(["initialize", "tools/list", "server/discover", "ping"]),
)
def test_no_message_makes_it_raise(params: Any, method: str) -> None:
    responder = EarlyResponder({}, -1)
    responder.received(encode({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    assert responder.hand_over().answered == {}


# --- the hand-over ------------------------------------------------------------------


def replay(data: bytes, answered: dict[Any, bytes]) -> list[bytes]:
    """Replay C{data} through the SDK as the stdio transport does after a hand-over."""
    written: list[bytes] = []

    async def body() -> None:
        pipe = MessagePipe(prebuilt._server(), written.append)
        pipe.answered_early(answered)
        done = pipe.start()
        for line in data.splitlines():
            pipe.feed(line)
        pipe.eof()
        await done.asFuture(asyncio.get_running_loop())

    asyncio.run(body())
    return written


def test_take_over_answers_each_request_once() -> None:
    data = encode(initialize(1), INITIALIZED, request(2, "tools/list"), request(3, "ping"))
    early, handover = respond(data)
    with capturedLogs() as events:
        late = replay(handover.data, handover.answered)
    assert ids(early) == [1, 2]
    assert ids(late) == [3]
    assert not [e for e in events if e["log_level"] >= LogLevel.warn]


def test_a_differing_early_answer_is_logged() -> None:
    data = encode(initialize(1), INITIALIZED, request(2, "tools/list"))
    with capturedLogs() as events:
        late = replay(data, {2: b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}'})
    assert ids(late) == [1]  # the SDK's initialize answer; tools/list was answered already
    errors = [e for e in events if e["log_level"] == LogLevel.error]
    assert len(errors) == 1
    assert "differs from the SDK's" in errors[0]["log_format"]


def test_console_script_answers_each_request_once(tmp_path: Any) -> None:
    """The real process: early answers, then the SDK, and no request answered twice."""
    data = encode(
        initialize(1),
        INITIALIZED,
        request(2, "tools/list"),
        request(3, "prompts/list"),
        request(4, "ping"),
        request(5, "resources/read", uri="gophergem://policy"),
    )
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path),
        "GOPHERGEM_LOG_LEVEL": "INFO",
    }
    done = subprocess.run(
        [sys.executable, "-m", "gophergem"],
        input=data,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(ids(done.stdout.splitlines())) == [1, 2, 3, 4, 5]
    assert b"differs" not in done.stderr
