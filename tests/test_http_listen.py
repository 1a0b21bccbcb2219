"""
Tests for L{gophergem.http.listen}: where the HTTP endpoint listens (loopback
or not, on which port), its DNS-rebinding settings, the listen backlog, and
failing to listen as one line.
"""

from __future__ import annotations

import io
import sys

import pytest
from twisted.internet.defer import Deferred, fail
from twisted.internet.error import CannotListenError
from twisted.logger import capturedLogs

from gophergem.http import listen

# --- where the endpoint listens ----------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "facts"),
    [
        ("tcp:8000:interface=127.0.0.1", (True, 8000)),
        ("tcp:0:interface=127.0.0.1", (True, None)),
        ("tcp:port=8001:interface=localhost", (True, 8001)),
        ("tcp6:8000:interface=\\:\\:1", (True, 8000)),
        ("tcp:8000:interface=127.0.0.2", (True, 8000)),
        ("unix:/run/gophergem.sock", (True, None)),
        ("tcp:8000", (False, 8000)),
        ("tcp:8000:interface=0.0.0.0", (False, 8000)),
        ("tcp6:8000:interface=\\:\\:", (False, 8000)),
        ("ssl:443:privateKey=key.pem:certKey=cert.pem", (False, 443)),
        ("systemd:domain=INET:index=0", (False, None)),
    ],
)
def test_bind_facts(endpoint: str, facts: tuple[bool, int | None]) -> None:
    """Loopback-only binds are recognised, with their fixed port."""
    assert listen._bind_facts(endpoint) == facts


def test_loopback_endpoint_security() -> None:
    """A loopback bind on a fixed port accepts loopback names on that port only."""
    settings = listen.endpoint_security("tcp:8000:interface=127.0.0.1")
    assert settings.allowed_hosts == ["127.0.0.1:8000", "localhost:8000", "[::1]:8000"]


def test_public_endpoint_security() -> None:
    """A bind beyond loopback accepts the allowed names, and loopback names on any port."""
    settings = listen.endpoint_security("tcp:8000", ("mcp.example.org",))
    assert "mcp.example.org" in settings.allowed_hosts
    assert "127.0.0.1:*" in settings.allowed_hosts


def test_public_endpoint_without_names_is_logged() -> None:
    """Binding beyond loopback with no --allowed-host logs what clients will see."""
    with capturedLogs() as events:
        listen.endpoint_security("tcp:8000")
    assert any("--allowed-host" in str(e.get("log_format")) for e in events)


# --- the listen backlog -------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("tcp:8000:interface=127.0.0.1", "tcp:8000:interface=127.0.0.1:backlog=4096"),
        ("tcp6:8000:interface=\\:\\:1", "tcp6:8000:interface=\\:\\:1:backlog=4096"),
        ("unix:/run/gophergem.sock", "unix:/run/gophergem.sock:backlog=4096"),
        ("tcp:8000:backlog=10", "tcp:8000:backlog=10"),
        ("systemd:domain=INET:index=0", "systemd:domain=INET:index=0"),
    ],
)
def test_with_backlog(endpoint: str, expected: str) -> None:
    """Listening endpoints get a large backlog unless they name one; others are left alone."""
    assert listen.with_backlog(endpoint) == expected


# --- failing to listen -----------------------------------------------------------------------


class RefusingEndpoint:
    def listen(self, factory: object) -> Deferred[object]:
        return fail(CannotListenError("127.0.0.1", 8000, OSError(98, "Address already in use")))


def test_port_in_use_is_a_one_line_error() -> None:
    """A port already in use raises ListenError naming the endpoint and the reason."""
    listener = listen.HTTPListenService(RefusingEndpoint(), None, "tcp:8000")
    with pytest.raises(listen.ListenError) as info:
        listener.privilegedStartService()
    assert str(info.value) == "cannot listen on tcp:8000: Address already in use"


class MissingDirectoryEndpoint:
    def listen(self, factory: object) -> Deferred[object]:
        return fail(FileNotFoundError(2, "No such file or directory"))


def test_unix_socket_in_a_missing_directory_is_a_one_line_error() -> None:
    """A unix: endpoint whose directory is missing (a bare OSError) is a ListenError too."""
    listener = listen.HTTPListenService(MissingDirectoryEndpoint(), None, "unix:/nowhere/s")
    with pytest.raises(listen.ListenError) as info:
        listener.privilegedStartService()
    assert str(info.value) == "cannot listen on unix:/nowhere/s: No such file or directory"


def test_port_in_use_can_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With exit_on_error, the line goes to stderr and the process exits with status 2."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", err)
    listener = listen.HTTPListenService(RefusingEndpoint(), None, "tcp:8000")
    listener.exit_on_error = True
    with pytest.raises(SystemExit) as info:
        listener.privilegedStartService()
    assert info.value.code == 2
    assert err.getvalue() == "gophergem: cannot listen on tcp:8000: Address already in use\n"
