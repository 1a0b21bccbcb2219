"""
Acceptance test for a team server: two daemons (C{gophergem serve
--transport http}) on loopback sharing one PostgreSQL and one Redis, with
token-file authentication, driven by the MCP SDK's HTTP client in the
2026-07-28 era, alternating between them.

  - a pin made through one replica is enforced by the other: when the host
    then presents another key, replica 2 refuses it;
  - an identity Alice creates through replica 1 is Alice's through replica
    2, and Bob does not see it;
  - C{GEMINI_REQUESTS_PER_MINUTE} holds for both replicas together,
    measured where the capsule accepts the connections;
  - with Redis stopped, a fetch is C{STATE_UNAVAILABLE} and C{/health} is
    503 naming Redis; once Redis is back, both recover.

The capsule is a small TLS server in this test (it records when each
request starts, and can change its certificate); nothing here leaves
loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gophergem.auth.tokens import add_token
from tests.helpers.daemon import daemon_env, http_daemon_argv, http_get, running, serve_argv
from tests.helpers.mcp import bearer_session
from tests.integration.conftest import REPO_ROOT
from tests.servers.redis import RedisServer, find_redis_server, start_rate

from .conftest import LOOPBACK, GopherServer, run_async, tool_payload, unused_loopback_port
from .gemini_peers import HOSTNAME, CertPair, GeminiCerts

pytestmark = pytest.mark.integration

ERA = "2026-07-28"
RPM = 120  # one start every 0.5 s to one host, across both replicas


def fresh_database(server_url: str, name: str) -> str:
    """Create (again) the database C{name} on the test server; return its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name


class Capsule:
    """
    A Gemini server on 127.0.0.1 answering every request with a short page,
    recording when each connection was accepted.
    """

    def __init__(self, port: int, cert: CertPair) -> None:
        self.port = port
        self.starts: list[float] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert.cert_path), str(cert.key_path))
        self._listener = socket.create_server((LOOPBACK, port), reuse_port=False)
        self._listener.settimeout(0.2)
        self._context = context
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, path: str = "/") -> str:
        return f"gemini://{HOSTNAME}:{self.port}{path}"

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                raw, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.starts.append(time.monotonic())
            threading.Thread(target=self._answer, args=(raw,), daemon=True).start()

    def _answer(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(5)
            with self._context.wrap_socket(raw, server_side=True) as tls:
                request = b""
                while not request.endswith(b"\r\n") and len(request) < 2048:
                    chunk = tls.recv(1024)
                    if not chunk:
                        return
                    request += chunk
                tls.sendall(b"20 text/gemini\r\n# A small capsule\n=> /next.gmi Next\n")
                tls.unwrap()
        except (OSError, ssl.SSLError):
            pass
        finally:
            raw.close()

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()
        self._thread.join(timeout=5)


async def call(
    daemon: Any, token: str, name: str, arguments: dict[str, Any], *, asks: bool = True
) -> Any:
    """
    One tool call through C{daemon} as the holder of C{token}; with
    C{asks}, the client answers yes to any question (else it declares no
    elicitation at all).
    """

    async def accept(context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        return ElicitResult(action="accept", content={"confirm": True})

    async with bearer_session(
        daemon.url, token, ERA, elicitation_callback=accept if asks else None
    ) as session:
        return await session.call_tool(name, arguments)


def payload(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result.content
    return result.structured_content  # type: ignore[no-any-return]


def _gemini_daemon_on(tmp_path: Path, database: str, **settings: str) -> tuple[str, dict[str, str]]:
    """
    Alice's token and the environment of a daemon on C{database} (upgraded
    to the current schema) that fetches from loopback Gemini capsules at
    once: no robots.txt, no pacing; C{settings} add to it.
    """
    tokens = tmp_path / "tokens.json"
    alice = add_token(tokens, "alice")
    (tmp_path / "db.key").write_text(os.urandom(32).hex() + "\n")
    env = daemon_env(
        tmp_path,
        GOPHERGEM_DATABASE_URL=database,
        GOPHERGEM_DATABASE_KEY_FILE=str(tmp_path / "db.key"),
        GOPHERGEM_AUTH_TOKENS_FILE=str(tokens),
        GEMINI_ALLOW_LOCAL_HOSTS="true",
        GEMINI_RESPECT_ROBOTS_TXT="false",
        GEMINI_REQUESTS_PER_MINUTE="0",
        **settings,
    )
    upgrade = _run([sys.executable, "-m", "gophergem", "db", "upgrade"], env)
    assert upgrade.returncode == 0, upgrade.stderr
    return alice, env


def test_two_replicas_share_one_state(
    tmp_path: Path, postgres_url: str, gemini_certs: GeminiCerts
) -> None:
    binary = find_redis_server()
    if binary is None:
        pytest.skip("redis-server is not installed")
    redis = RedisServer(binary, tmp_path)
    redis.start()
    try:
        _replicas(tmp_path, postgres_url, gemini_certs, redis)
    finally:
        redis.stop()


def _replicas(
    tmp_path: Path, postgres_url: str, gemini_certs: GeminiCerts, redis: RedisServer
) -> None:
    database = fresh_database(postgres_url, "gophergem_replicas")
    (tmp_path / "db.key").write_text(os.urandom(32).hex() + "\n")
    (tmp_path / "state.keys").write_text(os.urandom(32).hex() + "\n")
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice"), add_token(tokens, "bob")
    shared = {
        "GOPHERGEM_DATABASE_URL": database,
        "GOPHERGEM_DATABASE_KEY_FILE": str(tmp_path / "db.key"),
        "GOPHERGEM_REDIS_URL": redis.url,
        "GOPHERGEM_AUTH_TOKENS_FILE": str(tokens),
        "GOPHERGEM_REQUEST_STATE_KEYS_FILE": str(tmp_path / "state.keys"),
        "GOPHERGEM_STATE_TIMEOUT_SECONDS": "1",
        "GEMINI_ALLOW_LOCAL_HOSTS": "true",
        "GEMINI_RESPECT_ROBOTS_TXT": "false",
        "GEMINI_REQUESTS_PER_MINUTE": str(RPM),
    }
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    env_one = daemon_env(tmp_path / "one", **shared)
    env_two = daemon_env(tmp_path / "two", **shared)

    upgrade = _run([sys.executable, "-m", "gophergem", "db", "upgrade"], env_one)
    assert upgrade.returncode == 0, upgrade.stderr
    assert "applied" in upgrade.stdout

    port = unused_loopback_port()
    capsule = Capsule(port, gemini_certs.original)
    try:
        with running(serve_argv, env_one) as one, running(serve_argv, env_two) as two:
            _alternate(one, two, capsule, gemini_certs, redis, alice, bob)
            _told_across(one, two, port, gemini_certs.original, alice, bob)
            _kill_mid_batch(one, two, port, gemini_certs.original, alice)
            assert two.stop() in (0, -signal.SIGTERM), two.output()[-5000:]
            assert "MCP endpoint stopped" in two.output()
            for daemon in (one, two):
                output = daemon.output()
                assert "Traceback" not in output, output[-5000:]
                assert alice not in output and bob not in output
    finally:
        capsule.stop()


def _alternate(
    one: Any,
    two: Any,
    capsule: Capsule,
    certs: GeminiCerts,
    redis: RedisServer,
    alice: str,
    bob: str,
) -> None:
    page = capsule.url("/")

    # A pin made through one replica is the other's too.
    fetched = payload(run_async(lambda: call(one, alice, "gemini_fetch", {"url": page})))
    assert fetched["kind"] == "gemtext", fetched
    fingerprint = fetched["request_info"]["cert_fingerprint"]
    assert fingerprint == certs.original.fingerprint
    listed = payload(run_async(lambda: call(two, bob, "gemini_trust_list", {})))
    assert [(e["host"], e["fingerprint"]) for e in listed["entries"]] == [
        ("localhost", fingerprint)
    ]

    # Alice's identity, made through one, is hers through two; Bob sees none.
    scope = capsule.url("/members/")
    made = payload(
        run_async(
            lambda: call(
                one, alice, "gemini_client_cert_update", {"url": scope, "action": "create"}
            )
        )
    )
    assert made["kind"] == "client_cert_update", made
    hers = payload(run_async(lambda: call(two, alice, "gemini_client_cert_list", {})))
    assert [e["fingerprint"] for e in hers["entries"]] == [made["entry"]["fingerprint"]]
    his = payload(run_async(lambda: call(two, bob, "gemini_client_cert_list", {})))
    assert his["entries"] == []

    # One rate for both: eight fetches, four through each replica at once,
    # start at the capsule 60/RPM seconds apart.
    capsule.starts.clear()

    async def both() -> list[Any]:
        import anyio

        results: list[Any] = []

        async def fetch(daemon: Any, index: int) -> None:
            arguments = {"url": capsule.url(f"/{index}.gmi"), "refresh": True}
            results.append(await call(daemon, alice, "gemini_fetch", arguments))

        async with anyio.create_task_group() as group:
            for index in range(8):
                group.start_soon(fetch, (one, two)[index % 2], index)
        return results

    for result in run_async(both, deadline=60):
        assert payload(result)["kind"] == "gemtext", payload(result)
    rate = start_rate(capsule.starts)
    sys.stderr.write(f"replicas: {rate}\n")
    assert rate.count == 8
    # The slack is one interval: a busy machine may start the first fetch late
    # (never early), which shortens the span; two pacers that did not share
    # would crowd the eight into half of it.
    assert rate.obeys(RPM, slack=60 / RPM), rate

    # The host now presents another key: replica 2 holds the pin replica 1 made.
    capsule.stop()
    changed = Capsule(capsule.port, certs.rekey)
    try:
        refused = payload(
            run_async(
                lambda: call(two, bob, "gemini_fetch", {"url": page, "refresh": True}, asks=False)
            )
        )
        assert refused["kind"] == "error", refused
        assert refused["error"]["code"] == "CERTIFICATE_CHANGED", refused
    finally:
        changed.stop()
    capsule = Capsule(capsule.port, certs.original)
    try:
        # Redis gone: a clear error and a 503; back: both recover.
        redis.stop()
        failed = payload(
            run_async(lambda: call(one, alice, "gemini_fetch", {"url": page, "refresh": True}))
        )
        assert failed["kind"] == "error"
        assert failed["error"]["code"] == "STATE_UNAVAILABLE", failed
        health = http_get(two.port, "/health")
        assert health.status == 503
        assert json.loads(health.body)["unavailable"] == ["redis"]
        redis.start()
        assert http_get(two.port, "/health").status == 200
        for daemon in (one, two):
            back = payload(
                run_async(
                    lambda daemon=daemon: call(
                        daemon, alice, "gemini_fetch", {"url": page, "refresh": True}
                    )
                )
            )
            assert back["kind"] == "gemtext", back
    finally:
        capsule.stop()


def _told_across(one: Any, two: Any, port: int, cert: CertPair, alice: str, bob: str) -> None:
    """
    A change made through replica 1 reaches the listeners on replica 2 of
    the principal it concerns, and no one else's.
    """
    import anyio

    updates = "gophergem://feeds/updates"
    heard: dict[str, list[Any]] = {"alice": [], "bob": []}

    async def listening(who: str, token: str, ready: anyio.Event) -> None:
        async with (
            bearer_session(two.url, token, ERA) as session,
            session.listen(resource_subscriptions=[updates]) as stream,
        ):
            ready.set()
            async for event in stream:
                heard[who].append(event)

    async def scene() -> None:
        async with anyio.create_task_group() as group:
            readies = [anyio.Event(), anyio.Event()]
            group.start_soon(listening, "alice", alice, readies[0])
            group.start_soon(listening, "bob", bob, readies[1])
            for ready in readies:
                await ready.wait()
            made = await call(one, alice, "feed_subscribe", {"url": capsule.url("/told.gmi")})
            assert payload(made)["kind"] == "subscription", payload(made)
            with anyio.fail_after(10):
                while not heard["alice"]:
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)
            group.cancel_scope.cancel()

    capsule = Capsule(port, cert)
    try:
        run_async(scene, deadline=60)
    finally:
        capsule.stop()
    assert [str(event.uri) for event in heard["alice"]] == [updates]
    assert heard["bob"] == []


def _kill_mid_batch(one: Any, two: Any, port: int, cert: CertPair, alice: str) -> None:
    """
    Killing replica 1 (SIGKILL) while it runs a batch loses nothing it had
    acknowledged: Alice's subscriptions, made through it, are all there
    through replica 2, which runs the same batch again.
    """
    capsule = Capsule(port, cert)
    try:
        feeds = [capsule.url(f"/log{index}.gmi") for index in range(3)]
        for url in feeds:
            made = payload(
                run_async(lambda url=url: call(one, alice, "feed_subscribe", {"url": url}))
            )
            assert made["kind"] == "subscription", made
        batch = {"urls": [capsule.url(f"/batch{index}.gmi") for index in range(4)]}

        async def batch_then_kill() -> None:
            import anyio

            async with anyio.create_task_group() as group:

                async def doomed() -> None:
                    with contextlib.suppress(Exception):
                        await call(one, alice, "gemini_batch_fetch", batch)

                group.start_soon(doomed)
                started = time.monotonic()
                while len(capsule.starts) < 1 and time.monotonic() - started < 10:
                    await anyio.sleep(0.02)
                one.process.send_signal(signal.SIGKILL)
                group.cancel_scope.cancel()

        capsule.starts.clear()
        run_async(batch_then_kill, deadline=30)
        assert one.process.wait(timeout=10) == -signal.SIGKILL
        listed = payload(run_async(lambda: call(two, alice, "feed_list", {})))
        assert set(feeds) <= {e["url"] for e in listed["entries"]}
        again = payload(run_async(lambda: call(two, alice, "gemini_batch_fetch", batch)))
        assert [r["kind"] for r in again["result"]] == ["gemtext"] * 4, again
    finally:
        capsule.stop()


def _serve_until_exit(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run(serve_argv(unused_loopback_port()), env)


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run C{argv} to the end in the repository, its output captured as text."""
    return subprocess.run(
        argv,
        env=env,
        cwd=str(REPO_ROOT),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_replica_without_its_state_does_not_serve(tmp_path: Path, postgres_url: str) -> None:
    """
    A database nobody answers at, or one whose schema is behind, stops the
    replica before it listens: one line, exit status 1, no password, no
    traceback.
    """
    (tmp_path / "db.key").write_text(os.urandom(32).hex() + "\n")
    base = daemon_env(
        tmp_path,
        GOPHERGEM_DATABASE_KEY_FILE=str(tmp_path / "db.key"),
        GOPHERGEM_STATE_TIMEOUT_SECONDS="1",
    )
    nobody = _serve_until_exit(
        {**base, "GOPHERGEM_DATABASE_URL": "postgresql://gg:s3cret@127.0.0.1:1/gophergem"}
    )
    assert nobody.returncode == 1, nobody.stderr
    said = [line for line in nobody.stderr.splitlines() if line.startswith("gophergem: ")]
    assert said == [
        "gophergem: STATE_UNAVAILABLE: PostgreSQL could not be reached within 1 second."
    ]
    assert "s3cret" not in nobody.stderr + nobody.stdout
    assert "Traceback" not in nobody.stderr

    behind = _serve_until_exit(
        {**base, "GOPHERGEM_DATABASE_URL": fresh_database(postgres_url, "gophergem_behind")}
    )
    assert behind.returncode == 1, behind.stderr
    assert (
        "gophergem: the database schema is behind this version: run gophergem db upgrade"
        in behind.stderr.splitlines()
    )
    assert "Traceback" not in behind.stderr


def test_a_replica_with_redis_alone_serves(tmp_path: Path, gopher_server: GopherServer) -> None:
    """
    C{GOPHERGEM_REDIS_URL} without a database: C{gophergem serve} and
    C{twistd} start, serve a fetch through the SDK client with the caches in
    Redis, and C{/health} asks Redis; an unreachable Redis is one line and
    exit status 1.
    """
    import redis as redis_py
    from mcp import Client

    binary = find_redis_server()
    if binary is None:
        pytest.skip("redis-server is not installed")
    redis = RedisServer(binary, tmp_path)
    redis.start()
    try:
        env = daemon_env(
            tmp_path, GOPHERGEM_REDIS_URL=redis.url, GOPHERGEM_STATE_TIMEOUT_SECONDS="1"
        )
        menu = f"gopher://{gopher_server.host}:{gopher_server.port}/"
        for argv in (serve_argv, http_daemon_argv):
            with running(argv, env) as daemon:

                async def fetch(daemon: Any = daemon) -> Any:
                    async with Client(daemon.url, mode=ERA) as client:
                        return await client.call_tool("gopher_fetch", {"url": menu})

                fetched = tool_payload(run_async(fetch))
                assert fetched["kind"] == "menu", fetched
                health = http_get(daemon.port, "/health")
                assert health.status == 200, health.body
                assert daemon.stop() in (0, -signal.SIGTERM)
                assert "Traceback" not in daemon.output(), daemon.output()[-5000:]
        with redis_py.Redis.from_url(redis.url) as direct:
            assert direct.keys("gophergem:*"), "nothing was shared through Redis"
    finally:
        redis.stop()
    away = _serve_until_exit(
        {**env, "GOPHERGEM_REDIS_URL": f"redis://:s3cret@{LOOPBACK}:{redis.port}/0"}
    )
    assert away.returncode == 1, away.stderr
    said = [line for line in away.stderr.splitlines() if line.startswith("gophergem: ")]
    assert said == ["gophergem: STATE_UNAVAILABLE: Redis could not be reached."]
    assert "s3cret" not in away.stderr + away.stdout
    assert "Traceback" not in away.stderr


def test_postgresql_outage_is_a_clear_error_and_heals(
    tmp_path: Path, gemini_certs: GeminiCerts
) -> None:
    """
    PostgreSQL stopped under a running replica: calls that need it are
    STATE_UNAVAILABLE within the state timeout and /health is 503 naming
    it; once it is back, the replica serves again without a restart.
    """
    from tests.servers.postgres import _as_server_user, find_binaries, start_postgres

    binaries = find_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL is not installed")
    base = Path(tempfile.mkdtemp(prefix="gophergem-pg-outage-"))  # the server's user must reach it
    server, data = start_postgres(base, binaries)
    port = int(server.rsplit(":", 1)[1].split("/")[0])

    def pg_ctl(*argv: str) -> None:
        subprocess.run(
            _as_server_user([str(binaries / "pg_ctl"), "-D", str(data), *argv]),
            capture_output=True,
            timeout=60,
            check=True,
        )

    def start() -> None:
        options = f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off"
        pg_ctl("-l", str(base / "pg.log"), "-w", "-t", "30", "-o", options, "start")

    try:
        database = fresh_database(server, "gophergem_outage")
        alice, env = _gemini_daemon_on(tmp_path, database, GOPHERGEM_STATE_TIMEOUT_SECONDS="1")
        capsule = Capsule(unused_loopback_port(), gemini_certs.original)
        try:
            with running(serve_argv, env) as daemon:
                page = {"url": capsule.url("/"), "refresh": True}
                ok = payload(run_async(lambda: call(daemon, alice, "gemini_fetch", page)))
                assert ok["kind"] == "gemtext", ok

                pg_ctl("-m", "immediate", "-w", "stop")
                started = time.monotonic()
                down = payload(run_async(lambda: call(daemon, alice, "gemini_fetch", page)))
                assert down["kind"] == "error", down
                assert down["error"]["code"] == "STATE_UNAVAILABLE", down
                listed = payload(run_async(lambda: call(daemon, alice, "feed_list", {})))
                assert listed["error"]["code"] == "STATE_UNAVAILABLE", listed
                assert time.monotonic() - started < 15
                health = http_get(daemon.port, "/health")
                assert health.status == 503
                assert json.loads(health.body)["unavailable"] == ["postgresql"]

                start()
                restarted = time.monotonic()
                deadline = time.monotonic() + 30
                while http_get(daemon.port, "/health").status != 200:
                    assert time.monotonic() < deadline, "the replica did not recover"
                    time.sleep(0.2)
                sys.stderr.write(f"recovered in {time.monotonic() - restarted:.2f} s\n")
                back = payload(run_async(lambda: call(daemon, alice, "gemini_fetch", page)))
                assert back["kind"] == "gemtext", back
                assert daemon.stop() in (0, -signal.SIGTERM)
                output = daemon.output()
                assert "Traceback" not in output, output[-5000:]
                assert alice not in output
        finally:
            capsule.stop()
    finally:
        subprocess.run(
            _as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)


def _post_call(port: int, token: str, name: str, arguments: dict[str, Any]) -> str:
    """One tool call as a plain 2026-07-28 JSON-RPC POST; what it answered."""
    import http.client

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": ERA,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    )
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": ERA,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=60)
    try:
        connection.request("POST", "/mcp", body, headers)
        response = connection.getresponse()
        text = response.read().decode("utf-8")
    finally:
        connection.close()
    if response.status != 200:
        return f"HTTP {response.status}"
    if not text.lstrip().startswith("{"):
        text = [line[6:] for line in text.splitlines() if line.startswith("data: ")][-1]
    result = json.loads(text).get("result") or {}
    content = result.get("structuredContent") or {}
    if content.get("kind") == "error":
        return str(content["error"]["code"])
    return "ok"


def test_a_postgresql_crash_under_load_is_bounded_and_heals(
    tmp_path: Path, gemini_certs: GeminiCerts
) -> None:
    """
    Every process of PostgreSQL killed (SIGKILL) while 60 calls run: each
    call answers, done or STATE_UNAVAILABLE, within the state timeout of
    the crash (none waits for the fetch's own deadline); acknowledged
    writes are all there afterwards; /health is 503 while the database is
    gone and 200 within 5 seconds of its return.
    """
    import psycopg

    from tests.servers.postgres import (
        _as_server_user,
        crash_postgres,
        find_binaries,
        restart_postgres,
        start_postgres,
    )

    binaries = find_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL is not installed")
    bound = 2.0  # GOPHERGEM_STATE_TIMEOUT_SECONDS, the documented default
    slack = 3.0  # scheduling on a busy machine; a hung call waits 20 s
    base = Path(tempfile.mkdtemp(prefix="gophergem-pg-crash-"))  # the server's user must reach it
    server, data = start_postgres(base, binaries)
    port = int(server.rsplit(":", 1)[1].split("/")[0])
    try:
        database = fresh_database(server, "gophergem_crash")
        with psycopg.connect(server, autocommit=True) as admin:
            # Durable commits, as in production (the test server's default is off).
            admin.execute("ALTER DATABASE gophergem_crash SET synchronous_commit = on")
        alice, env = _gemini_daemon_on(
            tmp_path,
            database,
            GOPHERGEM_FEEDS_CHECK_INTERVAL_SECONDS="0",
            GEMINI_TIMEOUT_SECONDS="20",
        )
        capsule = Capsule(unused_loopback_port(), gemini_certs.original)
        try:
            with running(serve_argv, env) as daemon:
                page = {"url": capsule.url("/"), "refresh": True}
                assert _post_call(daemon.port, alice, "gemini_fetch", page) == "ok"

                calls: list[tuple[str, dict[str, Any]]] = []
                for index in range(60):
                    if index % 3 == 2:
                        calls.append(("feed_subscribe", {"url": capsule.url(f"/log{index}.gmi")}))
                    else:
                        calls.append(("gemini_fetch", page))
                outcomes: list[tuple[str, dict[str, Any], float, float, str]] = []

                def one(name: str, arguments: dict[str, Any]) -> None:
                    started = time.monotonic()
                    answer = _post_call(daemon.port, alice, name, arguments)
                    outcomes.append((name, arguments, started, time.monotonic(), answer))

                threads = [threading.Thread(target=one, args=call) for call in calls]
                capsule.starts.clear()
                for thread in threads:
                    thread.start()
                deadline = time.monotonic() + 30
                while len(capsule.starts) < 5 and time.monotonic() < deadline:
                    time.sleep(0.01)
                killed = time.monotonic()
                assert crash_postgres(data) >= 1
                for thread in threads:
                    thread.join(timeout=60)

                answers = {answer for *_, answer in outcomes}
                assert len(outcomes) == 60
                assert answers <= {"ok", "STATE_UNAVAILABLE"}, answers
                assert "STATE_UNAVAILABLE" in answers
                late = [
                    ended - max(started, killed)
                    for _, _, started, ended, _ in outcomes
                    if ended > killed
                ]
                sys.stderr.write(
                    f"crash: {len(late)} calls answered after the kill, "
                    f"the slowest {max(late, default=0):.2f} s after it\n"
                )
                assert max(late, default=0) < bound + slack, late

                assert _post_call(daemon.port, alice, "feed_list", {}) == "STATE_UNAVAILABLE"
                health = http_get(daemon.port, "/health")
                assert health.status == 503
                assert json.loads(health.body)["unavailable"] == ["postgresql"]

                restart_postgres(base, binaries, data, port)
                back = time.monotonic()
                while http_get(daemon.port, "/health").status != 200:
                    assert time.monotonic() - back < 5.0, "not healthy 5 s after the return"
                    time.sleep(0.05)
                sys.stderr.write(f"healthy {time.monotonic() - back:.2f} s after the return\n")
                assert _post_call(daemon.port, alice, "gemini_fetch", page) == "ok"

                with psycopg.connect(database, autocommit=True) as connection:
                    rows = connection.execute("SELECT url FROM gophergem_subscriptions")
                    stored = {row[0] for row in rows.fetchall()}
                acknowledged = {
                    arguments["url"]
                    for name, arguments, *_, answer in outcomes
                    if name == "feed_subscribe" and answer == "ok"
                }
                assert acknowledged <= stored
                assert daemon.stop() in (0, -signal.SIGTERM)
                output = daemon.output()
                assert "Traceback" not in output, output[-5000:]
                assert alice not in output
        finally:
            capsule.stop()
    finally:
        subprocess.run(
            _as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)
