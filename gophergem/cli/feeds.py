# -*- test-case-name: tests.test_cli_feeds -*-
"""
C{gophergem feeds list|updates|subscribe|unsubscribe|import|export}: the
subscriptions of the feed tools, through the same follower, where the
daemon keeps them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from gophergem._plural import counted
from gophergem.cli._runner import _fail, _format_options, _principal_option, _refused, _show
from gophergem.cli._state import _with_state
from gophergem.config import Config
from gophergem.errors import GophergemError


def add_parser(commands: Any, command: Any) -> None:
    """The C{gophergem feeds …} commands."""
    feeds = command(
        commands,
        "feeds",
        "ACTION ...",
        "Follow capsules and phlogs: subscriptions, and what is new on them.",
    )
    actions = feeds.add_subparsers(
        dest="feeds_command", metavar="ACTION", required=True, prog="gophergem feeds"
    )
    listing = command(
        actions,
        "list",
        "[--format readable|json] [settings]",
        "List the subscriptions (nothing is fetched).",
    )
    _format_options(listing)
    updates = command(
        actions,
        "updates",
        "[--url URL] [--since WHEN] [--no-mark-read] [--limit N] [--format readable|json] "
        "[settings]",
        "Check the subscriptions (or one) and print what is new, newest first.",
        "Check the subscriptions (or one) and print what is new, newest first: date, feed, "
        "entry title, URL. Feeds that could not be checked are listed on standard error, one "
        "line each; the exit status is 1 when every one of them failed.",
    )
    updates.add_argument("--url", metavar="URL", help="Only this subscription.")
    updates.add_argument(
        "--since",
        metavar="WHEN",
        help="An ISO 8601 date or time: every entry after it, read or not.",
    )
    updates.add_argument(
        "--no-mark-read",
        dest="mark_read",
        action="store_false",
        help="Leave the entries printed unread.",
    )
    updates.add_argument(
        "--limit", metavar="N", type=int, default=50, help="At most N entries (1 to 500; 50)."
    )
    _format_options(updates)
    subscribe = command(
        actions,
        "subscribe",
        "[--title TITLE] [--format readable|json] [settings] URL",
        "Follow a gemini://, gopher://, spartan:// or nex:// page or a finger:// plan; what it "
        "lists now counts as read.",
    )
    subscribe.add_argument("url")
    subscribe.add_argument("--title", metavar="TITLE", help="A title of your own.")
    _format_options(subscribe)
    unsubscribe = command(
        actions, "unsubscribe", "[--format readable|json] [settings] URL", "Stop following a page."
    )
    unsubscribe.add_argument("url", help="The URL as gophergem feeds list shows it.")
    _format_options(unsubscribe)
    import_ = command(
        actions,
        "import",
        "[settings] FILE",
        "Subscribe to the small-web feeds of an OPML file.",
        "Subscribe to every gemini://, gopher://, spartan://, nex:// and finger:// feed "
        "(outline xmlUrl) of an OPML file, "
        "each fetched once; other schemes are listed as skipped. The exit status is 1 when "
        "a subscription failed.",
    )
    import_.add_argument("file", metavar="FILE")
    import_.set_defaults(json=False)
    export = command(
        actions,
        "export",
        "[settings] [FILE]",
        "Write the subscriptions as OPML 2.0, to FILE (replaced atomically) or standard output.",
    )
    export.add_argument("file", metavar="FILE", nargs="?")
    export.set_defaults(json=False)
    for sub in actions.choices.values():
        _principal_option(sub)


def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """
    C{gophergem feeds …}: the subscriptions of the owner or of
    C{--principal}, where the daemon keeps them, through a fetcher and a
    follower built as the MCP server builds them (presenting that
    principal's identities).  The actions that fetch nothing get a fetcher
    without pins or identities: it is never asked.
    """
    fetching = args.feeds_command in ("updates", "subscribe", "import")

    async def use(state: Any, principal: str | None, reactor: Any) -> int:
        import attrs

        from gophergem.feeds.follow import Follower
        from gophergem.fetcher import Fetcher

        if fetching:
            fetcher = Fetcher.from_config(
                config,
                reactor,
                pins=state.pins(principal),
                identities=state.identities(principal),
            )
        else:
            idle = attrs.evolve(config.gemini, tofu_enabled=False, client_certs_enabled=False)
            fetcher = Fetcher.from_config(attrs.evolve(config, gemini=idle), reactor)
        return await feeds_command(Follower(fetcher, state.feeds(principal)), args)

    return _with_state(config, args, environ, use, identities=fetching)


async def feeds_command(follower: Any, args: argparse.Namespace) -> int:
    """
    Run one C{gophergem feeds} action with C{follower} (a
    L{gophergem.feeds.follow.Follower}); return the exit status.

    What it prints goes to standard output, problems to standard error, one
    line each.  A L{GophergemError} (C{STATE_UNAVAILABLE}, C{NOT_SUBSCRIBED},
    a fetch's error) is one line and status 1; a bad argument
    (C{INVALID_REQUEST}) status 2.
    """
    action = args.feeds_command
    try:
        if action == "list":
            return await _feeds_list(follower, args)
        if action == "updates":
            return await _feeds_updates(follower, args)
        if action == "subscribe":
            return await _feeds_subscribe(follower, args)
        if action == "unsubscribe":
            key = await follower.unsubscribe(args.url)
            data = {"kind": "subscription_removed", "url": key}
            return _show(args, data, [f"Unsubscribed from {key}."])
        if action == "import":
            return await _feeds_import(follower, args)
        return await _feeds_export(follower, args)
    except GophergemError as error:
        return _refused(error, args)


def _clean(text: str | None) -> str:
    """Text written by strangers, safe for a terminal and on one line."""
    from gophergem.wire.text import sanitise_line

    return " ".join(sanitise_line(text or "").split())


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


async def _feeds_list(follower: Any, args: argparse.Namespace) -> int:
    from gophergem.render.payloads import subscriptions_payload

    subscriptions = await follower.subscriptions()
    rows = [["URL", "TYPE", "UNREAD", "LAST CHECKED", "LAST ERROR"]] + [
        [
            _clean(sub.url),
            sub.feed_type,
            str(sub.unread),
            sub.last_checked or "never",
            sub.last_error or "-",
        ]
        for sub in subscriptions
    ]
    lines = _table(rows) if subscriptions else ["No subscriptions."]
    return _show(args, subscriptions_payload(subscriptions), lines)


async def _feeds_updates(follower: Any, args: argparse.Namespace) -> int:
    from gophergem.render.payloads import updates_payload

    updates = await follower.updates(
        args.url, since=args.since, mark_read=args.mark_read, limit=args.limit
    )
    lines = [
        "  ".join(
            (
                (entry.published or entry.first_seen)[:10],
                _clean(entry.feed_title or entry.feed_url),
                _clean(entry.title) or "(untitled)",
                _clean(entry.url),
            )
        )
        for entry in updates.entries
    ]
    if not lines:
        lines.append(f"Nothing new ({updates.checked} checked).")
    if updates.more:
        lines.append(f"-- more: only the newest {args.limit} shown; run again for the rest.")
    _show(args, updates_payload(updates), lines)
    sys.stdout.flush()
    for failed in updates.errors:
        error = failed.error
        _fail(f"{_clean(failed.feed_url)}: {error.code}: {_clean(error.message)}", 1)
    every_one_failed = bool(updates.errors) and len(updates.errors) >= updates.checked
    return 1 if every_one_failed else 0


async def _feeds_subscribe(follower: Any, args: argparse.Namespace) -> int:
    from gophergem.render.payloads import subscription_payload

    subscription, new = await follower.subscribe(args.url, args.title)
    about = f"{_clean(subscription.title) or 'untitled'} ({subscription.feed_type})"
    if new:
        said = (
            f"Subscribed to {subscription.url}: {about}, "
            f"{counted(subscription.entries_known, 'entry', 'entries')} known, all counted as read."
        )
    else:
        said = f"Already subscribed to {subscription.url}: {about}; what was seen is kept."
    return _show(args, subscription_payload(subscription), [said])


async def _feeds_import(follower: Any, args: argparse.Namespace) -> int:
    from twisted.internet.defer import DeferredList

    from gophergem.feeds.opml import MAX_OPML_BYTES, OPMLError, parse_opml
    from gophergem.feeds.parse import FOLLOWED_SCHEMES
    from gophergem.url import scheme_of

    try:
        with open(args.file, "rb") as stream:
            data = stream.read(MAX_OPML_BYTES + 1)
    except OSError as error:
        return _fail(f"feeds import: cannot read {args.file!r}: {error.strerror or error}")
    try:
        outlines = parse_opml(data)
    except OPMLError as error:
        return _fail(f"feeds import: {args.file!r} is not usable OPML: {error}")
    wanted = [o for o in outlines if scheme_of(o.url) in FOLLOWED_SCHEMES]
    outcomes = await DeferredList(
        [follower.subscribe(o.url, o.title) for o in wanted], consumeErrors=True
    )
    done = dict(zip((o.url for o in wanted), outcomes, strict=True))
    counts = {"ok": 0, "error": 0, "skipped": 0}
    for outline in outlines:
        url = _clean(outline.url)
        if outline.url not in done:
            counts["skipped"] += 1
            print(f"skipped  {url}  not a gemini, gopher, spartan, nex or finger URL")
            continue
        ok, value = done[outline.url]
        if ok:
            subscription, new = value
            counts["ok"] += 1
            state = "" if new else ", already followed"
            about = f"{_clean(subscription.title) or 'untitled'} ({subscription.feed_type}{state})"
            print(f"ok       {url}  {about}")
        else:
            value.trap(GophergemError)  # anything else is a bug: let it out
            counts["error"] += 1
            print(f"error    {url}  {value.value.code}: {_clean(value.value.message)}")
    print(f"{counts['ok']} subscribed, {counts['error']} failed, {counts['skipped']} skipped.")
    return 1 if counts["error"] else 0


async def _feeds_export(follower: Any, args: argparse.Namespace) -> int:
    from pathlib import Path

    from gophergem.feeds.opml import Outline, write_opml
    from gophergem.state.documents import write_atomically

    subscriptions = await follower.subscriptions()
    document = write_opml([Outline(sub.url, sub.title) for sub in subscriptions])
    if args.file is None:
        sys.stdout.write(document.decode("utf-8"))
        sys.stdout.flush()
        return 0
    try:
        write_atomically(Path(args.file), document)
    except OSError as error:
        return _fail(f"feeds export: cannot write {args.file!r}: {error.strerror or error}")
    print(f"Wrote {counted(len(subscriptions), 'subscription')} to {args.file}.")
    return 0
