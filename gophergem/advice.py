# -*- test-case-name: tests.test_advice -*-
"""
Advice that names what to do next, phrased for the front door answering.

An error's message and C{next_step} often name an action: read the pins
first, create an identity, fetch a URL with the other scheme's fetcher.
Through MCP the reader is a model and the action is a tool
(C{gemini_trust_list}); at a terminal the reader is a person and the action
is a command (C{gophergem trust list}).  Each message is written once, naming
an L{Action} of this vocabulary; the front door that answers chooses how
actions are said, for everything done within it:

  - L{TOOLS} (the default): the MCP server, stdio or HTTP, a long-lived
    process that remembers what it learnt (a robots.txt, a slow-down);
  - L{COMMANDS}: the console script's commands, one run each.

The choice is a context variable, so it follows the work of one command
through its Deferreds and coroutines (they run in the context that started
them), and a server in the same process keeps its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

import attrs

__all__ = [
    "COMMANDS",
    "CREATE_IDENTITY",
    "LIST_FEEDS",
    "LIST_IDENTITIES",
    "LIST_PINS",
    "SUBSCRIBE",
    "TOOLS",
    "Action",
    "call",
    "fetch",
    "long_lived",
    "name",
    "offer_identity",
    "phrased_for",
    "the",
]

#: Advice names MCP tools: the reader is a model, the server lives on.
TOOLS = "tools"
#: Advice names console commands: the reader is a person, the run is one-shot.
COMMANDS = "commands"

_front_door: ContextVar[str] = ContextVar("gophergem_front_door", default=TOOLS)


@attrs.frozen
class Action:
    """
    Something a reader may do next.

    @ivar tool: How MCP names it: a tool, and its action argument if any
        (C{gemini_client_cert_update create}).
    @ivar command: How the console script names it (C{gophergem identity
        create}); a URL, when one is known, follows it.
    """

    tool: str
    command: str


CREATE_IDENTITY = Action("gemini_client_cert_update create", "gophergem identity create")
LIST_PINS = Action("gemini_trust_list", "gophergem trust list")
LIST_IDENTITIES = Action("gemini_client_cert_list", "gophergem identity list")
LIST_FEEDS = Action("feed_list", "gophergem feeds list")
SUBSCRIBE = Action("feed_subscribe", "gophergem feeds subscribe")


def fetch(scheme: str) -> Action:
    """Fetching a URL of C{scheme}: a tool of its own, one command for both."""
    return Action(f"{scheme}_fetch", "gophergem fetch")


@contextlib.contextmanager
def phrased_for(front_door: str) -> Iterator[None]:
    """Within the block, advice is phrased for C{front_door} (L{TOOLS} or L{COMMANDS})."""
    if front_door not in (TOOLS, COMMANDS):
        raise ValueError(f"unknown front door {front_door!r}")
    token = _front_door.set(front_door)
    try:
        yield
    finally:
        _front_door.reset(token)


def _commands() -> bool:
    return _front_door.get() == COMMANDS


def long_lived() -> bool:
    """Whether the answering process lives on and remembers (the MCP server)."""
    return not _commands()


def name(action: Action, url: str | None = None) -> str:
    """
    The action by name: C{gemini_trust_list}, or C{gophergem trust list}
    (followed by C{url} when given: a command is written out whole).
    """
    if not _commands():
        return action.tool
    return f"{action.command} {url}" if url else action.command


def the(action: Action, url: str | None = None) -> str:
    """The action in a sentence: C{the gemini_fetch tool}, or C{gophergem fetch}."""
    return name(action, url) if _commands() else f"the {action.tool} tool"


def call() -> str:
    """The verb that starts advice to do an action: C{Call} a tool, C{Run} a command."""
    return "Run" if _commands() else "Call"


def offer_identity(url: str | None = None, *, capital: bool = True) -> str:
    """
    Advice to create a client identity only with the person's consent: a
    model is told to ask the user (naming the tool); the person at the
    terminal is told they may (naming the command, for C{url}).  Starts
    with a capital unless C{capital} is false.
    """
    if _commands():
        said = f"you may create one ({name(CREATE_IDENTITY, url)})"
    else:
        said = f"ask the user whether to create one ({name(CREATE_IDENTITY)})"
    return said[0].upper() + said[1:] if capital else said
