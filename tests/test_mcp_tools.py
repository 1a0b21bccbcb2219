"""
Tests for L{gophergem.mcp.tools}: what the tool modules share.  A batch
refused by the fetcher is the same C{isError} result whether the refusal was
raised or came as a failed Deferred.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from twisted.internet.defer import Deferred, fail, succeed

from gophergem.errors import InvalidRequest
from gophergem.mcp.tools import batch_result, fetcher_of, tool_result, wait_for
from gophergem.results import FetchResult

REFUSED = InvalidRequest(message="Give 1 to 50 URLs.")


def raises() -> Deferred[list[FetchResult]]:
    raise REFUSED


def fails() -> Deferred[list[FetchResult]]:
    return fail(REFUSED)


@pytest.mark.parametrize("start", [raises, fails], ids=["raised", "failed Deferred"])
def test_refused_batch_is_an_error_result(start: Any) -> None:
    """A refused batch: isError, no results, the reason under error, in both blocks."""
    result = asyncio.run(batch_result(start))
    assert result.is_error is True
    assert result.structured_content == {
        "result": [],
        "error": {"code": "INVALID_REQUEST", "message": "Give 1 to 50 URLs."},
    }
    assert json.loads(result.content[0].text) == {"error": result.structured_content["error"]}  # type: ignore[union-attr]


def test_empty_batch_result_is_no_error() -> None:
    """A batch that ran is never an error result, whatever its items say."""
    result = asyncio.run(batch_result(lambda: succeed([])))
    assert result.is_error is False
    assert result.structured_content == {"result": []}


def test_wait_for_awaits_a_deferred() -> None:
    """wait_for hands over the Deferred's result on the running loop."""
    assert asyncio.run(wait_for(succeed(7))) == 7


@pytest.mark.parametrize(("kind", "is_error"), [("menu", False), ("error", True)])
def test_tool_result_is_error_follows_kind(kind: str, is_error: bool) -> None:
    """A payload of kind error is an isError result; others are not."""
    assert tool_result({"kind": kind}).is_error is is_error
    assert tool_result({"kind": kind}, error=False).is_error is False


def test_fetcher_of_needs_a_gophergem_server() -> None:
    """A tool run on a server without a fetcher says so instead of failing obscurely."""
    ctx: Context[Any, Any] = Context(mcp_server=MCPServer(name="plain"))
    with pytest.raises(RuntimeError, match=r"gophergem\.mcp\.server"):
        fetcher_of(ctx)
