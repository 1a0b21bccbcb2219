"""
Shared helpers for the integration tests against hostile servers in
processes of their own: spawning them, a raw MCP session on stdio.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from gophergem.mcp.schemas import OUTPUT_MODELS
from tests.integration.conftest import LOOPBACK, REPO_ROOT, server_command

STARTUP_DEADLINE = 20.0  # seconds for a spawned process to say it is ready

CALL_DEADLINE = 60.0  # seconds one MCP request may take


@dataclass
class HostileProcess:
    """A C{python -m gophergem.testing.hostile} process listening on 127.0.0.1."""

    protocol: str
    behaviour: str
    proc: subprocess.Popen[bytes]
    port: int = 0

    def url(self, path: str = "/") -> str:
        return f"{self.protocol}://{LOOPBACK}:{self.port}{path}"

    def stop(self) -> None:
        _stop(self.proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate one process we started (its own process group), then kill what is left."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + existing if existing else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def spawn_hostile(*specs: tuple[str, str]) -> list[HostileProcess]:
    """
    Start one hostile server per C{(protocol, behaviour)}, all at once, and
    wait for each to print its port.
    """
    started = []
    for protocol, behaviour in specs:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gophergem.testing.hostile",
                "--protocol",
                protocol,
                "--behaviour",
                behaviour,
                "--interface",
                LOOPBACK,
                "--port",
                "0",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_python_env(),
            cwd=str(REPO_ROOT),
            start_new_session=True,
        )
        started.append(HostileProcess(protocol, behaviour, proc))
    deadline = time.monotonic() + STARTUP_DEADLINE
    try:
        for server in started:
            assert server.proc.stdout is not None
            ready, _, _ = select.select([server.proc.stdout], [], [], deadline - time.monotonic())
            line = server.proc.stdout.readline() if ready else b""
            if not line.strip().isdigit():
                raise RuntimeError(f"{server.behaviour} did not print its port: {line!r}")
            server.port = int(line)
    except BaseException:
        for server in started:
            server.stop()
        raise
    return started


def gophergem_env(store: Path, **settings: str) -> dict[str, str]:
    """
    The environment for a spawned gophergem against loopback peers: local
    hosts allowed, no pacing, no robots.txt, stores under C{store}.
    """
    env = _python_env()
    env.update(
        GOPHER_ALLOW_LOCAL_HOSTS="true",
        GEMINI_ALLOW_LOCAL_HOSTS="true",
        GOPHER_REQUESTS_PER_MINUTE="0",
        GEMINI_REQUESTS_PER_MINUTE="0",
        GOPHER_RESPECT_ROBOTS_TXT="false",
        GEMINI_RESPECT_ROBOTS_TXT="false",
        GEMINI_TOFU_STORAGE_PATH=str(store / "tofu.json"),
        GEMINI_CLIENT_CERTS_STORAGE_PATH=str(store / "identities"),
    )
    env.update(settings)
    return env


@dataclass
class RawMCP:
    """
    C{python -m gophergem} driven with raw JSON-RPC lines: whatever a caller
    sends, and every line it writes back checked to be one JSON-RPC message.

    @ivar stderr_path: Where the process's standard error goes.
    """

    env: dict[str, str]
    stderr_path: Path
    proc: subprocess.Popen[bytes] = field(init=False)
    _lines: queue.Queue[bytes | None] = field(init=False, default_factory=queue.Queue)
    _held: list[bytes | None] = field(init=False, default_factory=list)
    _next_id: int = field(init=False, default=1000)
    _stderr: IO[bytes] = field(init=False)

    def __post_init__(self) -> None:
        command, args = server_command()
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=self.env,
            cwd=str(REPO_ROOT),
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def send_line(self, raw: bytes) -> None:
        """Write C{raw} and a newline, as they are."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_line(json.dumps(message).encode())

    def receive(self, timeout: float = CALL_DEADLINE) -> tuple[dict[str, Any], int]:
        """The next message written, and the length of its line; fails on EOF or non-JSON."""
        try:
            line = self._held.pop() if self._held else self._lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no message within {timeout}s; stderr:\n{self.stderr()[-5000:]}")
        if line is None:
            pytest.fail(f"gophergem closed its output; stderr:\n{self.stderr()[-5000:]}")
        try:
            message = json.loads(line)
        except ValueError:
            pytest.fail(f"stdout line is not JSON: {line[:300]!r}")
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line[:300]
        return message, len(line)

    def quiet(self, seconds: float = 0.5) -> bool:
        """Whether nothing is written for C{seconds}."""
        if self._held:
            return False
        try:
            self._held.append(self._lines.get(timeout=seconds))
        except queue.Empty:
            return True
        return False

    def request(
        self, method: str, params: Any = None, timeout: float = CALL_DEADLINE
    ) -> tuple[dict[str, Any], int]:
        """Send a request and return its response (and its line length)."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            reply, size = self.receive(timeout)
            if reply.get("id") == self._next_id and "method" not in reply:
                return reply, size

    def call(self, name: str, arguments: Any, timeout: float = CALL_DEADLINE) -> dict[str, Any]:
        """Call a tool; return the response (a result, or a JSON-RPC error)."""
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout)[0]

    def initialize(self) -> dict[str, Any]:
        self._next_id += 1
        self.send(
            {
                "jsonrpc": "2.0",
                "id": self._next_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "gophergem-hostile-tests", "version": "0"},
                },
            }
        )
        reply, _ = self.receive(STARTUP_DEADLINE + CALL_DEADLINE)
        assert reply.get("id") == self._next_id and "result" in reply, reply
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def still_answers(self) -> None:
        """The session goes on: tools/list still answers with every tool."""
        reply, _ = self.request("tools/list")
        assert {tool["name"] for tool in reply["result"]["tools"]} == set(OUTPUT_MODELS), reply
        assert self.proc.poll() is None

    def close(self) -> int | None:
        """End of input; wait for a clean exit (kill after a while). Returns the exit code."""
        code = None
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    self.proc.stdin.close()
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _stop(self.proc)
            self._stderr.close()
        return code


@contextlib.contextmanager
def raw_session(store: Path, **settings: str) -> Iterator[RawMCP]:
    """An initialized L{RawMCP}, closed (and its exit checked) afterwards."""
    store.mkdir(parents=True, exist_ok=True)
    session = RawMCP(gophergem_env(store, **settings), store / "stderr.log")
    try:
        session.initialize()
        yield session
    except BaseException:
        session.close()
        raise
    code = session.close()
    assert code == 0, f"gophergem exited with {code}; stderr:\n{session.stderr()[-5000:]}"


def structured(reply: dict[str, Any]) -> dict[str, Any]:
    """The structured content of a tool result, checked against its text block."""
    result = reply["result"]
    data = result["structuredContent"]
    from_text = json.loads(result["content"][0]["text"])
    assert from_text.get("kind") == data.get("kind"), (data, from_text)
    return data  # type: ignore[no-any-return]
