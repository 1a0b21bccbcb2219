"""
gophergem: Gopherspace and Geminispace for AI assistants, over the Model
Context Protocol, built on Twisted.

The library entry point is L{gophergem.fetcher.Fetcher}; the MCP server is
built by L{gophergem.service.makeService}; L{gophergem.testing} holds public
fakes for tests of code that uses gophergem.
"""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from gophergem._version import __version__

        return __version__
    raise AttributeError(f"module 'gophergem' has no attribute {name!r}")
