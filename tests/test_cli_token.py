"""
Tests for C{gophergem token add|remove|list} (L{gophergem.cli.token}), for how
the HTTP transport is refused when authentication has no public URL
(L{gophergem.http.listen.public_url}, L{gophergem.tap}), and for the token file
read again on SIGHUP (L{gophergem.auth.reload}).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from twisted.python import usage

from gophergem import tap
from gophergem.auth.reload import TokenReloadService
from gophergem.auth.tokens import TokenFile, hash_token, list_tokens
from gophergem.cli import main
from gophergem.config import Config, HTTPConfig
from gophergem.http import listen


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """No reactor is installed and no process-wide logging started (as in test_tap, test_cli)."""
    import gophergem._log

    monkeypatch.setattr(tap, "_ensure_asyncio_reactor", lambda: None)
    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"GOPHERGEM_AUTH_TOKENS_FILE": str(tmp_path / "tokens.json")}


def test_add_prints_the_token_once(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """add prints the token alone on stdout, a note on stderr, and stores only its hash."""
    assert main(["token", "add", "alice"], env) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert out == token + "\n"
    assert "shown only this once" in err
    assert token not in err
    path = Path(env["GOPHERGEM_AUTH_TOKENS_FILE"])
    assert token not in path.read_text()
    assert json.loads(path.read_text())["entries"]["alice"]["sha256"] == hash_token(token)
    assert TokenFile(path).principal_for(token) == "alice"


def test_add_again_rotates(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Adding a name again gives a new token and says the old one no longer works."""
    main(["token", "add", "alice"], env)
    first = capsys.readouterr().out.strip()
    assert main(["token", "add", "alice"], env) == 0
    out, err = capsys.readouterr()
    assert out.strip() != first
    assert "Replaced" in err
    reader = TokenFile(env["GOPHERGEM_AUTH_TOKENS_FILE"])
    assert reader.principal_for(first) is None
    assert reader.principal_for(out.strip()) == "alice"


def test_list_shows_names_not_hashes(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """list prints names and creation times, never a hash or a token."""
    assert main(["token", "list"], env) == 0
    assert capsys.readouterr().out == "No tokens.\n"
    main(["token", "add", "bob"], env)
    token = capsys.readouterr().out.strip()
    assert main(["token", "list"], env) == 0
    out = capsys.readouterr().out
    assert out.startswith("bob  created ")
    assert token not in out
    assert hash_token(token) not in out


@pytest.mark.parametrize(
    ("created", "shown"),
    [
        (1764720000.0, "2025-12-03T00:00:00Z"),
        # The second a time falls in, even a hair before the next one.
        (1764720000.9999996, "2025-12-03T00:00:00Z"),
        (-0.5, "1969-12-31T23:59:59Z"),
        (1e20, "1e+20 (seconds since 1970)"),
    ],
)
def test_list_shows_created_in_utc(
    env: dict[str, str], capsys: pytest.CaptureFixture[str], created: float, shown: str
) -> None:
    """list writes each creation time as ISO 8601 UTC; a time out of range as seconds."""
    main(["token", "add", "bob"], env)
    capsys.readouterr()
    path = Path(env["GOPHERGEM_AUTH_TOKENS_FILE"])
    document = json.loads(path.read_text())
    document["entries"]["bob"]["created"] = created
    path.write_text(json.dumps(document))
    assert main(["token", "list"], env) == 0
    assert capsys.readouterr().out == f"bob  created {shown}\n"


def test_remove(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """remove drops a token (0) and refuses an unknown name (1, one line)."""
    main(["token", "add", "bob"], env)
    capsys.readouterr()
    assert main(["token", "remove", "bob"], env) == 0
    assert list_tokens(env["GOPHERGEM_AUTH_TOKENS_FILE"]) == []
    capsys.readouterr()
    assert main(["token", "remove", "bob"], env) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "has no token" in err


@pytest.mark.parametrize("action", [["add", "x y"], ["remove", "a/b"], ["add", "x" * 65]])
def test_bad_name(
    env: dict[str, str], action: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad name is a usage error: one line, exit 2, nothing written."""
    assert main(["token", *action], env) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not Path(env["GOPHERGEM_AUTH_TOKENS_FILE"]).exists()


@pytest.mark.parametrize("action", [["add", "a"], ["remove", "a"], ["list"]])
def test_needs_the_setting(action: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Without GOPHERGEM_AUTH_TOKENS_FILE, every action is one line and exit 2."""
    assert main(["token", *action], {}) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "GOPHERGEM_AUTH_TOKENS_FILE" in err


def test_option_instead_of_variable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--gophergem-auth-tokens-file names the file as the variable does."""
    path = tmp_path / "t.json"
    assert main(["token", "add", "--gophergem-auth-tokens-file", str(path), "carol"], {}) == 0
    assert list_tokens(path)[0][0] == "carol"


def test_damaged_file(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged token file is one line and exit 1, no traceback."""
    Path(env["GOPHERGEM_AUTH_TOKENS_FILE"]).write_text("{oops")
    assert main(["token", "list"], env) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") == 1


# --- the public URL -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("tcp:8000:interface=127.0.0.1", "http://127.0.0.1:8000/mcp"),
        ("tcp:8001:interface=localhost", "http://127.0.0.1:8001/mcp"),
        ("tcp6:8002:interface=\\:\\:1", "http://[::1]:8002/mcp"),
    ],
)
def test_public_url_default(endpoint: str, url: str) -> None:
    """On a loopback TCP port, the public URL defaults to that address's /mcp."""
    assert listen.public_url(endpoint, Config()) == url


@pytest.mark.parametrize(
    "endpoint", ["tcp:8000:interface=0.0.0.0", "tcp:8000", "tcp:0:interface=127.0.0.1", "unix:/s"]
)
def test_public_url_needed(endpoint: str) -> None:
    """Beyond loopback, on no fixed port or a socket, GOPHERGEM_PUBLIC_URL is needed."""
    with pytest.raises(ValueError, match="GOPHERGEM_PUBLIC_URL"):
        listen.public_url(endpoint, Config())
    config = Config(http=HTTPConfig(public_url="https://mcp.example.org/mcp"))
    assert listen.public_url(endpoint, config) == "https://mcp.example.org/mcp"


def test_tap_refuses_auth_without_public_url() -> None:
    """twistd gophergem refuses a token file on a public bind without a public URL."""
    options = tap.Options()
    options.environ = {"GOPHERGEM_AUTH_TOKENS_FILE": "/tmp/t.json"}
    with pytest.raises(usage.UsageError, match="GOPHERGEM_PUBLIC_URL"):
        options.parseOptions(["--transport", "http", "--endpoint", "tcp:8000:interface=0.0.0.0"])
    options = tap.Options()
    options.environ = {"GOPHERGEM_AUTH_TOKENS_FILE": "/tmp/t.json"}
    options.parseOptions(["--transport", "stdio"])  # stdio is never affected


def test_serve_refuses_auth_without_public_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gophergem serve: one line, exit 2, nothing started."""
    environ = {"GOPHERGEM_AUTH_TOKENS_FILE": str(tmp_path / "t.json")}
    argv = ["serve", "--transport", "http", "--endpoint", "tcp:0:interface=0.0.0.0"]
    assert main(argv, environ) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "GOPHERGEM_PUBLIC_URL" in err


class FakeReactor:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def callFromThread(self, f: Any, *args: Any) -> None:
        self.calls.append(f)


class CountingVerifier:
    def __init__(self) -> None:
        self.reloads = 0

    def reload(self) -> None:
        self.reloads += 1


def test_sighup_reloads() -> None:
    """The reload service reads the file at start, and on SIGHUP; it restores the old handler."""
    verifier, reactor = CountingVerifier(), FakeReactor()
    reloader = TokenReloadService(verifier, reactor)
    before = signal.getsignal(signal.SIGHUP)
    reloader.startService()
    try:
        assert verifier.reloads == 1
        handler = signal.getsignal(signal.SIGHUP)
        assert callable(handler)
        handler(signal.SIGHUP, None)
        assert reactor.calls == [verifier.reload]
    finally:
        reloader.stopService()
    assert signal.getsignal(signal.SIGHUP) == before
