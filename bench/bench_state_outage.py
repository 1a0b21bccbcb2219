#!/usr/bin/env python
"""
Measure a PostgreSQL crash under load, entirely on loopback (issue 21,
item 4): how long calls take while the database is gone, what they
answer, and how soon the replicas are healthy once it is back.

    python bench/bench_state_outage.py [--calls N] [--kill-at S] [--quick]

It starts a threaded Gemini capsule on 127.0.0.1 (bench/servers.py), a
throwaway PostgreSQL and a throwaway Redis on 127.0.0.1
(tests/servers/postgres.py and tests/servers/redis.py), and two replicas,
each C{python -m gophergem serve --transport http} sharing both, with a
token file (one principal per client), local hosts allowed, pacing and
robots.txt off and C{GEMINI_MAX_CONCURRENT_REQUESTS=50}; the state
timeout is the default (C{GOPHERGEM_STATE_TIMEOUT_SECONDS}, 2 s).  Then:

  0. with C{--calm}, C{calm}: N calls at once with every server up;
  1. C{crash}: N calls at once (threads, one connection each, split over
     both replicas, plain JSON-RPC POSTs of the 2026-07-28 era): two
     thirds C{gemini_fetch} with C{refresh=true} (the pin is read from
     PostgreSQL), the rest C{feed_list} and C{feed_subscribe} of a URL of
     its own (a write); C{--kill-at} seconds after the release, every
     process of the PostgreSQL server is killed with SIGKILL;
  2. C{down}: once every call of 1 has answered, N calls again, with the
     database still gone; C{/health} of both replicas;
  3. PostgreSQL is started again (crash recovery); from the moment
     C{pg_ctl start -w} returns, each replica's C{/health} is polled every
     50 ms: the time to its first 200, and to a C{feed_list} that works;
  4. C{after}: N calls again;
  5. nothing lost: every C{feed_subscribe} answered as done is in the
     database.

The database of the run commits durably (C{synchronous_commit=on}; the
throwaway server's default is off, which can lose acknowledged commits in a
crash whatever the client does).  The table gives, per wave, what the
calls answered (ok, STATE_UNAVAILABLE,
TIMEOUT, other), their slowest and median latency, and the slowest time
from the crash to an answer of a call that was running then.

Nothing here talks to anything outside 127.0.0.0/8.  Everything started
is stopped and removed on exit, Ctrl-C and SIGTERM included; the whole run
gives up after a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
for _path in (BENCH_DIR, REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_gopher import loopback_env  # noqa: E402
from bench_team import (  # noqa: E402
    BenchError,
    Daemon,
    Interrupted,
    db_upgrade,
    fresh_database,
    health,
    interrupt_after,
    rpc_message,
    stop_all,
)
from servers import GeminiServer  # noqa: E402
from stdio_raw import run_footer  # noqa: E402

from gophergem.auth.tokens import add_token  # noqa: E402
from tests.servers.postgres import _stop as stop_postgres  # noqa: E402
from tests.servers.postgres import (  # noqa: E402
    crash_postgres,
    find_binaries,
    restart_postgres,
    start_postgres,
)
from tests.servers.redis import RedisServer, find_redis_server  # noqa: E402

LOOPBACK = "127.0.0.1"
ERA = "2026-07-28"
CALL_TIMEOUT = 90.0  # the client's own limit: longer than any server deadline
PRINCIPALS = 30


# --------------------------------------------------------------------------
# PostgreSQL: crash and restart
# --------------------------------------------------------------------------


class Database:
    """The throwaway server, which this script kills and starts again."""

    def __init__(self, base: Path, binaries: Path) -> None:
        self.base = base
        self.binaries = binaries
        self.url, self.data = start_postgres(base, binaries)
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def crash(self) -> int:
        """SIGKILL to every process of the server at once; return how many."""
        return crash_postgres(self.data)

    def start(self) -> None:
        """Start the server again (crash recovery) and wait for it."""
        restart_postgres(self.base, self.binaries, self.data, self.port)

    def stop(self) -> None:
        stop_postgres(self.binaries, self.data)


# --------------------------------------------------------------------------
# Calls
# --------------------------------------------------------------------------


def tool_call(name: str, arguments: dict[str, Any], call_id: int) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": call_id,
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
    ).encode()


class Outcome:
    """One call: what it was, when it ran, what it answered."""

    def __init__(self, tool: str, port: int, url: str | None) -> None:
        self.tool = tool
        self.port = port
        self.url = url
        self.started = 0.0
        self.ended = 0.0
        self.answer = "?"

    @property
    def latency(self) -> float:
        return self.ended - self.started


def call(port: int, token: str, tool: str, arguments: dict[str, Any], outcome: Outcome) -> None:
    """Make one call on its own connection; record what it answered."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": ERA,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=CALL_TIMEOUT)
    outcome.started = time.monotonic()
    try:
        connection.request("POST", "/mcp", tool_call(tool, arguments, 1), headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            outcome.answer = f"HTTP {response.status}"
            return
        result = rpc_message(body).get("result")
        if not isinstance(result, dict):
            outcome.answer = "JSON-RPC error"
            return
        content = result.get("structuredContent") or {}
        if content.get("kind") == "error":
            outcome.answer = str(content.get("error", {}).get("code", "error"))
        else:
            outcome.answer = "ok"
    except TimeoutError:
        outcome.answer = "client timeout"
    except (OSError, ValueError, BenchError) as error:
        outcome.answer = f"failed ({type(error).__name__})"
    finally:
        outcome.ended = time.monotonic()
        connection.close()


class Load:
    """The calls of the run, and the URLs the writes subscribe to."""

    def __init__(self, capsule: GeminiServer, ports: list[int], tokens: list[str]) -> None:
        self.capsule = capsule
        self.ports = ports
        self.tokens = tokens
        self.serial = 0

    def plan(self, count: int) -> list[tuple[int, str, str, dict[str, Any], Outcome]]:
        """C{count} calls: 2/3 gemini_fetch, 1/6 feed_list, 1/6 feed_subscribe."""
        planned = []
        for index in range(count):
            self.serial += 1
            port = self.ports[index % len(self.ports)]
            token = self.tokens[index % len(self.tokens)]
            url = None
            kind = index % 6
            if kind < 4:
                tool = "gemini_fetch"
                arguments: dict[str, Any] = {"url": self.capsule.url("/"), "refresh": True}
            elif kind == 4:
                tool, arguments = "feed_list", {}
            else:
                url = self.capsule.url(f"/log/{self.serial}.gmi")
                tool, arguments = "feed_subscribe", {"url": url}
            planned.append((port, token, tool, arguments, Outcome(tool, port, url)))
        return planned

    def wave(self, count: int, during: Any = None) -> list[Outcome]:
        """Release C{count} calls together; run C{during(release_time)} meanwhile."""
        planned = self.plan(count)
        gate = threading.Barrier(len(planned) + 1)

        def work(item: tuple[int, str, str, dict[str, Any], Outcome]) -> None:
            port, token, tool, arguments, outcome = item
            gate.wait(timeout=60)
            call(port, token, tool, arguments, outcome)

        threads = [threading.Thread(target=work, args=(p,), daemon=True) for p in planned]
        for thread in threads:
            thread.start()
        gate.wait(timeout=60)
        released = time.monotonic()
        if during is not None:
            during(released)
        for thread in threads:
            while thread.is_alive():  # joins that Ctrl-C can interrupt
                thread.join(0.2)
        return [p[4] for p in planned]


# --------------------------------------------------------------------------
# Peers
# --------------------------------------------------------------------------


@contextlib.contextmanager
def peers(tmp: Path) -> Iterator[tuple[GeminiServer, Database, list[Daemon], list[str], str]]:
    """Start everything; stop it all on the way out, whatever happened."""
    from gophergem.testing import make_certificate

    binaries = find_binaries()
    redis_binary = find_redis_server()
    if binaries is None or redis_binary is None:
        raise BenchError(
            "PostgreSQL (initdb, pg_ctl) and redis-server must be installed "
            "(bash .ci/peers.sh installs them)"
        )
    with contextlib.ExitStack() as stack:
        cert, key = make_certificate("localhost")
        capsule = GeminiServer(cert, key, str(tmp))
        stack.callback(capsule.stop)
        capsule.start()

        # Reachable by the server's own user when we are root: beside tmp.
        pg_base = Path(tempfile.mkdtemp(prefix="gophergem-bench-outage-pg-"))
        stack.callback(shutil.rmtree, pg_base, True)
        database = Database(pg_base, binaries)
        stack.callback(database.stop)

        redis_dir = tmp / "redis"
        redis_dir.mkdir()
        redis = RedisServer(redis_binary, redis_dir)
        stack.callback(redis.stop)
        redis.start()

        tokens_file = tmp / "tokens.json"
        tokens = [add_token(tokens_file, f"client{i}") for i in range(1, PRINCIPALS + 1)]
        (tmp / "db.key").write_text(os.urandom(32).hex() + "\n")
        (tmp / "state.keys").write_text(os.urandom(32).hex() + "\n")
        db_url = fresh_database(database.url, "bench_outage")
        # The throwaway server runs with synchronous_commit off (fast tests);
        # then a crash may lose commits already acknowledged, whoever made
        # them.  This database commits durably, as a production one does.
        import psycopg

        with psycopg.connect(database.url, autocommit=True, connect_timeout=10) as admin:
            admin.execute("ALTER DATABASE bench_outage SET synchronous_commit = on")

        def env(name: str) -> dict[str, str]:
            home = tmp / name
            home.mkdir(exist_ok=True)
            values = loopback_env()
            values.update(
                XDG_DATA_HOME=str(home),
                GOPHERGEM_AUTH_TOKENS_FILE=str(tokens_file),
                GOPHERGEM_REQUEST_STATE_KEYS_FILE=str(tmp / "state.keys"),
                GOPHERGEM_DATABASE_URL=db_url,
                GOPHERGEM_DATABASE_KEY_FILE=str(tmp / "db.key"),
                GOPHERGEM_REDIS_URL=f"redis://{LOOPBACK}:{redis.port}/0",
                GEMINI_MAX_CONCURRENT_REQUESTS="50",
                GOPHERGEM_FEEDS_CHECK_INTERVAL_SECONDS="0",
            )
            return values

        db_upgrade(env("upgrade"))
        daemons: list[Daemon] = []
        stack.callback(stop_all, daemons)
        for name in ("replica-a", "replica-b"):
            daemons.append(Daemon(name, env(name), tmp))
        for daemon in daemons:
            daemon.wait_ready()
        try:
            yield capsule, database, daemons, tokens, db_url
        except BenchError:
            for daemon in daemons:
                sys.stderr.write(f"--- tail of {daemon.name}.log ---\n{daemon.tail()}\n")
            raise


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


def health_status(port: int) -> int:
    try:
        return health(port)
    except OSError:
        return 0


def until_healthy(daemons: list[Daemon], since: float, limit: float) -> dict[str, float | None]:
    """Poll each replica's /health every 50 ms: seconds from C{since} to its first 200."""
    found: dict[str, float | None] = {d.name: None for d in daemons}
    while time.monotonic() - since < limit and None in found.values():
        for daemon in daemons:
            if found[daemon.name] is None and health_status(daemon.port) == 200:
                found[daemon.name] = time.monotonic() - since
        time.sleep(0.05)
    return found


def until_served(
    load: Load, daemons: list[Daemon], since: float, limit: float
) -> dict[str, float | None]:
    """Seconds from C{since} to a C{feed_list} that works, per replica."""
    found: dict[str, float | None] = {}
    for daemon in daemons:
        found[daemon.name] = None
        while time.monotonic() - since < limit:
            outcome = Outcome("feed_list", daemon.port, None)
            call(daemon.port, load.tokens[0], "feed_list", {}, outcome)
            if outcome.answer == "ok":
                found[daemon.name] = time.monotonic() - since
                break
            time.sleep(0.05)
    return found


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    report: dict[str, Any] = {}
    with peers(tmp) as (capsule, database, daemons, tokens, db_url):
        load = Load(capsule, [d.port for d in daemons], tokens)
        # Warm-up: every principal once on each replica, the pin made.
        warm = load.wave(2 * PRINCIPALS)
        if any(o.answer != "ok" for o in warm):
            bad = sorted({o.answer for o in warm if o.answer != "ok"})
            raise BenchError(f"the warm-up calls failed: {bad}")

        report["calm"] = load.wave(args.calls) if args.calm else []
        crash: dict[str, float] = {}

        def kill_later(released: float) -> None:
            time.sleep(max(0.0, released + args.kill_at - time.monotonic()))
            crash["at"] = time.monotonic()
            crash["processes"] = database.crash()

        report["crash"] = load.wave(args.calls, kill_later)
        report["killed_at"] = crash["at"]
        report["killed"] = crash["processes"]
        report["down"] = load.wave(args.calls)
        report["health_down"] = [health_status(d.port) for d in daemons]

        database.start()
        back = time.monotonic()
        report["healthy"] = until_healthy(daemons, back, 60.0)
        report["served"] = until_served(load, daemons, back, 60.0)
        report["after"] = load.wave(args.calls)

        import psycopg

        with psycopg.connect(db_url, autocommit=True, connect_timeout=10) as connection:
            rows = connection.execute("SELECT url FROM gophergem_subscriptions").fetchall()
        stored = {row[0] for row in rows}
        writes = [
            o
            for wave in ("calm", "crash", "down", "after")
            for o in report[wave]
            if o.tool == "feed_subscribe"
        ]
        report["writes"] = {
            "acknowledged": sum(o.answer == "ok" for o in writes),
            "acknowledged_missing": sum(o.answer == "ok" and o.url not in stored for o in writes),
            "refused": sum(o.answer != "ok" for o in writes),
            "refused_but_stored": sum(o.answer != "ok" and o.url in stored for o in writes),
        }
    return report


def counts(outcomes: list[Outcome]) -> str:
    tally: dict[str, int] = {}
    for o in outcomes:
        tally[o.answer] = tally.get(o.answer, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(tally.items(), key=lambda kv: -kv[1]))


def summary(args: argparse.Namespace, report: dict[str, Any]) -> str:
    killed = report["killed_at"]
    out = [
        f"[PostgreSQL crash under load: {args.calls} calls at once over 2 replicas "
        f"(2/3 gemini_fetch refresh, 1/6 feed_list, 1/6 feed_subscribe), SIGKILL to every "
        f"PostgreSQL process {args.kill_at:g} s after the release "
        f"({report['killed']} processes); state timeout 2 s (default)]"
    ]
    for wave in ("calm", "crash", "down", "after"):
        outcomes = report[wave]
        if not outcomes:
            continue
        latencies = [o.latency for o in outcomes]
        line = (
            f"{wave:>5}: {counts(outcomes)}; latency max {max(latencies):.2f} s, "
            f"p50 {statistics.median(latencies):.2f} s"
        )
        by_tool = []
        for tool in ("gemini_fetch", "feed_list", "feed_subscribe"):
            mine = [o.latency for o in outcomes if o.tool == tool]
            if mine:
                by_tool.append(f"{tool} p50 {statistics.median(mine):.2f} max {max(mine):.2f}")
        line += " (" + "; ".join(by_tool) + ")"
        if wave == "crash":
            running = [o for o in outcomes if o.ended >= killed]
            if running:
                worst = max(o.ended - max(o.started, killed) for o in running)
                line += (
                    f"\n       {len(running)} calls answered after the kill; slowest answer "
                    f"{worst:.2f} s after max(kill, its start)"
                )
        out.append(line)
    out.append(f"/health while down: {report['health_down']}")
    healthy = ", ".join(
        f"{name} {'never' if t is None else f'{t:.2f} s'}" for name, t in report["healthy"].items()
    )
    served = ", ".join(
        f"{name} {'never' if t is None else f'{t:.2f} s'}" for name, t in report["served"].items()
    )
    out.append(f"after pg_ctl start returned: /health 200 in {healthy}; a feed_list ok in {served}")
    w = report["writes"]
    out.append(
        f"writes (feed_subscribe): {w['acknowledged']} acknowledged, "
        f"{w['acknowledged_missing']} of them missing from the database; {w['refused']} "
        f"answered with an error, {w['refused_but_stored']} of those stored all the same"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=None, help="calls per wave (300)")
    parser.add_argument(
        "--kill-at", type=float, default=0.8, help="seconds after the release (0.8)"
    )
    parser.add_argument("--quick", action="store_true", help="a short CI smoke run (60 calls)")
    parser.add_argument(
        "--calm", action="store_true", help="a wave with every server up first, for comparison"
    )
    parser.add_argument("--logs", type=Path, default=None, help="copy the replicas' logs here")
    args = parser.parse_args(argv)
    if args.calls is None:
        args.calls = 60 if args.quick else 300
    if args.calls < 6 or args.kill_at < 0:
        parser.error("--calls must be at least 6 and --kill-at not negative")
    deadline = 240.0 if args.quick else 600.0  # fail rather than hang
    interrupt_after(deadline)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="gophergem-bench-outage-") as tmp:
            report = run(args, Path(tmp))
            if args.logs is not None:
                args.logs.mkdir(parents=True, exist_ok=True)
                for log in Path(tmp).glob("replica-*.log"):
                    shutil.copy(log, args.logs / log.name)
            signal.setitimer(signal.ITIMER_REAL, 0)
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, signal.SIG_IGN)
    except Interrupted as why:
        signal.setitimer(signal.ITIMER_REAL, 0)
        what = "gave up after the deadline" if str(why) == "SIGALRM" else "interrupted"
        print(f"bench_state_outage: {what}; everything stopped", file=sys.stderr)
        return 1 if str(why) == "SIGALRM" else 130
    except (BenchError, OSError, subprocess.SubprocessError) as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        print(f"bench_state_outage: FAILED: {error}", file=sys.stderr)
        return 1
    print(summary(args, report))
    print(run_footer(t0, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
