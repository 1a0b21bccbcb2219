#!/usr/bin/env python
"""
Opt-in: gophergem side by side with the reference server, gopher-mcp 0.10.2.

    python bench/compare_reference.py [--spawns N] [--calls N] [--venv DIR]

The reference is not a dependency of gophergem and this script never runs in
CI.  On first use it creates a venv outside the repository (default
C{~/.cache/gophergem-bench/ref-venv}: C{python -m venv}, then
C{pip install gopher-mcp==0.10.2} from PyPI) and reuses it afterwards.  Both
servers are spawned over stdio with the same settings (the reference reads
the same C{GOPHER_*}/C{GEMINI_*} variables: local hosts allowed, no pacing,
no robots.txt, 1 MiB response cap, stores in a temporary directory), against
the loopback servers of C{bench/servers.py}; nothing leaves 127.0.0.0/8.

It measures, with alternating runs and medians, the rows of issue 13's goal
table that compare servers rather than clients:

  1-3. spawn to the C{initialize} answer, to C{initialize} + C{tools/list},
       and to the first tool result (a C{gopher_fetch} of the small menu),
       over raw stdio (C{bench/stdio_raw.py});
  4.   a cached C{gopher_fetch} / C{gemini_fetch} over raw stdio, server side;
  6.   one C{gopher_batch_fetch} of 50 texts on a small server (listen
       backlog 5), with the default cap and with
       C{GOPHER_MAX_CONCURRENT_REQUESTS=0};
  8.   peak memory (C{VmHWM} growth) over one C{gopher_batch_fetch} of
       50 x 1 MiB across five hosts, in a fresh process, as a multiple of the
       payload;
  9.   C{VmRSS} after one call.

and prints a table of medians with the ratio ours/reference next to the
issue-13 goal.  Rows 5 and 7 (a client's schema check, walking a long page)
do not involve the reference's process; C{bench_gopher.py} measures them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from bench_gopher import (  # noqa: E402
    BATCH_SIZE,
    HOSTS,
    MIB,
    SMALL_BACKLOG,
    SMALL_HOST,
    gophergem_params,
)
from servers import BIG_SIZE, GeminiServer, GopherServer  # noqa: E402
from stdio_raw import (  # noqa: E402
    Command,
    RawStdioSession,
    alternate_startups,
    cached_calls,
    run_footer,
    vm_kib,
)

REFERENCE = "gopher-mcp"
REFERENCE_VERSION = "0.10.2"
DEFAULT_VENV = os.path.join(os.path.expanduser("~"), ".cache", "gophergem-bench", "ref-venv")

# issue 13's goals: ours / reference
GOALS = {
    "init": 0.35,
    "list": 0.5,
    "first": 1.0,
    "cached": 0.5,
    "small": 0.5,
    "rss": 1.0,
}
GOAL_PEAK = 1.5  # x the payload


def ensure_reference(venv: str) -> str:
    """The reference's console script in C{venv}, installing it there first if needed."""
    script = os.path.join(venv, "bin", REFERENCE)
    python = os.path.join(venv, "bin", "python")
    if os.access(script, os.X_OK):
        got = subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('gopher-mcp'))"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if got == REFERENCE_VERSION:
            return script
    print(f"compare_reference: installing {REFERENCE}=={REFERENCE_VERSION} in {venv}")
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", f"{REFERENCE}=={REFERENCE_VERSION}"], check=True
    )
    return script


def commands(tmp: str, script: str, **extra: str) -> dict[str, Command]:
    """Ours and the reference's, with the same settings and stores of their own."""
    tag = "-".join(f"{k}{v}" for k, v in extra.items()) or "default"
    ours = gophergem_params(tmp, f"ours-{tag}", **extra)
    env = dict(ours.env or {})
    ref = gophergem_params(tmp, f"ref-{tag}", **extra)
    ref_env = dict(ref.env or {})
    ref_env.pop("PYTHONPATH", None)  # the reference must not see our checkout
    return {
        "ours": Command([ours.command, *ours.args], env, ours.cwd),
        "reference": Command([script], ref_env, tmp),
    }


def _kinds(result: dict[str, Any]) -> list[str]:
    items = (result.get("structuredContent") or {}).get("result", [])
    return [x.get("kind") for x in items]


def _batch(s: RawStdioSession, urls: list[str], kind: str, what: str) -> float:
    t0 = time.perf_counter()
    result = s.call_tool("gopher_batch_fetch", {"urls": urls, "refresh": True})
    elapsed = time.perf_counter() - t0
    kinds = _kinds(result)
    if len(kinds) != len(urls) or any(k != kind for k in kinds):
        bad = [k for k in kinds if k != kind]
        raise RuntimeError(f"{what}: {len(kinds)} results, {len(bad)} not {kind}: {bad[:3]}")
    return elapsed


def run(args: argparse.Namespace, tmp: str, errlog: IO[Any], script: str) -> dict[str, Any]:
    from gophergem.testing import make_certificate

    r: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        hosts = []
        for host in HOSTS:
            server = GopherServer(host)
            stack.callback(server.stop)
            server.start()
            hosts.append(server)
        small = GopherServer(SMALL_HOST, backlog=SMALL_BACKLOG)
        stack.callback(small.stop)
        small.start()
        cert, key = make_certificate("localhost")
        gem = GeminiServer(cert, key, tmp)
        stack.callback(gem.stop)
        gem.start()
        menu_url, gem_url = hosts[0].url("1"), gem.url("/")

        def structured(name: str, result: dict[str, Any]) -> None:
            if "structuredContent" not in result:
                raise RuntimeError(f"{name}: no structuredContent in {str(result)[:300]}")

        default = commands(tmp, script)
        print("compare_reference: start-up and idle memory ...", file=sys.stderr)
        r["startup"] = alternate_startups(
            default, errlog, args.spawns, lambda _: ("gopher_fetch", {"url": menu_url}), structured
        )

        print("compare_reference: cached calls ...", file=sys.stderr)
        sessions = {name: c.spawn(errlog) for name, c in default.items()}
        try:
            for s in sessions.values():
                s.initialize()
            for proto, url in (("gopher", menu_url), ("gemini", gem_url)):
                call = (f"{proto}_fetch", {"url": url})
                for s in sessions.values():
                    s.call_tool(*call)
                r[f"cached_{proto}"] = cached_calls(
                    sessions, dict.fromkeys(sessions, call), args.calls, check=structured
                )
        finally:
            for s in sessions.values():
                s.close()

        print("compare_reference: 50 URLs to one small server ...", file=sys.stderr)
        urls = [small.url("0", f"/text/s{i}.txt") for i in range(BATCH_SIZE)]
        for label, extra in (("default", {}), ("nocap", {"GOPHER_MAX_CONCURRENT_REQUESTS": "0"})):
            cmds = commands(tmp, script, **extra)
            live = {name: c.spawn(errlog) for name, c in cmds.items()}
            try:
                for s in live.values():
                    s.initialize()
                    s.call_tool("gopher_fetch", {"url": small.url("0", "/text/warm.txt")})
                out: dict[str, list[float]] = {name: [] for name in live}
                for i in range(args.batch_reps):
                    for name in list(live)[i % 2 :] + list(live)[: i % 2]:
                        out[name].append(_batch(live[name], urls, "text", f"{name} small"))
                r[f"small_{label}"] = out
            finally:
                for s in live.values():
                    s.close()

        print("compare_reference: peak memory, 50 x 1 MiB ...", file=sys.stderr)
        r["peak"] = {name: [] for name in default}
        for i in range(args.memory_reps):
            for name in list(default)[i % 2 :] + list(default)[: i % 2]:
                big = [
                    hosts[j % len(hosts)].url("0", f"/big/{name}{i}-{j}.txt")
                    for j in range(BATCH_SIZE)
                ]
                with default[name].spawn(errlog) as s:
                    s.initialize()
                    s.call_tool("gopher_fetch", {"url": hosts[0].url("0", "/text/about.txt")})
                    before = vm_kib(s.pid)["VmHWM"]
                    _batch(s, big, "text", f"{name} 1 MiB batch")
                    r["peak"][name].append((vm_kib(s.pid)["VmHWM"] - before) / 1024)
    return r


def table(r: dict[str, Any], args: argparse.Namespace) -> str:
    rows: list[tuple[str, str, str, str, str]] = []

    def row(
        label: str, ours: float, ref: float, fmt: str, goal: float | None, suffix: str = "x"
    ) -> None:
        ratio = ours / ref if ref else float("inf")
        cell = "" if goal is None else f"<={goal}{suffix} " + ("ok" if ratio <= goal else "MISS")
        rows.append((label, fmt.format(ours), fmt.format(ref), f"{ratio:.2f}x", cell))

    su = r["startup"]
    for key, label in (
        ("init", "spawn -> initialize answered, ms"),
        ("list", "spawn -> initialize + tools/list answered, ms"),
        ("first", "spawn -> first tool result, ms"),
    ):
        med = {name: statistics.median(x[key] for x in su[name]) * 1000 for name in su}
        row(label, med["ours"], med["reference"], "{:.0f}", GOALS[key])
    for proto in ("gopher", "gemini"):
        c = r[f"cached_{proto}"]
        row(
            f"cached {proto}_fetch, raw stdio, us",
            statistics.median(c["ours"]) * 1e6,
            statistics.median(c["reference"]) * 1e6,
            "{:.0f}",
            GOALS["cached"],
        )
    for label, key in (("default cap", "small_default"), ("MAX_CONCURRENT=0", "small_nocap")):
        s = r[key]
        row(
            f"50 URLs to one small server, {label}, ms",
            statistics.median(s["ours"]) * 1000,
            statistics.median(s["reference"]) * 1000,
            "{:.0f}",
            GOALS["small"],
        )
    payload = BATCH_SIZE * BIG_SIZE / MIB
    peak = {name: statistics.median(v) for name, v in r["peak"].items()}
    row("peak growth, 50 x 1 MiB, MiB", peak["ours"], peak["reference"], "{:.1f}", None)
    for name in ("ours", "reference"):
        ratio = peak[name] / payload
        ok = "ok" if ratio <= GOAL_PEAK else "MISS"
        rows.append(
            (
                f"  {name}: peak growth / payload ({payload:.0f} MiB)",
                f"{ratio:.2f}x",
                "",
                "",
                f"<={GOAL_PEAK}x payload {ok}",
            )
        )
    rss = {name: statistics.median(x["rss"] for x in su[name]) / 1024 for name in su}
    row("VmRSS after one call, MiB", rss["ours"], rss["reference"], "{:.1f}", GOALS["rss"])

    header = ("measure (median)", "gophergem", f"{REFERENCE} {REFERENCE_VERSION}", "ratio", "goal")
    widths = [max(len(x[i]) for x in (header, *rows)) for i in range(5)]

    def fmt(x: tuple[str, ...]) -> str:
        cells = [x[0].ljust(widths[0])] + [x[i].rjust(widths[i]) for i in (1, 2, 3)]
        return " | ".join([*cells, x[4]]).rstrip()

    lines = [fmt(header), "-+-".join("-" * w for w in widths), *(fmt(x) for x in rows)]
    lines += [
        "",
        f"{args.spawns} alternating spawns each for start-up and VmRSS (0.5 s after the first "
        f"result); {args.calls} interleaved cached calls each; {args.batch_reps} alternating "
        f"small-server batches per setting; {args.memory_reps} fresh processes each for the "
        "peak; ratio = gophergem / reference; goals from issue 13; all traffic inside "
        "127.0.0.0/8",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=DEFAULT_VENV, help=f"default {DEFAULT_VENV}")
    parser.add_argument("--spawns", type=int, default=7, help="spawns of each server (7)")
    parser.add_argument("--calls", type=int, default=1000, help="cached calls each (1000)")
    parser.add_argument("--batch-reps", type=int, default=3, help="small-server batches (3)")
    parser.add_argument("--memory-reps", type=int, default=2, help="1 MiB batches each (2)")
    args = parser.parse_args(argv)
    script = ensure_reference(args.venv)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gophergem-ref-") as tmp:
        errpath = os.path.join(tmp, "stderr.log")
        with open(errpath, "w") as errlog:
            try:
                results = run(args, tmp, errlog, script)
            except Exception as exc:
                print(f"compare_reference: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
                errlog.flush()
                with open(errpath, errors="replace") as f:
                    print(f"--- tail of the servers' stderr ---\n{f.read()[-3000:]}")
                return 1
    print(table(results, args))
    print(run_footer(t0, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
