"""
Tests for L{gophergem.mcp.server} through the SDK's own in-process client,
which validates every structured result against the tool's output schema.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from gophergem.mcp.server import argument_errors, build_server
from gophergem.render.text import menu_links
from tests.helpers.mcp import call, network, run_with_network


def schema_of(tools: Any, name: str) -> dict[str, Any]:
    return next(t.output_schema for t in tools.tools if t.name == name)


def test_tools_listed_with_schemas() -> None:
    """Both Gopher tools are listed with descriptions, annotations and object output schemas."""
    tools, _ = call("gopher_fetch", {"url": "gopher://g.example/"})
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == {
        "gopher_fetch",
        "gopher_batch_fetch",
        "gemini_fetch",
        "gemini_batch_fetch",
        "gemini_trust_list",
        "gemini_trust_update",
        "gemini_client_cert_list",
        "gemini_client_cert_update",
        "smolweb_fetch",
        "titan_upload",
    }
    for tool in by_name.values():
        assert tool.description and not tool.description.startswith((" ", "\n"))
        assert tool.output_schema["type"] == "object"
        if tool.name.endswith("fetch"):
            assert tool.annotations.read_only_hint is True
        for prop in tool.input_schema["properties"].values():
            assert prop.get("description")


def test_menu_result() -> None:
    """A menu result validates against the schema, and the text block is its compact JSON."""
    tools, result = call("gopher_fetch", {"url": "gopher://g.example/"})
    data = result.structured_content
    jsonschema.validate(data, schema_of(tools, "gopher_fetch"))
    assert result.is_error is False
    assert data["kind"] == "menu"
    assert [i["type"] for i in data["items"]] == ["i", "1", "0", "h", "9"]
    assert data["items"][0]["next_url"] == ""
    assert data["items"][3]["next_url"] == "https://example.org/"
    (block,) = result.content
    text = block.text
    assert "\n" not in text and ": " not in text
    compact = json.loads(text)
    assert compact["kind"] == "menu"
    assert menu_links(compact) == [i["next_url"] for i in data["items"]]


def test_error_result_sets_is_error() -> None:
    """A failed fetch is a normal result of kind error with isError set."""
    tools, result = call("gopher_fetch", {"url": "gopher://g.example/8"})
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "NOT_FETCHABLE"
    jsonschema.validate(result.structured_content, schema_of(tools, "gopher_fetch"))


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def protocol_error(name: str) -> MCPError:
    """The MCPError that calling tool C{name} raises in the client."""
    raised: list[BaseException] = []
    try:
        call(name, {})
    except* MCPError as group:  # the in-process client raises from its task group
        raised.extend(leaves(group))
    assert len(raised) == 1 and isinstance(raised[0], MCPError), raised
    return raised[0]


def test_unknown_tool_is_a_protocol_error() -> None:
    """
    A call of a tool that does not exist is a JSON-RPC error, -32602, naming
    it (clipped): not a result, which would read as "the tool ran and failed".
    """
    error = protocol_error("gopher_delete_everything").error
    assert error.code == -32602
    assert "gopher_delete_everything" in error.message

    error = protocol_error("x" * 10_000).error
    assert error.code == -32602
    assert len(error.message) < 200


def test_known_tool_with_bad_arguments_stays_a_result() -> None:
    """Only the unknown name is a protocol error: bad arguments are a tool result."""
    _, result = call("gopher_fetch", {"url": 7})
    assert result.is_error is True


def test_wrong_scheme_names_the_right_tool() -> None:
    """A gemini:// URL handed to gopher_fetch is INVALID_REQUEST naming gemini_fetch."""
    _, result = call("gopher_fetch", {"url": "gemini://g.example/"})
    error = result.structured_content["error"]
    assert error["code"] == "INVALID_REQUEST" and "gemini_fetch" in error["message"]


def test_binary_and_text() -> None:
    """Text and binary items validate against the schema and carry their byte counts."""
    tools, result = call(
        "gopher_batch_fetch", {"urls": ["gopher://g.example/0/about", "gopher://g.example/9/bin"]}
    )
    data = result.structured_content
    jsonschema.validate(data, schema_of(tools, "gopher_batch_fetch"))
    text, binary = data["result"]
    assert (text["kind"], text["text"], text["bytes"]) == ("text", "Hello\n", 10)
    assert (binary["kind"], binary["mime_type"], binary["bytes"]) == ("binary", "image/gif", 16)


def test_batch_of_fifty_in_order() -> None:
    """Fifty URLs give fifty results in input order; isError is never set on a batch."""
    urls = [f"gopher://g.example/{t}" for t in ("1", "0/about", "8", "9/bin", "1/sub")] * 10
    tools, result = call("gopher_batch_fetch", {"urls": urls})
    results = result.structured_content["result"]
    assert len(results) == 50 and result.is_error is False
    assert [r["request_info"]["url"] for r in results] == urls
    jsonschema.validate(result.structured_content, schema_of(tools, "gopher_batch_fetch"))


def test_batch_of_fifty_one_refused() -> None:
    """A batch of 51 URLs is refused as INVALID_REQUEST."""
    tools, result = call("gopher_batch_fetch", {"urls": ["gopher://g.example/"] * 51})
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "INVALID_REQUEST"
    jsonschema.validate(result.structured_content, schema_of(tools, "gopher_batch_fetch"))


def test_every_kind_validates() -> None:
    """Menu, text, binary and error payloads each validate against the single-fetch schema."""
    for url in (
        "gopher://g.example/",
        "gopher://g.example/0/about",
        "gopher://g.example/9/bin",
        "gopher://g.example:9/",
    ):
        tools, result = call("gopher_fetch", {"url": url})
        jsonschema.validate(result.structured_content, schema_of(tools, "gopher_fetch"))


def test_incomplete_results_keep_to_the_schema() -> None:
    """
    A text cut by the deadline and a menu cut by a reset come back through
    the tools marked incomplete with their reason, valid against the output
    schemas, the reason kept in the compact text block.
    """

    from twisted.internet.protocol import Factory, Protocol

    from gophergem.testing import FakeGopherServer

    class ResetAfterHalf(Protocol):
        def dataReceived(self, data: bytes) -> None:
            self.transport.write(b"iFirst\tf\t(NULL)\t0\r\n1Half a li")  # type: ignore[union-attr]
            self.transport.abortConnection()  # type: ignore[union-attr]

    net, _ = network()
    net.resolver.add("held.example", "192.0.2.11")
    net.resolver.add("reset.example", "192.0.2.12")
    net.listen("192.0.2.11", 70, FakeGopherServer({}, missing=b"Half a te", close=False))
    net.listen("192.0.2.12", 70, Factory.forProtocol(ResetAfterHalf))
    mcp_server = build_server(net.fetcher(timeout_seconds=3))

    async def body() -> tuple[Any, Any, Any]:
        async with Client(mcp_server) as client:
            tools = await client.list_tools()
            held = await client.call_tool("gopher_fetch", {"url": "gopher://held.example/0/x"})
            batch = await client.call_tool(
                "gopher_batch_fetch", {"urls": ["gopher://reset.example/"]}
            )
            return tools, held, batch

    tools, held, batch = run_with_network(net, body, advance=0.25)
    data = held.structured_content
    jsonschema.validate(data, schema_of(tools, "gopher_fetch"))
    assert (data["kind"], data["text"]) == ("text", "Half a te")
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    compact = json.loads(held.content[0].text)
    assert (compact["incomplete"], compact["incomplete_reason"]) == (True, "deadline")
    assert held.is_error is False
    jsonschema.validate(batch.structured_content, schema_of(tools, "gopher_batch_fetch"))
    (menu,) = batch.structured_content["result"]
    assert menu["kind"] == "menu"
    assert (menu["incomplete"], menu["incomplete_reason"]) == (True, "connection_reset")


def test_tools_are_the_module_level_functions() -> None:
    """Every listed tool is a module-level function of a tool module; the server has the fetcher."""
    import inspect

    from gophergem.mcp.tools import gemini, gopher, smolweb, titan, trust

    net, _ = network()
    fetcher = net.fetcher()
    server = build_server(fetcher)
    assert server.fetcher is fetcher
    functions = {
        name: getattr(module, name)
        for module in (gopher, gemini, trust, smolweb, titan)
        for name in module.__all__
        if name.startswith(("gopher_", "gemini_", "smolweb_", "titan_"))
    }
    assert all(inspect.iscoroutinefunction(fn) for fn in functions.values())

    async def body() -> Any:
        async with Client(server) as client:
            return await client.list_tools()

    listed = run_with_network(net, body)
    assert {tool.name for tool in listed.tools} == set(functions)


def test_config_adds_the_policy_and_prompts() -> None:
    """With a config the server also offers gophergem://policy, the feeds and the prompts."""
    from gophergem.config import Config

    net, _ = network()
    server = build_server(net.fetcher(), Config())

    async def body() -> tuple[Any, Any]:
        async with Client(server) as client:
            return await client.list_resources(), await client.list_prompts()

    resources, prompts = run_with_network(net, body)
    assert sorted(str(r.uri) for r in resources.resources) == [
        "gophergem://feeds/updates",
        "gophergem://policy",
    ]
    assert {p.name for p in prompts.prompts} == {
        "explore_capsule",
        "summarize_gemlog",
        "whats_new",
    }


def _stdio_names(method: str, key: str, field: str) -> list[str]:
    """The names the stdio server lists (its recorded answers, which its snapshot tests check)."""
    from gophergem.mcp import early

    recorded = json.loads((Path(early.__file__).parent / early.ANSWERS_FILE).read_text("utf-8"))
    text = recorded["texts"][recorded["answers"][f"{method} 2025-11-25"]]
    return sorted(str(item[field]) for item in json.loads(text)[key])


def test_mounted_server_serves_the_whole_surface(tmp_path: Path) -> None:
    """
    The server the documented mounted.tac builds (C{build_server(fetcher,
    config)}, nothing more) lists the same tools, resources and prompts as
    C{gophergem} and C{gophergem serve}: the subscription tools and their
    resource included.  C{feeds=False} is the documented way to leave
    them out.
    """
    from twisted.internet.testing import MemoryReactorClock

    from gophergem.config import Config
    from gophergem.fetcher import Fetcher

    config = Config.from_env(
        {
            "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "pins.json"),
            "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
            "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "identities"),
        }
    )
    fetcher = Fetcher.from_config(config, MemoryReactorClock(), environ={})

    async def listed(server: Any) -> tuple[list[str], list[str], list[str]]:
        async with Client(server, mode="legacy") as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            resources = sorted(str(r.uri) for r in (await client.list_resources()).resources)
            prompts = sorted(p.name for p in (await client.list_prompts()).prompts)
            return tools, resources, prompts

    tools, resources, prompts = asyncio.run(listed(build_server(fetcher, config)))
    assert tools == _stdio_names("tools/list", "tools", "name")
    assert len(tools) == 15
    assert {"feed_list", "feed_subscribe", "feed_unsubscribe", "feed_updates"} <= set(tools)
    assert resources == _stdio_names("resources/list", "resources", "uri")
    assert "gophergem://feeds/updates" in resources
    assert prompts == _stdio_names("prompts/list", "prompts", "name")
    assert not list(tmp_path.iterdir())  # listing touches no store

    fewer, resources, _ = asyncio.run(listed(build_server(fetcher, config, feeds=False)))
    assert sorted(set(tools) - set(fewer)) == [
        "feed_list",
        "feed_subscribe",
        "feed_unsubscribe",
        "feed_updates",
    ]
    assert resources == ["gophergem://policy"]


# --- wrong arguments: one sentence each -------------------------------------------------


def test_wrong_arguments_are_one_sentence_each() -> None:
    """
    Arguments the SDK's check refuses come back as an isError result of one
    line: one sentence per wrong argument, nothing of pydantic's report.
    """
    net, _ = network()
    server = build_server(net.fetcher())
    calls = [
        ("gopher_fetch", {"url": "gopher://g.example/", "offset": "x"}),
        ("gopher_fetch", {}),
        ("gopher_fetch", {"url": None, "search": 5, "refresh": "maybe", "offset": 1.5}),
        ("gopher_batch_fetch", {"urls": [1, {"a": 1}, "gopher://g.example/"]}),
        ("gemini_client_cert_update", {"url": "gemini://g.example/", "action": "nuke"}),
    ]

    async def body() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    texts = []
    for result in run_with_network(net, body):
        assert result.is_error is True
        assert result.structured_content is None
        (block,) = result.content
        texts.append(block.text)
    assert texts == [
        "Invalid arguments for gopher_fetch: offset: must be an integer, got 'x'.",
        "Invalid arguments for gopher_fetch: url: required.",
        "Invalid arguments for gopher_fetch: url: must be a string, got null. "
        "search: must be a string, got 5. offset: must be a whole number, got 1.5. "
        "refresh: must be true or false, got 'maybe'.",
        "Invalid arguments for gopher_batch_fetch: urls[0]: must be a string, got 1. "
        "urls[1]: must be a string, got an object.",
        "Invalid arguments for gemini_client_cert_update: "
        "action: must be 'create' or 'remove', got 'nuke'.",
    ]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=5,
)


class _Arguments(pydantic.BaseModel):
    """Parameters shaped like the tools' (what the SDK's argument model checks)."""

    url: str
    offset: Annotated[int, pydantic.Field(ge=0)] = 0
    refresh: bool = False
    search: str | None = None
    urls: Annotated[list[str], pydantic.Field(max_length=3)] = []
    action: Literal["create", "remove"] = "create"
    limit: float = 1.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from([*_Arguments.model_fields, "other"]), _JSON, max_size=5))
def test_any_wrong_arguments_read_as_sentences(arguments: dict[str, Any]) -> None:
    """Whatever JSON arrives: one line naming each wrong argument once, in sentences."""
    try:
        _Arguments.model_validate(arguments)
    except pydantic.ValidationError as error:
        text = argument_errors("some_tool", error)
        wrong = {_top(problem["loc"]) for problem in error.errors()}
    else:
        return
    assert "\n" not in text
    assert text.startswith("Invalid arguments for some_tool: ")
    assert text.endswith(".")
    for marker in ("validation error", "type=", "pydantic", "input_value"):
        assert marker not in text
    for name in wrong:
        assert f" {name}: " in text or f" {name}[" in text


def _top(location: tuple[int | str, ...]) -> str:
    return str(location[0]) if location else "arguments"
