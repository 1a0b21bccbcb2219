"""
Tests for C{gophergem db}: C{upgrade} applies the schema once and prints
what it did, C{status} says whether the schema is behind, and a database
that cannot be reached, or no database setting, is one line and a non-zero
exit status, never a traceback and never the URL's password.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gophergem.cli import main
from tests.helpers.state import SECRET, fresh_database
from tests.servers.postgres import PostgresHarness


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process-wide logging is started by the in-process runs."""
    import gophergem._log

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)


def test_upgrade_then_status(
    postgres_harness: PostgresHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    On a new database, status lists the pending migration (exit 1), upgrade
    applies it (one line each), then both say "up to date" (exit 0).
    """
    env = {"GOPHERGEM_DATABASE_URL": fresh_database(postgres_harness)}
    assert main(["db", "status"], env) == 1
    assert capsys.readouterr().out == "pending 0001_initial\n"
    assert main(["db", "upgrade"], env) == 0
    assert capsys.readouterr().out == "applied 0001_initial\n"
    assert main(["db", "upgrade"], env) == 0
    assert capsys.readouterr().out == "up to date\n"
    assert main(["db", "status"], env) == 0
    assert capsys.readouterr().out == "up to date\n"


def test_no_database_setting(capsys: pytest.CaptureFixture[str]) -> None:
    """Without GOPHERGEM_DATABASE_URL the command is a usage error (exit 2), one line."""
    assert main(["db", "upgrade"], {}) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GOPHERGEM_DATABASE_URL" in err


def test_action_required(capsys: pytest.CaptureFixture[str]) -> None:
    """`gophergem db` needs an action."""
    assert main(["db"], {}) == 2


def test_unreachable_database() -> None:
    """
    A server nothing listens for: exit status 1 after about the timeout, one
    line on standard error naming STATE_UNAVAILABLE, no password, nothing on
    standard output.
    """
    env = {
        **os.environ,
        "GOPHERGEM_DATABASE_URL": f"postgresql://gg:{SECRET}@127.0.0.1:1/postgres",
        "GOPHERGEM_STATE_TIMEOUT_SECONDS": "0.5",
    }
    env.pop("GOPHERGEM_LOG_FILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "gophergem", "db", "upgrade"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "STATE_UNAVAILABLE" in done.stderr
    assert SECRET not in done.stderr
