# -*- test-case-name: tests.test_fetcher -*-
"""
One fetch, straight down the layers: URL, policy, cache, client, result.

L{Fetcher} is the one implementation that the library, the C{gophergem
fetch} command and the MCP tools all call.  Its methods return Deferreds that
never fail: every problem becomes a L{gophergem.results.FetchFailure}
carrying a coded error.
"""

from gophergem.fetcher.core import MAX_BATCH, Fetcher

__all__ = ["MAX_BATCH", "Fetcher"]
