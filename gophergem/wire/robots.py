# -*- test-case-name: tests.test_wire_robots -*-
"""
robots.txt for Gopher and Gemini, free of I/O: the 1994 grammar only.

Neither protocol sends a user agent, so a server cannot tell clients apart on
the wire; both ecosystems use a plain robots.txt at the host root instead.
Gemini's companion specification and the Veronica-2 convention for Gopher
both use the original 1994 grammar: C{#} comments, C{User-agent:} and
C{Disallow:}, and nothing else.  C{Allow:} is ignored on purpose: a capsule
author who writes it expects it to be dropped, and acting on it (as an
RFC 9309 parser would) makes a client I{more} permissive than intended.

Where the conventions leave room, this module always chooses the reading
that refuses more, never less:

  - B{Union of groups.}  Several of our agents match at once (C{gophergem},
    C{webproxy}, C{indexer} and C{*} for Gemini), and the Gemini companion
    specification says to obey the most restrictive set when more than one
    applies.  So a path is refused when I{any} group naming one of our
    agents disallows it.  (RFC 9309 would pick only the most specific group,
    which lets C{User-agent: gophergem} with an empty C{Disallow:} override
    C{User-agent: *}; here it cannot.)
  - B{Wildcards.}  The 1994 grammar has none, but authors who write C{*} or
    a trailing C{$} plainly mean them.  A rule refuses a path when it matches
    either as a literal prefix or with C{*} (any run of characters) and C{$}
    (end of path) read as wildcards.
  - B{Spellings.}  Rules and paths are also compared percent-decoded (C{/%7Euser}
    against C{/~user}), a path also with its dot segments resolved, and a rule
    written without a leading C{/} also with one.

L{parse_robots} never raises, whatever the bytes; L{RobotsRules.disallowed}
answers the one question a fetch asks.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from urllib.parse import unquote

import attrs

__all__ = [
    "AI_AGENTS",
    "GEMINI_AGENTS",
    "GOPHER_AGENTS",
    "MAX_ROBOTS_BYTES",
    "MAX_ROBOTS_LINES",
    "RobotsGroup",
    "RobotsRules",
    "gemini_robot_paths",
    "gopher_robot_paths",
    "parse_robots",
]

MAX_ROBOTS_BYTES = 512_000
"""Only this much of a robots.txt is read (RFC 9309 asks for at least 500 KiB)."""

MAX_ROBOTS_LINES = 10_000
"""Only this many lines of a robots.txt are read."""

GEMINI_AGENTS: tuple[str, ...] = ("gophergem", "webproxy", "indexer", "*")
"""
The agents we obey on Gemini: our own name, the companion specification's
C{webproxy} (a fetch made on behalf of a person) and C{indexer} (batch
fetches are crawl-shaped), and C{*}.  Not C{archiver}: nothing is kept beyond
a short cache.  Not C{researcher}: we show the content we fetch.
"""

GOPHER_AGENTS: tuple[str, ...] = ("gophergem", "*")
"""
The agents we obey on Gopher: our own name and C{*}.  Not C{veronica}, which
names Floodgap's indexer, not us.
"""

AI_AGENTS: tuple[str, ...] = (
    "ClaudeBot",
    "Claude-Web",
    "Claude-User",
    "Claude-SearchBot",
    "anthropic-ai",
    "GPTBot",
    "ChatGPT-User",
    "OAI-SearchBot",
    "CCBot",
    "Google-Extended",
    "GoogleOther",
    "PerplexityBot",
    "Perplexity-User",
    "Bytespider",
    "Applebot-Extended",
    "Meta-ExternalAgent",
    "Meta-ExternalFetcher",
    "FacebookBot",
    "cohere-ai",
    "cohere-training-data-crawler",
    "Amazonbot",
    "Diffbot",
    "YouBot",
    "AI2Bot",
    "Ai2Bot-Dolma",
    "MistralAI-User",
    "DuckAssistBot",
    "PetalBot",
    "omgili",
    "omgilibot",
    "Timpibot",
    "ImagesiftBot",
    "img2dataset",
)
"""
Product tokens of well-known AI crawlers and assistants.  We are an AI
assistant's fetcher, so an operator who names any of them meant us too; with
C{*_ROBOTS_HONOR_AI_TOKENS=true} their rules are added to ours.
"""

_FIELD_JUNK = re.compile(r"[\s_-]+")
_AGENT_SPLIT = re.compile(r"[\s/;,()]+")


@attrs.frozen
class RobotsGroup:
    """
    One record: the agents named on consecutive C{User-agent:} lines and
    the C{Disallow:} rules that follow them.

    @ivar agents: The agent tokens, lower case (C{"*"} for the catch-all).
    @ivar disallow: The non-empty C{Disallow:} values, as written.
    """

    agents: frozenset[str]
    disallow: tuple[str, ...]


@attrs.frozen
class RobotsRules:
    """
    A parsed robots.txt.

    An empty value (no groups) imposes no rules; that is what a missing
    file, an error page or a Gopher menu served in its place all parse to.

    @ivar groups: The records, in file order.
    @ivar truncated: Whether the file was longer than the parser reads.
    """

    groups: tuple[RobotsGroup, ...] = ()
    truncated: bool = False

    def rules_for(self, agents: Sequence[str]) -> tuple[str, ...]:
        """
        Return every C{Disallow:} value of every group naming one of C{agents}.

        Agents match case-insensitively, token for token; C{"*"} matches
        only the C{User-agent: *} group.
        """
        wanted = {agent.strip().lower() for agent in agents}
        found: dict[str, None] = {}
        for group in self.groups:
            if group.agents & wanted:
                found.update(dict.fromkeys(group.disallow))
        return tuple(found)

    def blocking_rule(self, agents: Sequence[str], paths: Sequence[str]) -> str | None:
        """
        Return the first rule that refuses any of C{paths} to any of
        C{agents}, or C{None} when nothing does.

        @param agents: Our agent tokens (L{GEMINI_AGENTS}, L{GOPHER_AGENTS},
            optionally with L{AI_AGENTS}).
        @param paths: Every spelling of the resource being fetched (see
            L{gopher_robot_paths} and L{gemini_robot_paths}).
        """
        rules = self.rules_for(agents)
        if not rules:
            return None
        candidates = _path_variants(paths)
        for rule in rules:
            for spelling in _rule_variants(rule):
                if any(_matches(spelling, path) for path in candidates):
                    return rule
        return None

    def disallowed(self, agents: Sequence[str], paths: Sequence[str]) -> bool:
        """
        Return whether any group naming one of C{agents} disallows any of
        C{paths}: the union of every matching group, not the most specific.
        """
        return self.blocking_rule(agents, paths) is not None


def parse_robots(data: bytes) -> RobotsRules:
    """
    Parse robots.txt with the 1994 grammar; never raises.

    Only C{User-agent:} and C{Disallow:} lines count (field names in any
    case, with any spacing; CRLF, LF or CR line ends; a C{#} starts a
    comment).  Consecutive C{User-agent:} lines share one group; a
    C{User-agent:} line after any other field starts a new one.  Blank lines
    and comments do not end a group.  A C{Disallow:} with no value disallows
    nothing, and one before any C{User-agent:} line belongs to no group.

    Only the first L{MAX_ROBOTS_BYTES} bytes and L{MAX_ROBOTS_LINES} lines
    are read; a line cut by the byte cap is dropped rather than read as a
    shorter (broader) rule.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        return RobotsRules()
    data = bytes(data)
    truncated = len(data) > MAX_ROBOTS_BYTES
    if truncated:
        data = data[:MAX_ROBOTS_BYTES]
        last_break = max(data.rfind(b"\n"), data.rfind(b"\r"))
        data = data[: last_break + 1] if last_break >= 0 else b""
    data = data.removeprefix(b"\xef\xbb\xbf")
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if len(lines) > MAX_ROBOTS_LINES:
        lines = lines[:MAX_ROBOTS_LINES]
        truncated = True

    groups: list[RobotsGroup] = []
    agents: list[str] = []
    rules: dict[str, None] = {}
    collecting_agents = False

    def close() -> None:
        if agents:
            groups.append(RobotsGroup(frozenset(agents), tuple(rules)))

    for raw in lines:
        line = _decode(raw).split("#", 1)[0]
        name, colon, value = line.partition(":")
        if not colon:
            continue
        field = _FIELD_JUNK.sub("", name).lower()
        value = value.strip()
        if field == "useragent":
            if not collecting_agents:
                close()
                agents, rules = [], {}
                collecting_agents = True
            agents.extend(token for token in _AGENT_SPLIT.split(value.lower()) if token)
            continue
        collecting_agents = False
        if field == "disallow" and value:
            rules[value] = None
    close()
    return RobotsRules(tuple(groups), truncated)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# --- matching ---------------------------------------------------------------


def _path_variants(paths: Sequence[str]) -> list[str]:
    """Each path as given, percent-decoded, and with dot segments resolved."""
    out: list[str] = []
    for path in paths:
        if not isinstance(path, str):
            continue
        for variant in (path, unquote(path)):
            for spelling in (variant, _resolve_dots(variant)):
                if spelling not in out:
                    out.append(spelling)
    return out


def _resolve_dots(path: str) -> str:
    if "/." not in path and not path.startswith("."):
        return path
    resolved = posixpath.normpath(path)
    if path.endswith("/") and not resolved.endswith("/"):
        resolved += "/"
    return resolved


def _rule_variants(rule: str) -> list[str]:
    """A rule as written, percent-decoded, and with a leading C{/} when it lacks one."""
    out: list[str] = []
    for variant in (rule, unquote(rule)):
        for spelling in (variant, variant if variant.startswith(("/", "*")) else "/" + variant):
            if spelling not in out:
                out.append(spelling)
    return out


def _matches(rule: str, path: str) -> bool:
    """
    Return whether C{rule} covers C{path}: as a literal prefix, or with C{*}
    and a trailing C{$} read as wildcards.

    The wildcard match is a greedy left-to-right scan, linear in the path for
    each segment, so no rule a server writes can make it slow (a translated
    regular expression would backtrack exponentially on C{/*****x}).
    """
    if not rule:
        return False
    if path.startswith(rule):
        return True
    if "*" not in rule and not rule.endswith("$"):
        return False
    anchored = rule.endswith("$")
    pattern = rule[:-1] if anchored else rule
    segments = pattern.split("*")
    head, *middle = segments
    if not path.startswith(head):
        return False
    if not middle:
        return path == head if anchored else True
    *inner, tail = middle
    position = len(head)
    for segment in inner:
        if not segment:
            continue
        found = path.find(segment, position)
        if found < 0:
            return False
        position = found + len(segment)
    if anchored:
        return path.endswith(tail) and len(path) - len(tail) >= position
    return not tail or path.find(tail, position) >= 0


# --- the spellings of a resource ------------------------------------------


def gopher_robot_paths(item_type: str, selector_text: str) -> list[str]:
    """
    Return the spellings a Gopher robots.txt rule may be written against.

    Operators write rules both ways, often in the same file (quux.org lists
    C{Disallow: /Archives/mirrors/} and C{Disallow: 1/Archives/mirrors/}), so
    every spelling is tested and any match refuses the fetch:

      - the URI path, C{/<type><selector>} (C{/1/archive});
      - the type and selector without the slash, C{<type><selector>}
        (C{1/archive}: the Veronica-2 convention for typed selectors);
      - the wire selector with a leading C{/} added when it lacks one;
      - the selector exactly as the server wrote it.

    @param item_type: The one-character item type.
    @param selector_text: The selector as text (see
        L{gophergem.wire.gopher.selector_text}).
    """
    slashed = selector_text if selector_text.startswith("/") else "/" + selector_text
    spellings = [
        f"/{item_type}{selector_text}",
        f"{item_type}{selector_text}",
        slashed,
        selector_text,
    ]
    return list(dict.fromkeys(spellings))


def gemini_robot_paths(path: str, query: str | None = None) -> list[str]:
    """
    Return the spellings a Gemini robots.txt rule may be written against:
    the URL path (C{/} when empty) and, when there is a query, the path with
    it, so that a rule such as C{Disallow: /search?} applies.  The query is
    only matched, never shown.
    """
    path = path or "/"
    return [path] if query is None else [path, f"{path}?{query}"]
