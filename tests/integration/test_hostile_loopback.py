"""
Hostile servers on real loopback sockets, fetched through a spawned
C{python -m gophergem} speaking MCP over stdio.

The memory tests (C{tests/test_hostile.py}) cover every behaviour on a fake
clock; these show the same defences hold with real sockets, real time and a
real process: a trickle ends at C{*_TIMEOUT_SECONDS}, a flood is cut at
C{*_MAX_RESPONSE_SIZE}, a body closed without TLS close_notify, cut by a
reset or held open past the deadline is returned and flagged incomplete.

Each hostile server runs as C{python -m gophergem.testing.hostile} (its own
process, bound to 127.0.0.1 only).  This module also holds the small
helpers the caller-fuzzing tests share: L{spawn_hostile}, L{RawMCP} and
L{gophergem_env}.
"""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hostile_process import (
    STARTUP_DEADLINE,
    HostileProcess,
    RawMCP,
    _python_env,
    raw_session,
    spawn_hostile,
    structured,
)

from .conftest import LOOPBACK, REPO_ROOT

pytestmark = pytest.mark.integration

TIMEOUT_SECONDS = 2  # the fetch deadline of the spawned gophergem
MAX_SIZE = 64 * 1024  # its size cap, both protocols


# --- hostile servers in subprocesses ------------------------------------------------


# --- gophergem over raw stdio ---------------------------------------------------------


# --- the tests ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile() -> Iterator[dict[tuple[str, str], HostileProcess]]:
    servers = spawn_hostile(
        ("gopher", "trickle"),
        ("gopher", "send-forever"),
        ("gopher", "reset-mid-menu"),
        ("gopher", "hold-mid-answer"),
        ("gemini", "trickle"),
        ("gemini", "never-close"),
        ("gemini", "send-forever"),
        ("gemini", "no-close-notify"),
        ("gemini", "tls-alert"),
    )
    try:
        yield {(s.protocol, s.behaviour): s for s in servers}
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawMCP]:
    with raw_session(
        tmp_path_factory.mktemp("hostile-loopback"),
        GOPHER_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS),
        GEMINI_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS),
        GOPHER_MAX_RESPONSE_SIZE=str(MAX_SIZE),
        GEMINI_MAX_RESPONSE_SIZE=str(MAX_SIZE),
    ) as session:
        yield session
        session.still_answers()


def _fetch(mcp: RawMCP, server: HostileProcess, path: str = "/") -> dict[str, Any]:
    return structured(mcp.call(f"{server.protocol}_fetch", {"url": server.url(path)}))


@pytest.mark.parametrize("protocol", ["gopher", "gemini"])
def test_trickle_is_cut_at_the_deadline(
    mcp: RawMCP, hostile: dict[tuple[str, str], HostileProcess], protocol: str
) -> None:
    """
    A server sending a byte a second is cut off at *_TIMEOUT_SECONDS: a
    Gopher menu already under way comes back as what arrived, marked
    incomplete (deadline); a Gemini header still arriving is TIMEOUT.
    """
    data = _fetch(mcp, hostile[(protocol, "trickle")])
    if protocol == "gopher":
        assert data["kind"] == "menu", data
        assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    else:
        assert data["kind"] == "error" and data["error"]["code"] == "TIMEOUT", data


@pytest.mark.parametrize(
    ("protocol", "behaviour", "path", "kind"),
    [
        ("gopher", "hold-mid-answer", "/", "menu"),
        ("gopher", "hold-mid-answer", "/0/text", "text"),
        ("gemini", "never-close", "/", "gemtext"),
    ],
)
def test_send_then_hold_returns_what_arrived(
    mcp: RawMCP,
    hostile: dict[tuple[str, str], HostileProcess],
    protocol: str,
    behaviour: str,
    path: str,
    kind: str,
) -> None:
    """
    A server that sends (part of) an answer and holds the connection: at
    *_TIMEOUT_SECONDS what arrived comes back as its kind, marked incomplete
    (deadline), never TIMEOUT.
    """
    data = _fetch(mcp, hostile[(protocol, behaviour)], path)
    assert data["kind"] == kind, data
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")


def test_gopher_send_forever_cut_at_cap(
    mcp: RawMCP, hostile: dict[tuple[str, str], HostileProcess]
) -> None:
    """An endless Gopher body is cut at GOPHER_MAX_RESPONSE_SIZE and returned as a first part."""
    data = _fetch(mcp, hostile[("gopher", "send-forever")], "/0/text")
    assert data["kind"] == "text", data
    assert data["bytes"] == MAX_SIZE and data["truncated"] is True
    assert data.get("size_capped") is True


def test_gemini_send_forever_cut_at_cap(
    mcp: RawMCP, hostile: dict[tuple[str, str], HostileProcess]
) -> None:
    """An endless Gemini body is cut at GEMINI_MAX_RESPONSE_SIZE and returned as a first part."""
    data = _fetch(mcp, hostile[("gemini", "send-forever")])
    assert data["kind"] == "success", data
    assert data["size"] == MAX_SIZE and data["truncated"] is True
    assert not data.get("incomplete")


def test_gemini_no_close_notify_is_incomplete(
    mcp: RawMCP, hostile: dict[tuple[str, str], HostileProcess]
) -> None:
    """A body ended by a bare TCP close (no TLS close_notify) is returned flagged incomplete."""
    data = _fetch(mcp, hostile[("gemini", "no-close-notify")])
    assert data["kind"] == "gemtext", data
    assert data["incomplete"] is True
    assert [line.get("text") for line in data["document"]["lines"]][:1] == ["The end?"]


def test_gemini_tls_alert(mcp: RawMCP, hostile: dict[tuple[str, str], HostileProcess]) -> None:
    """A fatal alert in answer to the ClientHello is TLS_ERROR, and nothing is pinned."""
    data = _fetch(mcp, hostile[("gemini", "tls-alert")])
    assert data["error"]["code"] == "TLS_ERROR", data
    pins = structured(mcp.call("gemini_trust_list", {"host": LOOPBACK}))["entries"]
    port = hostile[("gemini", "tls-alert")].port
    assert [p for p in pins if p["port"] == port] == []


def test_gopher_reset_mid_menu(mcp: RawMCP, hostile: dict[tuple[str, str], HostileProcess]) -> None:
    """
    A menu cut by a TCP reset keeps the lines that arrived, marked incomplete
    (connection_reset), and the session goes on.
    """
    data = _fetch(mcp, hostile[("gopher", "reset-mid-menu")])
    assert data["kind"] == "menu", data
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "connection_reset")
    assert [item["title"] for item in data["items"]][:3] == [
        "iPlain info line",
        "A text",
        "A menu",
    ]


def test_hostile_command_line_serves_loopback_only(tmp_path: Path) -> None:
    """The harness's command line refuses a non-loopback interface before binding anything."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gophergem.testing.hostile",
            "--protocol",
            "gopher",
            "--behaviour",
            "silent",
            "--interface",
            "0.0.0.0",
        ],
        capture_output=True,
        env=_python_env(),
        cwd=str(REPO_ROOT),
        timeout=STARTUP_DEADLINE,
    )
    assert result.returncode == 2 and b"loopback" in result.stderr
    assert result.stdout == b""


@pytest.fixture
def blackhole() -> Iterator[int]:
    """
    A loopback port whose accept queue is full and never drained: the kernel
    drops further SYNs, so a connection attempt neither succeeds nor fails
    (what a firewalled host does).
    """
    resolved = {info[4][0] for info in socket.getaddrinfo("localhost", 1, type=socket.SOCK_STREAM)}
    if not resolved <= {"127.0.0.1", "::1"}:
        pytest.skip(f"localhost resolves beyond loopback here: {sorted(resolved)}")
    listener = socket.socket()
    listener.bind((LOOPBACK, 0))
    listener.listen(0)
    port = int(listener.getsockname()[1])
    fillers = []
    for _ in range(2):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect((LOOPBACK, port))
        fillers.append(filler)
    # The first filler's handshake completes into the backlog (no pause:
    # wait until the socket says so); the second one's SYN is dropped.
    select.select([], fillers[:1], [], STARTUP_DEADLINE)
    try:
        yield port
    finally:
        for sock in [*fillers, listener]:
            sock.close()


@pytest.mark.parametrize("protocol", ["gopher", "gemini"])
def test_connect_to_a_blackhole_times_out(mcp: RawMCP, blackhole: int, protocol: str) -> None:
    """
    A host that drops SYNs ends in TIMEOUT at *_TIMEOUT_SECONDS, not an internal
    error.  (The URL names localhost, which must resolve to loopback only.)
    """
    reply = mcp.call(f"{protocol}_fetch", {"url": f"{protocol}://localhost:{blackhole}/"})
    data = structured(reply)
    assert data["error"]["code"] == "TIMEOUT", data
