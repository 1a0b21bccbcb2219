# -*- test-case-name: tests.test_cli -*-
"""
C{gophergem fetch URL}: fetch one URL under the same policy as the MCP
tools and print it, readable for a person or as the tools' JSON payload.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from gophergem.cli._runner import _fail, _format_options, _stdout_gone, _wants_json
from gophergem.config import Config

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from gophergem.results import FetchResult, GeminiResult


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem fetch URL} command."""
    fetch = command(
        commands,
        "fetch",
        "[--search TERMS] [--input ANSWER] [--offset N] [--format readable|json] [settings] URL",
        "Fetch one gopher://, gemini://, finger://, nex:// or spartan:// URL, under the same "
        "policy, and print it.",
    )
    fetch.add_argument("url")
    fetch.add_argument("--search", metavar="TERMS", help="Search terms for a Gopher type-7 item.")
    fetch.add_argument(
        "--input",
        metavar="ANSWER",
        help="The answer to a Gemini input prompt. The URL is first asked without it, to "
        "learn whether the prompt is sensitive (status 11): only then is the answer redacted. "
        "For a spartan:// URL (an =: link), the data sent.",
    )
    fetch.add_argument(
        "--offset", metavar="N", type=int, default=0, help="Where the window starts."
    )
    _format_options(
        fetch,
        "How to print the result: readable (the default at a terminal) or json (the "
        "default when the output is piped: the JSON payload of the tools).",
    )


def run(config: Config, args: argparse.Namespace) -> int:
    from twisted.internet import reactor

    from gophergem.fetcher import Fetcher
    from gophergem.fetcher.smolweb import SMOLWEB_FETCH_SCHEMES
    from gophergem.url import scheme_of

    fetcher = Fetcher.from_config(config, reactor)
    d: Deferred[GeminiResult] | Deferred[FetchResult] | Deferred[FetchResult | GeminiResult]
    scheme = scheme_of(args.url)
    if scheme == "gemini":
        # This process never saw the prompt: learn whether it was an 11.
        d = fetcher.gemini(args.url, input=args.input, offset=args.offset, learn_prompt=True)
    elif scheme in SMOLWEB_FETCH_SCHEMES or (
        scheme not in ("", "gopher") and args.url[len(scheme) + 1 :].startswith("//")
    ):
        # The small web's schemes; any other scheme://, refused naming all five.
        d = fetcher.smolweb(args.url, input=args.input, offset=args.offset)
    else:
        d = fetcher.gopher(args.url, search=args.search, offset=args.offset)
    return show_outcome(reactor, d, args, "fetch", invalid_is_usage=True)


def show_outcome(
    reactor: Any, d: Deferred[Any], args: argparse.Namespace, what: str, *, invalid_is_usage: bool
) -> int:
    """
    Run the reactor until C{d} (a fetch or an upload) has its result, print
    that result's payload (readable, or JSON with C{--format json}), and
    return the exit status: 0 for a result, 1 for an error result, 130 when
    stopped first.

    @param what: What C{d} is, for the one-line messages ("fetch", "upload").
    @param invalid_is_usage: Whether an C{INVALID_REQUEST} is a usage error
        (status 2, one line instead of the readable rendering).
    """
    from twisted.python.failure import Failure

    from gophergem.render.payloads import payload
    from gophergem.render.terminal import readable

    outcome: dict[str, Any] = {}

    def done(result: Any) -> None:
        outcome["result"] = result
        # A request refused before any I/O (BLOCKED, INVALID_REQUEST…) is
        # answered at once, before the reactor runs: then there is nothing to stop.
        if reactor.running:
            reactor.stop()

    d.addBoth(done)
    if "result" not in outcome:
        reactor.run()
    if "result" not in outcome:
        return _fail(f"stopped before the {what} finished.", 130)
    result = outcome["result"]
    if isinstance(result, Failure):
        from twisted.logger import Logger

        Logger().failure(f"the {what} failed unexpectedly", result)
        return _fail(f"the {what} failed unexpectedly: {result.getErrorMessage()}", 1)
    data = payload(result)
    status = 1 if data["kind"] == "error" else 0
    as_json = _wants_json(args)
    if invalid_is_usage and status and data["error"]["code"] == "INVALID_REQUEST":
        # The request itself is wrong (a bad URL, an unknown scheme): a usage
        # error, one line and status 2; programs still get the payload.
        status = 2
        if not as_json:
            return _fail(f"INVALID_REQUEST: {data['error']['message']}", 2)
    try:
        print(json.dumps(data, indent=2, ensure_ascii=False) if as_json else readable(data))
        sys.stdout.flush()  # a reader gone (| head) shows here, not at exit
    except BrokenPipeError:
        _stdout_gone()
    if status and as_json:  # the payload is for programs; a person watching gets one line
        error = data["error"]
        _fail(f"{error['code']}: {error['message']}")
    return status
