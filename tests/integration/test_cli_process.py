"""
The console script run as a process, the way a person runs it: every user
error is one line on standard error and no traceback, whatever the path
(refused before any I/O, a reader that stops reading, a log file that
cannot be written, a port in use); C{gophergem serve} serves and stops on a
signal.

Nothing here sends a packet beyond loopback: refused targets are refused
before any connection is made, and servers listen on 127.0.0.1.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli_process import (
    DEADLINE,
    assert_one_line,
    console_script,
    environ,
    free_port,
    gophergem,
)

__all__ = ["environ"]  # the fixtures, so that pytest finds them

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("gopher://10.0.0.1/", "BLOCKED"),
        ("gopher://127.0.0.1:7070/0/x", "BLOCKED"),
        ("gopher://example.org/8", "NOT_FETCHABLE"),
        ("gopher://user@example.org/", "INVALID_REQUEST"),
        ("ftp://example.org/", "INVALID_REQUEST"),
        ("gemini://169.254.169.254/", "BLOCKED"),
    ],
)
def test_fetch_refused_before_io(url: str, code: str, environ: dict[str, str]) -> None:
    """
    A fetch refused before any I/O is its error payload and one line: status 1
    for a refusal, 2 for a request that is wrong in itself (INVALID_REQUEST).
    """
    import json

    done = gophergem(["fetch", url], environ)
    assert done.returncode == (2 if code == "INVALID_REQUEST" else 1), done.stderr
    assert_one_line(done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == code
    assert code in done.stderr


def test_unknown_scheme_names_the_working_ones(environ: dict[str, str]) -> None:
    """fetch with another scheme says which schemes work."""
    done = gophergem(["fetch", "titan://127.0.0.1/"], environ)
    assert all(f"{scheme}://" in done.stderr for scheme in ("gopher", "gemini", "finger", "nex"))
    assert "spartan://" in done.stderr and done.returncode == 2


def test_fetch_reader_gone(environ: dict[str, str]) -> None:
    """A reader that stops reading (| head) ends the fetch quietly: no traceback."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = gophergem(["fetch", "gopher://10.0.0.1/"], environ, stdout=write)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 1


def test_help_reader_gone(environ: dict[str, str]) -> None:
    """--help into a closed pipe is quiet too."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = gophergem(["fetch", "--help"], environ, stdout=write)
    finally:
        os.close(write)
    assert done.stderr == ""


@pytest.mark.parametrize("command", [["fetch", "gopher://10.0.0.1/"], ["trust", "list"], []])
def test_unwritable_log_file(command: list[str], environ: dict[str, str], tmp_path: Path) -> None:
    """A log file that cannot be written is one line naming it, status 2."""
    environ["GOPHERGEM_LOG_FILE"] = str(tmp_path / "no" / "such" / "dir.log")
    done = gophergem(command, environ)
    assert done.returncode == 2
    assert_one_line(done.stderr)
    assert "GOPHERGEM_LOG_FILE" in done.stderr


def test_settings_after_fetch(environ: dict[str, str]) -> None:
    """A setting after fetch is a setting, not the URL: local hosts allowed, so not BLOCKED."""
    port = free_port()  # nothing listens there: the fetch fails at the connection
    done = gophergem(
        [
            "fetch",
            "--gopher-allow-local-hosts",
            "true",
            f"gopher://127.0.0.1:{port}/0/x",
            "--gopher-respect-robots-txt",
            "false",
        ],
        environ,
    )
    assert "BLOCKED" not in done.stdout and "CONNECTION_FAILED" in done.stdout, done.stdout


def test_trust_pin_over_pin_refused(environ: dict[str, str]) -> None:
    """Without a terminal or --replace, trust pin over a pin is PIN_EXISTS, status 1."""
    first, second = "ab" * 32, "cd" * 32
    assert gophergem(["trust", "pin", "capsule.example", first], environ).returncode == 0
    done = gophergem(["trust", "pin", "capsule.example", second], environ)
    assert done.returncode == 1 and "PIN_EXISTS" in done.stderr
    assert_one_line(done.stderr)
    listed = gophergem(["trust", "list"], environ)
    assert first in listed.stdout and second not in listed.stdout


# --- gophergem serve ---------------------------------------------------------------------


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something already listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_serve_port_in_use(busy_port: int, environ: dict[str, str]) -> None:
    """serve on a port already in use is one line naming it, status 2."""
    endpoint = f"tcp:{busy_port}:interface=127.0.0.1"
    done = gophergem(["serve", "--transport", "http", "--endpoint", endpoint], environ)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("gophergem")]
    assert endpoint in line


@pytest.mark.parametrize(
    "endpoint", ["nonsense:1", "tcp:notaport", "unix:/nonexistent/gophergem/socket"]
)
def test_serve_bad_endpoint(endpoint: str, environ: dict[str, str]) -> None:
    """serve with an endpoint that cannot be used is one line, status 2, no traceback."""
    done = gophergem(["serve", "--transport", "http", "--endpoint", endpoint], environ)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert [x for x in done.stderr.splitlines() if x.startswith("gophergem")], done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_http_stops_on_signal(signum: int, environ: dict[str, str]) -> None:
    """serve --transport http answers /health, and stops cleanly (status 0) on a signal."""
    serve_http_then_signal(signum, environ)


IGNORING_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]
"""Runs the command after it with SIGINT ignored, as a shell without job control runs cmd &."""


def test_serve_http_stops_on_sigint_it_was_started_ignoring(environ: dict[str, str]) -> None:
    """
    serve started with SIGINT ignored (in the background of a script, or of
    a test run started so) still stops on it, as it says: it went on serving.
    """
    serve_http_then_signal(signal.SIGINT, environ, IGNORING_SIGINT)


def serve_http_then_signal(
    signum: int, environ: dict[str, str], before: tuple[str, ...] | list[str] = ()
) -> None:
    """Start serve --transport http, wait for /health, send C{signum}: it ends, 0, no traceback."""
    port = free_port()
    process = subprocess.Popen(
        [
            *before,
            *console_script(),
            "serve",
            "--transport",
            "http",
            "--endpoint",
            f"tcp:{port}:interface=127.0.0.1",
        ],
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    assert r.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)  # polling for start-up, not timing behaviour
        process.send_signal(signum)
        out, err = process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err and out == ""


def test_serve_stdio_answers_and_ends_at_eof(environ: dict[str, str]) -> None:
    """serve (stdio by default) answers MCP on stdout and exits 0 at end of input."""
    import json

    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    done = subprocess.run(
        [*console_script(), "serve", "--gophergem-log-level", "WARNING"],
        env=environ,
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]


def test_serve_http_says_where_it_listens(environ: dict[str, str]) -> None:
    """
    serve --transport http says, once listening, one line on stderr with the
    URL of /mcp: on port 0, the port it got, where /health then answers.
    """
    process = subprocess.Popen(
        [
            *console_script(),
            "serve",
            "--transport",
            "http",
            "--endpoint",
            "tcp:0:interface=127.0.0.1",
        ],
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + DEADLINE
        line = ""
        while not line.startswith("gophergem:"):  # the log's lines go to stderr too
            ready, _, _ = select.select([process.stderr], [], [], deadline - time.monotonic())
            assert ready and process.poll() is None, "serve never said where it listens"
            line = process.stderr.readline()
        prefix = "gophergem: serving MCP at http://127.0.0.1:"
        assert line.startswith(prefix) and line.endswith("/mcp (and /health)\n"), line
        port = int(line[len(prefix) :].split("/", 1)[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=DEADLINE) as r:
            assert r.status == 200
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out == "" and "serving MCP at" not in err  # said once


def test_bare_gophergem_at_a_terminal_says_what_it_does(environ: dict[str, str]) -> None:
    """
    With no command and a terminal on stdin, gophergem says in one line on
    stderr that it serves MCP there and what a person probably wanted; it
    keeps serving (an initialize typed there is answered); stdout carries
    nothing but protocol.
    """
    import json

    master, slave = os.openpty()
    process = subprocess.Popen(
        console_script(),
        env=environ,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(slave)
    try:
        assert process.stderr is not None and process.stdout is not None
        ready, _, _ = select.select([process.stderr], [], [], DEADLINE)
        assert ready, "nothing said at the terminal"
        line = process.stderr.readline()
        assert line.startswith("gophergem: serving MCP on stdin/stdout"), line
        assert "gophergem fetch URL" in line and "gophergem --help" in line
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "tty", "version": "1"},
            },
        }
        os.write(master, json.dumps(request).encode() + b"\n")
        ready, _, _ = select.select([process.stdout], [], [], DEADLINE)
        assert ready, "the initialize typed at the terminal was not answered"
        answer = json.loads(process.stdout.readline())
        assert answer["id"] == 1 and "result" in answer
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=DEADLINE)


def test_fetch_readable_when_piped(environ: dict[str, str]) -> None:
    """fetch --format readable prints the readable rendering into a pipe (| less), not JSON."""
    done = gophergem(["fetch", "--format", "readable", "gopher://10.0.0.1/"], environ)
    assert done.returncode == 1
    assert done.stdout.startswith("error BLOCKED: "), done.stdout
    assert done.stderr == ""
