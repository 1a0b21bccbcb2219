"""
The stdio process as an MCP client really runs it: the C{gophergem} console
script (and C{twistd -n gophergem}) with stdin and stdout on pipes.

Whatever the client does with the pipes the process must end: at end of
input once every reply owed is written (10,000 pings, or a reply that comes
after EOF), at once when its stdout is closed, and promptly on SIGTERM, also
after a prompt has run on a worker thread or while a fetch is in flight.
Replies given up on are logged and make the console script's exit status
non-zero.

The only peer is a silent Gopher server in this process on 127.0.0.1, which
accepts and answers only when the test says.  Waits are bounded generously;
nothing asserts how fast anything is.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hostile_process import _stop, gophergem_env

from .conftest import LOOPBACK

pytestmark = pytest.mark.integration

DEADLINE = 20.0  # seconds any one step may take before the test fails
BIN = Path(sys.executable).parent
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "stdio-process-test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MENU = b"iHello from loopback\tfake\t(NULL)\t0\r\n.\r\n"


def command(runner: str) -> list[str]:
    """The console script, or the same service under twistd."""
    name = "gophergem" if runner == "script" else "twistd"
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{path} is not installed")
    return [str(path)] if runner == "script" else [str(path), "-n", "--pidfile=", "gophergem"]


class Silent:
    """
    A Gopher server on 127.0.0.1 that accepts, reads the selector and then
    says nothing until L{answer} is called.
    """

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((LOOPBACK, 0))
        self._listener.listen(8)
        self.port = self._listener.getsockname()[1]
        self._accepted: list[socket.socket] = []
        self._ready = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            connection, _ = self._listener.accept()
            connection.settimeout(DEADLINE)
            with contextlib.suppress(OSError):
                connection.recv(4096)
            self._accepted.append(connection)
            self._ready.set()

    def url(self) -> str:
        return f"gopher://{LOOPBACK}:{self.port}/1/slow"

    def wait_for_request(self) -> None:
        assert self._ready.wait(DEADLINE), "gophergem never connected to the silent server"

    def answer(self) -> None:
        for connection in self._accepted:
            connection.sendall(MENU)
            connection.close()

    def close(self) -> None:
        self._listener.close()
        for connection in self._accepted:
            connection.close()


class Process:
    """One stdio gophergem with its stdin and stdout on pipes; stderr to a file."""

    def __init__(self, argv: list[str], env: dict[str, str], stderr: Path) -> None:
        self._stderr_path = stderr
        with open(stderr, "wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                cwd=str(stderr.parent),
                start_new_session=True,
            )
        self._buffer = b""

    def send(self, *messages: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The next message on stdout, waiting at most L{DEADLINE}."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], DEADLINE)
            assert ready, f"no reply within {DEADLINE}s; stderr:\n{self.stderr()}"
            chunk = os.read(fd, 65536)
            assert chunk, f"stdout ended; stderr:\n{self.stderr()}"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def initialize(self) -> None:
        self.send(INIT, INITIALIZED)
        assert self.receive()["id"] == 0

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()

    def close_stdout(self) -> None:
        """Close our end of the process's stdout: its next write gets a broken pipe."""
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def rest(self) -> list[dict[str, Any]]:
        """Every message still to come on stdout, up to its end."""
        assert self.proc.stdout is not None
        data = self._buffer + self.proc.stdout.read()
        self._buffer = b""
        return [json.loads(line) for line in data.splitlines()]

    def exit_status(self) -> int:
        """Wait (at most L{DEADLINE}) for the process to end; fail if it does not."""
        try:
            return self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            pytest.fail(f"gophergem still running after {DEADLINE}s; stderr:\n{self.stderr()}")

    def stderr(self) -> str:
        return self._stderr_path.read_text(errors="replace")[-5000:]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    started: list[Process] = []

    def start(runner: str = "script", **settings: str) -> Process:
        env = gophergem_env(tmp_path, GOPHER_TIMEOUT_SECONDS="600", **settings)
        process = Process(command(runner), env, tmp_path / f"stderr-{len(started)}.log")
        started.append(process)
        return process

    yield start
    for process in started:
        _stop(process.proc)


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


def fetch(request_id: int, url: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "gopher_fetch", "arguments": {"url": url}},
    }


def test_ten_thousand_pings_then_eof(tmp_path: Path) -> None:
    """10,000 pings sent before end of input get 10,000 replies, and exit status 0."""
    pings = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode() + b"\n"
        for i in range(1, 10_001)
    )
    opening = json.dumps(INIT).encode() + b"\n" + json.dumps(INITIALIZED).encode() + b"\n"
    env = gophergem_env(tmp_path, GOPHERGEM_LOG_LEVEL="WARN")
    done = subprocess.run(
        command("script"), input=opening + pings, capture_output=True, env=env, timeout=120
    )
    ids = [json.loads(line)["id"] for line in done.stdout.splitlines()]
    assert sorted(ids) == list(range(10_001)), done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("runner", ["script", "twistd"])
def test_reply_owed_at_eof_is_written(runner: str, spawn: Any, silent: Silent) -> None:
    """A fetch still in flight when stdin closes is answered, with its result, before exit."""
    process = spawn(runner)
    process.initialize()
    process.send(fetch(1, silent.url()))
    silent.wait_for_request()
    process.close_stdin()
    silent.answer()
    [reply] = process.rest()
    assert reply["id"] == 1
    assert reply["result"]["structuredContent"]["kind"] == "menu", reply
    assert process.exit_status() == 0


@pytest.mark.parametrize("runner", ["script", "twistd"])
def test_stdout_closed_then_stdin_closed(runner: str, spawn: Any) -> None:
    """A client that closes our stdout, sends a request and closes stdin: the process ends."""
    process = spawn(runner)
    process.initialize()
    process.close_stdout()
    with contextlib.suppress(BrokenPipeError):
        process.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    process.close_stdin()
    process.exit_status()


def test_stdout_closed_with_a_fetch_in_flight(spawn: Any, silent: Silent) -> None:
    """
    Stdout closing while a fetch is in flight ends the process even though
    stdin stays open; the lost reply is logged and the exit status is 1.
    """
    process = spawn()
    process.initialize()
    process.send(fetch(1, silent.url()))
    silent.wait_for_request()
    process.close_stdout()
    assert process.exit_status() == 1
    assert "standard output closed: gave up 1 request" in process.stderr()


@pytest.mark.parametrize("runner", ["script", "twistd"])
def test_sigterm_after_a_prompt(runner: str, spawn: Any) -> None:
    """
    SIGTERM ends the process after prompts and the policy resource have run
    (on a worker thread that used to keep the process alive forever).
    """
    process = spawn(runner)
    process.initialize()
    process.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "prompts/get",
            "params": {"name": "explore_capsule", "arguments": {"url": "gemini://example.org/"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "resources/read",
            "params": {"uri": "gophergem://policy"},
        },
    )
    assert {process.receive()["id"], process.receive()["id"]} == {1, 2}
    process.proc.send_signal(signal.SIGTERM)
    status = process.exit_status()
    assert status in ((0,) if runner == "script" else (0, -signal.SIGTERM))


@pytest.mark.parametrize("runner", ["script", "twistd"])
def test_sigterm_with_a_fetch_in_flight(runner: str, spawn: Any, silent: Silent) -> None:
    """
    SIGTERM during a fetch that will not finish: the process ends after a
    short grace, answers the call with an error and logs the loss.
    """
    process = spawn(runner)
    process.initialize()
    process.send(fetch(1, silent.url()))
    silent.wait_for_request()
    process.proc.send_signal(signal.SIGTERM)
    status = process.exit_status()
    [reply] = process.rest()
    assert reply["id"] == 1 and "shutting down" in reply["error"]["message"]
    assert "shutting down: gave up 1 request" in process.stderr()
    if runner == "script":
        assert status == 1


def test_drain_limit_setting(spawn: Any, silent: Silent) -> None:
    """With GOPHERGEM_STDIO_DRAIN_SECONDS set, a reply still owed then is given up and counted."""
    process = spawn(GOPHERGEM_STDIO_DRAIN_SECONDS="0.5")
    process.initialize()
    process.send(fetch(1, silent.url()))
    silent.wait_for_request()
    process.close_stdin()
    assert process.exit_status() == 1
    [reply] = process.rest()
    assert reply["id"] == 1 and "GOPHERGEM_STDIO_DRAIN_SECONDS" in reply["error"]["message"]
    assert "gave up 1 request" in process.stderr()
