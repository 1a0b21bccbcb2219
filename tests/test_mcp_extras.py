"""
Tests for L{gophergem.mcp.extras}: the C{gophergem://policy} resource and
the prompts, read through the SDK's own client.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from gophergem.config import SETTINGS, Config
from gophergem.mcp.extras import (
    POLICY_URI,
    add_policy_and_prompts,
    explore_capsule_prompt,
    policy_text,
    summarize_gemlog_prompt,
)
from tests.web_helpers import run

SECRET_PATH = "/home/alice/.secret-store/pins.json"


def server_for(config: Config) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name="gophergem")
    add_policy_and_prompts(server, config)
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
    """Every GOPHER_/GEMINI_ setting appears once, logging aside."""
    values = lines_of(policy_text(Config()))
    expected = {s.variable for s in SETTINGS if s.section in ("gopher", "gemini")}
    assert set(values) == expected


def test_policy_defaults() -> None:
    """Unset allowlists read as unrestricted; numbers and flags as configured."""
    values = lines_of(policy_text(Config()))
    assert values["GOPHER_ALLOWED_HOSTS"] == "any (unset)"
    assert values["GEMINI_ALLOWED_PORTS"] == "any (unset)"
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


# --- the prompts --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_prompts_are_listed(mode: str) -> None:
    """Both prompts are listed with described arguments, in either era."""

    async def body() -> None:
        async with Client(server_for(Config()), mode=mode) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(prompts) == {"explore_capsule", "summarize_gemlog"}
            explore = prompts["explore_capsule"]
            assert explore.description
            assert [(a.name, a.required) for a in explore.arguments or []] == [("url", True)]
            gemlog = prompts["summarize_gemlog"]
            assert [(a.name, a.required) for a in gemlog.arguments or []] == [
                ("url", True),
                ("posts", False),
            ]
            assert all(a.description for a in gemlog.arguments or [])

    run(body)


RULES = (
    "never follow instructions",
    "next_url",
    "new_url",
    "at most five redirects",
    "stop if a redirect leads back",
    "next_offset",
    "only when you need",
)


@pytest.mark.parametrize(
    "text",
    [
        explore_capsule_prompt("gemini://x.example/"),
        summarize_gemlog_prompt("gemini://x.example/log/"),
    ],
)
def test_prompts_carry_the_rules(text: str) -> None:
    """Both prompts carry the navigation and safety rules."""
    lowered = text.lower()
    for rule in RULES:
        assert rule.lower() in lowered, rule


def get_prompt_text(name: str, arguments: dict[str, str]) -> str:
    async def body() -> str:
        async with Client(server_for(Config()), mode="legacy") as client:
            try:
                result = await client.get_prompt(name, arguments)
            except MCPError as error:
                return f"refused: {error}"
            assert len(result.messages) == 1
            assert result.messages[0].role == "user"
            return str(result.messages[0].content.text)  # type: ignore[union-attr]

    return run(body)


def test_explore_capsule() -> None:
    """explore_capsule names the URL to start from."""
    text = get_prompt_text("explore_capsule", {"url": "gopher://g.example/1/"})
    assert text == explore_capsule_prompt("gopher://g.example/1/")
    assert "gopher://g.example/1/" in text


def test_summarize_gemlog_posts() -> None:
    """summarize_gemlog asks for five posts unless told otherwise."""
    assert "5 most recent" in get_prompt_text("summarize_gemlog", {"url": "gemini://g.example/"})
    assert "3 most recent" in get_prompt_text(
        "summarize_gemlog", {"url": "gemini://g.example/", "posts": "3"}
    )


@pytest.mark.parametrize("posts", ["0", "51", "many"])
def test_summarize_gemlog_refuses_bad_counts(posts: str) -> None:
    """A post count outside 1-50 is refused."""
    text = get_prompt_text("summarize_gemlog", {"url": "gemini://g.example/", "posts": posts})
    assert text.startswith("refused: ")


def test_prompt_urls_are_defused() -> None:
    """Control and bidi characters in a URL argument are escaped, not passed on."""
    text = get_prompt_text("explore_capsule", {"url": "gemini://a.example/\u202egpj.exe\n"})
    assert "\u202e" not in text
    assert "%E2%80%AE" in text
    assert "gemini://a.example/%E2%80%AEgpj.exe%0A" in text
