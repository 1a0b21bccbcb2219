"""
Acceptance tests for the daemon: C{twistd -n gophergem --transport http} (and
the .tac, and the mounting example of docs/deployment.md) as real processes
on 127.0.0.1, driven by the MCP SDK's Streamable HTTP client in both protocol
eras, against a real gophernicus.

Nothing here binds or connects to anything but 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.daemon import (
    START_DEADLINE,
    STOP_DEADLINE,
    TWISTD,
    Daemon,
    daemon_env,
    http_daemon_argv,
    http_get,
    running,
    twistd_http_argv,
)
from tests.helpers.mcp import INITIALIZE

from .conftest import (
    LOOPBACK,
    REPO_ROOT,
    GopherServer,
    run_async,
    tool_payload,
)

pytestmark = pytest.mark.integration

ERAS = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def daemon(
    gopher_server: GopherServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Daemon]:
    """C{twistd -n --pidfile= gophergem --transport http} on a free loopback port."""
    with running(http_daemon_argv, daemon_env(tmp_path_factory.mktemp("daemon"))) as started:
        yield started
        assert started.stopped_cleanly(), started.output()


def root_url(server: GopherServer) -> str:
    return f"gopher://{server.host}:{server.port}/"


# --- MCP over HTTP --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
def test_tools_and_a_gopher_fetch(daemon: Daemon, gopher_server: GopherServer, mode: str) -> None:
    """Both eras list the tools and fetch a real Gopher menu through the daemon."""
    from mcp import Client

    async def body() -> None:
        async with Client(daemon.url, mode=mode) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == DAEMON_TOOLS  # the same as the mounted example's
            result = await client.call_tool(
                "gopher_fetch", {"url": root_url(gopher_server), "refresh": True}
            )
            payload = tool_payload(result)
            assert not result.is_error, payload
            assert payload["kind"] == "menu"
            assert payload["items"][0]["title"] == "Welcome to the gophergem integration fixture."

    run_async(body, deadline=60)


@pytest.mark.parametrize("mode", ERAS)
def test_policy_and_prompts(daemon: Daemon, mode: str) -> None:
    """The policy resource and both prompts are served over HTTP."""
    from mcp import Client

    async def body() -> None:
        async with Client(daemon.url, mode=mode) as client:
            policy = (await client.read_resource("gophergem://policy")).contents[0]
            assert "GOPHER_ALLOW_LOCAL_HOSTS = true" in policy.text
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert prompts == {"explore_capsule", "summarize_gemlog", "whats_new"}

    run_async(body, deadline=60)


def post_initialize(port: int, headers: dict[str, str]) -> int:
    body = INITIALIZE
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        connection.request(
            "POST",
            "/mcp",
            body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_rebinding_protection(daemon: Daemon) -> None:
    """A foreign Host is refused (421) and so is a foreign Origin (403)."""
    assert post_initialize(daemon.port, {"Host": "evil.example"}) == 421
    assert post_initialize(daemon.port, {"Host": f"evil.example:{daemon.port}"}) == 421
    assert post_initialize(daemon.port, {"Origin": "http://evil.example"}) == 403
    assert post_initialize(daemon.port, {}) == 200


def test_oversize_body_refused(daemon: Daemon) -> None:
    """A body over 4 MiB is refused with 413 before it is read."""
    connection = http.client.HTTPConnection(LOOPBACK, daemon.port, timeout=10)
    try:
        connection.putrequest("POST", "/mcp")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(5 * 1024 * 1024))
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 413
    finally:
        connection.close()


# --- /health and /.well-known/agent.gopher --------------------------------------------


def test_health_exact(daemon: Daemon) -> None:
    """/health is exactly the status and the version."""
    from gophergem._version import __version__

    response = http_get(daemon.port, "/health")
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/json"
    assert response.body == json.dumps({"status": "ok", "version": __version__}).encode()


def test_agent_gopher_exact(daemon: Daemon) -> None:
    """agent.gopher is a terminated Gopher menu naming this endpoint and every tool."""
    from gophergem._version import __version__

    response = http_get(daemon.port, "/.well-known/agent.gopher")
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/gopher; charset=utf-8"
    text = response.body.decode("utf-8")
    assert text.endswith("\r\n.\r\n")
    lines = [line.split("\t") for line in text[: -len(".\r\n")].split("\r\n")[:-1]]
    origin = [LOOPBACK, str(daemon.port)]
    assert all(fields[2:] == origin for fields in lines), lines
    assert (
        lines[0][0] == f"igophergem {__version__}: Gopher and Gemini for AI assistants, over MCP."
    )
    assert lines[1] == ["hMCP endpoint (Streamable HTTP)", f"URL:{daemon.url}", *origin]
    health = f"URL:http://{LOOPBACK}:{daemon.port}/health"
    assert lines[2] == ["hHealth check (JSON)", health, *origin]
    tool_lines = [f[1] for f in lines if f[1].startswith("/.well-known/agent/tools/")]
    assert "/.well-known/agent/tools/gopher_fetch" in tool_lines
    assert ["0Policy (MCP resource gophergem://policy)", "/.well-known/agent/policy", *origin] in [
        f for f in lines
    ]
    data = json.loads(http_get(daemon.port, "/.well-known/agent.gopher?format=json").body)
    assert data["mcp"]["url"] == daemon.url
    assert [f"/.well-known/agent/tools/{t['name']}" for t in data["tools"]] == tool_lines
    policy = http_get(daemon.port, "/.well-known/agent/policy")
    assert policy.getheader("Content-Type") == "text/plain; charset=utf-8"
    assert b"GOPHER_ALLOW_LOCAL_HOSTS = true" in policy.body


# --- load ---------------------------------------------------------------------------------


SESSIONS = 20
CALLS = 50


def test_concurrent_sessions_lose_nothing(daemon: Daemon, gopher_server: GopherServer) -> None:
    """20 concurrent sessions (half per era) x 50 calls each: every call is answered."""
    from mcp import Client

    url = root_url(gopher_server)
    answered: dict[int, int] = {}

    async def session(number: int) -> None:
        mode = ERAS[number % 2]
        async with Client(daemon.url, mode=mode) as client:
            answered[number] = 0
            for _ in range(CALLS):
                result = await client.call_tool("gopher_fetch", {"url": url})
                payload = tool_payload(result)
                assert payload["kind"] == "menu", payload
                answered[number] += 1

    async def body() -> None:
        async with Client(daemon.url, mode="legacy") as client:
            await client.call_tool("gopher_fetch", {"url": url})  # now it is cached
        async with anyio.create_task_group() as group:
            for number in range(SESSIONS):
                group.start_soon(session, number)

    run_async(body, deadline=120)
    assert answered == dict.fromkeys(range(SESSIONS), CALLS)


# --- mounting in your own Site: the example of docs/deployment.md --------------------------


def docs_example(name: str) -> str:
    text = (REPO_ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {re.escape(name)} -->\n```python\n(.*?)```", text, re.S)
    assert match is not None, f"docs/deployment.md has no example {name}"
    return match.group(1)


DAEMON_TOOLS = {
    "gopher_fetch",
    "gopher_batch_fetch",
    "gemini_fetch",
    "gemini_batch_fetch",
    "gemini_trust_list",
    "gemini_trust_update",
    "gemini_client_cert_list",
    "gemini_client_cert_update",
    "smolweb_search",
    "smolweb_fetch",
    "feed_subscribe",
    "feed_unsubscribe",
    "feed_list",
    "feed_updates",
    "titan_upload",
}
"""The tools C{twistd gophergem --transport http} lists (as C{gophergem} does)."""


def test_mounted_beside_another_resource(gopher_server: GopherServer, tmp_path: Path) -> None:
    """The documented example serves its own /hello and gophergem's /mcp from one Site."""
    from mcp import Client

    tac = tmp_path / "mounted.tac"
    tac.write_text(docs_example("mounted.tac"), encoding="utf-8")

    def argv(port: int) -> list[str]:
        return [*TWISTD, "-ny", str(tac), "--pidfile="]

    env = daemon_env(tmp_path)
    with running(lambda port: (env.__setitem__("PORT", str(port)), argv(port))[1], env) as app:
        hello = http_get(app.port, "/hello")
        assert (hello.status, hello.body) == (200, b"Hello from my own application.\n")

        async def body() -> None:
            for mode in ERAS:
                async with Client(app.url, mode=mode) as client:
                    result = await client.call_tool(
                        "gopher_fetch", {"url": root_url(gopher_server)}
                    )
                    assert tool_payload(result)["kind"] == "menu"
                    # The whole surface, as the daemon's: the feeds included.
                    tools = {t.name for t in (await client.list_tools()).tools}
                    assert tools == DAEMON_TOOLS
                    listed = await client.call_tool("feed_list", {})
                    assert listed.is_error is False, listed
                    resources = (await client.list_resources()).resources
                    assert "gophergem://feeds/updates" in {str(r.uri) for r in resources}

        run_async(body, deadline=60)
        assert app.stopped_cleanly(), app.output()


# --- the .tac --------------------------------------------------------------------------------


def test_tac_starts_and_stops_on_sigterm(tmp_path: Path) -> None:
    """twistd -ny tac/gophergem.tac serves HTTP; SIGTERM ends open streams and the process."""

    def argv(port: int) -> list[str]:
        return [*TWISTD, "-ny", str(REPO_ROOT / "tac" / "gophergem.tac"), "--pidfile="]

    env = daemon_env(tmp_path)
    with running(
        lambda port: (
            env.__setitem__("GOPHERGEM_ENDPOINT", f"tcp:{port}:interface={LOOPBACK}"),
            argv(port),
        )[1],
        env,
    ) as tac:
        assert http_get(tac.port, "/health").status == 200
        session = open_event_stream(tac.port)
        assert tac.stopped_cleanly(), tac.output()
        assert session.read() in (b"0\r\n\r\n", b"")  # the stream ended; nothing hangs
        session.close()
        output = tac.output()
        assert "Received SIGTERM" in output
        assert (
            output.index("Received SIGTERM")
            < output.index("MCP endpoint stopped")
            < output.index("Server Shut Down.")
        )


def open_event_stream(port: int) -> Any:
    """Open a legacy session and its GET event stream; return the stream's socket file."""
    import socket

    body = INITIALIZE
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    connection.request(
        "POST",
        "/mcp",
        body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    response = connection.getresponse()
    response.read()
    session_id = response.getheader("Mcp-Session-Id")
    connection.close()
    assert session_id
    stream = socket.create_connection((LOOPBACK, port), timeout=STOP_DEADLINE)
    stream.sendall(
        (
            f"GET /mcp HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nAccept: text/event-stream\r\n"
            f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
        ).encode()
    )
    reader = stream.makefile("rb")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += reader.readline()
    assert head.startswith(b"HTTP/1.1 200"), head
    stream.close()  # the file keeps the socket open
    return reader


# --- SIGTERM with a call in flight -----------------------------------------------------------


@contextlib.contextmanager
def silent_gopher_server() -> Iterator[tuple[int, list[Any]]]:
    """
    A loopback port that accepts connections and never answers (a fetch to it
    hangs): yields the port and the connections it holds.
    """
    import socket
    import threading

    listener = socket.socket()
    listener.bind((LOOPBACK, 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(listener.getsockname()[1]), held
    finally:
        listener.close()
        for connection in held:
            connection.close()


def start_call(daemon: Daemon, url: str, era: str) -> tuple[Any, list[Any]]:
    """Start a gopher_fetch of C{url} in a thread; return the thread and where its answer lands."""
    import threading

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    call: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 77,
        "method": "tools/call",
        "params": {"name": "gopher_fetch", "arguments": {"url": url, "refresh": True}},
    }
    if era == "legacy":
        connection = http.client.HTTPConnection(LOOPBACK, daemon.port, timeout=10)
        connection.request(
            "POST",
            "/mcp",
            INITIALIZE,
            headers=headers,
        )
        response = connection.getresponse()
        response.read()
        headers.update(
            {
                "Mcp-Session-Id": str(response.getheader("Mcp-Session-Id")),
                "MCP-Protocol-Version": "2025-11-25",
            }
        )
        connection.close()
    else:
        headers.update(
            {"MCP-Protocol-Version": era, "Mcp-Method": "tools/call", "Mcp-Name": "gopher_fetch"}
        )
        call["params"]["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    answers: list[Any] = []

    def run_call() -> None:
        connection = http.client.HTTPConnection(LOOPBACK, daemon.port, timeout=STOP_DEADLINE)
        try:
            connection.request("POST", "/mcp", json.dumps(call), headers=headers)
            response = connection.getresponse()
            answers.append((response.status, response.read()))
        except OSError as error:
            answers.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run_call, daemon=True)
    thread.start()
    return thread, answers


def rpc_message(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a JSON or event-stream answer."""
    text = body.decode("utf-8")
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert data, text
    return dict(json.loads(data[-1]))


def wait_until(condition: Any) -> None:
    deadline = time.monotonic() + START_DEADLINE
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("era", ERAS)
def test_sigterm_answers_a_call_that_outlives_the_drain(tmp_path: Path, era: str) -> None:
    """A call still running when the drain period ends gets a JSON-RPC error, logged at warn."""
    env = daemon_env(tmp_path, GOPHERGEM_HTTP_DRAIN_SECONDS="1", GOPHER_TIMEOUT_SECONDS="60")
    with silent_gopher_server() as (gopher_port, held), running(http_daemon_argv, env) as daemon:
        thread, answers = start_call(daemon, f"gopher://{LOOPBACK}:{gopher_port}/", era)
        wait_until(lambda: held)  # the call is in flight, waiting on the silent server
        daemon.stop()
        thread.join(STOP_DEADLINE)
        output = daemon.output()
    assert answers and not isinstance(answers[0], Exception), (answers, output)
    status, body = answers[0]
    assert status == 200
    message = rpc_message(body)
    assert message["id"] == 77
    assert "shutting down" in message["error"]["message"]
    assert "#warn] Shutting down: cancelled POST /mcp" in output
    assert "Traceback" not in output and "#critical]" not in output


def test_sigterm_lets_a_call_finish_within_the_drain(tmp_path: Path) -> None:
    """A call that ends within the drain period (here by its own timeout) gets its real answer."""
    env = daemon_env(tmp_path, GOPHER_TIMEOUT_SECONDS="2")
    with silent_gopher_server() as (gopher_port, held), running(http_daemon_argv, env) as daemon:
        thread, answers = start_call(daemon, f"gopher://{LOOPBACK}:{gopher_port}/", "legacy")
        wait_until(lambda: held)
        daemon.stop()
        thread.join(STOP_DEADLINE)
        output = daemon.output()
    _, body = answers[0]
    message = rpc_message(body)
    assert message["id"] == 77 and "result" in message, message
    assert message["result"]["isError"] is True
    assert "TIMEOUT" in json.dumps(message["result"])
    assert "Traceback" not in output and "#critical]" not in output


# --- user errors under twistd: one line, status 2 ---------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["gophergem", "--bogus"],
        ["gophergem", "--transport", "http", "--endpoint", "nowhere"],
        ["gophergem", "--gopher-timeout-seconds", "soon"],
    ],
)
def test_twistd_bad_option_is_one_line(argv: list[str], tmp_path: Path) -> None:
    """twistd gophergem with a bad option prints one line (no usage page, no traceback)."""
    result = subprocess.run(
        [*TWISTD, "-n", "--pidfile=", *argv],
        env=daemon_env(tmp_path),
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=START_DEADLINE,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("twistd gophergem: ")


def _twistd_on_a_port_in_use(
    tmp_path: Path, options: list[str]
) -> tuple[str, list[subprocess.CompletedProcess[str]]]:
    """
    Run twistd gophergem and the .tac, with twistd C{options}, on a port
    something else listens on; the endpoint and what each run gave.
    """
    import socket

    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen(1)
        endpoint = f"tcp:{taken.getsockname()[1]}:interface={LOOPBACK}"
        tac = str(REPO_ROOT / "tac" / "gophergem.tac")
        runs = [
            ([*TWISTD, *options, "gophergem", "--transport", "http", "--endpoint", endpoint], {}),
            ([*TWISTD, *options, "-y", tac], {"GOPHERGEM_ENDPOINT": endpoint}),
        ]
        return endpoint, [
            subprocess.run(
                argv,
                env=daemon_env(tmp_path, **extra),
                cwd=str(tmp_path),
                capture_output=True,
                text=True,
                timeout=START_DEADLINE,
            )
            for argv, extra in runs
        ]


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    """twistd and the .tac, given a port already in use, print one line and exit with 2."""
    endpoint, results = _twistd_on_a_port_in_use(tmp_path, ["-n", "--pidfile="])
    for result in results:
        assert result.returncode == 2, result
        assert "Traceback" not in result.stdout + result.stderr
        assert f"gophergem: cannot listen on {endpoint}: Address already in use\n" in (
            result.stderr
        )


def test_daemonized_port_in_use_is_one_readable_line(tmp_path: Path) -> None:
    """
    Daemonized (no -n), twistd and the .tac given a port already in use say
    so in one readable line from the process started (not twistd's bytes
    literal cut at 100 bytes) and exit with 2; no daemon is left behind.
    """
    daemon_options = [f"--pidfile={tmp_path / 'x.pid'}", f"--logfile={tmp_path / 'x.log'}"]
    endpoint, results = _twistd_on_a_port_in_use(tmp_path, daemon_options)
    for result in results:
        assert result.returncode == 2, result
        assert result.stdout == ""
        assert result.stderr == (
            f"gophergem: cannot listen on {endpoint}: Address already in use\n"
        )
        assert not (tmp_path / "x.pid").exists()


def test_tac_unwritable_log_file_is_one_line(tmp_path: Path) -> None:
    """The .tac with an unwritable GOPHERGEM_LOG_FILE says so in one line."""
    result = subprocess.run(
        [*TWISTD, "-ny", str(REPO_ROOT / "tac" / "gophergem.tac"), "--pidfile="],
        env=daemon_env(tmp_path, GOPHERGEM_LOG_FILE=str(tmp_path / "no" / "such.log")),
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=START_DEADLINE,
    )
    assert result.returncode == 2
    assert result.stderr.strip().endswith("cannot write to it (No such file or directory).")
    assert "Traceback" not in result.stderr


# --- twistd's logging follows --gophergem-log-* ----------------------------------------------


@pytest.mark.parametrize(("level", "seen"), [("INFO", True), ("ERROR", False)])
def test_twistd_log_options_apply(tmp_path: Path, level: str, seen: bool) -> None:
    """--gophergem-log-file gets twistd's log, filtered at --gophergem-log-level."""
    log_file = tmp_path / "gophergem.log"

    def argv(port: int) -> list[str]:
        return [
            *http_daemon_argv(port),
            "--gophergem-log-file",
            str(log_file),
            "--gophergem-log-level",
            level,
        ]

    with running(argv, daemon_env(tmp_path)) as daemon:
        assert daemon.stop() in (0, -signal.SIGTERM)
        stdout = daemon.output()
    text = log_file.read_text(encoding="utf-8")
    assert ("MCP endpoint serving" in text) is seen
    assert ("Server Shut Down." in text) is seen
    assert "MCP endpoint serving" not in stdout
    assert "Traceback" not in text + stdout


# --- the listen backlog and Unix sockets ------------------------------------------------------


def test_burst_of_connections(daemon: Daemon) -> None:
    """
    The port's backlog holds 3,000 connects in a burst; every one is accepted
    (those past GOPHERGEM_HTTP_MAX_CONNECTIONS_PER_ADDRESS are answered 503).
    """
    import socket

    listen_line = subprocess.run(
        ["ss", "-ltnH", f"sport = :{daemon.port}"], capture_output=True, text=True, check=False
    ).stdout.split()
    if listen_line:
        with open("/proc/sys/net/core/somaxconn") as limit:
            assert int(listen_line[2]) >= min(3000, int(limit.read()))
    sockets = []
    try:
        for _ in range(3000):
            sockets.append(socket.create_connection((LOOPBACK, daemon.port), timeout=10))
    finally:
        for sock in sockets:
            sock.close()
    assert len(sockets) == 3000
    # Once the daemon has seen them close, this address may connect again.
    wait_until(lambda: http_get(daemon.port, "/health").status == 200)


def test_unix_socket_takes_host_localhost(tmp_path: Path) -> None:
    """Over a unix: endpoint, Host: localhost (curl --unix-socket) reaches /health and /mcp."""
    import socket

    path = tmp_path / "gophergem.sock"
    process = subprocess.Popen(
        twistd_http_argv(f"unix:{path}"),
        env=daemon_env(tmp_path),
        cwd=str(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def ask(raw: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(10)
            sock.connect(str(path))
            sock.sendall(raw)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data

    try:
        deadline = time.monotonic() + START_DEADLINE
        while not path.exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        health = ask(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert health.startswith(b"HTTP/1.1 200 "), health
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "curl", "version": "1"},
                },
            }
        ).encode()
        initialize = ask(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        assert initialize.startswith(b"HTTP/1.1 200 "), initialize
        evil = ask(b"GET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        assert evil.startswith(b"HTTP/1.1 421 "), evil
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=STOP_DEADLINE)
