"""
Shared helpers for the integration tests that run C{twistd gophergem} as a
daemon: its command lines and environment, a running daemon, HTTP to it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.integration.conftest import LOOPBACK, REPO_ROOT, unused_loopback_port

TWISTD = [sys.executable, "-c", "from twisted.scripts.twistd import run; run()"]

START_DEADLINE = 30.0  # seconds for a daemon to answer /health

STOP_DEADLINE = 20.0  # seconds for a daemon to exit after SIGTERM


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    port: int
    log: IO[bytes]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/mcp"

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self) -> int:
        """SIGTERM, and wait for the exit status (twistd ends by the same signal)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
            raise AssertionError(
                f"no exit within {STOP_DEADLINE}s of SIGTERM:\n{self.output()}"
            ) from None

    def stopped_cleanly(self) -> bool:
        """Stop; true if twistd shut down in order and exited as SIGTERM asks."""
        status = self.stop()
        output = self.output()
        return (
            status in (0, -signal.SIGTERM)
            and "Server Shut Down." in output
            and "Traceback" not in output
        )


def daemon_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOPHER_ALLOW_LOCAL_HOSTS="true",
        GOPHER_REQUESTS_PER_MINUTE="0",
        GOPHER_RESPECT_ROBOTS_TXT="false",
        XDG_DATA_HOME=str(tmp),  # any store lives in the test's own directory
        PYTHONUNBUFFERED="1",
    )
    env["PYTHONPATH"] = str(REPO_ROOT) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    env.update(extra)
    return env


def http_get(port: int, path: str, headers: dict[str, str] | None = None) -> Any:
    """GET C{path}; return the response, read."""
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        response.body = response.read()
        return response
    finally:
        connection.close()


@contextlib.contextmanager
def running(argv_for_port: Any, env: dict[str, str]) -> Iterator[Daemon]:
    """Start a daemon on a free port (retried if another process took it first)."""
    last = ""
    for _attempt in range(3):
        port = unused_loopback_port()
        log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
        process = subprocess.Popen(
            argv_for_port(port),
            env=env,
            cwd=str(REPO_ROOT),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        daemon = Daemon(process, port, log)
        deadline = time.monotonic() + START_DEADLINE
        started = False
        while time.monotonic() < deadline and process.poll() is None:
            try:
                started = http_get(port, "/health").status == 200
            except OSError:
                time.sleep(0.05)
                continue
            break
        if started:
            try:
                yield daemon
            except BaseException:
                daemon.stop()
                sys.stderr.write(f"---- daemon output ----\n{daemon.output()[-20000:]}\n")
                log.close()
                raise
            if process.poll() is None:  # never leave a daemon behind
                daemon.stop()
            log.close()
            return
        if process.poll() is None:
            process.kill()
        process.wait(timeout=5)
        last = daemon.output()
        log.close()
    raise AssertionError(f"the daemon did not start:\n{last}")


def serve_argv(port: int) -> list[str]:
    """C{gophergem serve --transport http} on loopback C{port}."""
    return [
        sys.executable,
        "-m",
        "gophergem",
        "serve",
        "--transport",
        "http",
        "--endpoint",
        f"tcp:{port}:interface={LOOPBACK}",
    ]


def http_daemon_argv(port: int) -> list[str]:
    """C{twistd -n --pidfile= gophergem --transport http} on loopback C{port}."""
    return twistd_http_argv(f"tcp:{port}:interface={LOOPBACK}")


def twistd_http_argv(endpoint: str) -> list[str]:
    """C{twistd -n --pidfile= gophergem --transport http} on C{endpoint}."""
    return [*TWISTD, "-n", "--pidfile=", "gophergem", "--transport", "http", "--endpoint", endpoint]


def post_mcp(port: int, headers: dict[str, str]) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    try:
        connection.request(
            "POST",
            "/mcp",
            body=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()
