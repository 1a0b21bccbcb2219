# -*- test-case-name: tests.test_search_package -*-
"""
Searching Geminispace and Gopherspace through their own search engines.

L{gophergem.search.engines} is the pure part: the engines' settings, the URL
that asks one, and which links of its answer are results.  Names load on
first use, so the pure engines import without Twisted.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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

__all__ = [
    "DEFAULT_GEMINI_ENGINES",
    "DEFAULT_GOPHER_ENGINES",
    "WHERE",
    "Engine",
    "SearchHit",
    "default_engines",
    "parse_engines",
]

_WHERE = dict.fromkeys(__all__, "gophergem.search.engines")


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'gophergem.search' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
