#!/usr/bin/env python
"""
Slow request bodies against the HTTP daemon, on loopback (issue 21, item 6).

    python bench/bench_slow_bodies.py [--connections N] [--interval S]
        [--duration S] [--nofile N] [--quick] [-e NAME=VALUE ...]

It starts C{gophergem serve --transport http} on 127.0.0.1 (its file
descriptor limit lowered to C{--nofile}, so that running out takes
hundreds of connections, not tens of thousands), then opens
C{--connections} connections that each send the head of a C{POST /mcp}
declaring a 100 kB body and then one byte of it every C{--interval}
seconds, for at most C{--duration} seconds.  Meanwhile it asks
C{/health} once a second on a fresh connection.  It prints how long the
drip connections lived, how they ended (the status the daemon answered,
or a close without an answer), what the probes got, and how many
tracebacks and "Too many open files" the daemon's log holds.

C{--quick}: 50 connections, a byte every 2 s, at most 40 s.  C{-e} sets a
daemon setting (e.g. C{-e GOPHERGEM_HTTP_BODY_TIMEOUT_SECONDS=10}).

Nothing here talks to anything outside 127.0.0.0/8; the daemon is stopped
on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from bench_gopher import loopback_env  # noqa: E402
from bench_sessions import LOOPBACK, Daemon  # noqa: E402

DECLARED = 100_000


class LimitedDaemon(Daemon):
    """A daemon whose file descriptor limit is C{nofile}."""

    nofile = 1024

    def __init__(self, tmp: Path, env: dict[str, str], nofile: int) -> None:
        LimitedDaemon.nofile = nofile
        super().__init__(tmp, env)

    @staticmethod
    def _limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LimitedDaemon.nofile, LimitedDaemon.nofile))


async def drip(port: int, interval: float, duration: float) -> tuple[float, str]:
    """One slow body: return how long the connection lived and how it ended."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection(LOOPBACK, port)
    except OSError as error:
        return 0.0, f"connect failed: {error.strerror or error}"
    try:
        writer.write(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n"
            % (port, DECLARED)
        )
        answer = asyncio.ensure_future(reader.read(200))
        while time.monotonic() - started < duration:
            done, _ = await asyncio.wait({answer}, timeout=interval)
            if done:
                raw = answer.result()
                status = raw.split(b" ", 2)[1].decode() if raw.startswith(b"HTTP/") else ""
                return time.monotonic() - started, (
                    f"answered {status}" if status else "closed, no answer"
                )
            writer.write(b"{")
            await writer.drain()
        answer.cancel()
        return time.monotonic() - started, "still open at the end"
    except OSError:
        return time.monotonic() - started, "reset"
    finally:
        writer.close()


async def probe(port: int, until: float) -> collections.Counter[str]:
    """GET /health once a second on a fresh connection until C{until}."""
    seen: collections.Counter[str] = collections.Counter()
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.open_connection(LOOPBACK, port)
            writer.write(
                b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port
            )
            raw = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            seen[raw.split(b" ", 2)[1].decode() if raw.startswith(b"HTTP/") else "no answer"] += 1
        except (TimeoutError, OSError) as error:
            seen[type(error).__name__] += 1
        await asyncio.sleep(1)
    return seen


async def attack(port: int, connections: int, interval: float, duration: float) -> None:
    started = time.monotonic()
    probes = asyncio.ensure_future(probe(port, started + duration + 5))
    drips = []
    for _ in range(connections):
        drips.append(asyncio.ensure_future(drip(port, interval, duration)))
        await asyncio.sleep(0.002)  # a steady opening, not one burst
    results = await asyncio.gather(*drips)
    lived = [seconds for seconds, _ in results]
    endings = collections.Counter(how for _, how in results)
    print(
        f"{connections} drip connections (a byte every {interval:g}s, {DECLARED} bytes declared):"
    )
    print(
        f"  lived min {min(lived):.1f}s, median {statistics.median(lived):.1f}s, "
        f"max {max(lived):.1f}s"
    )
    print("  ended: " + ", ".join(f"{n} x {how}" for how, n in endings.most_common()))
    print("  /health probes: " + ", ".join(f"{n} x {s}" for s, n in (await probes).items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=1100)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=130.0)
    parser.add_argument("--nofile", type=int, default=1024, help="the daemon's fd limit")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-e", dest="settings", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    if args.quick:
        args.connections, args.interval, args.duration = 50, 2.0, 40.0
    env = loopback_env()
    env["GOPHERGEM_LOG_LEVEL"] = "INFO"
    for setting in args.settings:
        name, _, value = setting.partition("=")
        env[name] = value
    with tempfile.TemporaryDirectory(prefix="bench-slow-") as tmp:
        daemon = LimitedDaemon(Path(tmp), env, args.nofile)
        try:
            daemon.wait_ready()
            asyncio.run(attack(daemon.port, args.connections, args.interval, args.duration))
        finally:
            daemon.stop()
            text = daemon.log_path.read_text(errors="replace")
            print(
                f"  daemon log: {text.count('Traceback (most recent call last)')} tracebacks, "
                f"{text.count('Too many open files')} x 'Too many open files', "
                f"{len(text.splitlines())} lines"
            )
            keep = os.environ.get("BENCH_KEEP_LOG")
            if keep:
                Path(keep).write_text(text)


if __name__ == "__main__":
    main()
