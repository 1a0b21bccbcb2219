"""
Acceptance tests: C{python -m gophergem} driven by the MCP SDK's stdio client
(and by raw JSON-RPC lines) against a real gophernicus on 127.0.0.1.

The fixture content lives in C{fixtures/gopherroot}; C{conftest.py} serves a
copy of it.  Nothing here talks to anything but loopback: the C{h} item's
C{https://example.org/} and the telnet item are only menu lines, never fetched.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
from typing import Any

import pytest

from .conftest import (
    GopherServer,
    mcp_session,
    run_async,
    server_command,
    tool_payload,
    unused_loopback_port,
)

pytestmark = pytest.mark.integration

FETCH = "gopher_fetch"
BATCH = "gopher_batch_fetch"

# The root gophermap as gophernicus serves it: (type, title), in order.
ROOT_MENU = [
    ("i", "Welcome to the gophergem integration fixture."),
    ("i", "An explicit info line"),
    ("1", "A bigger submenu"),
    ("0", "About this server (text)"),
    ("0", "Dot-stuffed CGI output"),
    ("9", "A small binary file"),
    ("I", "A tiny PNG image"),
    ("h", "An external web page"),
    ("8", "A telnet session"),
    ("3", "An error line"),
    ("7", "Search this server"),
]

# What cgi-bin/stuffed means once the client has undone the dot-stuffing and
# dropped the terminator (line ends normalised to LF).
STUFFED_TEXT = (
    "First line of the stuffed body.\n"
    ".This line starts with one dot once unstuffed.\n"
    ".\n"
    "The line above is a lone dot once unstuffed.\n"
    "..Two dots once unstuffed.\n"
    "Last line.\n"
)


def root_url(server: GopherServer) -> str:
    return f"gopher://{server.host}:{server.port}/"


def lf(text: str) -> str:
    return text.replace("\r\n", "\n")


async def fetch(session: Any, url: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
    result = await session.call_tool(FETCH, {"url": url, **arguments})
    return result, tool_payload(result)


async def root_items(session: Any, server: GopherServer) -> dict[str, dict[str, Any]]:
    """The root menu's items keyed by title."""
    result, payload = await fetch(session, root_url(server))
    assert not result.is_error, payload
    assert payload["kind"] == "menu", payload
    return {item["title"]: item for item in payload["items"]}


def error_code(payload: dict[str, Any]) -> str:
    assert payload.get("kind", "error") == "error", payload
    return payload["error"]["code"]


# --- The peer itself, without gophergem: proves the fixture is served as the
# --- tests below assume (runs even before the package is importable).


def test_gophernicus_serves_fixture_as_assumed(gopher_server: GopherServer) -> None:
    host, port = gopher_server.host, gopher_server.port
    menu = gopher_server.raw(b"\r\n")
    assert menu.endswith(b"\r\n.\r\n"), menu[-40:]
    lines = menu[: -len(b".\r\n")].decode("ascii").split("\r\n")[:-1]
    assert [(line[0], line[1:].split("\t")[0]) for line in lines] == ROOT_MENU
    assert lines[0] == "iWelcome to the gophergem integration fixture.\t\tnull.host\t1"
    assert f"0About this server (text)\t/about.txt\t{host}\t{port}" in lines
    assert f"hAn external web page\tURL:https://example.org/\t{host}\t{port}" in lines
    assert "8A telnet session\tuser\t127.0.0.1\t23" in lines
    assert not any("Gophernicus" in line for line in lines), "footer should be off (-nf)"

    about = (gopher_server.root / "about.txt").read_bytes()
    # Plain files: CRLF line ends, no terminator, no dot-stuffing.
    assert gopher_server.raw(b"/about.txt\r\n") == about.replace(b"\n", b"\r\n")

    stuffed = gopher_server.raw(b"/cgi-bin/stuffed\r\n")
    assert stuffed.endswith(b"\r\nLast line.\r\n.\r\n")
    assert lf(stuffed.decode())[: -len(".\n")].replace("\n..", "\n.") == STUFFED_TEXT

    echoed = gopher_server.raw(b"/cgi-bin/search\thello world\r\n")
    assert echoed == b"iYou searched for: hello world\tfake\t(NULL)\t0\r\n.\r\n"

    for name in ("data.bin", "pic.png"):
        assert (
            gopher_server.raw(f"/{name}\r\n".encode()) == (gopher_server.root / name).read_bytes()
        )


# --- gophergem over the MCP SDK client.


def test_tools_list(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            listed = await session.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            assert {FETCH, BATCH} <= set(tools), sorted(tools)
            for name in (FETCH, BATCH):
                assert tools[name].output_schema, f"{name} has no outputSchema"
                assert tools[name].description, f"{name} has no description"
            fetch_props = tools[FETCH].input_schema.get("properties", {})
            assert {"url", "search", "offset", "refresh"} <= set(fetch_props), fetch_props
            assert "url" in tools[FETCH].input_schema.get("required", [])
            assert "result" in tools[BATCH].output_schema.get("properties", {}), tools[
                BATCH
            ].output_schema

    run_async(body)


def test_root_menu(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            result, payload = await fetch(session, root_url(gopher_server))
            assert not result.is_error, payload
            assert payload["kind"] == "menu"
            assert "request_info" in payload, sorted(payload)
            items = payload["items"]
            assert [(item["type"], item["title"]) for item in items] == ROOT_MENU
            assert {"i", "1", "0", "9", "I", "h", "8", "3", "7"} <= {item["type"] for item in items}
            local = f"gopher://{gopher_server.host}:{gopher_server.port}/"
            for item in items:
                assert set(item) >= {"type", "title", "selector", "host", "port", "next_url"}, item
                if item["type"] == "i":
                    assert item["next_url"] == "", item
                elif item["type"] == "h":
                    assert item["selector"] == "URL:https://example.org/", item
                    assert item["next_url"] == "https://example.org/", item
                elif item["type"] != "3":  # checked last, below
                    assert item["next_url"].startswith("gopher://"), item
            by_title = {item["title"]: item for item in items}
            about = by_title["About this server (text)"]
            assert (about["selector"], about["host"], about["port"]) == (
                "/about.txt",
                gopher_server.host,
                gopher_server.port,
            )
            assert about["next_url"].startswith(local), about
            telnet = by_title["A telnet session"]
            assert (telnet["host"], telnet["port"]) == ("127.0.0.1", 23)
            assert telnet["next_url"].startswith("gopher://127.0.0.1:23/"), telnet
            # A "3" line reports an error; it is not a link (like "i").
            error_line = by_title["An error line"]
            assert error_line["next_url"] == "", error_line

    run_async(body)


def test_big_submenu(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            items = await root_items(session, gopher_server)
            result, payload = await fetch(session, items["A bigger submenu"]["next_url"])
            assert not result.is_error, payload
            assert payload["kind"] == "menu"
            got = payload["items"]
            assert got[0]["type"] == "i" and got[0]["title"] == "Big submenu: many entries."
            assert [item["title"] for item in got[1:201]] == [
                f"Copy {i:03d} of about.txt" for i in range(1, 201)
            ]
            assert (got[-1]["type"], got[-1]["selector"]) == ("1", "/")
            assert len(got) == 202

    run_async(body)


def test_binary_items(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            items = await root_items(session, gopher_server)
            for title, name in (
                ("A small binary file", "data.bin"),
                ("A tiny PNG image", "pic.png"),
            ):
                result, payload = await fetch(session, items[title]["next_url"])
                assert not result.is_error, payload
                assert payload["kind"] == "binary", payload
                assert payload["bytes"] == (gopher_server.root / name).stat().st_size
                assert isinstance(payload["mime_type"], str) and "/" in payload["mime_type"], (
                    payload
                )
                assert "note" in payload, sorted(payload)
                if name == "pic.png":
                    assert payload["mime_type"] == "image/png"
                else:
                    assert not payload["mime_type"].startswith("text/"), payload

    run_async(body)


def test_text_round_trips(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    expected = (gopher_server.root / "about.txt").read_text(encoding="utf-8")
    assert "\n.\n" in expected and "\n.leading" in expected and "\n..two" in expected

    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            items = await root_items(session, gopher_server)
            url = items["About this server (text)"]["next_url"]
            for arguments in ({}, {"refresh": True}):
                result, payload = await fetch(session, url, **arguments)
                assert not result.is_error, payload
                assert payload["kind"] == "text", payload
                # Unframed (no terminator): nothing may be cut at the lone "."
                # and no ".." may be un-stuffed.
                assert lf(payload["text"]) == expected
                assert isinstance(payload["bytes"], int) and payload["bytes"] > 0
                assert payload["charset"].lower().replace("_", "-") in {
                    "utf-8",
                    "utf8",
                    "us-ascii",
                    "ascii",
                }

    run_async(body)


def test_stuffed_cgi_is_unstuffed(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            items = await root_items(session, gopher_server)
            result, payload = await fetch(session, items["Dot-stuffed CGI output"]["next_url"])
            assert not result.is_error, payload
            assert payload["kind"] == "text", payload
            assert lf(payload["text"]) == STUFFED_TEXT

    run_async(body)


def test_search(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            items = await root_items(session, gopher_server)
            search = items["Search this server"]
            assert search["type"] == "7"
            result, payload = await fetch(session, search["next_url"], search="hello world")
            assert not result.is_error, payload
            assert payload["kind"] == "menu", payload
            info = [item["title"] for item in payload["items"] if item["type"] == "i"]
            assert info == ["You searched for: hello world"], payload["items"]

    run_async(body)


def test_telnet_is_not_fetchable(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            result, payload = await fetch(session, f"gopher://127.0.0.1:{gopher_server.port}/8")
            assert result.is_error is True, payload
            assert error_code(payload) == "NOT_FETCHABLE"
            assert payload["error"]["message"]

    run_async(body)


def test_connection_refused(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    port = unused_loopback_port()

    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            result, payload = await fetch(session, f"gopher://127.0.0.1:{port}/0/about.txt")
            assert result.is_error is True, payload
            assert error_code(payload) == "CONNECTION_FAILED"

    run_async(body)


def _fingerprint(payload: dict[str, Any]) -> tuple[str, Any]:
    kind = payload.get("kind")
    if kind == "menu":
        return kind, payload["items"][0]["title"] if payload["items"] else None
    if kind == "text":
        return kind, lf(payload["text"]).split("\n", 1)[0]
    if kind == "binary":
        return kind, payload["bytes"]
    if kind == "error":
        return kind, payload["error"]["code"]
    return str(kind), None


def test_batch_fetch(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    root = gopher_server.root

    async def body() -> None:
        async with mcp_session(mcp_env) as session:
            items = await root_items(session, gopher_server)
            first_about_line = (root / "about.txt").read_text().split("\n", 1)[0]
            pool = [
                (root_url(gopher_server), ("menu", ROOT_MENU[0][1])),
                (items["A bigger submenu"]["next_url"], ("menu", "Big submenu: many entries.")),
                (items["About this server (text)"]["next_url"], ("text", first_about_line)),
                (
                    items["Dot-stuffed CGI output"]["next_url"],
                    ("text", "First line of the stuffed body."),
                ),
                (
                    items["A small binary file"]["next_url"],
                    ("binary", (root / "data.bin").stat().st_size),
                ),
                (
                    items["A tiny PNG image"]["next_url"],
                    ("binary", (root / "pic.png").stat().st_size),
                ),
                (f"gopher://127.0.0.1:{gopher_server.port}/8", ("error", "NOT_FETCHABLE")),
            ]
            chosen = list(itertools.islice(itertools.cycle(pool), 50))
            urls = [url for url, _ in chosen]

            result = await session.call_tool(BATCH, {"urls": urls})
            payload = tool_payload(result)
            assert not result.is_error, payload
            assert result.structured_content is not None
            assert set(result.structured_content) == {"result"}
            results = result.structured_content["result"]
            assert len(results) == 50
            for index, ((url, expected), got) in enumerate(zip(chosen, results, strict=True)):
                assert _fingerprint(got) == expected, (index, url, got)
                info_url = (got.get("request_info") or {}).get("url")
                if info_url is not None and url != root_url(gopher_server):
                    assert info_url == url, (index, url, got["request_info"])

            too_many = await session.call_tool(BATCH, {"urls": [*urls, urls[0]]})
            payload = tool_payload(too_many)
            assert too_many.is_error is True, payload
            assert error_code(payload) == "INVALID_REQUEST"

    run_async(body)


# --- Raw stdio: a burst of lines, then EOF.


def test_raw_stdio_burst_then_eof(gopher_server: GopherServer, mcp_env: dict[str, str]) -> None:
    url = root_url(gopher_server)
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "gophergem-raw-burst", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    calls = [
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": FETCH, "arguments": {"url": url}},
        }
        for request_id in range(2, 12)
    ]
    burst = "".join(json.dumps(message) + "\n" for message in lines + calls[:5])
    burst += "{not json\n"
    burst += "".join(json.dumps(message) + "\n" for message in calls[5:])

    command, args = server_command()
    with tempfile.TemporaryFile() as errlog:
        proc = subprocess.Popen(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=mcp_env,
        )
        try:
            stdout, _ = proc.communicate(burst.encode("utf-8"), timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            errlog.seek(0)
            pytest.fail(
                "server did not exit after stdin EOF; stderr:\n"
                + errlog.read().decode(errors="replace")
            )
        errlog.seek(0)
        stderr = errlog.read().decode(errors="replace")

    assert stdout.endswith(b"\n") or not stdout, stdout[-200:]
    messages = []
    for raw in stdout.decode("utf-8").split("\n")[:-1]:
        try:
            message = json.loads(raw)
        except ValueError:
            pytest.fail(f"stdout line is not JSON: {raw!r}\nstderr:\n{stderr}")
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", raw
        assert ("result" in message) != ("error" in message) or "method" in message, raw
        messages.append(message)

    responses = [m for m in messages if "id" in m and "method" not in m]
    seen = sorted(str(m["id"]) for m in responses)
    parse_errors = [m for m in responses if m.get("error", {}).get("code") == -32700]
    assert parse_errors, (
        f"no -32700 reply to the malformed line; response ids: {seen}\nstderr:\n{stderr}"
    )
    assert all(m["id"] is None for m in parse_errors), parse_errors

    by_id: dict[int, list[dict[str, Any]]] = {}
    for message in responses:
        if message["id"] is not None:
            by_id.setdefault(message["id"], []).append(message)
    assert sorted(by_id) == list(range(1, 12)), f"response ids: {seen}\nstderr:\n{stderr}"
    assert all(len(found) == 1 for found in by_id.values()), by_id
    assert "result" in by_id[1][0] and by_id[1][0]["result"].get("protocolVersion"), by_id[1]
    for request_id in range(2, 12):
        reply = by_id[request_id][0]
        assert "result" in reply, (request_id, reply, stderr)
        assert not reply["result"].get("isError"), reply
        assert reply["result"]["structuredContent"]["kind"] == "menu", reply
    assert proc.returncode == 0, (proc.returncode, stderr)
