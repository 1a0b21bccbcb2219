# -*- test-case-name: tests.test_cli -*-
"""
The C{gophergem} console script.

  - C{gophergem}: an MCP server on stdin/stdout (what MCP clients launch);
  - C{gophergem fetch URL}: fetch one URL under the same policy and print it;
  - C{gophergem --version}.

Every setting can come from its environment variable or from the option of
the same name (C{GOPHER_TIMEOUT_SECONDS} / C{--gopher-timeout-seconds}); the
option wins.  A bad value ends the program with one line naming it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gophergem._version import __version__
from gophergem.config import SETTINGS, Config, ConfigError

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from gophergem.results import FetchResult, GeminiResult

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gophergem",
        description="Gopher and Gemini for AI assistants over MCP. With no command, "
        "serve MCP on stdin/stdout.",
    )
    parser.add_argument("--version", action="version", version=f"gophergem {__version__}")
    settings = parser.add_argument_group("settings (each also read from its environment variable)")
    for setting in SETTINGS:
        settings.add_argument(
            f"--{setting.option}",
            dest=setting.variable,
            metavar="VALUE",
            help=f"{setting.help} [{setting.variable}]",
        )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    fetch = commands.add_parser(
        "fetch", help="Fetch one gopher:// or gemini:// URL, under the same policy, and print it."
    )
    fetch.add_argument("url")
    fetch.add_argument("--search", help="Search terms for a Gopher type-7 item.")
    fetch.add_argument("--input", help="The answer to a Gemini input prompt.")
    fetch.add_argument("--offset", type=int, default=0, help="Where the window starts.")
    fetch.add_argument("--json", action="store_true", help="Print the JSON payload.")
    trust = commands.add_parser("trust", help="Manage Gemini certificate pins.")
    trust_commands = trust.add_subparsers(dest="trust_command", metavar="ACTION", required=True)
    import_ = trust_commands.add_parser(
        "import", help="Import pins from a gopher-mcp tofu.json (its default place if no PATH)."
    )
    import_.add_argument("path", nargs="?")
    return parser


def _config(args: argparse.Namespace, environ: dict[str, str]) -> Config:
    values = dict(environ)
    for setting in SETTINGS:
        given = getattr(args, setting.variable, None)
        if given is not None:
            values[setting.variable] = given
    return Config.from_env(values)


def _install_asyncio_reactor() -> None:
    if "twisted.internet.reactor" in sys.modules:
        return
    from twisted.internet import asyncioreactor

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    asyncioreactor.install(loop)


def main(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> int:
    """Run the console script; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        config = _config(args, dict(os.environ if environ is None else environ))
    except ConfigError as exc:
        print(f"gophergem: {exc}", file=sys.stderr)
        return 2
    from gophergem._log import start_logging

    if args.command == "trust":
        return _trust_import(config, args, dict(os.environ if environ is None else environ))
    if args.command == "fetch":
        start_logging(
            "WARN" if config.log_level in ("DEBUG", "INFO") else config.log_level, config.log_file
        )
        return _fetch(config, args)
    start_logging(config.log_level, config.log_file)
    return _serve_stdio(config)


def _serve_stdio(config: Config) -> int:
    _install_asyncio_reactor()
    from twisted.internet import reactor

    from gophergem.service import makeService, reserve_stdout

    top = makeService(config, reactor, transport="stdio", stdout_fd=reserve_stdout())
    status = {"code": 0}

    def start() -> None:
        try:
            top.startService()
        except Exception:
            from twisted.logger import Logger

            Logger().failure("gophergem could not start")
            status["code"] = 1
            reactor.stop()

    reactor.callWhenRunning(start)
    reactor.addSystemEventTrigger("before", "shutdown", top.stopService)
    reactor.run()
    return status["code"]


def _fetch(config: Config, args: argparse.Namespace) -> int:
    from twisted.internet import reactor

    from gophergem.mcp.results import payload
    from gophergem.service import build_fetcher

    outcome: dict[str, Any] = {}

    def done(result: Any) -> None:
        outcome["result"] = result
        reactor.stop()

    from gophergem.url import scheme_of

    fetcher = build_fetcher(config, reactor)
    d: Deferred[GeminiResult] | Deferred[FetchResult]
    if scheme_of(args.url) == "gemini":
        d = fetcher.gemini(args.url, input=args.input, offset=args.offset)
    else:
        d = fetcher.gopher(args.url, search=args.search, offset=args.offset)
    d.addBoth(done)
    if "result" not in outcome:
        reactor.run()
    data = payload(outcome["result"])
    if args.json or not sys.stdout.isatty():
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(render(data))
    return 1 if data["kind"] == "error" else 0


def _trust_import(config: Config, args: argparse.Namespace, environ: dict[str, str]) -> int:
    import time
    from pathlib import Path

    from gophergem.errors import GophergemError
    from gophergem.trust.importing import import_gopher_mcp_pins
    from gophergem.trust.paths import gopher_mcp_pin_paths, pin_store_path
    from gophergem.trust.pins import FilePinStore

    if args.path:
        source = Path(args.path)
    else:
        found = [Path(p) for p in gopher_mcp_pin_paths(environ) if Path(p).is_file()]
        if not found:
            print("gophergem: no gopher-mcp tofu.json found; name its path.", file=sys.stderr)
            return 2
        source = found[0]
    store = FilePinStore(str(pin_store_path(config.gemini.tofu_storage_path, environ)))
    try:
        report = import_gopher_mcp_pins(source, store, time.time())
    except GophergemError as error:
        print(f"gophergem: {error.message}", file=sys.stderr)
        return 1
    for pin in report.imported:
        print(f"imported  {pin.host}:{pin.port}  {pin.fingerprint}")
    for skipped in report.skipped:
        print(f"skipped   {skipped.host}:{skipped.port}  {skipped.reason}")
    for problem in report.problems:
        print(f"problem   {problem}")
    print(
        f"{len(report.imported)} imported, {len(report.skipped)} skipped, "
        f"{len(report.problems)} not understood."
    )
    return 0


def render(data: dict[str, Any]) -> str:
    """A readable rendering of a payload for a person at a terminal."""
    kind = data["kind"]
    lines: list[str] = []
    if kind == "menu":
        for item in data["items"]:
            if item["type"] == "i" or not item["next_url"]:
                lines.append(f"      {item['title']}")
            else:
                lines.append(f"[{item['type']}]   {item['title']}  <{item['next_url']}>")
    elif kind == "text":
        lines.append(data["text"])
    elif kind == "binary":
        lines.append(f"binary: {data.get('bytes', data.get('size'))} bytes, {data['mime_type']}")
    elif kind == "gemtext":
        if "text" in data:
            lines.append(data["text"])
        for line in data.get("document", {}).get("lines", []):
            if line["type"] == "link":
                label = line["link"].get("text") or line["link"]["url"]
                lines.append(f"=> {label}  <{line['link']['url']}>")
            else:
                lines.append(line["content"])
    elif kind == "success":
        lines.append(data["content"])
    elif kind == "input":
        lines.append(f"input wanted: {data['prompt']}  (answer with --input)")
    elif kind == "redirect":
        lines.append(
            f"redirect ({'permanent' if data['permanent'] else 'temporary'}): {data['new_url']}"
        )
    elif kind == "certificate":
        lines.append(f"certificate {data['status']}: {data['message']}")
        lines.append(f"next: {data['next_step']}")
    else:
        error = data["error"]
        lines.append(f"error {error['code']}: {error['message']}")
        if error.get("next_step"):
            lines.append(f"next: {error['next_step']}")
    if data.get("next_offset") is not None:
        lines.append(f"-- more: --offset {data['next_offset']}")
    return "\n".join(lines)
