#!/usr/bin/env python
"""
Measure how long C{/health} waits while the HTTP daemon reads a large feed
(issue 21, item 2), entirely on loopback.

    python bench/bench_feed_parse.py [--quick] [--rounds R]

It starts a threaded Gopher server on 127.0.0.1 (bench/servers.py) serving
feeds as type-0 text, and one daemon, C{python -m gophergem serve
--transport http} on 127.0.0.1, with local hosts allowed, pacing and
robots.txt off, and its own feed store.  For each feed, an SDK client
(C{mcp.Client} over Streamable HTTP) calls C{feed_subscribe}, then
C{feed_updates} (which reads the feed again, fresh), while a thread sends
C{GET /health} every 10 ms on a keep-alive connection; the table gives the
calls' times and the max and p99 of the /health latencies taken while the
call ran.  A first row per daemon polls /health for 2 s with nothing else
running: the floor this machine's load sets.  The feeds:

  - C{rss-100k}: about 1 MiB of RSS with 100,000 items, the largest the
    default settings accept (GOPHER_MAX_RESPONSE_SIZE is 1 MiB);
  - C{atom-1m}: about 1 MiB of Atom, each entry with an HTML title, a date
    and HTML content (what feedparser's sanitiser works hardest on);
  - C{atom-14m} (not in --quick): about 14 MB of the same Atom, under a
    daemon whose GOPHER_MAX_RESPONSE_SIZE and GOPHER_MAX_RENDERED_CHARS let
    all of it in, as the attack run had it.

Nothing here talks to anything outside 127.0.0.0/8; everything started is
stopped on exit, Ctrl-C, SIGTERM or the overall deadline.  To measure other
code, run this file from that tree: the daemon runs the gophergem beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import math
import os
import signal
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
from bench_team import BenchError, Daemon, Interrupted, interrupt_after  # noqa: E402
from servers import GopherServer  # noqa: E402
from stdio_raw import run_footer  # noqa: E402

LOOPBACK = "127.0.0.1"
POLL_SECONDS = 0.010
IDLE_SECONDS = 2.0
MIB = 1024 * 1024
GOAL_MS = 100.0  # issue 21: /health under 100 ms while the largest accepted feed parses


# --------------------------------------------------------------------------
# The feeds
# --------------------------------------------------------------------------


def rss_feed(items: int, limit: int) -> bytes:
    """RSS with C{items} tiny items (a relative link each), cut to fit C{limit} bytes."""
    head = b'<?xml version="1.0"?>\n<rss version="2.0"><channel><title>Huge</title>\n'
    tail = b"</channel></rss>\n"
    rows = [b"<item><link>%x</link></item>\n" % n for n in range(items)]
    room = limit - len(head) - len(tail) - 8  # the Gopher '.' line and some slack
    body, size = [], 0
    for row in rows:
        if size + len(row) > room:
            break
        body.append(row)
        size += len(row)
    return head + b"".join(body) + tail


def atom_feed(limit: int) -> bytes:
    """Atom entries with HTML titles, dates and HTML content, up to C{limit} bytes."""
    head = (
        b'<?xml version="1.0" encoding="utf-8"?>\n'
        b'<feed xmlns="http://www.w3.org/2005/Atom"><title>Big Atom</title>\n'
    )
    tail = b"</feed>\n"
    room = limit - len(head) - len(tail) - 8
    body, size, n = [], 0, 0
    while True:
        row = (
            f'<entry><title type="html">&lt;b&gt;Post {n}&lt;/b&gt;</title>'
            f'<link href="/posts/{n}.gmi"/><id>gemini://localhost/posts/{n}.gmi</id>'
            f"<updated>2026-{1 + n % 12:02d}-{1 + n % 28:02d}T10:00:00Z</updated>"
            '<content type="html">&lt;p&gt;Hello &lt;i&gt;world&lt;/i&gt;, '
            "&lt;a href=&quot;/x&quot;&gt;a link&lt;/a&gt;&lt;/p&gt;</content></entry>\n"
        ).encode()
        if size + len(row) > room:
            break
        body.append(row)
        size += len(row)
        n += 1
    return head + b"".join(body) + tail


class FeedServer(GopherServer):
    """The benchmark's Gopher server, also serving C{/feed/NAME} as type-0 text."""

    def __init__(self, feeds: dict[str, bytes]) -> None:
        super().__init__(LOOPBACK)
        # XML has no line that is a lone '.', so the text needs no dot-stuffing.
        self.feeds = {f"/feed/{k}".encode(): v + b".\r\n" for k, v in feeds.items()}

    def answer(self, selector: bytes) -> bytes:
        found = self.feeds.get(selector)
        return found if found is not None else super().answer(selector)


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------


class HealthPoller:
    """A thread sending GET /health every L{POLL_SECONDS}; latencies with their start times."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.samples: list[tuple[float, float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=30)
        try:
            while not self._stop.is_set():
                started = time.perf_counter()
                ok = False
                try:
                    connection.request("GET", "/health")
                    response = connection.getresponse()
                    response.read()
                    ok = response.status == 200
                except (OSError, http.client.HTTPException):
                    connection.close()
                    connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=30)
                ended = time.perf_counter()
                self.samples.append((started, ended - started, ok))
                self._stop.wait(max(0.0, POLL_SECONDS - (ended - started)))
        finally:
            connection.close()

    def __enter__(self) -> HealthPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=35)

    def between(self, start: float, end: float) -> tuple[list[float], int]:
        """
        The latencies (ms) of the polls that ran at some time between
        C{start} and C{end}, and how many of them failed (no 200 within 30 s).
        """
        samples = list(self.samples)
        during = [(t, ok) for began, t, ok in samples if began < end and began + t > start]
        return [t * 1000 for t, _ in during], sum(1 for _, ok in during if not ok)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


async def call(session: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    payload = result.structured_content or {}
    if result.is_error:
        raise BenchError(f"{name} failed: {payload or result.content}")
    return dict(payload)


Row = tuple[str, str, float, tuple[list[float], int], str]


async def measure_feed(
    port: int, url: str, poller: HealthPoller
) -> list[tuple[str, float, tuple[list[float], int], str]]:
    """Subscribe to C{url}, then ask for its updates; each call's seconds and /health latencies."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rows = []
    async with Client(streamable_http_client(f"http://{LOOPBACK}:{port}/mcp"), mode="legacy") as s:
        for name, arguments in (
            ("feed_subscribe", {"url": url}),
            ("feed_updates", {"url": url}),
        ):
            await asyncio.sleep(0.2)  # a quiet moment between calls
            start = time.perf_counter()
            payload = await call(s, name, arguments)
            end = time.perf_counter()
            if name == "feed_subscribe":
                what = f"{payload.get('feed_type')}, {payload.get('entries_known')} entries kept"
            else:
                errors = payload.get("errors") or []
                what = f"{len(payload.get('entries') or [])} new, {len(errors)} errors"
            rows.append((name, end - start, poller.between(start, end), what))
        await call(s, "feed_unsubscribe", {"url": url})
    return rows


@contextlib.contextmanager
def daemon(tmp: Path, name: str, max_bytes: int) -> Iterator[Daemon]:
    env = loopback_env()
    env.update(
        GOPHERGEM_FEEDS_STORAGE_PATH=str(tmp / f"{name}-feeds.json"),
        GOPHERGEM_LOG_FILE=str(tmp / f"{name}-gophergem.log"),
        GEMINI_TOFU_STORAGE_PATH=str(tmp / f"{name}-tofu"),
        GEMINI_CLIENT_CERTS_STORAGE_PATH=str(tmp / f"{name}-certs"),
        GOPHERGEM_FEEDS_CHECK_INTERVAL_SECONDS="0",
        GOPHER_MAX_RESPONSE_SIZE=str(max_bytes),
    )
    if max_bytes > MIB:
        # A window holds at most this many characters; a page is read in at most 20.
        env["GOPHER_MAX_RENDERED_CHARS"] = str(max_bytes // 10)
    process = Daemon(name, env, tmp)
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    feeds = {"rss-100k": rss_feed(100_000, MIB), "atom-1m": atom_feed(MIB)}
    big = {} if args.quick else {"atom-14m": atom_feed(14 * 1000 * 1000)}
    rows = []
    server = FeedServer({**feeds, **big})
    server.start()
    try:
        for label, names, size in (("default", feeds, MIB), ("14 MB caps", big, 16 * MIB)):
            if not names:
                continue
            with daemon(tmp, label.replace(" ", "-"), size) as process:
                with HealthPoller(process.port) as poller:  # the floor: nothing else runs
                    start = time.perf_counter()
                    time.sleep(IDLE_SECONDS)
                idle = poller.between(start, time.perf_counter())
                rows.append((f"none ({label} daemon)", "idle", IDLE_SECONDS, idle, "the floor"))
                for _ in range(args.rounds):
                    for feed in names:
                        url = server.url("0", f"/feed/{feed}")
                        with HealthPoller(process.port) as poller:
                            found = asyncio.run(measure_feed(process.port, url, poller))
                        for name, seconds, lat, what in found:
                            size_mb = len(names[feed]) / 1e6
                            rows.append((f"{feed} ({size_mb:.1f} MB)", name, seconds, lat, what))
    finally:
        server.stop()
    return rows


def table(rows: list[Row]) -> str:
    out = [
        "| feed | call | call s | /health polls | failed | max ms | p99 ms | goal < 100 ms "
        "| result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for feed, name, seconds, (lat, failed), what in rows:
        worst = max(lat) if lat else float("nan")
        goal = "ok" if lat and worst < GOAL_MS and not failed else "MISS"
        out.append(
            f"| {feed} | {name} | {seconds:.2f} | {len(lat)} | {failed} | {worst:.1f} | "
            f"{p99(lat) if lat else float('nan'):.1f} | {goal} | {what} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds per feed (3; 1 quick)")
    parser.add_argument("--quick", action="store_true", help="the 1 MiB feeds once, in seconds")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    deadline = 120.0 if args.quick else 900.0  # fail rather than hang
    interrupt_after(deadline)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="gophergem-bench-feeds-") as tmp:
            rows = run(args, Path(tmp))
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Interrupted as why:
        signal.setitimer(signal.ITIMER_REAL, 0)
        what = "gave up after the deadline" if str(why) == "SIGALRM" else "interrupted"
        print(f"bench_feed_parse: {what}; everything stopped", file=sys.stderr)
        return 1 if str(why) == "SIGALRM" else 130
    except (BenchError, OSError) as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        print(f"bench_feed_parse: FAILED: {error}", file=sys.stderr)
        return 1
    print(f"[feed parsing vs /health, gophergem from {REPO_ROOT}; /health polled every 10 ms]")
    print(table(rows))
    print(run_footer(t0, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
