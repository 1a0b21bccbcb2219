"""
Tests for L{gophergem.mcp.resources}: the C{gophergem://policy} resource, read
through the SDK's own client.
"""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

from gophergem.config import SETTINGS, Config
from gophergem.mcp import resources
from gophergem.mcp.resources import POLICY_URI, policy_text
from tests.helpers.web import run

SECRET_PATH = "/home/alice/.secret-store/pins.json"


def server_for(config: Config) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name="gophergem")
    resources.register(server, config)
    return server


def lines_of(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        name, equals, value = line.strip().partition(" = ")
        if equals:
            out[name] = value
    return out


# --- the policy ---------------------------------------------------------------------


def test_policy_shows_every_setting_of_both_protocols() -> None:
    """Every GOPHER_/GEMINI_/SMOLWEB_/TITAN_ setting appears once, logging aside."""
    values = lines_of(policy_text(Config()))
    sections = ("gopher", "gemini", "smolweb", "titan")
    expected = {s.variable for s in SETTINGS if s.section in sections}
    assert set(values) == expected


def test_policy_says_finger_and_nex_have_no_robots_txt() -> None:
    """
    The small web's section says robots.txt is read over Spartan only:
    Finger and Nex have no such convention.
    """
    text = policy_text(Config())
    section = text[text.index("Finger, Nex and Spartan") :]
    assert "Finger and Nex have no robots.txt convention" in section
    assert "SMOLWEB_ALLOWED_HOSTS = any (unset)" in section


def test_policy_says_pacing_and_the_connection_limit_are_per_host_across_schemes() -> None:
    """
    The policy says a host is paced, and its connections counted, once
    across every scheme, each scheme's settings giving its own interval and
    limit; the small web's section no longer claims a pacer of its own.
    """
    text = policy_text(Config())
    preamble = text[: text.index("Gopher:")]
    assert "Pacing and the per-host connection limit are per host across every scheme" in preamble
    assert "60/REQUESTS_PER_MINUTE seconds" in preamble
    assert "MAX_CONNECTIONS_PER_HOST" in preamble
    assert "Finger, Nex and Spartan (one concurrency cap for the three):" in text
    assert "one pacer" not in text


def test_policy_defaults() -> None:
    """Unset allowlists read as unrestricted; numbers and flags as configured."""
    values = lines_of(policy_text(Config()))
    assert values["GOPHER_ALLOWED_HOSTS"] == "any (unset)"
    assert values["GEMINI_ALLOWED_PORTS"] == "any (unset)"
    assert values["TITAN_ALLOWED_HOSTS"] == "none"
    assert values["GOPHER_TIMEOUT_SECONDS"] == "30"
    assert values["GOPHER_MAX_RESPONSE_SIZE"] == "1048576"
    assert values["GEMINI_MAX_RENDERED_CHARS"] == "50000"
    assert values["GOPHER_CACHE_ENABLED"] == "true"
    assert values["GEMINI_REQUESTS_PER_MINUTE"] == "60"
    assert values["GEMINI_RESPECT_ROBOTS_TXT"] == "true"
    assert values["GEMINI_TOFU_ENABLED"] == "true"
    assert values["GEMINI_TOFU_STORAGE_PATH"] == "<default>"
    assert values["GEMINI_DENIED_MIME_TYPES"] == "none"


def test_policy_reflects_the_config() -> None:
    """Configured values show up, sorted; store paths only as <configured>."""
    config = Config.from_mapping(
        {
            "GOPHER_ALLOWED_HOSTS": "b.example,a.example",
            "GOPHER_ALLOWED_PORTS": "7070,70",
            "GEMINI_TIMEOUT_SECONDS": "2.5",
            "GEMINI_TOFU_STORAGE_PATH": SECRET_PATH,
            "GEMINI_CLIENT_CERTS_STORAGE_PATH": SECRET_PATH,
            "GEMINI_TOFU_REJECT_EXPIRED": "true",
            "GOPHERGEM_LOG_FILE": SECRET_PATH,
        }
    )
    text = policy_text(config)
    values = lines_of(text)
    assert values["GOPHER_ALLOWED_HOSTS"] == "a.example,b.example"
    assert values["GOPHER_ALLOWED_PORTS"] == "70,7070"
    assert values["GEMINI_TIMEOUT_SECONDS"] == "2.5"
    assert values["GEMINI_TOFU_STORAGE_PATH"] == "<configured>"
    assert values["GEMINI_CLIENT_CERTS_STORAGE_PATH"] == "<configured>"
    assert values["GEMINI_TOFU_REJECT_EXPIRED"] == "true"
    assert "secret" not in text and "alice" not in text


def test_policy_resource() -> None:
    """gophergem://policy is listed as text/plain and reads as the policy text."""
    config = Config.from_mapping({"GEMINI_TOFU_STORAGE_PATH": SECRET_PATH})

    async def body() -> None:
        async with Client(server_for(config), mode="legacy") as client:
            listed = (await client.list_resources()).resources
            assert [(str(r.uri), r.mime_type) for r in listed] == [(POLICY_URI, "text/plain")]
            assert listed[0].description
            contents = (await client.read_resource(POLICY_URI)).contents
            assert len(contents) == 1
            assert contents[0].text == policy_text(config)
            assert contents[0].mime_type == "text/plain"

    run(body)
