# -*- test-case-name: tests.test_search_package -*-
"""
Searching Geminispace and Gopherspace through their own search engines.

Two modules, like L{gophergem.feeds.parse} and L{gophergem.feeds.follow}:
L{gophergem.search.engines} is the pure part (the engines' settings, the URL
that asks one, which links of its answer are results) and
L{gophergem.search.operation} is L{search}, asking the engines in turn
through any L{IFetcher <gophergem.interfaces.IFetcher>}, the function the
MCP tool calls.  Names load on first use, so the pure engines import
without Twisted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gophergem._lazy import lazy_names

if TYPE_CHECKING:
    from gophergem.search.engines import (
        DEFAULT_GEMINI_ENGINES,
        DEFAULT_GOPHER_ENGINES,
        WHERE,
        Engine,
        SearchHit,
        default_engines,
        parse_engines,
    )
    from gophergem.search.operation import DEFAULT_LIMIT, MAX_LIMIT, SearchOutcome, search

_OPERATION = ("DEFAULT_LIMIT", "MAX_LIMIT", "SearchOutcome", "search")

__all__ = [
    "DEFAULT_GEMINI_ENGINES",
    "DEFAULT_GOPHER_ENGINES",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "WHERE",
    "Engine",
    "SearchHit",
    "SearchOutcome",
    "default_engines",
    "parse_engines",
    "search",
]

_WHERE = {
    name: "gophergem.search.operation" if name in _OPERATION else "gophergem.search.engines"
    for name in __all__
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
