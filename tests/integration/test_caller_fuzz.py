"""
Hostile callers: C{python -m gophergem} over stdio fed malformed lines,
wrong and missing arguments, enormous arguments and batches, unknown tools,
out-of-range offsets, and a secret answer to a status-11 prompt.

Each input must get a clear error (a JSON-RPC error, or a tool result with
C{isError}) and the session must go on: every test ends by asking for
C{tools/list} on the same process.  The secret must never reach standard
error (logging at DEBUG) or a result.

Everything runs on loopback: the Gemini and Gopher servers here are the
harness's hostile servers (C{python -m gophergem.testing.hostile}) on
127.0.0.1; URLs on port 1 are refused by the kernel, never sent anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hostile_process import (
    HostileProcess,
    RawMCP,
    raw_session,
    spawn_hostile,
    structured,
)

pytestmark = pytest.mark.integration

SECRET = "hunter2SECRETxyz"  # letters and digits: the same percent-encoded or not
REFUSED = "gopher://127.0.0.1:1/"  # port 1 on loopback: refused at once
TEN_MB = 10 * 1024 * 1024
ECHO_BUDGET = 64 * 1024  # the most a reply to one bad argument should weigh


@pytest.fixture(scope="module")
def hostile() -> Iterator[dict[str, HostileProcess]]:
    servers = spawn_hostile(
        ("gemini", "sensitive-input"),
        ("gemini", "sensitive-echo"),
        ("gopher", "lf-only"),
    )
    try:
        yield {s.behaviour: s for s in servers}
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawMCP]:
    with raw_session(tmp_path_factory.mktemp("caller-fuzz"), GOPHERGEM_LOG_LEVEL="DEBUG") as s:
        yield s


@pytest.fixture
def session(mcp: RawMCP) -> Iterator[RawMCP]:
    """The shared session, checked to be still answering after each test."""
    yield mcp
    mcp.still_answers()


def is_error(reply: dict[str, Any]) -> bool:
    """A JSON-RPC error, or a tool result flagged isError."""
    if "error" in reply:
        return True
    return bool(reply["result"].get("isError"))


def error_text(reply: dict[str, Any]) -> str:
    if "error" in reply:
        return str(reply["error"].get("message", ""))
    return str(reply["result"]["content"][0]["text"])


# --- lines that are not (valid) JSON-RPC -----------------------------------------------

BAD_LINES = [
    (b"{not json", -32700, None),
    (b"\xff\xfe\x00garbage", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "x": "\xff"}', -32700, None),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"', -32700, None),
    (b"[1, 2]", -32600, None),
    (b"[]", -32600, None),
    (b"[" * 500 + b"]" * 500, -32600, None),
    (b"42", -32600, None),
    (b'"a string"', -32600, None),
    (b"null", -32600, None),
    (b"true", -32600, None),
    (b'{"hello": "world"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 7}', -32600, 7),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1]}', -32600, 8),
    (b'{"jsonrpc": "1.0", "id": 9, "method": "tools/list"}', -32600, 9),
    (b'{"jsonrpc": "2.0", "id": 10, "method": "no/such/method"}', -32601, 10),
    (b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call"}', -32602, 11),
    (b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": 5}}', -32602, 12),
    (
        b'{"jsonrpc": "2.0", "id": "s", "method": "resources/read", "params": {"uri": 5}}',
        -32602,
        "s",
    ),
]


@pytest.mark.parametrize(
    ("line", "code", "request_id"), BAD_LINES, ids=[repr(b[:24]) for b, _, _ in BAD_LINES]
)
def test_bad_line_gets_a_json_rpc_error(
    session: RawMCP, line: bytes, code: int, request_id: Any
) -> None:
    """Every line that is not a usable request gets the matching JSON-RPC error."""
    session.send_line(line)
    reply, _ = session.receive()
    assert (reply["id"], reply["error"]["code"]) == (request_id, code), reply
    assert reply["error"]["message"]


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"   ",
        b'{"jsonrpc": "2.0", "method": "notifications/whatever", "params": 5}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}',
        b'{"jsonrpc": "2.0", "id": 123456, "result": {}}',
        b'{"jsonrpc": "2.0", "id": 123457, "error": {"code": 1, "message": "x"}}',
    ],
)
def test_notifications_and_stray_responses_are_not_answered(session: RawMCP, line: bytes) -> None:
    """Blank lines, notifications (malformed ones too) and stray responses get no reply."""
    session.send_line(line)
    assert session.quiet(0.3)


@pytest.mark.parametrize("request_id", [None, True, 1.5, {"a": 1}, [1]])
def test_request_with_an_unusable_id_is_answered(session: RawMCP, request_id: Any) -> None:
    """A message with an id member is a request: an unusable id gets -32600, id null."""
    session.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    assert not session.quiet(1.0), "no answer at all"
    reply, _ = session.receive()
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply


def test_line_over_the_limit_is_discarded(session: RawMCP) -> None:
    """A 33 MB line is discarded as it streams in and answered with an error (id null)."""
    session.send_line(b'{"jsonrpc": "2.0", "id": 77, "params": "' + b"x" * (33 << 20) + b'"}')
    reply, size = session.receive()
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    assert size < 1024


def test_recursion_bomb_does_not_end_the_session(tmp_path: Path) -> None:
    """A 100 KB line of nested brackets is a parse error, not the end of the process."""
    with raw_session(tmp_path) as fresh:
        fresh.send_line(b"[" * 100_000)
        reply, _ = fresh.receive(timeout=10)
        assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        fresh.still_answers()


# --- tools: wrong, missing and unknown --------------------------------------------------

WRONG_ARGUMENTS = [
    ("gopher_fetch", {"url": 123}, "url"),
    ("gopher_fetch", {"url": None}, "url"),
    ("gopher_fetch", {"url": ["gopher://127.0.0.1:1/"]}, "url"),
    ("gopher_fetch", {"url": {"href": REFUSED}}, "url"),
    ("gopher_fetch", {"url": REFUSED, "offset": "abc"}, "offset"),
    ("gopher_fetch", {"url": REFUSED, "offset": 1.5}, "offset"),
    ("gopher_fetch", {"url": REFUSED, "offset": [0]}, "offset"),
    ("gopher_fetch", {"url": REFUSED, "search": 5}, "search"),
    ("gopher_fetch", {"url": REFUSED, "refresh": {"yes": 1}}, "refresh"),
    ("gemini_fetch", {"url": 1965}, "url"),
    ("gemini_fetch", {"url": "gemini://127.0.0.1:1/", "input": 123}, "input"),
    ("gemini_fetch", {"url": "gemini://127.0.0.1:1/", "input": ["a"]}, "input"),
    ("gopher_batch_fetch", {"urls": REFUSED}, "urls"),
    ("gopher_batch_fetch", {"urls": [1, 2]}, "urls"),
    ("gemini_batch_fetch", {"urls": {"0": "gemini://x/"}}, "urls"),
    ("gemini_trust_list", {"host": ["x"]}, "host"),
    ("gemini_trust_update", {"host": "h", "action": "explode", "fingerprint": "ab"}, "action"),
    ("gemini_trust_update", {"host": "h", "action": "pin", "fingerprint": 5}, "fingerprint"),
    (
        "gemini_trust_update",
        {"host": "h", "action": "pin", "fingerprint": "a", "port": "x"},
        "port",
    ),
    ("gemini_client_cert_list", {"host": 5}, "host"),
    ("gemini_client_cert_update", {"url": 5, "action": "create"}, "url"),
    ("gemini_client_cert_update", {"url": "gemini://h/", "action": "mint"}, "action"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    WRONG_ARGUMENTS,
    ids=[f"{t}-{n}-{i}" for i, (t, _, n) in enumerate(WRONG_ARGUMENTS)],
)
def test_wrong_argument_types(
    session: RawMCP, tool: str, arguments: dict[str, Any], named: str
) -> None:
    """A wrongly typed argument is an error naming that argument; nothing is fetched."""
    reply = session.call(tool, arguments)
    assert is_error(reply), reply
    assert named in error_text(reply), reply


MISSING_ARGUMENTS = [
    ("gopher_fetch", {}),
    ("gopher_fetch", {"search": "x"}),
    ("gemini_fetch", {"input": "x"}),
    ("gopher_batch_fetch", {}),
    ("gemini_batch_fetch", {"refresh": True}),
    ("gemini_trust_update", {"host": "h"}),
    ("gemini_trust_update", {"action": "remove", "fingerprint": "ab"}),
    ("gemini_client_cert_update", {}),
    ("gemini_client_cert_update", {"action": "create"}),
]


@pytest.mark.parametrize(("tool", "arguments"), MISSING_ARGUMENTS)
def test_missing_required_arguments(session: RawMCP, tool: str, arguments: dict[str, Any]) -> None:
    """A missing required argument is an error that says the field is required."""
    reply = session.call(tool, arguments)
    assert is_error(reply), reply
    assert "required" in error_text(reply).lower(), reply


@pytest.mark.parametrize("arguments", [{}, None, "not an object", [1, 2]])
def test_unknown_tool(session: RawMCP, arguments: Any) -> None:
    """
    An unknown tool is a JSON-RPC error (-32602) naming it, whatever
    arguments come with it: a protocol error, not a tool that ran and failed.
    """
    reply = session.call("gopher_delete_everything", arguments)
    assert reply["error"]["code"] == -32602, reply
    text = error_text(reply)
    assert "gopher_delete_everything" in text or "Invalid" in text, reply


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"host": "evil\nhost.example", "action": "pin", "port": 1965}, "host"),
        ({"host": "*", "action": "pin", "port": 1965}, "wildcard"),
        ({"host": "h.example", "action": "pin", "port": 70000}, "port"),
        ({"host": "h.example", "action": "pin", "port": 0}, "port"),
        ({"host": "h.example", "action": "pin", "port": -1}, "port"),
    ],
)
def test_trust_update_refuses_nonsense_and_changes_nothing(
    session: RawMCP, arguments: dict[str, Any], why: str
) -> None:
    """Pinning for a bad host or port is an INVALID_REQUEST, and the pin store is unchanged."""
    before = structured(session.call("gemini_trust_list", {}))["entries"]
    reply = session.call("gemini_trust_update", {**arguments, "fingerprint": "ab" * 32})
    assert is_error(reply), reply
    assert structured(reply)["error"]["code"] == "INVALID_REQUEST", reply
    assert structured(session.call("gemini_trust_list", {}))["entries"] == before


# --- enormous arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        (
            "gemini_fetch",
            {"url": "gemini://127.0.0.1:1/", "input": "a" * TEN_MB},
            "INVALID_REQUEST",
        ),
        # Search terms on a menu URL are dropped (and said so): the fetch goes on.
        ("gopher_fetch", {"url": REFUSED, "search": "a" * TEN_MB}, "CONNECTION_FAILED"),
        # NUL is six bytes in JSON: a 1 MB NUL string is a 6 MB line.
        ("gopher_fetch", {"url": REFUSED, "search": "\x00" * (TEN_MB // 10)}, "INVALID_REQUEST"),
        # A host longer than any host name is refused, not looked up.
        ("gemini_trust_list", {"host": "a" * TEN_MB}, "INVALID_REQUEST"),
    ],
    ids=["gemini-input", "search-on-a-menu", "nul-search-on-a-menu", "trust-list"],
)
def test_ten_megabyte_argument(
    session: RawMCP, tool: str, arguments: dict[str, Any], code: str | None
) -> None:
    """A 10 MB string argument gets a prompt, small answer: never echoed back whole."""
    before = structured(session.call("gemini_trust_list", {}))["entries"]
    reply, size = session.request("tools/call", {"name": tool, "arguments": arguments})
    assert size < ECHO_BUDGET, str(reply)[:500]
    data = structured(reply)
    if code is None:
        assert data["entries"] == []
    else:
        assert is_error(reply) and data["error"]["code"] == code, str(reply)[:500]
    assert structured(session.call("gemini_trust_list", {}))["entries"] == before


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawMCP]:
    """A session of its own, for tests that may leave its stores bloated."""
    with raw_session(tmp_path_factory.mktemp("caller-fuzz-scratch")) as s:
        yield s


def test_ten_megabyte_host_is_not_pinned(scratch: RawMCP) -> None:
    """Pinning a 10 MB host name is refused and the pin store stays as it was."""
    reply, size = scratch.request(
        "tools/call",
        {
            "name": "gemini_trust_update",
            "arguments": {"host": "a" * TEN_MB, "action": "pin", "fingerprint": "ab" * 32},
        },
    )
    assert structured(scratch.call("gemini_trust_list", {}))["entries"] == []
    assert structured(reply)["error"]["code"] == "INVALID_REQUEST"
    assert size < ECHO_BUDGET


def test_ten_megabyte_identity_scope_is_refused(scratch: RawMCP) -> None:
    """Creating an identity for a 10 MB URL is refused and the identity store stays empty."""
    reply, size = scratch.request(
        "tools/call",
        {
            "name": "gemini_client_cert_update",
            "arguments": {"url": "gemini://h.example/" + "a" * TEN_MB, "action": "create"},
        },
    )
    assert structured(scratch.call("gemini_client_cert_list", {}))["entries"] == []
    assert structured(reply)["error"]["code"] == "INVALID_REQUEST"
    assert size < ECHO_BUDGET


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("gemini_fetch", {"url": "gemini://127.0.0.1:1/" + "a" * TEN_MB}),
        ("gopher_fetch", {"url": REFUSED + "0/" + "a" * (TEN_MB // 10)}),
        ("gopher_fetch", {"url": REFUSED + "7/find", "search": "a" * (TEN_MB // 10)}),
    ],
    ids=["gemini-url-10MB", "gopher-selector-1MB", "gopher-search-1MB"],
)
def test_overlong_url_is_not_echoed_whole(
    session: RawMCP, tool: str, arguments: dict[str, Any]
) -> None:
    """An overlong URL, selector or search is refused with a reply of a few kilobytes."""
    reply, size = session.request("tools/call", {"name": tool, "arguments": arguments})
    assert structured(reply)["error"]["code"] == "INVALID_REQUEST"
    assert size < ECHO_BUDGET


@pytest.mark.parametrize("tool", ["gopher_batch_fetch", "gemini_batch_fetch"])
def test_ten_thousand_url_batch(session: RawMCP, tool: str) -> None:
    """A batch of 10,000 URLs is refused as a whole, promptly, without fetching any."""
    scheme = tool.split("_")[0]
    urls = [f"{scheme}://127.0.0.1:1/{n}" for n in range(10_000)]
    reply, size = session.request("tools/call", {"name": tool, "arguments": {"urls": urls}})
    assert reply["result"]["isError"] is True
    data = reply["result"]["structuredContent"]
    assert data["result"] == [] and data["error"]["code"] == "INVALID_REQUEST"
    assert "10000" in data["error"]["message"]
    assert size < ECHO_BUDGET


# --- offsets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "code"),
    [
        (-1, "INVALID_REQUEST"),
        (-(2**63), "INVALID_REQUEST"),
        (3, "INVALID_REQUEST"),  # the menu has three items: 3 is past the end
        (2**63, "INVALID_REQUEST"),
        (10**30, "INVALID_REQUEST"),
    ],
)
def test_out_of_range_offsets(
    session: RawMCP, hostile: dict[str, HostileProcess], offset: int, code: str
) -> None:
    """Negative offsets and offsets past the end are INVALID_REQUEST saying why."""
    reply = session.call("gopher_fetch", {"url": hostile["lf-only"].url(), "offset": offset})
    data = structured(reply)
    assert data["error"]["code"] == code, data
    assert "offset" in data["error"]["message"]


@pytest.mark.parametrize("offset", [b"1e400", b"-1e400", b"NaN", b"Infinity", b"true", b'"3"x'])
def test_non_integer_offsets(session: RawMCP, offset: bytes) -> None:
    """Infinite, not-a-number and boolean offsets are refused; the session goes on."""
    session.send_line(
        b'{"jsonrpc": "2.0", "id": 4242, "method": "tools/call", "params": {"name": '
        b'"gopher_fetch", "arguments": {"url": "'
        + REFUSED.encode()
        + b'", "offset": '
        + offset
        + b"}}}"
    )
    reply, _ = session.receive()
    assert is_error(reply), reply
    assert reply["id"] in (4242, None), reply


# --- secrets ------------------------------------------------------------------------------


def test_sensitive_answer_never_logged_nor_shown(
    session: RawMCP, hostile: dict[str, HostileProcess]
) -> None:
    """
    A status-11 answer goes to the capsule and nowhere else: not the result,
    not stderr at DEBUG, not the cache (asking again re-sends).
    """
    url = hostile["sensitive-input"].url("/login")
    prompt = structured(session.call("gemini_fetch", {"url": url}))
    assert prompt["kind"] == "input" and prompt["sensitive"] is True, prompt
    reply, _ = session.request(
        "tools/call", {"name": "gemini_fetch", "arguments": {"url": url, "input": SECRET}}
    )
    data = structured(reply)
    assert data["kind"] == "gemtext" and data["request_info"]["has_query"] is True, data
    assert SECRET not in json.dumps(reply)
    again = structured(session.call("gemini_fetch", {"url": url, "input": SECRET}))
    assert not again.get("cached")
    assert SECRET not in session.stderr()


def test_echoed_secret_never_logged(session: RawMCP, hostile: dict[str, HostileProcess]) -> None:
    """Even when the capsule echoes the answer back, it is not written to the log."""
    url = hostile["sensitive-echo"].url("/")
    session.call("gemini_fetch", {"url": url})
    session.call("gemini_fetch", {"url": url, "input": SECRET})
    assert SECRET not in session.stderr()


def test_echoed_secret_never_shown(session: RawMCP, hostile: dict[str, HostileProcess]) -> None:
    """A status-11 answer the capsule echoes back does not reach the model."""
    url = hostile["sensitive-echo"].url("/")
    reply = session.call("gemini_fetch", {"url": url, "input": SECRET})
    assert structured(reply)["kind"] == "redirect"
    assert SECRET not in json.dumps(reply)
