# -*- test-case-name: tests.test_package -*-
"""
gophergem: Gopherspace and Geminispace for AI assistants, over the Model
Context Protocol, built on Twisted.

What a library user needs is here: L{Fetcher} (one fetch pipeline, under the
configured policy, whose Deferreds fire with result values), L{Config}, the
result types and L{GophergemError}.  The MCP server is built by
L{gophergem.service.makeService}; L{gophergem.testing} holds public fakes for
tests of code that uses gophergem.  Names load on first use, so C{import
gophergem} stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gophergem._lazy import lazy_names

if TYPE_CHECKING:
    from gophergem._version import __version__
    from gophergem.config import Config
    from gophergem.errors import GophergemError
    from gophergem.fetcher import Fetcher
    from gophergem.interfaces import IFetcher
    from gophergem.results import (
        BinaryResult,
        CertificateResult,
        FetchFailure,
        FetchResult,
        GeminiBinaryResult,
        GeminiResult,
        GemtextResult,
        InputResult,
        MenuResult,
        PartialLineResult,
        RedirectResult,
        SuccessResult,
        TextResult,
    )

__all__ = [
    "BinaryResult",
    "CertificateResult",
    "Config",
    "FetchFailure",
    "FetchResult",
    "Fetcher",
    "GeminiBinaryResult",
    "GeminiResult",
    "GemtextResult",
    "GophergemError",
    "IFetcher",
    "InputResult",
    "MenuResult",
    "PartialLineResult",
    "RedirectResult",
    "SuccessResult",
    "TextResult",
    "__version__",
]

_RESULTS = "gophergem.results"
_WHERE = {
    "__version__": "gophergem._version",
    "Config": "gophergem.config",
    "GophergemError": "gophergem.errors",
    "Fetcher": "gophergem.fetcher",
    "IFetcher": "gophergem.interfaces",
    **{
        name: _RESULTS
        for name in __all__
        if name.endswith("Result") or name in ("FetchFailure", "FetchResult")
    },
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
