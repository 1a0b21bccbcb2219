#!/usr/bin/env python
"""
Benchmark gophergem against floors, entirely on loopback.

    python bench/bench_gopher.py [--calls N] [--quick]

It starts a tiny threaded Gopher server on 127.0.0.1 (port 0), spawns
C{python -m gophergem} over stdio with the official SDK client, and compares:

  1. warm (cached) gopher_fetch latency vs a bare SDK server returning the
     same recorded answer (bench/floor_server.py);
  2. uncached (refresh=true) gopher_fetch latency vs a raw blocking socket
     fetch of the same selector;
  3. one gopher_batch_fetch of 50 URLs vs 50 sequential refresh=true calls;
  4. the size of gophergem's compact text block vs json.dumps(structured,
     indent=2);
  5. start-up: spawn to the initialize answer, gophergem vs the floor server.

Nothing here talks to anything but 127.0.0.1.  Everything started (server
thread, subprocesses, temp files) is torn down on exit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import socketserver
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
HOST = "127.0.0.1"
BATCH_SIZE = 50
CALL_TIMEOUT = 30.0

# --------------------------------------------------------------------------
# 1. The Gopher server
# --------------------------------------------------------------------------


def _menu(port: int) -> bytes:
    """A 48-item menu of the kind found in the wild."""
    h, p = HOST, port

    def info(text: str) -> str:
        return f"i{text}\t\terror.host\t1"

    def item(kind: str, title: str, selector: str) -> str:
        return f"{kind}{title}\t{selector}\t{h}\t{p}"

    lines = [
        info("=" * 60),
        info("  Welcome to the benchmark hole on 127.0.0.1"),
        info("  Serving plain text since 1991 (or so it feels)"),
        info("=" * 60),
        info(""),
        item("0", "About this server", "/text/about.txt"),
        item("0", "README: how to navigate gopherspace", "/text/readme.txt"),
        item("1", "Phlog (weblog, gopher style)", "/menu/phlog"),
        item("7", "Search the archive (Veronica-style)", "/search"),
        info(""),
        info("--- Recent phlog posts ---"),
    ]
    posts = [
        "Rebuilding a 1994 gopher client",
        "Notes on the RFC 1436 item types",
        "Why plain text still wins",
        "A week without a web browser",
        "Packet radio and gopher",
        "Indexing menus with a shell script",
        "Running a server on a Raspberry Pi",
        "The joy of selector strings",
        "Mirroring old FTP archives into gopher",
        "A tiny gopher server in 40 lines of C",
        "Reading RSS feeds as gopher menus",
        "Winter maintenance log",
    ]
    for i, title in enumerate(posts, 1):
        lines.append(item("0", f"2024-{i:02d}-15  {title}", f"/text/phlog/2024-{i:02d}.txt"))
    lines += [
        info(""),
        info("--- Archives ---"),
        item("1", "Software archive", "/menu/software"),
        item("1", "Documents and RFCs", "/menu/docs"),
        item("1", "Old mailing-list digests", "/menu/digests"),
        item("9", "gopher-client-2.3.tar.gz", "/files/gopher-client-2.3.tar.gz"),
        item("9", "server-config-example.zip", "/files/server-config-example.zip"),
        item("g", "Screenshot of the client (GIF)", "/img/client.gif"),
        item("I", "Photo of the server rack", "/img/rack.jpg"),
        item("0", "RFC 1436: The Internet Gopher Protocol", "/text/rfc1436.txt"),
        item("0", "RFC 4266: The gopher URI Scheme", "/text/rfc4266.txt"),
        info(""),
        info("--- Elsewhere ---"),
        item("h", "Project page (HTTP mirror)", f"URL:http://{h}:{p}/project"),
        item("h", "Mailing list archive (HTTP)", f"URL:http://{h}:{p}/lists"),
        item("1", "Floodgap-style directory of servers", "/menu/servers"),
        item("1", "Community bulletin board", "/menu/bbs"),
        item("0", "Server statistics", "/text/stats.txt"),
        info(""),
        info("--- Colophon ---"),
        info("  This hole is generated for a benchmark and is not real."),
        item("0", "Contact the operator", "/text/contact.txt"),
        item("0", "Terms of use", "/text/terms.txt"),
        info(""),
        info("=" * 60),
    ]
    assert len(lines) == 48, len(lines)
    return ("\r\n".join(lines) + "\r\n.\r\n").encode("utf-8")


def _text() -> bytes:
    """About 4 KB of plain text (type 0), lines ending CRLF, closed by '.'."""
    para = (
        "The Internet Gopher protocol is designed for distributed document search and "
        "retrieval. Documents reside on many autonomous servers on the Internet. Users "
        "run client software on their desktop systems, moving from server to server "
        "with ease, browsing through and searching documents."
    )
    lines: list[str] = ["RFC 1436-ish sample text for the benchmark", ""]
    n = 0
    while sum(len(line) + 2 for line in lines) < 4000:
        n += 1
        lines.append(f"Section {n}")
        words, line = para.split(), ""
        for word in words:
            if len(line) + len(word) + 1 > 70:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines += [line, ""]
    return ("\r\n".join(lines) + "\r\n.\r\n").encode("utf-8")


class GopherServer:
    """
    A threaded Gopher server on 127.0.0.1:0.

    Selector C{""}, C{"/"} or C{"/menu..."}: the 48-item menu; C{"/text..."}:
    the text; anything else: a type-3 error line.  C{requests} counts
    requests answered.
    """

    def __init__(self) -> None:
        outer = self
        self._lock = threading.Lock()
        self.requests = 0

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                sock.settimeout(10)
                data = b""
                while b"\n" not in data and len(data) < 4096:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                selector = data.split(b"\n", 1)[0].rstrip(b"\r").split(b"\t", 1)[0]
                sock.sendall(outer.answer(selector))
                with outer._lock:
                    outer.requests += 1
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 256

        self._server = Server((HOST, 0), Handler)
        self.port: int = self._server.server_address[1]
        try:
            self.menu = _menu(self.port)
            self.text = _text()
        except BaseException:
            self._server.server_close()
            raise
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def answer(self, selector: bytes) -> bytes:
        if selector in (b"", b"/") or selector.startswith(b"/menu"):
            return self.menu
        if selector.startswith(b"/text"):
            return self.text
        return b"3Not found\t\terror.host\t1\r\n.\r\n"

    def url(self, kind: str, selector: str = "") -> str:
        return f"gopher://{HOST}:{self.port}/{kind}{selector}"

    def __enter__(self) -> GopherServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p90_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)] * 1000


def _base_env() -> dict[str, str]:
    """The parent's environment without gophergem settings, plus the bench's own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GOPHER_", "GEMINI_", "GOPHERGEM_"))
    }
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + path if path else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def gophergem_params(log_file: str) -> StdioServerParameters:
    env = _base_env()
    env.update(
        GOPHER_ALLOW_LOCAL_HOSTS="true",
        GOPHER_REQUESTS_PER_MINUTE="0",
        GOPHER_RESPECT_ROBOTS_TXT="false",
        GOPHERGEM_LOG_FILE=log_file,
    )
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gophergem"], env=env, cwd=REPO_ROOT
    )


def floor_params(response_file: str | None) -> StdioServerParameters:
    env = _base_env()
    if response_file:
        env["BENCH_FLOOR_RESPONSE"] = response_file
    return StdioServerParameters(
        command=sys.executable, args=[os.path.join(BENCH_DIR, "floor_server.py")], env=env
    )


class BenchError(RuntimeError):
    pass


@contextlib.asynccontextmanager
async def session(
    params: StdioServerParameters, errlog: Any, timing: dict[str, float] | None = None
) -> AsyncIterator[ClientSession]:
    """Spawn, initialize (timed from before the spawn), yield; tear down on exit."""
    t0 = time.perf_counter()
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as s,
    ):
        with anyio.fail_after(CALL_TIMEOUT):
            await s.initialize()
        if timing is not None:
            timing["startup"] = time.perf_counter() - t0
        yield s


async def call(s: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(CALL_TIMEOUT):
        result = await s.call_tool(tool, args)
    return result


def _check(result: Any, what: str) -> None:
    if result.is_error:
        raise BenchError(f"{what} returned isError: {_text_of(result)[:500]}")
    if result.structured_content is None:
        raise BenchError(f"{what} returned no structuredContent: {_text_of(result)[:500]}")


def _text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _time_check(s: ClientSession, tool: str, result: Any, n: int) -> list[float]:
    await s.validate_tool_result(tool, result)
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await s.validate_tool_result(tool, result)
        samples.append(time.perf_counter() - t0)
    return samples


def raw_fetch(port: int, selector: bytes = b"") -> bytes:
    with socket.create_connection((HOST, port), timeout=10) as sock:
        sock.sendall(selector + b"\r\n")
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


# --------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------


async def run(args: argparse.Namespace, gopher: GopherServer, tmp: str) -> dict[str, Any]:
    n = args.calls
    r: dict[str, Any] = {"n": n}
    gg_log = os.path.join(tmp, "gophergem.log")
    errlog_path = os.path.join(tmp, "stderr.log")
    menu_url = gopher.url("1")
    text_url = gopher.url("0", "/text/about.txt")

    with open(errlog_path, "w") as errlog:
        async with contextlib.AsyncExitStack() as stack:
            gg = await stack.enter_async_context(session(gophergem_params(gg_log), errlog))
            warm = await call(gg, "gopher_fetch", {"url": menu_url})
            _check(warm, "warm gopher_fetch (menu)")
            if warm.structured_content.get("kind") != "menu":
                raise BenchError(f"menu fetch gave kind {warm.structured_content.get('kind')!r}")
            r["menu_items"] = len(warm.structured_content.get("items", []))
            tools = {t.name: t for t in (await gg.list_tools()).tools}
            schema = tools["gopher_fetch"].output_schema

            text = await call(gg, "gopher_fetch", {"url": text_url, "refresh": True})
            _check(text, "gopher_fetch (text)")
            if text.structured_content.get("kind") != "text":
                raise BenchError(f"text fetch gave kind {text.structured_content.get('kind')!r}")
            r["sizes"] = {"menu (48 items)": warm, f"text ({len(gopher.text)} B)": text}

            # Two floor servers answering with gophergem's recorded menu answer:
            # "floor" publishes no outputSchema (identical wire answer, no client
            # check); "floor_schema" publishes gophergem's, so the SDK client does
            # the same jsonschema check as for gophergem and only server-side
            # work differs.
            floors = {}
            for key, published in (("floor", None), ("floor_schema", schema)):
                path = os.path.join(tmp, f"{key}.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(
                        {
                            "structured": warm.structured_content,
                            "text": _text_of(warm),
                            "is_error": False,
                            "output_schema": published,
                        },
                        f,
                    )
                fs = await stack.enter_async_context(session(floor_params(path), errlog))
                first = await call(fs, "gopher_fetch", {"url": menu_url})
                _check(first, f"{key} gopher_fetch")
                if first.structured_content != warm.structured_content or _text_of(
                    first
                ) != _text_of(warm):
                    raise BenchError(f"the {key} server's answer differs from gophergem's")
                floors[key] = fs
            raw_fetch(gopher.port)
            await _time_check(gg, "gopher_fetch", warm, 1)

            # Interleaved, rotating order: load drift on a shared machine hits
            # every column alike.
            async def one(key: str) -> None:
                t0 = time.perf_counter()
                if key == "warm":
                    res = await call(gg, "gopher_fetch", {"url": menu_url})
                elif key == "uncached":
                    res = await call(gg, "gopher_fetch", {"url": menu_url, "refresh": True})
                elif key in floors:
                    res = await call(floors[key], "gopher_fetch", {"url": menu_url})
                elif key == "check_menu":
                    await gg.validate_tool_result("gopher_fetch", warm)
                    res = None
                else:
                    body = raw_fetch(gopher.port)
                    res = None
                    if body != gopher.menu:
                        raise BenchError("raw fetch returned something other than the menu")
                r[key].append(time.perf_counter() - t0)
                if res is not None:
                    _check(res, key)
                    if key == "warm" and res.structured_content.get("cached") is not True:
                        r["warm_not_cached"] += 1

            keys = ["warm", "floor", "floor_schema", "uncached", "raw", "check_menu"]
            for key in keys:
                r[key] = []
            r["warm_not_cached"] = 0
            before = gopher.requests
            for i in range(n):
                for j in range(len(keys)):
                    await one(keys[(i + j) % len(keys)])
            r["loop_upstream"] = gopher.requests - before

            # batch: 50 distinct URLs (menu and text alternating), refresh=true
            urls = [
                gopher.url("0", f"/text/b{i}.txt") if i % 2 else gopher.url("1", f"/menu/b{i}")
                for i in range(BATCH_SIZE)
            ]
            r["batch"], r["sequential"], r["check_batch"] = [], [], []
            for _ in range(args.batch_reps):
                before = gopher.requests
                t0 = time.perf_counter()
                res = await call(gg, "gopher_batch_fetch", {"urls": urls, "refresh": True})
                r["batch"].append(time.perf_counter() - t0)
                _check(res, "gopher_batch_fetch")
                items = res.structured_content.get("result", [])
                bad = [x.get("kind") for x in items if x.get("kind") not in ("menu", "text")]
                if len(items) != BATCH_SIZE or bad:
                    raise BenchError(f"batch gave {len(items)} results, bad kinds {bad[:5]}")
                r["batch_upstream"] = gopher.requests - before
                r["batch_text_bytes"] = len(_text_of(res).encode("utf-8"))
                r["check_batch"] += await _time_check(gg, "gopher_batch_fetch", res, 1)

                before = gopher.requests
                t0 = time.perf_counter()
                for u in urls:
                    _check(await call(gg, "gopher_fetch", {"url": u, "refresh": True}), u)
                r["sequential"].append(time.perf_counter() - t0)
                r["sequential_upstream"] = gopher.requests - before

        # ---- start-up, alternating so drift hits both alike
        r["startup_gg"], r["startup_floor"] = [], []
        for _ in range(args.startup_reps):
            for key, params in (
                ("startup_gg", gophergem_params(gg_log)),
                ("startup_floor", floor_params(os.path.join(tmp, "floor.json"))),
            ):
                timing: dict[str, float] = {}
                async with session(params, errlog, timing):
                    pass
                r[key].append(timing["startup"])
    return r


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def table(r: dict[str, Any]) -> str:
    n = r["n"]
    rows: list[tuple[str, str, str, str, str]] = []

    def row(metric: str, a: float, b: float, fmt: str = "{:.2f}", vs: str = "") -> None:
        ratio = a / b if b else float("inf")
        rows.append((metric, fmt.format(a), fmt.format(b), f"{ratio:.2f}x", vs))

    def section(title: str) -> None:
        rows.append((title, "", "", "", ""))

    def info(metric: str, a: float, share_of: float, what: str, fmt: str = "{:.2f}") -> None:
        rows.append((metric, fmt.format(a), "-", f"{a / share_of:.0%}", what))

    bare, schema = "bare SDK MCPServer, same answer", "same, + gophergem's outputSchema"
    section(f"[latency, N={n} calls each, ms]")
    row("warm gopher_fetch median", median_ms(r["warm"]), median_ms(r["floor"]), vs=bare)
    row("warm gopher_fetch p90", p90_ms(r["warm"]), p90_ms(r["floor"]), vs=bare)
    row("warm gopher_fetch median", median_ms(r["warm"]), median_ms(r["floor_schema"]), vs=schema)
    row("warm gopher_fetch p90", p90_ms(r["warm"]), p90_ms(r["floor_schema"]), vs=schema)
    info(
        "  client outputSchema check (menu)",
        median_ms(r["check_menu"]),
        median_ms(r["warm"]),
        "in-process; ratio = share of warm median",
    )
    row(
        "uncached gopher_fetch median",
        median_ms(r["uncached"]),
        median_ms(r["raw"]),
        vs="raw blocking socket fetch",
    )
    row(
        "uncached gopher_fetch p90",
        p90_ms(r["uncached"]),
        p90_ms(r["raw"]),
        vs="raw blocking socket fetch",
    )
    row(
        "uncached minus warm median",
        median_ms(r["uncached"]) - median_ms(r["warm"]),
        median_ms(r["raw"]),
        vs="raw blocking socket fetch",
    )
    section(f"[batch: {BATCH_SIZE} URLs, refresh=true, ms, median of {len(r['batch'])}]")
    seq, bat = statistics.median(r["sequential"]) * 1000, statistics.median(r["batch"]) * 1000
    rows.append(
        (
            "50 x gopher_fetch | 1 batch call",
            f"{seq:.1f}",
            f"{bat:.1f}",
            f"{seq / bat:.2f}x",
            "speedup = sequential / batch",
        )
    )
    info(
        "  client outputSchema check (batch)",
        median_ms(r["check_batch"]),
        bat,
        "in-process; ratio = share of batch",
        "{:.1f}",
    )
    section("[size of the text block, bytes]")
    for label, res in r["sizes"].items():
        compact = len(_text_of(res).encode("utf-8"))
        indented = len(json.dumps(res.structured_content, indent=2).encode("utf-8"))
        rows.append(
            (
                label,
                str(compact),
                str(indented),
                f"{compact / indented:.2f}x",
                "json.dumps(structuredContent, indent=2)",
            )
        )
    section(f"[start-up: spawn to initialize answer, ms, median of {len(r['startup_gg'])}]")
    row(
        "start-up",
        median_ms(r["startup_gg"]),
        median_ms(r["startup_floor"]),
        "{:.0f}",
        vs="bare SDK MCPServer",
    )

    header = ("metric", "gophergem", "floor", "ratio", "floor is")
    widths = [max(len(x[i]) for x in (header, *rows)) for i in range(5)]

    def fmt(x: tuple[str, ...]) -> str:
        if not any(x[1:]):
            return x[0]
        return " | ".join(
            [x[0].ljust(widths[0])] + [x[i].rjust(widths[i]) for i in (1, 2, 3)] + [x[4]]
        )

    rule = "-+-".join("-" * w for w in widths)
    lines = [fmt(header), rule, *(fmt(x) for x in rows)]
    notes = [
        "",
        f"upstream Gopher requests: latency loop {r['loop_upstream']} (expect {2 * n}: "
        f"{n} refresh + {n} raw; cached calls not served from cache: {r['warm_not_cached']}), "
        f"batch {r['batch_upstream']}, sequential {r['sequential_upstream']} "
        f"(expect {BATCH_SIZE} each); menu items parsed: {r['menu_items']}",
        f"batch answer: text block {r['batch_text_bytes'] / 1024:.0f} KiB "
        "(plus the same data again as structuredContent)",
        "ratio = gophergem / floor unless noted; all traffic on 127.0.0.1",
    ]
    return "\n".join(lines + notes)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=None, help="calls per latency metric (200)")
    parser.add_argument("--quick", action="store_true", help="small N for a CI smoke run")
    args = parser.parse_args(argv)
    if args.calls is None:
        args.calls = 20 if args.quick else 200
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    args.batch_reps = 1 if args.quick else 3
    args.startup_reps = 3 if args.quick else 5
    deadline = 55.0 if args.quick else None  # a CI smoke run fails rather than hangs

    async def bounded(gopher: GopherServer, tmp: str) -> dict[str, Any]:
        with anyio.fail_after(deadline):
            return await run(args, gopher, tmp)

    # SIGTERM unwinds like Ctrl-C, so the finally blocks stop every child.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gophergem-bench-") as tmp, GopherServer() as gopher:
        try:
            results = anyio.run(bounded, gopher, tmp)
        except BaseException as exc:
            errlog = os.path.join(tmp, "stderr.log")
            leaf = _leaf(exc)
            if isinstance(leaf, KeyboardInterrupt):
                print("bench_gopher: interrupted; everything stopped", file=sys.stderr)
                return 130
            print(f"bench_gopher: FAILED: {type(leaf).__name__}: {leaf}", file=sys.stderr)
            for path in (errlog, os.path.join(tmp, "gophergem.log")):
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        tail = f.read()[-3000:]
                    if tail.strip():
                        print(f"--- tail of {os.path.basename(path)} ---\n{tail}", file=sys.stderr)
            if isinstance(exc, Exception):
                return 1
            raise
    print(table(results))
    print(
        f"total {time.perf_counter() - t0:.1f} s; python {sys.version.split()[0]}; "
        f"{os.cpu_count()} CPUs; 1-min load average {load:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
