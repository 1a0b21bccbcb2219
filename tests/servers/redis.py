"""
A throwaway Redis server on loopback for the tests that need one, and a
helper that measures how fast requests started.

The session fixture L{redis_url} starts C{redis-server} on 127.0.0.1 at a
free port with persistence off (C{--save '' --appendonly no}), in the
foreground of a process this module spawned, and kills that process when
the session ends.  L{RedisServer} does the same for a test that must stop
and restart its own server.  When C{redis-server} is missing the tests
that use it are skipped, unless C{GOPHERGEM_REQUIRE_PEERS=1} (CI), where
they fail.

L{start_rate} turns the times at which a server saw requests start into
their rate and closest spacing: the measure of a shared
C{*_REQUESTS_PER_MINUTE} across replicas.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pytest

__all__ = ["RedisServer", "StartRate", "find_redis_server", "redis_url", "start_rate"]

STARTUP_DEADLINE = 10.0  # seconds a new server has to answer PING


def find_redis_server() -> str | None:
    """The path of C{redis-server}, or C{None}."""
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.access("/usr/bin/redis-server", os.X_OK) else None
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def missing(reason: str) -> None:
    """Skip, or fail when CI requires the peers."""
    if os.environ.get("GOPHERGEM_REQUIRE_PEERS", "").strip() == "1":
        pytest.fail(f"{reason} (GOPHERGEM_REQUIRE_PEERS=1)", pytrace=False)
    pytest.skip(reason)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@attrs.define
class RedisServer:
    """
    One C{redis-server} process on 127.0.0.1, started and stopped by a test.

    @ivar binary: The server program.
    @ivar directory: Its working directory (nothing is written there).
    @ivar port: Its port; kept across L{stop} and L{start}, so clients
        reconnect to the same URL.
    """

    binary: str
    directory: Path
    port: int = attrs.field(factory=free_port)
    _process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's URL, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait (up to L{STARTUP_DEADLINE}) until it answers."""
        argv = [
            self.binary,
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            str(self.directory),
            "--logfile",
            "",
        ]
        self._process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + STARTUP_DEADLINE
        while not _answers(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Kill the server this object started, and wait for it to go."""
        process, self._process = self._process, None
        if process is None:
            return
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a throwaway Redis on loopback, for the whole session."""
    binary = find_redis_server()
    if binary is None:
        missing("redis-server is not installed")
        return
    with tempfile.TemporaryDirectory(prefix="gophergem-redis-") as directory:
        server = RedisServer(binary, Path(directory))
        server.start()
        try:
            yield server.url
        finally:
            server.stop()


@attrs.frozen
class StartRate:
    """
    How fast requests started.

    @ivar count: How many starts.
    @ivar span: Seconds from the first start to the last.
    @ivar closest: The shortest gap between two consecutive starts (seconds;
        infinite for fewer than two).
    @ivar per_minute: Starts per minute over the span: C{(count - 1) * 60 /
        span} (infinite when the span is 0).
    """

    count: int
    span: float
    closest: float
    per_minute: float

    def obeys(self, requests_per_minute: float, slack: float = 0.0) -> bool:
        """
        Whether the starts kept C{60 / requests_per_minute} apart on the
        whole, allowing C{slack} seconds less in total (scheduling jitter).
        """
        if self.count < 2 or requests_per_minute <= 0:
            return True
        return self.span >= (self.count - 1) * 60 / requests_per_minute - slack


def start_rate(starts: Sequence[float]) -> StartRate:
    """
    Measure the times (seconds on any one clock, any order) at which one
    host saw requests start, whichever replica sent them.
    """
    ordered = sorted(starts)
    if len(ordered) < 2:
        return StartRate(len(ordered), 0.0, float("inf"), 0.0)
    span = ordered[-1] - ordered[0]
    closest = min(b - a for a, b in itertools.pairwise(ordered))
    per_minute = (len(ordered) - 1) * 60 / span if span > 0 else float("inf")
    return StartRate(len(ordered), span, closest, per_minute)
