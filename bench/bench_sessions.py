#!/usr/bin/env python
"""
The session cap under a flood of new sessions, on loopback (issue 21, item 3).

    python bench/bench_sessions.py [--quick] [--port PORT]

Each scenario starts its own C{gophergem serve --transport http} on
127.0.0.1 with C{GOPHERGEM_HTTP_MAX_SESSIONS} set, fills the cap with
idle sessions, then sends raw C{initialize} POSTs (a new connection each,
no session id) at a fixed concurrency and counts the answers by status
(and, for errors, by message):

  1. C{cap20-burst}: cap 20, full, then 10 initializes all at once;
  2. C{cap20-c5}: cap 20, full, then 100 initializes at concurrency 5;
  3. C{default-c50}: the default cap (2000), full, then 5,000
     initializes at concurrency 50 (left out by C{--quick}).

A C{404} there is a new session closed during its own initialize; a
C{503} (with C{Retry-After}) is a refusal when nothing could be closed.
With C{--port}, the scenarios run against a daemon already listening on
127.0.0.1:PORT instead (its cap is what it is).

Nothing here talks to anything outside 127.0.0.0/8; the daemons started
are stopped on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from bench_gopher import loopback_env  # noqa: E402

LOOPBACK = "127.0.0.1"
START_DEADLINE = 60.0
REQUEST_TIMEOUT = 60.0

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench-sessions", "version": "1"},
        },
    }
).encode()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


class Daemon:
    """One C{gophergem serve --transport http} on 127.0.0.1, its output in a file."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.log_path = tmp / f"daemon-{self.port}.log"
        self._log: IO[bytes] = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "gophergem", "serve", "--transport", "http"),
                *("--endpoint", f"tcp:{self.port}:interface={LOOPBACK}"),
            ],
            env=env,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=self._limit,
        )

    @staticmethod
    def _limit() -> None:
        """Run in the daemon's process before it starts (subclasses set limits here)."""

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the daemon exited at start:\n{self.tail()}")
            with contextlib.suppress(OSError):
                connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=5)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    connection.close()
                    return
            time.sleep(0.05)
        raise SystemExit(f"the daemon did not answer /health:\n{self.tail()}")

    def tail(self, size: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-size:]

    def tracebacks(self) -> int:
        return self.log_path.read_text(errors="replace").count("Traceback (most recent call last)")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._log.close()


@contextlib.contextmanager
def daemon(tmp: Path, max_sessions: int | None) -> Iterator[Daemon]:
    env = loopback_env()
    env["GOPHERGEM_LOG_LEVEL"] = "WARNING"
    if max_sessions is not None:
        env["GOPHERGEM_HTTP_MAX_SESSIONS"] = str(max_sessions)
    started = Daemon(tmp, env)
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()


async def initialize(port: int) -> str:
    """POST one initialize on a new connection; return C{"<status>"} or C{"<status> <message>"}."""
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    try:
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            b"Content-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (port, len(INITIALIZE))
        )
        writer.write(head + INITIALIZE)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), REQUEST_TIMEOUT)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1].decode() if head else "no-answer"
    if status.startswith("2"):
        return status
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = body[:60].decode("utf-8", "replace")
    return f"{status} {message[:60]}"


async def flood(port: int, total: int, concurrency: int) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    queue = iter(range(total))

    async def worker() -> None:
        for _ in queue:
            try:
                counts[await initialize(port)] += 1
            except (TimeoutError, OSError) as error:
                counts[f"error {type(error).__name__}"] += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return counts


def scenario(
    name: str, port: int, fill: int, total: int, concurrency: int, log: Daemon | None
) -> None:
    filled = asyncio.run(flood(port, fill, min(fill, 20)))
    started = time.monotonic()
    counts = asyncio.run(flood(port, total, concurrency))
    seconds = time.monotonic() - started
    answers = ", ".join(f"{count} x {what}" for what, count in sorted(counts.items()))
    print(f"{name}: filled the cap with {fill} sessions ({dict(filled)})")
    print(f"  then {total} initializes at concurrency {concurrency}, {seconds:.1f}s: {answers}")
    if log is not None:
        print(f"  tracebacks in the daemon's log: {log.tracebacks()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the two cap-20 scenarios")
    parser.add_argument("--port", type=int, help="use the daemon already on 127.0.0.1:PORT")
    args = parser.parse_args()
    runs = [("cap20-burst", 20, 10, 10), ("cap20-c5", 20, 100, 5)]
    if not args.quick:
        runs.append(("default-c50", 2000, 5000, 50))
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        for name, cap, total, concurrency in runs:
            if args.port:
                scenario(name, args.port, cap, total, concurrency, None)
                continue
            with daemon(Path(tmp), None if cap == 2000 else cap) as running:
                scenario(name, running.port, cap, total, concurrency, running)


if __name__ == "__main__":
    main()
