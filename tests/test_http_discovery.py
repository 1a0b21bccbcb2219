"""
Tests for L{gophergem.http.discovery}: C{/health} and the agent.gopher tree,
served in memory by a real C{Site} on an asyncio loop.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from twisted.internet.defer import fail, succeed
from twisted.internet.task import Clock
from twisted.web.resource import Resource
from twisted.web.server import Site

from gophergem._version import __version__
from gophergem.config import Config
from gophergem.http.discovery import GOPHER_MENU_TYPE, add_discovery
from gophergem.http.origin import transport_security
from gophergem.mcp.resources import policy_text
from gophergem.mcp.server import build_server
from tests.helpers.mcp import network
from tests.helpers.web import Wire, request_bytes, run, until

CONFIG = Config.from_mapping({"GOPHER_ALLOWED_PORTS": "70,7070"})


def small_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name="gophergem")

    @server.tool(
        title="Look up a thing",
        description="Look a thing up. It returns what it found.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def lookup(name: str, limit: int = 3) -> str:
        """Unused."""
        return name

    @server.tool(description="Do another thing.")
    async def other(flag: bool | None = None) -> str:
        """Unused."""
        return ""

    return server


def get(
    path: str,
    headers: dict[str, str] | None = None,
    server: MCPServer[Any] | None = None,
    root: Resource | None = None,
    security: TransportSecuritySettings | None = None,
    health_checks: Any = None,
    guard: Any = None,
) -> Wire:
    """GET C{path} from a site with discovery mounted; return the finished exchange."""

    async def body() -> Wire:
        site_root = root if root is not None else Resource()
        add_discovery(
            site_root,
            server or small_server(),
            CONFIG,
            security=security,
            health_checks=health_checks,
            guard=guard,
        )
        wire = Wire(Site(site_root, reactor=Clock()))
        raw = request_bytes("GET", path, headers=headers)
        if headers and "Host" in headers:
            raw = raw.replace(b"Host: 127.0.0.1:8000\r\n", b"", 1)
        wire.send(raw)
        await until(lambda: b"\r\n\r\n" in wire.value() and _complete(wire))
        return wire

    return run(body)


def _complete(wire: Wire) -> bool:
    headers = wire.head()[1]
    return len(wire.body()) >= int(headers.get("content-length", "0"))


class Text(Resource):
    isLeaf = True

    def render_GET(self, request: Any) -> bytes:
        return b"Contact: x\n"


def menu_lines(wire: Wire) -> list[list[str]]:
    text = wire.body().decode("utf-8")
    assert text.endswith("\r\n.\r\n")
    lines = text[: -len(".\r\n")].split("\r\n")
    assert lines[-1] == ""
    return [line.split("\t") for line in lines[:-1]]


# --- /health ------------------------------------------------------------------------


def test_health_is_exactly_status_and_version() -> None:
    """/health answers {"status": "ok", "version": ...} as JSON and nothing else."""
    wire = get("/health")
    status, headers = wire.head()
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert wire.body() == b'{"status": "ok", "version": "%s"}' % __version__.encode()
    assert json.loads(wire.body()) == {"status": "ok", "version": __version__}


def test_health_with_backends_that_answer_is_unchanged() -> None:
    """With shared backends that all answer, /health says exactly what it always says."""
    wire = get("/health", health_checks=lambda: succeed([]))
    assert wire.head()[0] == 200
    assert json.loads(wire.body()) == {"status": "ok", "version": __version__}


def test_health_names_a_backend_that_does_not_answer() -> None:
    """A backend down: 503, the kinds that failed, and nothing about where they are."""
    wire = get("/health", health_checks=lambda: succeed(["redis"]))
    status, headers = wire.head()
    assert status == 503
    assert headers["cache-control"] == "no-store"
    assert json.loads(wire.body()) == {
        "status": "unavailable",
        "version": __version__,
        "unavailable": ["redis"],
    }


def test_health_when_asking_fails() -> None:
    """A check that itself fails counts as the state being unavailable."""
    wire = get("/health", health_checks=lambda: fail(RuntimeError("boom")))
    assert wire.head()[0] == 503
    assert json.loads(wire.body())["unavailable"] == ["state"]
    assert b"boom" not in wire.value()


def test_health_has_no_children() -> None:
    """Nothing hides below /health."""
    assert get("/health/config").head()[0] == 404


# --- the root menu ----------------------------------------------------------------


def test_agent_gopher_menu() -> None:
    """The root menu: an info line, the MCP endpoint as h URL:, one line per tool, policy."""
    wire = get("/.well-known/agent.gopher")
    status, headers = wire.head()
    assert status == 200
    assert headers["content-type"] == "application/gopher; charset=utf-8"
    lines = menu_lines(wire)
    assert all(len(fields) == 4 for fields in lines)
    assert all(fields[2:] == ["127.0.0.1", "8000"] for fields in lines)
    assert lines[0][0].startswith(f"igophergem {__version__}")
    assert lines[1] == [
        "hMCP endpoint (Streamable HTTP)",
        "URL:http://127.0.0.1:8000/mcp",
        "127.0.0.1",
        "8000",
    ]
    assert lines[2] == HEALTH_LINE
    assert lines[3][:2] == ["0lookup: Look up a thing", "/.well-known/agent/tools/lookup"]
    assert lines[4][:2] == ["0other: Do another thing.", "/.well-known/agent/tools/other"]
    assert lines[5][:2] == ["1All tools", "/.well-known/agent/tools"]
    assert lines[6][:2] == [
        "0Policy (MCP resource gophergem://policy)",
        "/.well-known/agent/policy",
    ]
    assert lines[7][0].startswith("i")
    assert len(lines) == 8


HEALTH_LINE = ["hHealth check (JSON)", "URL:http://127.0.0.1:8000/health", "127.0.0.1", "8000"]


@pytest.mark.parametrize("guarded", [False, True])
def test_both_forms_show_health(guarded: bool) -> None:
    """
    The root's text form names /health as its JSON form does, with or
    without authentication (where the root is only a card); a client that
    follows the link gets the health answer.
    """
    guard = (lambda resource: resource) if guarded else None
    data = json.loads(get("/.well-known/agent.gopher?format=json", guard=guard).body())
    assert data["health"] == "/health"
    lines = menu_lines(get("/.well-known/agent.gopher", guard=guard))
    assert lines[2] == HEALTH_LINE
    assert ("gophergem://policy" in str(lines)) is not guarded
    assert get("/health", guard=guard).head()[0] == 200


def test_agent_gopher_lists_the_live_tools() -> None:
    """Every tool of gophergem's real server has its line, in the server's order."""

    async def names() -> list[str]:
        return [t.name for t in await server.list_tools()]

    net, _ = network()
    server = build_server(net.fetcher())
    wire = get("/.well-known/agent.gopher", server=server)
    listed = [f[1].rpartition("/")[2] for f in menu_lines(wire) if f[0].startswith("0")]
    assert listed[:-1] == run(names)
    assert "gopher_fetch" in listed


@pytest.mark.parametrize(
    ("headers", "url", "host", "port"),
    [
        (
            {"Host": "mcp.example.org", "X-Forwarded-Proto": "https"},
            "https://mcp.example.org/mcp",
            "mcp.example.org",
            "443",
        ),
        (
            {"Host": "mcp.example.org:8080"},
            "http://mcp.example.org:8080/mcp",
            "mcp.example.org",
            "8080",
        ),
        ({"Host": "[::1]:9000"}, "http://[::1]:9000/mcp", "::1", "9000"),
        ({"Host": "localhost"}, "http://localhost/mcp", "localhost", "80"),
    ],
)
def test_endpoint_url_follows_the_request(
    headers: dict[str, str], url: str, host: str, port: str
) -> None:
    """The endpoint URL and item hosts name the accepted origin the client used."""
    security = transport_security(allowed_hosts=["mcp.example.org"])
    lines = menu_lines(get("/.well-known/agent.gopher", headers=headers, security=security))
    assert lines[1][1:] == [f"URL:{url}", host, port]


FOREIGN = [
    ({"Host": "evil.example"}, 421),
    ({"Host": "evil.example:8000"}, 421),
    ({"Host": "bad host/../"}, 421),
    ({"Host": "127.0.0.1:8000", "Origin": "http://evil.example"}, 403),
    ({"Host": "127.0.0.1:8000", "Origin": "null"}, 403),
]


@pytest.mark.parametrize(
    "path",
    [
        "/health",
        "/.well-known/agent.gopher",
        "/.well-known/agent.gopher?format=json",
        "/.well-known/agent/tools",
        "/.well-known/agent/tools/lookup",
        "/.well-known/agent/policy",
    ],
)
@pytest.mark.parametrize(("headers", "status"), FOREIGN)
def test_foreign_host_or_origin_refused(path: str, headers: dict[str, str], status: int) -> None:
    """A Host or Origin the MCP endpoint would refuse is refused here too: 421 or 403."""
    wire = get(path, headers=headers, security=transport_security(8000))
    assert wire.head()[0] == status
    assert b"evil.example" not in wire.body()


def test_agent_gopher_never_names_a_foreign_host() -> None:
    """With the daemon's rules, agent.gopher cannot be made to advertise evil.example."""
    for headers in ({"Host": "evil.example"}, {"Host": "evil.example:8000"}):
        wire = get("/.well-known/agent.gopher?format=json", headers=headers)
        assert wire.head()[0] == 421
        assert b"evil" not in wire.body()


def test_allowed_name_and_origin_served() -> None:
    """An allowed name, and a browser Origin naming it, are served."""
    security = transport_security(8000, ["mcp.example.org"])
    headers = {"Host": "mcp.example.org", "Origin": "https://mcp.example.org"}
    assert get("/health", headers=headers, security=security).head()[0] == 200


def test_root_has_no_children() -> None:
    """agent.gopher itself is one node; the drill-down lives under /.well-known/agent/."""
    assert get("/.well-known/agent.gopher/tools").head()[0] == 404


# --- drill-down -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/.well-known/agent", "/.well-known/agent/"])
def test_agent_directory_is_the_root_menu(path: str) -> None:
    """/.well-known/agent/ serves the same root menu."""
    assert get(path).body() == get("/.well-known/agent.gopher").body()


def test_tools_menu() -> None:
    """The tools node lists each tool with the first sentence of its description."""
    wire = get("/.well-known/agent/tools")
    assert wire.head()[1]["content-type"] == GOPHER_MENU_TYPE.decode()
    lines = menu_lines(wire)
    assert lines[1][:2] == ["0lookup: Look a thing up.", "/.well-known/agent/tools/lookup"]
    assert lines[2][:2] == ["0other: Do another thing.", "/.well-known/agent/tools/other"]


def test_tool_text() -> None:
    """A tool node is plain text: title, description, hints and arguments."""
    wire = get("/.well-known/agent/tools/lookup")
    assert wire.head()[1]["content-type"] == "text/plain; charset=utf-8"
    text = wire.body().decode()
    assert text.startswith("lookup: Look up a thing\n")
    assert "Look a thing up. It returns what it found." in text
    assert "Hints: read-only, closed-world" in text
    assert "  name (string, required): " in text
    assert "  limit (integer, default 3): " in text


def test_policy_text() -> None:
    """The policy node is the policy resource's text."""
    wire = get("/.well-known/agent/policy")
    assert wire.head()[1]["content-type"] == "text/plain; charset=utf-8"
    assert wire.body().decode() == policy_text(CONFIG)


@pytest.mark.parametrize(
    "path", ["/.well-known/agent/tools/nope", "/.well-known/agent/nope", "/.well-known/agent/a/b/c"]
)
def test_unknown_nodes(path: str) -> None:
    """A node that does not exist is a 404."""
    assert get(path).head()[0] == 404


# --- JSON -------------------------------------------------------------------------


def test_root_as_json() -> None:
    """?format=json gives the root node as JSON, with the same endpoint, tools and policy."""
    wire = get("/.well-known/agent.gopher?format=json")
    assert wire.head()[1]["content-type"] == "application/json"
    data = json.loads(wire.body())
    assert data["version"] == __version__
    assert data["mcp"] == {"url": "http://127.0.0.1:8000/mcp", "transport": "streamable-http"}
    assert [t["name"] for t in data["tools"]] == ["lookup", "other"]
    assert data["tools"][0]["href"] == "/.well-known/agent/tools/lookup"
    assert data["policy"] == {"resource": "gophergem://policy", "href": "/.well-known/agent/policy"}


def test_drill_down_as_json() -> None:
    """Each drill-down node has its JSON form."""
    tools = json.loads(get("/.well-known/agent/tools?format=json").body())
    assert [t["name"] for t in tools["tools"]] == ["lookup", "other"]
    assert tools["tools"][0]["annotations"] == ["read-only", "closed-world"]
    tool = json.loads(get("/.well-known/agent/tools/lookup?format=json").body())
    assert tool["input_schema"]["required"] == ["name"]
    assert [a["name"] for a in tool["arguments"]] == ["name", "limit"]
    policy = json.loads(get("/.well-known/agent/policy?format=json").body())
    assert policy == {"resource": "gophergem://policy", "text": policy_text(CONFIG)}


def test_unknown_format() -> None:
    """A format other than gopher or json is a 400."""
    assert get("/.well-known/agent.gopher?format=xml").head()[0] == 400
    assert get("/.well-known/agent.gopher?format=gopher").head()[0] == 200


def test_mounts_beside_existing_well_known() -> None:
    """add_discovery keeps what the site already serves under /.well-known/."""
    root = Resource()
    well_known = Resource()
    well_known.putChild(b"security.txt", Text())
    root.putChild(b".well-known", well_known)
    assert get("/.well-known/security.txt", root=root).body() == b"Contact: x\n"
    root = Resource()
    root.putChild(b".well-known", well_known)
    assert get("/.well-known/agent.gopher", root=root).head()[0] == 200
