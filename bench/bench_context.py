#!/usr/bin/env python
"""
Opt-in: what a model reads, gophergem next to the reference (gopher-mcp 0.10.2).

    python bench/bench_context.py [--venv DIR]

Issue 23 asks for context economy, in characters a model reads:

  - menu: the text block of one C{gopher_fetch} of the 48-item menu of
    C{bench/servers.py} (its C{content} text, what a client hands the
    model), goal at most 30% of the reference's;
  - tools: the tool definitions of C{tools/list} as a model reads them,
    each tool's C{name}, C{description} and C{inputSchema} as compact JSON
    (titles, annotations and output schemas left out), goal at most 30% of
    the reference's (every tool counted, C{smolweb_fetch} and
    C{titan_upload} included); the script also prints how many characters
    a further tool may spend within the goal.

Both servers are spawned over stdio with the same settings as
C{compare_reference.py} (which installs the reference in a venv outside the
repository on first use) against a loopback Gopher server; nothing leaves
127.0.0.0/8.  Characters, not timings: one run is enough.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from compare_reference import (  # noqa: E402
    DEFAULT_VENV,
    REFERENCE,
    REFERENCE_VERSION,
    commands,
    ensure_reference,
)
from servers import GopherServer  # noqa: E402

GOAL = 0.30


def definitions(tools: list[dict[str, Any]]) -> int:
    """Characters of the tool definitions a model reads: name, description, input schema."""
    return sum(
        len(
            json.dumps(
                {k: t.get(k) for k in ("name", "description", "inputSchema")},
                separators=(",", ":"),
                ensure_ascii=False,
            )
        )
        for t in tools
    )


def measure(script: str, tmp: str, errlog: Any) -> dict[str, dict[str, Any]]:
    server = GopherServer("127.0.0.1")
    server.start()
    try:
        out: dict[str, dict[str, Any]] = {}
        for name, command in commands(tmp, script).items():
            with command.spawn(errlog) as session:
                session.initialize()
                tools = session.request("tools/list")["tools"]
                result = session.call_tool("gopher_fetch", {"url": server.url("1")})
                text = "".join(b.get("text", "") for b in result["content"])
                items = (result.get("structuredContent") or {}).get("items", [])
                out[name] = {
                    "menu": len(text),
                    "items": len(items),
                    "tools": len(tools),
                    "definitions": definitions(tools),
                }
        return out
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=DEFAULT_VENV, help=f"default {DEFAULT_VENV}")
    args = parser.parse_args(argv)
    script = ensure_reference(args.venv)
    with (
        tempfile.TemporaryDirectory(prefix="gophergem-context-") as tmp,
        open(os.path.join(tmp, "stderr.log"), "w") as errlog,
    ):
        r = measure(script, tmp, errlog)
    ours, ref = r["ours"], r["reference"]

    def line(label: str, mine: int, theirs: int) -> None:
        ratio = mine / theirs
        verdict = "ok" if ratio <= GOAL else "MISS"
        print(f"{label:<44} {mine:>7} {theirs:>7}   {ratio:6.1%}   <={GOAL:.0%} {verdict}")

    print(f"{'characters a model reads':<44} {'ours':>7} {'ref':>7}   ratio    goal")
    line(f"menu text, {ours['items']}-item menu", ours["menu"], ref["menu"])
    line(
        f"tool definitions, {ours['tools']} tools (ref {ref['tools']})",
        ours["definitions"],
        ref["definitions"],
    )
    room = int(GOAL * ref["definitions"]) - ours["definitions"]
    print(f"room left within the goal for the definitions of further tools: {room} characters")
    print(f"reference: {REFERENCE} {REFERENCE_VERSION}; all traffic inside 127.0.0.0/8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
