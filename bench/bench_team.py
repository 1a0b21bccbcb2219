#!/usr/bin/env python
"""
Benchmark the team server, entirely on loopback: calls per second through
one and through two replicas sharing PostgreSQL and Redis, against one
replica with the embedded file stores (issue 15, section 3).

    python bench/bench_team.py [--clients C] [--calls N] [--rounds R] [--quick]

It starts a threaded Gopher server on 127.0.0.1 (bench/servers.py), a
throwaway PostgreSQL and a throwaway Redis on 127.0.0.1
(tests/servers/postgres.py and tests/servers/redis.py), and four daemons,
each C{python -m gophergem serve --transport http} on 127.0.0.1:

  1. C{file}: one replica with the file stores;
  2. C{shared}: one replica with GOPHERGEM_DATABASE_URL and
     GOPHERGEM_REDIS_URL (a database and a Redis database of its own);
  3. C{pair}: two replicas sharing one database and one Redis database,
     the clients split between them.

Every daemon reads one token file with a token per client (so every call
is authenticated and belongs to a principal), has pacing off
(C{*_REQUESTS_PER_MINUTE=0}), robots.txt off and local hosts allowed.
C client threads each keep one HTTP connection and post plain JSON-RPC
C{tools/call} requests in the 2026-07-28 era (no session, no
initialize): N cached C{gopher_fetch} calls of one menu, then N uncached
ones (C{refresh=true}).  Setups take turns in every round (the order
rotates), and the table gives each setup's median over the rounds, and
its ratio to setup 1.

Nothing here talks to anything outside 127.0.0.0/8.  Everything started
(daemons, servers, temporary directories) is stopped and removed on exit,
Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
for _path in (BENCH_DIR, REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_gopher import loopback_env  # noqa: E402
from servers import GopherServer  # noqa: E402
from stdio_raw import run_footer  # noqa: E402

from gophergem.auth.tokens import add_token  # noqa: E402
from tests.helpers.daemon import serve_argv  # noqa: E402
from tests.servers.postgres import _stop as stop_postgres  # noqa: E402
from tests.servers.postgres import find_binaries, start_postgres  # noqa: E402
from tests.servers.redis import RedisServer, find_redis_server  # noqa: E402

LOOPBACK = "127.0.0.1"
ERA = "2026-07-28"
START_DEADLINE = 60.0  # seconds a daemon has to answer /health
STOP_DEADLINE = 20.0  # seconds a daemon has to exit after SIGTERM
CALL_TIMEOUT = 30.0


class BenchError(RuntimeError):
    """The benchmark could not measure what it meant to."""


class Interrupted(BaseException):
    """Ctrl-C, SIGTERM or the overall deadline."""


def interrupt_after(deadline: float) -> None:
    """
    Raise L{Interrupted} on Ctrl-C, SIGTERM or once C{deadline} seconds have
    passed (a benchmark fails rather than hangs), once: stopping everything
    is not itself interrupted by another signal.
    """

    def interrupt(signum: int, frame: Any) -> None:
        for other in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
            signal.signal(other, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
        signal.signal(signum, interrupt)
    signal.setitimer(signal.ITIMER_REAL, deadline)


# --------------------------------------------------------------------------
# Processes and peers
# --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def base_env(cap: int | None) -> dict[str, str]:
    """
    The benchmark's environment (L{bench_gopher.loopback_env}); C{cap},
    when given, is C{GOPHER_MAX_CONCURRENT_REQUESTS}.
    """
    env = loopback_env()
    if cap is not None:
        env["GOPHER_MAX_CONCURRENT_REQUESTS"] = str(cap)
    return env


def health(port: int) -> int:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=5)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


class Daemon:
    """One C{gophergem serve --transport http} on 127.0.0.1, its output in a file."""

    def __init__(self, name: str, env: dict[str, str], tmp: Path) -> None:
        self.name = name
        self.port = free_port()
        self.log_path = tmp / f"{name}.log"
        self._log: IO[bytes] = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            serve_argv(self.port),
            env=env,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the bench, which stops it in order
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"daemon {self.name} exited at start: {self.tail()}")
            with contextlib.suppress(OSError):
                if health(self.port) == 200:
                    return
            time.sleep(0.05)
        raise BenchError(f"daemon {self.name} did not answer /health: {self.tail()}")

    def tail(self, size: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-size:]

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM (if not sent yet), wait for the exit, kill after L{STOP_DEADLINE}."""
        self.terminate()
        try:
            self.process.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._log.close()


def stop_all(daemons: list[Daemon]) -> None:
    """Stop the daemons together (each drains its calls for a moment)."""
    for daemon in daemons:
        daemon.terminate()
    for daemon in daemons:
        daemon.stop()


def fresh_database(server_url: str, name: str) -> str:
    """Create the database C{name} on the throwaway server; return its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True, connect_timeout=10) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name


def db_upgrade(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gophergem", "db", "upgrade"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"gophergem db upgrade failed: {done.stderr.strip()[-2000:]}")


class Setup:
    """One of the three setups: its daemons, and which one each client uses."""

    def __init__(self, key: str, title: str, daemons: list[Daemon]) -> None:
        self.key = key
        self.title = title
        self.daemons = daemons

    def port_of(self, client: int) -> int:
        return self.daemons[client % len(self.daemons)].port


@contextlib.contextmanager
def peers(
    tmp: Path, clients: int, cap: int | None
) -> Iterator[tuple[GopherServer, list[Setup], list[str]]]:
    """Start everything; stop it all on the way out, whatever happened."""
    binaries = find_binaries()
    redis_binary = find_redis_server()
    if binaries is None or redis_binary is None:
        raise BenchError(
            "PostgreSQL (initdb, pg_ctl) and redis-server must be installed "
            "(bash .ci/peers.sh installs them)"
        )
    with contextlib.ExitStack() as stack:
        gopher = GopherServer(LOOPBACK)
        stack.callback(gopher.stop)
        gopher.start()

        # PostgreSQL's directory must be reachable by its own user when we
        # are root, so it lives beside tmp rather than inside it.
        pg_base = Path(tempfile.mkdtemp(prefix="gophergem-bench-pg-"))
        stack.callback(shutil.rmtree, pg_base, True)
        pg_data = pg_base / "data"
        stack.callback(lambda: stop_postgres(binaries, pg_data))
        pg_url, pg_data = start_postgres(pg_base, binaries)

        redis_dir = tmp / "redis"
        redis_dir.mkdir()
        redis = RedisServer(redis_binary, redis_dir)
        stack.callback(redis.stop)
        redis.start()

        tokens_file = tmp / "tokens.json"
        tokens = [add_token(tokens_file, f"client{i}") for i in range(1, clients + 1)]
        (tmp / "db.key").write_text(os.urandom(32).hex() + "\n")
        (tmp / "state.keys").write_text(os.urandom(32).hex() + "\n")

        def env(name: str, database: str | None = None, redis_db: int | None = None) -> dict:
            home = tmp / name
            home.mkdir(exist_ok=True)
            values = base_env(cap)
            values.update(
                XDG_DATA_HOME=str(home),  # the file stores, where they are used
                GOPHERGEM_AUTH_TOKENS_FILE=str(tokens_file),
                GOPHERGEM_REQUEST_STATE_KEYS_FILE=str(tmp / "state.keys"),
            )
            if database is not None:
                values.update(
                    GOPHERGEM_DATABASE_URL=database,
                    GOPHERGEM_DATABASE_KEY_FILE=str(tmp / "db.key"),
                    GOPHERGEM_REDIS_URL=f"redis://{LOOPBACK}:{redis.port}/{redis_db}",
                )
            return values

        one_db = fresh_database(pg_url, "bench_one")
        pair_db = fresh_database(pg_url, "bench_pair")
        db_upgrade(env("upgrade-one", one_db, 1))
        db_upgrade(env("upgrade-pair", pair_db, 2))

        all_daemons: list[Daemon] = []
        stack.callback(stop_all, all_daemons)

        def daemon(name: str, values: dict[str, str]) -> Daemon:
            started = Daemon(name, values, tmp)
            all_daemons.append(started)
            return started

        file_d = daemon("file", env("file"))
        shared_d = daemon("shared", env("shared", one_db, 1))
        pair_a = daemon("pair-a", env("pair-a", pair_db, 2))
        pair_b = daemon("pair-b", env("pair-b", pair_db, 2))
        for started in all_daemons:
            started.wait_ready()
        setups = [
            Setup("file", "1 replica, file stores", [file_d]),
            Setup("shared", "1 replica, PostgreSQL + Redis", [shared_d]),
            Setup("pair", "2 replicas, one PostgreSQL + one Redis", [pair_a, pair_b]),
        ]
        try:
            yield gopher, setups, tokens
        except BenchError:
            for started in all_daemons:
                sys.stderr.write(f"--- tail of {started.name}.log ---\n{started.tail()}\n")
            raise


# --------------------------------------------------------------------------
# The load
# --------------------------------------------------------------------------


def call_body(url: str, refresh: bool, call_id: int) -> bytes:
    arguments: dict[str, Any] = {"url": url}
    if refresh:
        arguments["refresh"] = True
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": call_id,
            "method": "tools/call",
            "params": {
                "name": "gopher_fetch",
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": ERA,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()


def rpc_message(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a JSON or event-stream answer."""
    text = body.decode("utf-8")
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    if not data:
        raise BenchError(f"no JSON-RPC message in the answer: {text[:300]}")
    return dict(json.loads(data[-1]))


class Client:
    """One caller: one token, one keep-alive connection to one daemon."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": ERA,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "gopher_fetch",
        }
        self.connection = http.client.HTTPConnection(LOOPBACK, port, timeout=CALL_TIMEOUT)
        self.ids = 0

    def fetch(self, url: str, refresh: bool) -> None:
        self.ids += 1
        self.connection.request("POST", "/mcp", call_body(url, refresh, self.ids), self.headers)
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise BenchError(f"HTTP {response.status} from port {self.port}: {body[:300]!r}")
        result = rpc_message(body).get("result")
        if not isinstance(result, dict) or result.get("isError"):
            raise BenchError(f"gopher_fetch failed on port {self.port}: {body[:500]!r}")
        kind = (result.get("structuredContent") or {}).get("kind")
        if kind != "menu":
            raise BenchError(f"gopher_fetch gave kind {kind!r}: {body[:500]!r}")

    def close(self) -> None:
        self.connection.close()


def run_load(clients: list[Client], url: str, refresh: bool, calls: int) -> tuple[float, list]:
    """
    Every client makes C{calls} calls at once (threads, released together);
    return the wall time from the release to the last answer, and every
    call's latency.
    """
    gate = threading.Barrier(len(clients) + 1)
    latencies: list[float] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    lock = threading.Lock()

    def work(client: Client) -> None:
        mine: list[float] = []
        try:
            gate.wait(timeout=CALL_TIMEOUT)
            for _ in range(calls):
                if stop.is_set():
                    return
                t0 = time.perf_counter()
                client.fetch(url, refresh)
                mine.append(time.perf_counter() - t0)
        except BaseException as error:
            errors.append(error)
            stop.set()
        finally:
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in clients]
    for thread in threads:
        thread.start()
    try:
        gate.wait(timeout=CALL_TIMEOUT)
        t0 = time.perf_counter()
        for thread in threads:
            while thread.is_alive():  # joins that Ctrl-C can interrupt
                thread.join(0.2)
        wall = time.perf_counter() - t0
    except BaseException:
        stop.set()
        raise
    if errors:
        error = errors[0]
        raise error if isinstance(error, BenchError) else BenchError(f"{error!r}")
    return wall, latencies


def measure(
    args: argparse.Namespace, gopher: GopherServer, setups: list[Setup], tokens: list[str]
) -> dict[str, Any]:
    url = gopher.url("1")
    clients = {
        s.key: [Client(s.port_of(i), tokens[i]) for i in range(args.clients)] for s in setups
    }
    results: dict[str, Any] = {"warm": {}}
    try:
        # Warm-up: every client's connection and principal once, every
        # replica's cache filled (through each replica of the pair).
        # One download each: the pair's second replica finds the menu in
        # the cache the first one filled in Redis.
        for setup in setups:
            before = gopher.requests
            for client in clients[setup.key]:
                client.fetch(url, False)
            results["warm"][setup.key] = gopher.requests - before
            if results["warm"][setup.key] < 1:
                raise BenchError(f"{setup.key}: the warm-up call downloaded nothing")
        for rnd in range(args.rounds):
            order = setups[rnd % len(setups) :] + setups[: rnd % len(setups)]
            for setup in order:
                for kind, refresh in (("cached", False), ("uncached", True)):
                    before = gopher.requests
                    wall, latencies = run_load(clients[setup.key], url, refresh, args.calls)
                    total = args.clients * args.calls
                    downloads = gopher.requests - before
                    expected = total if refresh else 0
                    if downloads != expected:
                        raise BenchError(
                            f"{setup.key} {kind}: the Gopher server answered {downloads} "
                            f"requests for {total} calls (expected {expected})"
                        )
                    results.setdefault((setup.key, kind), []).append(
                        (total / wall, statistics.median(latencies), latencies)
                    )
    finally:
        for group in clients.values():
            for client in group:
                client.close()
    return results


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


def table(args: argparse.Namespace, setups: list[Setup], r: dict[str, Any]) -> str:
    def rate(key: str, kind: str) -> float:
        return statistics.median(x[0] for x in r[(key, kind)])

    def lat(key: str, kind: str) -> tuple[float, float]:
        every = [v for x in r[(key, kind)] for v in x[2]]
        return statistics.median(every) * 1000, p90(every) * 1000

    header = (
        "setup",
        "cached calls/s",
        "vs 1",
        "uncached calls/s",
        "vs 1",
        "cached ms p50/p90",
        "uncached ms p50/p90",
    )
    base_c, base_u = rate("file", "cached"), rate("file", "uncached")
    rows = []
    for number, setup in enumerate(setups, 1):
        c, u = rate(setup.key, "cached"), rate(setup.key, "uncached")
        cl, ul = lat(setup.key, "cached"), lat(setup.key, "uncached")
        rows.append(
            (
                f"{number}. {setup.title}",
                f"{c:.0f}",
                f"{c / base_c:.2f}x",
                f"{u:.0f}",
                f"{u / base_u:.2f}x",
                f"{cl[0]:.1f} / {cl[1]:.1f}",
                f"{ul[0]:.1f} / {ul[1]:.1f}",
            )
        )
    widths = [max(len(x[i]) for x in (header, *rows)) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        return " | ".join(
            [cells[0].ljust(widths[0])]
            + [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        )

    cap = "default (5)" if args.cap is None else str(args.cap)
    title = (
        f"[team server: gopher_fetch of one 48-item menu, {args.clients} clients at once, "
        f"GOPHER_MAX_CONCURRENT_REQUESTS {cap}, "
        f"{args.calls} calls each per run, {args.rounds} round(s); calls/s = median over rounds; "
        f"latency over every call]"
    )
    out = [title, line(header), "-+-".join("-" * w for w in widths)]
    out += [line(row) for row in rows]
    per_round = {
        f"{key}/{kind}": " ".join(f"{x[0]:.0f}" for x in r[(key, kind)])
        for key in ("file", "shared", "pair")
        for kind in ("cached", "uncached")
    }
    out.append("per round, calls/s: " + "; ".join(f"{k} {v}" for k, v in per_round.items()))
    warm = ", ".join(f"{k} {v}" for k, v in r["warm"].items())
    out.append(f"warm-up downloads (one call per client): {warm}")
    out.append(
        "checks: cached runs downloaded nothing, every uncached call downloaded once "
        "(counted at the Gopher server); all traffic inside 127.0.0.0/8; "
        "auth: token file, one principal per client; pacing off (*_REQUESTS_PER_MINUTE=0); "
        "era 2026-07-28 (plain JSON-RPC POSTs, keep-alive)"
    )
    return "\n".join(out)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--calls", type=int, default=None, help="calls per client per run (60)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of every setup (5)")
    parser.add_argument(
        "--cap",
        type=int,
        default=None,
        help="GOPHER_MAX_CONCURRENT_REQUESTS for every daemon (default: gophergem's, 5)",
    )
    parser.add_argument("--quick", action="store_true", help="a short CI smoke run")
    args = parser.parse_args(argv)
    if args.calls is None:
        args.calls = 15 if args.quick else 60
    if args.rounds is None:
        args.rounds = 1 if args.quick else 5
    if min(args.clients, args.calls, args.rounds) < 1:
        parser.error("--clients, --calls and --rounds must be at least 1")
    deadline = 90.0 if args.quick else 900.0  # fail rather than hang
    interrupt_after(deadline)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="gophergem-bench-team-") as tmp,
            peers(Path(tmp), args.clients, args.cap) as (gopher, setups, tokens),
        ):
            results = measure(args, gopher, setups, tokens)
            signal.setitimer(signal.ITIMER_REAL, 0)
            # Stopping everything is not interrupted by a second signal.
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, signal.SIG_IGN)
    except Interrupted as why:
        signal.setitimer(signal.ITIMER_REAL, 0)
        what = "gave up after the deadline" if str(why) == "SIGALRM" else "interrupted"
        print(f"bench_team: {what}; everything stopped", file=sys.stderr)
        return 1 if str(why) == "SIGALRM" else 130
    except (BenchError, OSError, subprocess.SubprocessError) as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        print(f"bench_team: FAILED: {error}", file=sys.stderr)
        return 1
    print(table(args, setups, results))
    print(run_footer(t0, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
