"""
Tests for the C{trust}, C{identity} and C{feeds} commands on a team server:
with C{GOPHERGEM_DATABASE_URL} set they read and write the PostgreSQL state
the daemons use (never the files), for the owner or for C{--principal}; a
database that cannot be reached or is not upgraded is one line, never a
traceback or a password.  They run against the throwaway PostgreSQL of
L{tests.servers.postgres}, each on a database of its own; nothing leaves
loopback.
"""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gophergem.cli import main
from gophergem.feeds.opml import parse_opml
from tests.helpers.state import SECRET, fresh_database
from tests.servers.postgres import PostgresHarness

FP = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
CAPSULE = "gemini://capsule.example/app/"


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process-wide logging is started by the in-process runs."""
    import gophergem._log

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)


def file_settings(tmp_path: Path) -> dict[str, str]:
    """Settings naming every file store under C{tmp_path}."""
    return {
        "HOME": str(tmp_path),
        "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
        "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "identities"),
        "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
    }


@pytest.fixture
def team(postgres_harness: PostgresHarness, tmp_path: Path) -> Iterator[dict[str, str]]:
    """
    The settings of a team server on a new database, upgraded with
    C{gophergem db upgrade}; at the end, no file store was written.
    """
    key_file = tmp_path / "db.key"
    key_file.write_text(os.urandom(32).hex() + "\n")
    env = {
        **file_settings(tmp_path),
        "GOPHERGEM_DATABASE_URL": fresh_database(postgres_harness),
        "GOPHERGEM_DATABASE_KEY_FILE": str(key_file),
    }
    assert main(["db", "upgrade"], env) == 0
    yield env
    for name in ("tofu.json", "identities", "feeds.json"):
        assert not (tmp_path / name).exists(), f"{name} was written on a team server"


def run(
    argv: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    status = main(argv, env)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- trust ---------------------------------------------------------------------------------


def test_trust_pin_list_remove(team: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """A pin made with trust pin is in the database: trust list shows it, remove removes it."""
    assert run(["trust", "list"], team, capsys)[:2] == (0, "No pins.\n")
    status, out, _ = run(["trust", "pin", "capsule.example", FP], team, capsys)
    assert status == 0 and FP in out
    status, out, _ = run(["trust", "list", "--json"], team, capsys)
    (entry,) = json.loads(out)["entries"]
    assert (entry["host"], entry["port"], entry["fingerprint"]) == ("capsule.example", 1965, FP)
    status, _, err = run(["trust", "pin", "capsule.example", OTHER], team, capsys)
    assert status == 1 and "PIN_EXISTS" in one_line(err)
    status, _, _ = run(["trust", "remove", "capsule.example", FP], team, capsys)
    assert status == 0
    assert run(["trust", "list"], team, capsys)[:2] == (0, "No pins.\n")


def test_trust_pin_as_a_process(team: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m gophergem trust pin` writes the shared pin the in-process list then reads."""
    env = {**os.environ, **team}
    env.pop("GOPHERGEM_LOG_FILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "gophergem", "trust", "pin", "capsule.example", FP],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"Pinned capsule.example:1965 to {FP}.\n"
    status, out, _ = run(["trust", "list", "capsule.example"], team, capsys)
    assert status == 0 and FP in out


def test_trust_principal_only_with_pins_per_principal(
    team: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """
    Pins are shared: trust --principal is a usage error (2).  With
    GOPHERGEM_PINS_PER_PRINCIPAL each principal has pins of their own.
    """
    status, out, err = run(["trust", "list", "--principal", "token:alice"], team, capsys)
    assert status == 2 and out == ""
    assert "GOPHERGEM_PINS_PER_PRINCIPAL" in one_line(err)
    apart = {**team, "GOPHERGEM_PINS_PER_PRINCIPAL": "true"}
    alice, bob = ["--principal", "token:alice"], ["--principal", "token:bob"]
    assert run(["trust", "pin", "capsule.example", FP, *alice], apart, capsys)[0] == 0
    assert FP in run(["trust", "list", *alice], apart, capsys)[1]
    assert run(["trust", "list", *bob], apart, capsys)[1] == "No pins.\n"
    assert run(["trust", "list"], apart, capsys)[1] == "No pins.\n"


def test_trust_import_into_the_database(
    team: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """trust import on a team server puts gopher-mcp's pins into PostgreSQL, once."""
    source = tmp_path / "tofu-source.json"
    fingerprint = "ab" * 32
    source.write_text(
        json.dumps({"gem.example:1965": {"fingerprint": fingerprint, "first_seen": 1.0}})
    )
    status, out, err = run(["trust", "import", str(source)], team, capsys)
    assert status == 0, err
    assert "1 imported" in out
    status, out, _ = run(["trust", "list"], team, capsys)
    assert status == 0 and "gem.example" in out
    status, out, _ = run(["trust", "import", str(source)], team, capsys)
    assert status == 0 and "0 imported, 1 skipped" in out


# --- identity ------------------------------------------------------------------------------


def test_identities_belong_to_their_principal(
    team: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """An identity created for token:alice is listed for her only, and she can remove it."""
    alice, bob = ["--principal", "token:alice"], ["--principal", "token:bob"]
    status, out, _ = run(["identity", "create", CAPSULE, "--json", *alice], team, capsys)
    assert status == 0
    entry = json.loads(out)["entry"]
    status, out, _ = run(["identity", "list", *alice], team, capsys)
    assert status == 0 and CAPSULE in out and entry["fingerprint"] in out
    assert run(["identity", "list", *bob], team, capsys)[:2] == (0, "No identities.\n")
    assert run(["identity", "list"], team, capsys)[:2] == (0, "No identities.\n")
    status, _, err = run(["identity", "remove", CAPSULE, entry["fingerprint"], *bob], team, capsys)
    assert status == 1 and one_line(err)
    status, _, _ = run(["identity", "remove", CAPSULE, entry["fingerprint"], *alice], team, capsys)
    assert status == 0
    assert run(["identity", "list", *alice], team, capsys)[1] == "No identities.\n"


def test_identity_needs_the_database_key(
    team: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without GOPHERGEM_DATABASE_KEY_FILE identities are refused (2, one line); pins are not."""
    keyless = {k: v for k, v in team.items() if k != "GOPHERGEM_DATABASE_KEY_FILE"}
    status, out, err = run(["identity", "list"], keyless, capsys)
    assert status == 2 and out == ""
    assert "GOPHERGEM_DATABASE_KEY_FILE" in one_line(err)
    assert run(["trust", "list"], keyless, capsys)[0] == 0


def test_empty_principal(team: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """--principal with an empty name is a usage error, one line."""
    status, _, err = run(["identity", "list", "--principal", " "], team, capsys)
    assert status == 2 and "--principal" in one_line(err)


# --- feeds ---------------------------------------------------------------------------------


class _MenuHandler(socketserver.StreamRequestHandler):
    """Answer any selector with a small Gopher menu."""

    def handle(self) -> None:
        self.rfile.readline()
        port = self.server.server_address[1]
        self.wfile.write(
            b"iA test hole\tfake\t(NULL)\t0\r\n"
            + f"0First post\t/first.txt\t127.0.0.1\t{port}\r\n".encode()
            + b".\r\n"
        )


@pytest.fixture
def hole() -> Iterator[str]:
    """The URL of a Gopher menu served on 127.0.0.1 (a thread of this process)."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _MenuHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"gopher://127.0.0.1:{server.server_address[1]}/1/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_subscriptions_belong_to_their_principal(
    team: dict[str, str], hole: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    feeds subscribe/list/export/unsubscribe/import act on the principal's
    own subscriptions in the database; nobody else sees them.
    """
    team = {**team, "GOPHER_ALLOW_LOCAL_HOSTS": "true", "GOPHER_RESPECT_ROBOTS_TXT": "false"}
    alice, bob = ["--principal", "token:alice"], ["--principal", "token:bob"]
    status, out, err = run(["feeds", "subscribe", hole, *alice], team, capsys)
    assert status == 0, err
    assert out.startswith(f"Subscribed to {hole}: ")
    status, out, _ = run(["feeds", "list", "--json", *alice], team, capsys)
    assert [e["url"] for e in json.loads(out)["entries"]] == [hole]
    assert run(["feeds", "list", *bob], team, capsys)[1] == "No subscriptions.\n"
    assert run(["feeds", "list"], team, capsys)[1] == "No subscriptions.\n"
    status, out, _ = run(["feeds", "export", *alice], team, capsys)
    assert [o.url for o in parse_opml(out.encode())] == [hole]
    status, _, err = run(["feeds", "unsubscribe", hole, *bob], team, capsys)
    assert status == 1 and "NOT_SUBSCRIBED" in one_line(err)
    assert run(["feeds", "unsubscribe", hole, *alice], team, capsys)[0] == 0
    assert run(["feeds", "list", *alice], team, capsys)[1] == "No subscriptions.\n"
    opml = tmp_path / "list.opml"
    opml.write_text(f'<opml version="2.0"><body><outline text="t" xmlUrl="{hole}"/></body></opml>')
    status, out, _ = run(["feeds", "import", str(opml), *bob], team, capsys)
    assert status == 0 and "1 subscribed" in out
    assert hole in run(["feeds", "list", *bob], team, capsys)[1]
    assert run(["feeds", "list", *alice], team, capsys)[1] == "No subscriptions.\n"


# --- the database cannot be used -----------------------------------------------------------


def test_schema_behind(
    postgres_harness: PostgresHarness, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database without the schema: one line pointing at gophergem db upgrade, status 1."""
    env = {**file_settings(tmp_path), "GOPHERGEM_DATABASE_URL": fresh_database(postgres_harness)}
    for argv in (["trust", "list"], ["feeds", "list"]):
        status, out, err = run(argv, env, capsys)
        assert status == 1 and out == ""
        assert "gophergem db upgrade" in one_line(err)


@pytest.mark.parametrize(
    "argv", [["trust", "list"], ["identity", "list", "--principal", "token:alice"]]
)
def test_unreachable_database(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    A database nothing answers for: status 1, one STATE_UNAVAILABLE line,
    nothing on standard output, never the URL's password.
    """
    key_file = tmp_path / "db.key"
    key_file.write_text("00" * 32)
    env = {
        **file_settings(tmp_path),
        "GOPHERGEM_DATABASE_URL": f"postgresql://gg:{SECRET}@127.0.0.1:1/postgres",
        "GOPHERGEM_DATABASE_KEY_FILE": str(key_file),
        "GOPHERGEM_STATE_TIMEOUT_SECONDS": "0.5",
    }
    status, out, err = run(argv, env, capsys)
    assert status == 1 and out == ""
    line = one_line(err)
    assert "STATE_UNAVAILABLE" in line and SECRET not in line


def test_unreachable_database_as_a_process(tmp_path: Path) -> None:
    """The same through `python -m gophergem feeds list`: one line, no password."""
    env = {
        **os.environ,
        **file_settings(tmp_path),
        "GOPHERGEM_DATABASE_URL": f"postgresql://gg:{SECRET}@127.0.0.1:1/postgres",
        "GOPHERGEM_STATE_TIMEOUT_SECONDS": "0.5",
    }
    env.pop("GOPHERGEM_LOG_FILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "gophergem", "feeds", "list", "--principal", "token:alice"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1 and done.stdout == ""
    line = one_line(done.stderr)
    assert "STATE_UNAVAILABLE" in line and SECRET not in line


# --- the file stores, per principal --------------------------------------------------------


def test_files_per_principal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a database, --principal uses that principal's own files."""
    env = file_settings(tmp_path)
    alice = ["--principal", "https://idp.example#alice"]
    assert run(["identity", "create", CAPSULE, *alice], env, capsys)[0] == 0
    assert CAPSULE in run(["identity", "list", *alice], env, capsys)[1]
    assert run(["identity", "list"], env, capsys)[1] == "No identities.\n"
    bob = ["--principal", "token:bob"]
    assert run(["identity", "list", *bob], env, capsys)[1] == "No identities.\n"
    assert run(["feeds", "list", *alice], env, capsys)[1] == "No subscriptions.\n"
