"""
Tests for L{gophergem.mcp.schemas} and the schemas the server publishes from
C{output_schemas.json}: the file is what the SDK derives from the models,
every tool publishes its own, and in service each result is checked once
(by these tests), not again by the SDK.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gophergem.config import Config
from gophergem.feeds.follow import Follower
from gophergem.feeds.store import MemoryFeedStore
from gophergem.mcp import _tools, prebuilt
from gophergem.mcp._sdk import lowlevel_server
from gophergem.mcp.schemas import OUTPUT_MODELS
from gophergem.mcp.server import build_server
from tests.mcp_helpers import network

TOOLS = sorted(OUTPUT_MODELS)


def test_recorded_schemas_are_the_models() -> None:
    """
    C{output_schemas.json} holds what the SDK derives from each model, keys
    in the same order (run C{python -m gophergem.mcp.prebuilt} after
    changing a model).
    """
    recorded = (prebuilt.HERE / "output_schemas.json").read_text(encoding="utf-8")
    assert json.loads(recorded) == prebuilt.output_schemas()
    assert recorded == prebuilt.files()[prebuilt.HERE / "output_schemas.json"]


def _full_server() -> Any:
    """The server with every tool: configuration and a follower given."""
    net, _ = network()
    fetcher = net.fetcher()
    return build_server(fetcher, Config(), follower=Follower(fetcher, MemoryFeedStore()))


def _tools_of(check: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(_tools, "check_output", check)
    server = _full_server()
    assert lowlevel_server(server) is not None
    return {tool.name: tool for tool in server._tool_manager.list_tools()}


def test_every_tool_publishes_its_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = _tools_of(False, monkeypatch)
    assert sorted(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.output_schema == _tools.OUTPUT_SCHEMAS[name]


def test_in_service_the_sdk_does_not_check_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the test suite's switch, no tool carries a model for the SDK to validate with."""
    for tool in _tools_of(False, monkeypatch).values():
        assert tool.fn_metadata.output_model is None


def test_under_test_every_result_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the switch (on in this suite), each tool validates its results against its model."""
    for name, tool in _tools_of(True, monkeypatch).items():
        assert tool.fn_metadata.output_model is OUTPUT_MODELS[name]


def test_list_tools_shows_the_recorded_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a client reads in tools/list is the recorded schema, unchanged."""
    monkeypatch.setattr(_tools, "check_output", False)
    listed = asyncio.run(_full_server().list_tools())
    for tool in listed:
        assert tool.output_schema == _tools.OUTPUT_SCHEMAS[tool.name]
