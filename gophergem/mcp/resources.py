# -*- test-case-name: tests.test_mcp_resources -*-
"""
The resources beside the tools: C{gophergem://policy}, the limits this
server fetches under, read from the L{Config} the process runs with.  (The
subscriptions' C{gophergem://feeds/updates} comes with the feed tools, in
L{gophergem.mcp.tools.feeds}.)

Store paths are never shown, only whether one was configured.  The same
text is served at C{/.well-known/agent/policy} (L{gophergem.http.discovery}).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from gophergem._version import __version__
from gophergem.config import SETTINGS, Config

__all__ = ["POLICY_URI", "policy_text", "register"]

POLICY_URI = "gophergem://policy"

# Settings that are not policy (where logs go) stay out of the policy.
_NOT_POLICY = {"log_level", "log_file"}


def _show(name: str, value: Any) -> str:
    if name.endswith("_path"):
        return "<default>" if value is None else "<configured>"
    if value is None:
        return "any (unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, frozenset | tuple):
        if not value:
            return "none"
        return ",".join(str(v) for v in sorted(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def policy_text(config: Config) -> str:
    """
    The effective policy of C{config} as plain text, one setting a line.

    Each line names the environment variable that sets it; store paths
    appear only as C{<configured>} or C{<default>}.
    """
    lines = [
        f"gophergem {__version__}: the policy this server runs with. Only the operator can "
        "change it (environment variables or options); no tool edits it.",
        "Hosts or ports 'any (unset)' are not restricted; 0 turns a rate limit, the global cap "
        "on concurrent fetches or a cache TTL off. The limit on connections open at once to "
        "one host (robots.txt probes included) is always on.",
        "Pacing and the per-host connection limit are per host across every scheme: a host "
        "serving Gopher, Gemini and Spartan is paced once and its connections are counted "
        "together. Each scheme's settings give its own interval (a start keeps the host's next "
        "one, of any scheme, 60/REQUESTS_PER_MINUTE seconds away) and its own limit (in turn, "
        "it opens a connection while the host has fewer open, every scheme counted, than its "
        "MAX_CONNECTIONS_PER_HOST).",
    ]
    for section, title in (
        ("gopher", "Gopher"),
        ("gemini", "Gemini"),
        ("smolweb", "Finger, Nex and Spartan (one concurrency cap for the three)"),
        ("titan", "Titan uploads (addresses, timeouts and pacing as Gemini's)"),
    ):
        values = getattr(config, section)
        lines.append("")
        lines.append(f"{title}:")
        if section == "smolweb":
            lines.append(
                "  robots.txt is read over Spartan only: Finger and Nex have no robots.txt "
                "convention, so SMOLWEB_RESPECT_ROBOTS_TXT does not apply to them."
            )
        for setting in SETTINGS:
            if setting.section == section and setting.name not in _NOT_POLICY:
                lines.append(
                    f"  {setting.variable} = {_show(setting.name, getattr(values, setting.name))}"
                )
    return "\n".join(lines) + "\n"


def register(server: MCPServer[Any], config: Config) -> None:
    """Add the C{gophergem://policy} resource of C{config} to C{server}."""
    text = policy_text(config)

    @server.resource(
        POLICY_URI,
        name="policy",
        title="Fetch policy",
        description="The limits this server fetches under: allowlists, ports, timeouts, size "
        "caps, cache, rate limits, robots.txt and certificate pinning. Read-only.",
        mime_type="text/plain",
    )
    def policy() -> str:
        return text
