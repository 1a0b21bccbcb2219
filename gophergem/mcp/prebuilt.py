# -*- test-case-name: tests.test_mcp_early -*-
"""
Record what never changes for a build: the tools' output schemas and the
SDK's answers to the set-up and list requests.

    python -m gophergem.mcp.prebuilt           # rewrite both files
    python -m gophergem.mcp.prebuilt --check   # exit 1 when either is stale

  - C{output_schemas.json}: each tool's C{outputSchema}, as the SDK derives
    it from the output models of L{gophergem.mcp.schemas}.  The server
    publishes these at start-up instead of building the models
    (L{gophergem.mcp.tools.add_tool}).
  - C{ready_answers.json}: the answers the console script's stdio server
    gives to C{initialize} and C{server/discover} for every protocol version
    the SDK supports, and to the list requests, recorded from a real
    session on the SDK (L{gophergem.mcp.stdio.MessagePipe}) byte for byte.
    L{gophergem.mcp.early} serves them while the SDK is still loading.

An answer is recorded only when it is the same for two different clients
(capabilities, client info and request ids differ), so that it truly
depends on nothing but the protocol version.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from gophergem._version import __version__
from gophergem.config import Config
from gophergem.mcp import early
from gophergem.mcp._sdk import lowlevel_server, sdk_output_schema
from gophergem.mcp.schemas import OUTPUT_MODELS
from gophergem.mcp.server import build_server
from gophergem.mcp.stdio import MessagePipe

__all__ = ["main", "output_schemas", "ready_answers", "record_session"]

HERE = Path(__file__).parent
RECORDED_WITH = ("gophergem", "mcp", "mcp-types")

_CLIENTS: tuple[dict[str, Any], ...] = (
    {"capabilities": {}, "clientInfo": {"name": "prebuilt", "version": "1"}, "base_id": 1},
    {
        "capabilities": {
            "roots": {"listChanged": True},
            "sampling": {},
            "elicitation": {"form": {}, "url": {}},
        },
        "clientInfo": {"name": "other-client", "version": "9.9.9"},
        "base_id": 100,
    },
)


def output_schemas() -> dict[str, Any]:
    """Each tool's output schema, as the SDK derives it from its model."""
    return {name: sdk_output_schema(model) for name, model in OUTPUT_MODELS.items()}


def _server(config: Config | None = None) -> Any:
    from twisted.internet.testing import MemoryReactorClock

    from gophergem.feeds.follow import Follower
    from gophergem.fetcher import Fetcher
    from gophergem.mcp import tools
    from gophergem.state.memory import MemoryFeedStore, MemoryIdentityStore, MemoryPinStore

    # The schemas the models give now, even when output_schemas.json is stale.
    tools.OUTPUT_SCHEMAS.update(output_schemas())
    config = Config() if config is None else config
    fetcher = Fetcher.from_config(
        config,
        MemoryReactorClock(),  # type: ignore[no-untyped-call]  # Twisted: unannotated
        pins=MemoryPinStore(),
        identities=MemoryIdentityStore(),
        environ={},
    )
    follower = Follower(fetcher, MemoryFeedStore())
    return lowlevel_server(build_server(fetcher, config, follower=follower))


def record_session(lines: Sequence[dict[str, Any]], config: Config | None = None) -> list[bytes]:
    """Run one stdio session on the SDK (the console script's server); return the lines written."""
    written: list[bytes] = []

    async def body() -> None:
        pipe = MessagePipe(_server(config), written.append)
        done = pipe.start()
        for message in lines:
            pipe.feed(json.dumps(message).encode())
        pipe.eof()
        await done.asFuture(asyncio.get_running_loop())

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(body())
    finally:
        loop.close()
    return [line.rstrip(b"\n") for line in written]


def _requests(version: str, client: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The requests of one session for C{version}, each with the key its answer goes under."""
    methods = early.LIST_METHODS
    base: int = client["base_id"]
    if version in MODERN_PROTOCOL_VERSIONS:
        meta = {
            early.MODERN_META + "protocolVersion": version,
            early.MODERN_META + "clientCapabilities": client["capabilities"],
            early.MODERN_META + "clientInfo": client["clientInfo"],
        }
        return [
            (f"{method} {version}", {"id": base + n, "method": method, "params": {"_meta": meta}})
            for n, method in enumerate(("server/discover", *methods))
        ]
    initialize = {
        "id": base,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": client["capabilities"],
            "clientInfo": client["clientInfo"],
        },
    }
    return [
        (f"initialize {version}", initialize),
        ("", {"method": "notifications/initialized"}),
        *((f"{m} {version}", {"id": base + 1 + n, "method": m}) for n, m in enumerate(methods)),
    ]


def _results(version: str, client: dict[str, Any]) -> dict[str, str]:
    """Key → result text, for every request of the session that got a result."""
    requests = _requests(version, client)
    lines = record_session([{"jsonrpc": "2.0", **message} for _, message in requests])
    by_id = {}
    for line in lines:
        reply = json.loads(line)
        by_id[reply.get("id")] = (reply, line)
    results = {}
    for key, message in requests:
        if "id" not in message or message["id"] not in by_id:
            continue
        reply, line = by_id[message["id"]]
        prefix = b'{"jsonrpc":"2.0","id":%d,"result":' % message["id"]
        if "result" in reply and line.startswith(prefix) and line.endswith(b"}"):
            results[key] = line[len(prefix) : -1].decode()
    return results


def ready_answers() -> dict[str, Any]:
    """The contents of C{ready_answers.json} for the SDK and gophergem installed."""
    answers: dict[str, str] = {}
    for version in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS):
        first, second = (_results(version, client) for client in _CLIENTS)
        answers.update({key: text for key, text in first.items() if second.get(key) == text})
    texts = sorted(set(answers.values()))
    index = {text: n for n, text in enumerate(texts)}
    versions = {name: metadata.version(name) for name in RECORDED_WITH}
    versions["gophergem"] = __version__
    return {
        "format": early.FORMAT,
        "versions": versions,
        "answers": {key: index[text] for key, text in sorted(answers.items())},
        "texts": texts,
    }


def _dump(data: Any) -> str:
    # Key order is kept: the SDK publishes a schema's keys in the order given.
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def files() -> dict[Path, str]:
    """Each recorded file and the text it should hold now."""
    return {
        HERE / "output_schemas.json": _dump(output_schemas()),
        HERE / early.ANSWERS_FILE: _dump(ready_answers()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the recorded files, or with C{--check}, say which are stale (exit 1)."""
    check = list(sys.argv[1:] if argv is None else argv) == ["--check"]
    stale = []
    for path, text in files().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path.name)
        if not check:
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"stale: {', '.join(stale)}; run python -m gophergem.mcp.prebuilt", file=sys.stderr)
        return 1
    for name in stale:
        print(f"wrote {name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
