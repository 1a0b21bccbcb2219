"""
Shared helpers for the Gemini tools' tests: capsules on a memory network,
an MCP session on them, an elicitation answerer, the output-schema
validator, and readers of a tool's result.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import mcp_types
from mcp import Client

from gophergem.mcp.server import build_server
from gophergem.state.files import FileIdentityStore
from gophergem.testing import EPOCH, FakeGeminiServer, MemoryNetwork, ServerTLS, make_certificate
from gophergem.trust import Pin
from tests.helpers.mcp import run_with_network

HOST_IP = "192.0.2.20"  # memory reactor only: never dialled

PAGE = b"20 text/gemini\r\n# Hello\n=> /next Next\n"

ERAS = ["legacy", "2026-07-28"]

STALE = Pin(
    host="localhost",
    port=1965,
    fingerprint="sha256:" + "a" * 64,
    spki="sha256:" + "b" * 64,
    first_seen=EPOCH - 86400,
    last_seen=EPOCH - 86400,
    not_before=EPOCH - 86400 * 400,
    expires=EPOCH + 86400 * 30,
)


@attrs.define
class Asker:
    """An elicitation callback that answers every question with C{action}."""

    action: str
    confirm: bool = True
    questions: list[str] = attrs.field(factory=list)

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.questions.append(params.message)
        if self.action == "accept":
            return mcp_types.ElicitResult(action="accept", content={"confirm": self.confirm})
        return mcp_types.ElicitResult(action=self.action)  # type: ignore[arg-type]


def capsule(
    routes: dict[str, Any] | None = None, **net_options: Any
) -> tuple[MemoryNetwork, FakeGeminiServer, ServerTLS]:
    """A network where localhost serves C{routes} over TLS with a fixed certificate."""
    net = MemoryNetwork(**net_options)
    net.resolver.add("localhost", HOST_IP)
    tls = ServerTLS(*make_certificate(now=EPOCH))
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer(routes or {"/": PAGE}), tls)
    return net, server, tls


@functools.cache
def _validator(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validator(schema: dict[str, Any]) -> Any:
    """A checked jsonschema validator for C{schema}, built once per distinct schema."""
    return _validator(json.dumps(schema, sort_keys=True))


def session(
    net: MemoryNetwork,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    mode: str = "legacy",
    asker: Asker | None = None,
    **gemini: Any,
) -> list[Any]:
    """
    Make C{calls} in one client session; check every structured result
    against its tool's outputSchema; return the results.
    """
    gemini.setdefault("respect_robots_txt", False)
    gemini.setdefault("requests_per_minute", 0)
    server = build_server(net.fetcher(gemini=gemini))

    async def body() -> list[Any]:
        async with Client(server, mode=mode, elicitation_callback=asker) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                if result.structured_content is not None:
                    validator(tools[name].output_schema).validate(result.structured_content)
                    compact = json.loads(result.content[0].text)
                    assert compact.get("kind") == result.structured_content.get("kind")
                results.append(result)
            return results

    return run_with_network(net, body)


def one(net: MemoryNetwork, name: str, arguments: dict[str, Any], **options: Any) -> Any:
    (result,) = session(net, [(name, arguments)], **options)
    return result


def data(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result.content
    return result.structured_content  # type: ignore[no-any-return]


def error_code(result: Any) -> str:
    assert result.is_error is True, result
    return data(result)["error"]["code"]  # type: ignore[no-any-return]


KINDS = {
    "/gemtext": (PAGE, "gemtext"),
    "/plain": (b"20 text/plain; charset=iso-8859-1\r\ncaf\xe9", "success"),
    "/png": (b"20 image/png\r\n\x89PNG\r\n\x1a\n", "binary"),
    "/ask": (b"11 Password\r\n", "input"),
    "/moved": (b"31 gemini://elsewhere.example/\r\n", "redirect"),
    "/who": (b"60 Identify yourself\r\n", "certificate"),
    "/gone": (b"52 Gone\r\n", "error"),
    "/long": (b"20 text/gemini\r\n" + b"x" * 2000 + b"\n", "gemtext"),
}


def identity_capsule(tmp_path: Path) -> tuple[MemoryNetwork, FakeGeminiServer]:
    """A capsule whose /app/ zone answers 60 unless a client certificate is presented."""
    net, server, _ = capsule(identities=FileIdentityStore(tmp_path / "identities"))

    def app(url: str) -> bytes:
        if server.client_certificates[-1] is None:
            return b"60 Identify yourself\r\n"
        return b"20 text/gemini\r\n# Welcome back\n"

    server.routes["/app/"] = app
    return net, server
