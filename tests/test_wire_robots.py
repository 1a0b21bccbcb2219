"""
Tests for L{gophergem.wire.robots}: the 1994 robots.txt grammar.

Vector tables for parsing and matching (SPEC section 6), plus hypothesis
properties: no byte string makes the parser raise.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.wire.robots import (
    AI_AGENTS,
    GEMINI_AGENTS,
    GOPHER_AGENTS,
    MAX_ROBOTS_BYTES,
    MAX_ROBOTS_LINES,
    RobotsGroup,
    RobotsRules,
    gemini_robot_paths,
    gopher_robot_paths,
    parse_robots,
)

WITH_AI = (*GEMINI_AGENTS, *AI_AGENTS)

# --- the agent sets ----------------------------------------------------------


def test_gemini_agents() -> None:
    """Gemini obeys gophergem, webproxy, indexer and *, and not archiver or researcher."""
    assert set(GEMINI_AGENTS) == {"gophergem", "webproxy", "indexer", "*"}


def test_gopher_agents() -> None:
    """Gopher obeys gophergem and *, and not veronica."""
    assert set(GOPHER_AGENTS) == {"gophergem", "*"}


@pytest.mark.parametrize(
    "token",
    ["ClaudeBot", "Claude-Web", "anthropic-ai", "GPTBot", "ChatGPT-User", "OAI-SearchBot",
     "CCBot", "Google-Extended", "PerplexityBot", "Bytespider", "Applebot-Extended",
     "Meta-ExternalAgent", "cohere-ai"],
)  # fmt: skip
def test_ai_agents_name_the_well_known_crawlers(token: str) -> None:
    """The AI token list names every well-known AI crawler."""
    assert token in AI_AGENTS


def test_ai_agents_are_single_tokens() -> None:
    """Every AI token is one lower-case-able token, so it can match a group."""
    for token in AI_AGENTS:
        assert token.strip() == token and " " not in token and "/" not in token


# --- parsing -------------------------------------------------------------------

PARSE_VECTORS = [
    # (name, file, groups as (agents, rules))
    ("empty", b"", []),
    ("one group", b"User-agent: *\nDisallow: /private\n", [({"*"}, ("/private",))]),
    (
        "field names in any case and spacing",
        b"USER-AGENT:*\n  disallow :   /a  \nuser-Agent :  X\nDISALLOW:/b",
        [({"*"}, ("/a",)), ({"x"}, ("/b",))],
    ),
    (
        "crlf, cr and lf",
        b"User-agent: *\r\nDisallow: /a\rDisallow: /b\nDisallow: /c",
        [({"*"}, ("/a", "/b", "/c"))],
    ),
    (
        "comments",
        b"# a comment\nUser-agent: * # everyone\nDisallow: /a # not /b\n#Disallow: /c\n",
        [({"*"}, ("/a",))],
    ),
    (
        "consecutive user-agent lines share a group",
        b"User-agent: a\nUser-agent: B\nDisallow: /x\n",
        [({"a", "b"}, ("/x",))],
    ),
    (
        "a user-agent after a rule starts a new group",
        b"User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n",
        [({"a"}, ("/x",)), ({"b"}, ("/y",))],
    ),
    (
        "blank lines and comments do not end a group",
        b"User-agent: a\n\n# note\n\nDisallow: /x\n",
        [({"a"}, ("/x",))],
    ),
    (
        "allow is ignored",
        b"User-agent: *\nAllow: /private/public\nDisallow: /private\n",
        [({"*"}, ("/private",))],
    ),
    (
        "any other field ends a run of user-agent lines",
        b"User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /y\n",
        [({"a"}, ()), ({"b"}, ("/y",))],
    ),
    (
        "other fields are ignored inside a group",
        b"User-agent: *\nCrawl-delay: 10\nSitemap: /s.xml\nDisallow: /x\nHost: h\n",
        [({"*"}, ("/x",))],
    ),
    ("empty disallow disallows nothing", b"User-agent: *\nDisallow:\n", [({"*"}, ())]),
    ("a rule before any user-agent belongs to no group", b"Disallow: /\n", []),
    ("lines without a colon are ignored", b"User-agent *\nDisallow /\n", []),
    (
        "a versioned agent is its product token",
        b"User-agent: GPTBot/1.0\nDisallow: /\n",
        [({"gptbot", "1.0"}, ("/",))],
    ),
    ("a utf-8 bom is skipped", b"\xef\xbb\xbfUser-agent: *\nDisallow: /x", [({"*"}, ("/x",))]),
    (
        "latin-1 rules are kept",
        b"User-agent: *\nDisallow: /caf\xe9\n",
        [({"*"}, ("/caf\xe9",))],
    ),
    (
        "duplicate rules are kept once",
        b"User-agent: *\nDisallow: /x\nDisallow: /x\n",
        [({"*"}, ("/x",))],
    ),
    ("a gopher menu parses to nothing", b"iHi\t\terror.host\t1\r\n1Docs\t/d\th\t70\r\n.\r\n", []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "groups"), [v[1:] for v in PARSE_VECTORS], ids=[v[0] for v in PARSE_VECTORS]
)
def test_parse(data: bytes, groups: list[tuple[set[str], tuple[str, ...]]]) -> None:
    """Each file parses to the groups listed."""
    rules = parse_robots(data)
    assert rules.groups == tuple(RobotsGroup(frozenset(a), r) for a, r in groups)
    assert not rules.truncated


def test_only_the_first_bytes_are_read() -> None:
    """Past MAX_ROBOTS_BYTES nothing is read, and a line cut by the cap is dropped."""
    head = b"User-agent: *\nDisallow: /early\n"
    pad = b"#" * (MAX_ROBOTS_BYTES - len(head) - 4) + b"\n"
    cut = b"Disallow: /abcdefgh\n"  # crosses the cap: would read as /a..
    rules = parse_robots(head + pad + cut + b"Disallow: /late\n")
    assert rules.truncated
    assert rules.rules_for(["*"]) == ("/early",)


def test_only_the_first_lines_are_read() -> None:
    """Past MAX_ROBOTS_LINES nothing is read."""
    data = b"User-agent: *\n" + b"\n" * MAX_ROBOTS_LINES + b"Disallow: /late\n"
    rules = parse_robots(data)
    assert rules.truncated
    assert rules.rules_for(["*"]) == ()


# --- deciding ------------------------------------------------------------------

GEM, GOP = GEMINI_AGENTS, GOPHER_AGENTS


def star(rule: str) -> bytes:
    """A file with one rule in the * group."""
    return f"User-agent: *\nDisallow: {rule}\n".encode()


MATCH_VECTORS = [
    # (name, file, agents, paths, disallowed)
    ("no file, no rules", b"", GEM, ["/"], False),
    ("disallow all", star("/"), GEM, ["/any"], True),
    ("prefix match", star("/priv"), GEM, ["/private/x"], True),
    ("not a prefix", star("/priv"), GEM, ["/pub/priv"], False),
    ("paths are case-sensitive", star("/Priv"), GEM, ["/priv"], False),
    ("empty disallow", b"User-agent: *\nDisallow:", GEM, ["/x"], False),
    (
        "allow never lifts a disallow",
        b"User-agent: *\nAllow: /private/ok\nDisallow: /private\n",
        GEM, ["/private/ok"], True,
    ),
    ("agents match case-insensitively", b"User-agent: WebProxy\nDisallow: /x", GEM, ["/x"], True),
    ("our own name", b"User-agent: GopherGem\nDisallow: /x", GOP, ["/x"], True),
    ("archiver is not us", b"User-agent: archiver\nDisallow: /", GEM, ["/x"], False),
    ("researcher is not us", b"User-agent: researcher\nDisallow: /", GEM, ["/x"], False),
    ("veronica is not us", b"User-agent: veronica\nDisallow: /", GOP, ["/x"], False),
    ("indexer is us on gemini", b"User-agent: indexer\nDisallow: /", GEM, ["/x"], True),
    ("webproxy is not us on gopher", b"User-agent: webproxy\nDisallow: /", GOP, ["/x"], False),
    ("a token, not a substring", b"User-agent: gophergemini\nDisallow: /", GOP, ["/"], False),
    ("* matches only the * group", b"User-agent: somebot\nDisallow: /", ("*",), ["/"], False),
    ("a versioned agent names us", b"User-agent: gophergem/2.0\nDisallow: /", GOP, ["/"], True),
    (
        "the union: a specific empty group does not lift *",
        b"User-agent: gophergem\nDisallow:\n\nUser-agent: *\nDisallow: /\n",
        GOP, ["/x"], True,
    ),
    (
        "the union: rules of every matching group apply",
        b"User-agent: indexer\nDisallow: /a\n\nUser-agent: webproxy\nDisallow: /b\n",
        GEM, ["/b/1"], True,
    ),
    (
        "rules of other agents do not apply",
        b"User-agent: googlebot\nDisallow: /\n\nUser-agent: *\nDisallow: /tmp\n",
        GEM, ["/x"], False,
    ),
    (
        "a shared group applies to each of its agents",
        b"User-agent: googlebot\nUser-agent: indexer\nDisallow: /x\n",
        GEM, ["/x"], True,
    ),
    ("an AI token is honoured if asked", b"User-agent: GPTBot\nDisallow: /", WITH_AI, ["/x"], True),
    ("an AI token is ignored otherwise", b"User-agent: GPTBot\nDisallow: /", GEM, ["/x"], False),
    (
        "an AI token only adds rules",
        b"User-agent: ClaudeBot\nDisallow:\n\nUser-agent: *\nDisallow: /p\n",
        WITH_AI, ["/p"], True,
    ),
    ("any path refused refuses", star("/b"), GEM, ["/a", "/b"], True),
    ("a * wildcard", star("/*.gmi"), GEM, ["/x/y.gmi"], True),
    ("a * wildcard, no match", star("/*.gmi"), GEM, ["/x.txt"], False),
    ("a $ anchor", star("/x$"), GEM, ["/x"], True),
    ("a $ anchor, longer path", star("/x$"), GEM, ["/xy"], False),
    ("a literal $ prefix still counts", star("/x$"), GEM, ["/x$y"], True),
    ("* and $", star("/*.bin$"), GEM, ["/a/b.bin"], True),
    ("* and $, no match", star("/*.bin$"), GEM, ["/a/b.bin.txt"], False),
    ("a leading *", star("*secret"), GEM, ["/a/secret/b"], True),
    ("percent-encoded rule", star("/%7Euser"), GEM, ["/~user/"], True),
    ("percent-encoded path", star("/~user"), GEM, ["/%7Euser/"], True),
    ("dot segments", star("/private"), GEM, ["/pub/../private/x"], True),
    ("a rule without its slash", star("private"), GEM, ["/private"], True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "agents", "paths", "expected"),
    [v[1:] for v in MATCH_VECTORS],
    ids=[v[0] for v in MATCH_VECTORS],
)
def test_disallowed(data: bytes, agents: tuple[str, ...], paths: list[str], expected: bool) -> None:
    """Each file refuses exactly the paths listed."""
    assert parse_robots(data).disallowed(agents, paths) is expected


def test_blocking_rule_names_the_rule() -> None:
    """blocking_rule returns the rule as written, or None."""
    rules = parse_robots(b"User-agent: *\nDisallow: /a\nDisallow: /%7Eb\n")
    assert rules.blocking_rule(GEMINI_AGENTS, ["/~b/c"]) == "/%7Eb"
    assert rules.blocking_rule(GEMINI_AGENTS, ["/c"]) is None


def test_empty_rules_allow_everything() -> None:
    """A RobotsRules with no groups refuses nothing."""
    assert not RobotsRules().disallowed(WITH_AI, ["/", "", "1/x"])


# --- Gopher spellings --------------------------------------------------------------

GOPHER_VECTORS = [
    # (name, rule, item type, selector, disallowed)
    ("selector rule vs slashed selector", "/archive", "1", "/archive", True),
    ("typed rule vs slashed selector", "1/archive", "1", "/archive", True),
    ("uri path rule vs slashed selector", "/1/archive", "1", "/archive", True),
    ("typed rule vs typed selector", "1/archive", "1", "1/archive", True),
    ("selector rule vs bare selector", "/archive", "0", "archive/x.txt", True),
    ("bare rule vs bare selector", "archive", "0", "archive/x.txt", True),
    ("typed rule for another type", "1/archive", "0", "/archive", False),
    ("uri path rule for another type", "/1/archive", "0", "/archive", False),
    ("a trailing-slash rule covers the directory", "/path/", "1", "/path/", True),
    ("unrelated selector", "/archive", "1", "/docs", False),
    ("root rule vs empty selector", "/", "1", "", True),
    ("robots.txt rule", "/robots.txt", "0", "robots.txt", True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "item_type", "selector", "expected"),
    [v[1:] for v in GOPHER_VECTORS],
    ids=[v[0] for v in GOPHER_VECTORS],
)
def test_gopher_spellings(rule: str, item_type: str, selector: str, expected: bool) -> None:
    """A Gopher rule applies whichever spelling of the item it was written against."""
    rules = parse_robots(f"User-agent: *\nDisallow: {rule}\n".encode())
    paths = gopher_robot_paths(item_type, selector)
    assert rules.disallowed(GOPHER_AGENTS, paths) is expected


def test_gopher_robot_paths() -> None:
    """The spellings are the URI path, the typed selector, the slashed and the raw selector."""
    assert gopher_robot_paths("1", "/archive") == ["/1/archive", "1/archive", "/archive"]
    assert gopher_robot_paths("0", "a/b") == ["/0a/b", "0a/b", "/a/b", "a/b"]
    assert gopher_robot_paths("1", "") == ["/1", "1", "/", ""]


def test_gemini_robot_paths() -> None:
    """A Gemini path is matched alone, and with its query when it has one."""
    assert gemini_robot_paths("") == ["/"]
    assert gemini_robot_paths("/a") == ["/a"]
    assert gemini_robot_paths("/search", "q") == ["/search", "/search?q"]
    rules = parse_robots(b"User-agent: *\nDisallow: /search?\n")
    assert rules.disallowed(GEMINI_AGENTS, gemini_robot_paths("/search", "x"))
    assert not rules.disallowed(GEMINI_AGENTS, gemini_robot_paths("/search"))


# --- never raises, never slow -----------------------------------------------------

_ROBOTS_ISH = st.lists(
    st.sampled_from(
        [b"User-agent:", b"user-AGENT :", b"Disallow:", b"disallow", b"Allow:", b"*", b"$",
         b"#", b"/", b"%", b"%7E", b"..", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\x00",
         b"\xff", b"\xef\xbb\xbf", b"gophergem", b"GPTBot", b":"]
    )
    | st.binary(max_size=8),
    max_size=80,
).map(b"".join)  # fmt: skip


@settings(max_examples=300)
@given(data=st.binary(max_size=2000) | _ROBOTS_ISH)
def test_parse_never_raises(data: bytes) -> None:
    """No byte string makes the parser or the matcher raise."""
    rules = parse_robots(data)
    for group in rules.groups:
        assert group.agents
        assert all(rule for rule in group.disallow)
    rules.disallowed(WITH_AI, ["/", "", "/a/../b", "%", "1/x"])


@settings(max_examples=200)
@given(data=_ROBOTS_ISH, selector=st.text(max_size=40), item_type=st.sampled_from("0179h"))
def test_matching_never_raises(data: bytes, selector: str, item_type: str) -> None:
    """Any rules against any selector answer True or False."""
    rules = parse_robots(data)
    assert rules.disallowed(GOPHER_AGENTS, gopher_robot_paths(item_type, selector)) in (
        True,
        False,
    )


@settings(max_examples=200)
@given(
    groups=st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(["*", "gophergem", "other", "GPTBot"]), min_size=1, max_size=3
            ),
            st.lists(st.text(alphabet="/ab*$", min_size=1, max_size=6), max_size=4),
        ),
        max_size=4,
    ),
    path=st.text(alphabet="/ab$", max_size=8),
)
def test_union_is_never_more_permissive(
    groups: list[tuple[list[str], list[str]]], path: str
) -> None:
    """Adding agents to the set obeyed can only refuse more, never less."""
    text = "".join(
        "".join(f"User-agent: {a}\n" for a in agents) + "".join(f"Disallow: {r}\n" for r in rules)
        for agents, rules in groups
    )
    rules = parse_robots(text.encode())
    if rules.disallowed(GOPHER_AGENTS, [path]):
        assert rules.disallowed((*GOPHER_AGENTS, *AI_AGENTS), [path])


def test_huge_input_is_bounded() -> None:
    """
    A megabyte file full of wildcard rules is cut to the rule limit and still
    matches.  (No test here times it: no test depends on the wall clock.)
    """
    data = b"User-agent: *\n" + b"Disallow: /*a*b*c*d*e*f*g*h$\n" * 40_000
    rules = parse_robots(data)
    assert rules.truncated
    assert not rules.disallowed(WITH_AI, ["/" + "a" * 1024])


@pytest.mark.parametrize("seed", range(3))
def test_over_cap_binary_never_raises(seed: int) -> None:
    """Random binary input over the cap parses without raising."""
    data = random.Random(seed).randbytes(MAX_ROBOTS_BYTES + 1000)
    rules = parse_robots(data)
    assert rules.truncated
    rules.disallowed(WITH_AI, ["/"])
