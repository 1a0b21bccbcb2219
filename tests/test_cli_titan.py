"""
Tests for L{gophergem.cli.titan}, C{gophergem titan upload}: every refusal
that comes before anything is dialled (off by default, over the cap, no
terminal and no C{--yes}, a no at the prompt, unreadable files), each one
line on standard error and never a traceback.  The upload itself runs
against a real Titan server in C{tests/integration/test_titan_acceptance.py}.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gophergem.cli import main

URL = "titan://capsule.example/notes/a.gmi"


@pytest.fixture(autouse=True)
def no_global_logging_nor_dialling(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process-wide logging; and no test here may get as far as sending."""
    import gophergem._log
    import gophergem.cli.titan

    def refuse(*args: Any) -> int:
        raise AssertionError("this test must not send anything")

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *args: None)
    monkeypatch.setattr(gophergem.cli.titan, "_send", refuse)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
        "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "certs"),
        "TITAN_ALLOWED_HOSTS": "capsule.example",
    }


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.gmi"
    path.write_bytes(b"# Hello\n")
    return path


def run(
    capsys: pytest.CaptureFixture[str], argv: list[str], environ: dict[str, str]
) -> tuple[int, str, str]:
    status = main(["titan", "upload", *argv], environ)
    out, err = capsys.readouterr()
    return status, out, err


class Terminal:
    """Standard input as a terminal where the person types C{answer}."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked = False

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        self.asked = True
        if self.answer is None:
            return ""
        return self.answer + "\n"


def at_terminal(monkeypatch: pytest.MonkeyPatch, answer: str | None) -> Terminal:
    terminal = Terminal(answer)
    monkeypatch.setattr("sys.stdin", terminal)
    return terminal


def one_line(err: str, code: str) -> None:
    assert err.startswith(f"gophergem: {code}: "), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_off_by_default(capsys: Any, env: dict[str, str], page: Path) -> None:
    """Without TITAN_ALLOWED_HOSTS: BLOCKED, naming the setting; nobody is asked."""
    del env["TITAN_ALLOWED_HOSTS"]
    status, out, err = run(capsys, ["--yes", URL, str(page)], env)
    assert (status, out) == (1, "")
    one_line(err, "BLOCKED")
    assert "TITAN_ALLOWED_HOSTS" in err


def test_over_the_cap(capsys: Any, env: dict[str, str], page: Path) -> None:
    """Over TITAN_MAX_UPLOAD_BYTES: BLOCKED before anything else."""
    env["TITAN_MAX_UPLOAD_BYTES"] = "3"
    status, _, err = run(capsys, ["--yes", URL, str(page)], env)
    assert status == 1
    one_line(err, "BLOCKED")
    assert "TITAN_MAX_UPLOAD_BYTES" in err


def test_no_terminal_no_yes_refused(
    capsys: Any, env: dict[str, str], page: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consent is never implied: no terminal and no --yes is CONSENT_UNAVAILABLE."""
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    status, out, err = run(capsys, [URL, str(page)], env)
    assert (status, out) == (1, "")
    one_line(err, "CONSENT_UNAVAILABLE")
    assert "--yes" in err


@pytest.mark.parametrize("answer", ["", "n", "no", "nope", "yes please", None])
def test_anything_but_yes_declines(
    capsys: Any,
    env: dict[str, str],
    page: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: str | None,
) -> None:
    """The person is shown the facts; only y or yes goes on, anything else declines."""
    terminal = at_terminal(monkeypatch, answer)
    status, out, err = run(capsys, ["--mime", "text/plain", URL, str(page)], env)
    assert terminal.asked and (status, out) == (1, "")
    assert "Upload 8 bytes to the Titan server capsule.example?" in err
    for fact in ("Path: /notes/a.gmi", "Size: 8 bytes", "Type: text/plain", "Token: none"):
        assert fact in err
    assert err.splitlines()[-1].endswith(
        "gophergem: USER_DECLINED: you declined the upload; nothing was sent."
    )


def test_empty_file_is_asked_as_a_delete(
    capsys: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty file is a delete, and the question says so."""
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    at_terminal(monkeypatch, "n")
    _, _, err = run(capsys, [URL, str(empty)], env)
    assert "DELETE the page /notes/a.gmi on the Titan server capsule.example?" in err


def test_token_file_is_read_and_never_shown(
    capsys: Any, env: dict[str, str], page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--token-file's first line is the token: the question says one is sent, never which."""
    token = tmp_path / "token"
    token.write_text("hunter2\nignored\n")
    at_terminal(monkeypatch, "n")
    _, _, err = run(capsys, ["--token-file", str(token), URL, str(page)], env)
    assert "Token: sent" in err and "hunter2" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--yes", URL, "/nonexistent/page.gmi"],
        ["--yes", "--token-file", "/nonexistent/token", URL, "PAGE"],
    ],
)
def test_unreadable_files_one_line(
    capsys: Any, env: dict[str, str], page: Path, argv: list[str]
) -> None:
    """A file that cannot be read: one line naming it, status 2."""
    argv = [str(page) if a == "PAGE" else a for a in argv]
    status, _, err = run(capsys, argv, env)
    assert status == 2 and err.startswith("gophergem: cannot read /nonexistent/")
    assert len(err.splitlines()) == 1


def test_ask_token_needs_a_terminal(
    capsys: Any, env: dict[str, str], page: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--ask-token off a terminal is a usage error, not a hang."""
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    status, _, err = run(capsys, ["--ask-token", "--yes", URL, str(page)], env)
    assert status == 2 and "--ask-token needs a terminal" in err


def test_not_a_titan_url_is_a_usage_error(capsys: Any, env: dict[str, str], page: Path) -> None:
    """A gemini:// URL (or any other) is INVALID_REQUEST, status 2."""
    status, _, err = run(capsys, ["--yes", "gemini://capsule.example/", str(page)], env)
    assert status == 2
    one_line(err, "INVALID_REQUEST")


def test_token_is_no_option(capsys: Any, env: dict[str, str], page: Path) -> None:
    """There is no --token: a token on the command line would stay in the shell's history."""
    status, _, err = run(capsys, ["--token", "x", "--yes", URL, str(page)], env)
    assert status == 2 and "--token" in err
