"""
A raw stdio MCP client for the benchmark: JSON lines over a child's pipes.

It does what a client does on the wire and nothing else (no SDK client, no
schema check), so what it times is the server: spawn to the C{initialize}
answer, to the C{tools/list} answer, to the first tool result, and the cost
of one cached call.  It also reads the child's C{VmRSS}/C{VmHWM} from
C{/proc}.  C{bench_gopher.py} uses it for gophergem against the bare-SDK
floor (C{floor_server.py}); C{compare_reference.py} for gophergem against
the reference server.

Only the standard library; nothing here opens a socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

PROTOCOL_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "gophergem-bench", "version": "1"}
TIMEOUT = 60.0
SETTLE = 0.5  # seconds between the first result and the idle-memory reading


class RawStdioError(RuntimeError):
    """The child died, answered with an error, or did not answer in time."""


def vm_kib(pid: int) -> dict[str, int]:
    """C{VmHWM} and C{VmRSS} of C{pid}, in KiB, from C{/proc/PID/status}."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
    if len(out) != 2:
        raise RawStdioError(f"/proc/{pid}/status has no VmHWM/VmRSS")
    return out


class RawStdioSession:
    """
    One child speaking MCP over stdio; requests are answered in order.

    C{t0} is the C{perf_counter} just before the spawn.
    """

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], cwd: str | None, errlog: IO[Any]
    ) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
            cwd=cwd,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        self._buf = b""
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict[str, Any]) -> None:
        self._in.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self._in.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RawStdioError(f"no answer from pid {self.pid} in time")
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                chunk = os.read(self._fd, 1 << 20)
                if not chunk:
                    raise RawStdioError(f"pid {self.pid} closed its stdout")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        """Send one request; return its C{result}, answering server requests on the way."""
        self._next_id += 1
        want = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": want, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline)
            if not line.strip():
                continue
            got = json.loads(line)
            if "method" in got:
                if "id" in got:  # a server request (ping, roots/list): an empty answer
                    self.send({"jsonrpc": "2.0", "id": got["id"], "result": {}})
                continue
            if got.get("id") != want:
                raise RawStdioError(f"answer to id {got.get('id')!r} while waiting for {want}")
            if "error" in got:
                raise RawStdioError(f"{method}: {got['error']}")
            result: dict[str, Any] = got["result"]
            return result

    def initialize(self) -> dict[str, Any]:
        result = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            },
        )
        self.notify("notifications/initialized")
        return result

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            text = "".join(c.get("text", "") for c in result.get("content", []))
            raise RawStdioError(f"{name} returned isError: {text[:300]}")
        return result

    def close(self) -> None:
        """Close stdin (EOF ends a stdio server), then make sure the child is gone."""
        with contextlib.suppress(OSError):
            self._in.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> RawStdioSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Command:
    """How to spawn one server: argv, environment, working directory."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.argv, self.env, self.cwd = list(argv), env, cwd

    def spawn(self, errlog: IO[Any]) -> RawStdioSession:
        return RawStdioSession(self.argv, self.env, self.cwd, errlog)


def startup_sample(
    command: Command,
    errlog: IO[Any],
    tool: str,
    arguments: dict[str, Any],
    check: Callable[[dict[str, Any]], None] | None = None,
    settle: float = SETTLE,
) -> dict[str, float]:
    """
    One spawn, timed as a client sees it: seconds from spawn to the
    C{initialize} answer, to the C{tools/list} answer (sent right after
    C{notifications/initialized}), to the first tool result (sent right
    after C{tools/list}); then, C{settle} seconds later, C{VmRSS} and
    C{VmHWM} in KiB.
    """
    with command.spawn(errlog) as s:
        s.initialize()
        t_init = time.perf_counter() - s.t0
        s.request("tools/list")
        t_list = time.perf_counter() - s.t0
        result = s.call_tool(tool, arguments)
        t_first = time.perf_counter() - s.t0
        if check is not None:
            check(result)
        time.sleep(settle)
        vm = vm_kib(s.pid)
    return {
        "init": t_init,
        "list": t_list,
        "first": t_first,
        "rss": vm["VmRSS"],
        "hwm": vm["VmHWM"],
    }


def alternate_startups(
    commands: dict[str, Command],
    errlog: IO[Any],
    rounds: int,
    call: Callable[[str], tuple[str, dict[str, Any]]],
    check: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, list[dict[str, float]]]:
    """
    C{rounds} spawns of each command, alternating (and rotating which goes
    first), so load drift on a shared machine hits both alike.  C{call(name)}
    gives the first tool call for that command.
    """
    names = list(commands)
    out: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for i in range(rounds):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            tool, arguments = call(name)
            one = None if check is None else (lambda r, name=name: check(name, r))
            out[name].append(startup_sample(commands[name], errlog, tool, arguments, one))
    return out


def cached_calls(
    sessions: dict[str, RawStdioSession],
    calls: dict[str, tuple[str, dict[str, Any]]],
    n: int,
    warmup: int = 5,
    check: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, list[float]]:
    """
    C{n} sequential calls on each session after C{warmup} untimed ones,
    interleaved one by one (rotating order): seconds per call.
    """
    names = list(sessions)
    for name in names:
        tool, arguments = calls[name]
        for _ in range(warmup):
            result = sessions[name].call_tool(tool, arguments)
            if check is not None:
                check(name, result)
    out: dict[str, list[float]] = {name: [] for name in names}
    for i in range(n):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            tool, arguments = calls[name]
            t0 = time.perf_counter()
            result = sessions[name].call_tool(tool, arguments)
            out[name].append(time.perf_counter() - t0)
            if check is not None:
                check(name, result)
    return out


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def run_footer(t0: float, load: float) -> str:
    """The last line of a benchmark run: how long it took, on what, under what load."""
    return (
        f"total {time.perf_counter() - t0:.1f} s; python {sys.version.split()[0]}; "
        f"{os.cpu_count()} CPUs; 1-min load average {load:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
