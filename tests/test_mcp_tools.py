"""
Tests for L{gophergem.mcp.tools}: what the tool modules share.  A batch
refused by the fetcher is the same C{isError} result whether the refusal was
raised or came as a failed Deferred; the input schemas a model reads are
lean and say what the SDK's own say.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import pytest
from mcp.server.mcpserver import Context, MCPServer
from twisted.internet.defer import Deferred, fail, succeed

from gophergem.errors import InvalidRequest
from gophergem.mcp.tools import (
    batch_result,
    fetcher_of,
    lean_input_schema,
    tool_result,
    wait_for,
)
from gophergem.results import FetchResult

REFUSED = InvalidRequest(message="Give 1 to 50 URLs.")


def raises(told: Any) -> Deferred[list[FetchResult]]:
    raise REFUSED


def fails(told: Any) -> Deferred[list[FetchResult]]:
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
    result = asyncio.run(batch_result(lambda told: succeed([])))
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


# --- the input schemas a model reads --------------------------------------------------


def test_lean_input_schema() -> None:
    """No derived titles (an argument named title stays), nullable as a type list."""
    schema = {
        "title": "toolArguments",
        "type": "object",
        "properties": {
            "title": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "A title.",
                "title": "Title",
            },
            "n": {"default": 3, "type": "integer", "title": "N"},
            "mode": {"enum": ["a", "b"], "type": "string", "title": "Mode"},
        },
        "required": [],
    }
    assert lean_input_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": ["string", "null"], "description": "A title."},
            "n": {"default": 3, "type": "integer"},
            "mode": {"enum": ["a", "b"], "type": "string"},
        },
        "required": [],
    }


SAMPLES: list[Any] = [None, "x", "", 0, 7, -1, 1.5, True, False, [], ["gopher://g/"], [1], {}]


def test_published_input_schemas_are_lean_and_say_the_same() -> None:
    """
    Every tool's published inputSchema has no titles and no anyOf, and
    accepts and rejects each argument value exactly as the SDK's own schema
    of its parameters does.
    """
    from gophergem.config import Config
    from gophergem.mcp.server import build_server
    from gophergem.testing import MemoryNetwork

    server = build_server(MemoryNetwork().fetcher(), Config())
    tools = asyncio.run(server.list_tools())
    assert tools
    for tool in tools:
        published = tool.input_schema
        original = server._tool_manager.get_tool(tool.name).fn_metadata.arg_model.model_json_schema(
            by_alias=True
        )
        assert "title" not in published and "anyOf" not in json.dumps(published)
        for name, prop in published["properties"].items():
            assert "title" not in prop, (tool.name, name)
            for value in SAMPLES:
                one = {"type": "object", "properties": {name: prop}}
                before = {**original, "required": []}
                assert jsonschema.Draft202012Validator(one).is_valid({name: value}) == (
                    jsonschema.Draft202012Validator(before).is_valid({name: value})
                ), (tool.name, name, value)
        assert published.get("required") == original.get("required")
