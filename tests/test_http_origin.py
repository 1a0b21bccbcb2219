"""Tests for L{gophergem.http.origin}: the C{Host} and C{Origin} values accepted."""

from __future__ import annotations

from gophergem.http.origin import transport_security


def test_transport_security_loopback_with_port() -> None:
    """A known loopback port pins the loopback Host and Origin values to it."""
    settings = transport_security(8000)
    assert settings.enable_dns_rebinding_protection
    assert settings.allowed_hosts == ["127.0.0.1:8000", "localhost:8000", "[::1]:8000"]
    assert "http://localhost:8000" in settings.allowed_origins


def test_transport_security_without_a_port_takes_bare_names() -> None:
    """With no fixed port (a Unix socket), a bare loopback Host such as curl sends is accepted."""
    settings = transport_security(None)
    assert {"localhost", "127.0.0.1", "[::1]", "localhost:*"} <= set(settings.allowed_hosts)
    assert "http://localhost" in settings.allowed_origins
    assert "localhost" not in transport_security(8000).allowed_hosts


def test_transport_security_named_hosts() -> None:
    """An allowed name is accepted bare and on any port, as http and https origins."""
    settings = transport_security(None, ["mcp.example.org", "other.example:8443"])
    assert "127.0.0.1:*" in settings.allowed_hosts
    assert {"mcp.example.org", "mcp.example.org:*", "other.example:8443"} <= set(
        settings.allowed_hosts
    )
    assert "https://mcp.example.org" in settings.allowed_origins
    assert "https://other.example:8443" in settings.allowed_origins
    assert "other.example:*" not in settings.allowed_hosts
