"""
Tests for the console script's commands that need no network, run in this
process.  Logging is not started here (it is process-wide); the commands
that need a reactor are run as processes in
C{tests/integration/test_cli_process.py}.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gophergem import cli
from gophergem.cli import _runner, main, render
from gophergem.cli import trust as trust_command
from gophergem.config import SETTINGS
from gophergem.state.files import FileIdentityStore, FilePinStore
from gophergem.testing import EPOCH
from gophergem.trust import Pin

FP = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


@pytest.fixture(autouse=True)
def no_global_logging(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Record start_logging calls instead of starting process-wide logging."""
    import gophergem._log

    calls: list[tuple[str, str | None]] = []

    def start_logging(level: str = "INFO", path: str | None = None) -> None:
        calls.append((level, path))
        if path:
            gophergem._log.open_log_file(path).close()

    monkeypatch.setattr(gophergem._log, "start_logging", start_logging)
    return calls


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, str]:
    """An environment naming pin and identity stores under C{tmp_path}."""
    return {
        "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
        "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "identities"),
        "HOME": str(tmp_path),
    }


def a_pin(fingerprint: str = FP, port: int = 1965) -> Pin:
    return Pin(
        host="capsule.example",
        port=port,
        fingerprint=fingerprint,
        spki="sha256:" + "ee" * 32,
        first_seen=EPOCH - 100,
        last_seen=EPOCH - 10,
        not_before=EPOCH - 1000,
        expires=EPOCH + 1000,
    )


def test_trust_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """trust import copies gopher-mcp pins into the configured store and reports them."""
    source = tmp_path / "tofu.json"
    fingerprint = "ab" * 32
    source.write_text(
        json.dumps(
            {
                "example.org:1965": {
                    "fingerprint": fingerprint,
                    "first_seen": 1700000000,
                    "last_seen": 1700000000,
                }
            }
        )
    )
    store_path = tmp_path / "pins.json"
    status = main(
        ["trust", "import", str(source)],
        environ={"GEMINI_TOFU_STORAGE_PATH": str(store_path), "HOME": str(tmp_path)},
    )
    out = capsys.readouterr().out
    assert status == 0, out
    pins = FilePinStore(str(store_path)).all()
    assert [(p.host, p.port) for p in pins] == [("example.org", 1965)]
    assert "1 imported" in out


def test_trust_import_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """
    A file that is not a gopher-mcp pin file is one clear line on stderr, exit 2
    (a usage error: the wrong file was named).
    """
    source = tmp_path / "tofu.json"
    source.write_text("not json")
    status = main(
        ["trust", "import", str(source)],
        environ={"GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "pins.json")},
    )
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.startswith("gophergem: ") and captured.out == ""


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"kind": "input", "prompt": "Name?", "sensitive": False}, "input wanted: Name?"),
        ({"kind": "error", "error": {"code": "TIMEOUT", "message": "slow"}}, "error TIMEOUT: slow"),
        (
            {"kind": "redirect", "new_url": "gemini://x/", "permanent": True},
            "redirect (permanent): gemini://x/",
        ),
    ],
)
def test_render(data: dict, expected: str) -> None:
    """The terminal rendering names each kind plainly."""
    assert render(data).startswith(expected)


# --- settings anywhere, usage errors -----------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--gopher-allow-local-hosts", "true", "fetch", "gopher://x/"],
        ["fetch", "--gopher-allow-local-hosts", "true", "gopher://x/"],
        ["fetch", "gopher://x/", "--gopher-allow-local-hosts", "true"],
        ["trust", "list", "--gopher-allow-local-hosts", "true"],
        ["trust", "--gopher-allow-local-hosts", "true", "list"],
        ["identity", "list", "--gopher-allow-local-hosts", "true"],
        ["serve", "--gopher-allow-local-hosts", "true"],
        ["--gopher-allow-local-hosts", "true"],
    ],
)
def test_settings_anywhere(argv: list[str]) -> None:
    """A setting is understood before or after the command, and its value is not the URL."""
    args = cli._parser().parse_args(argv)
    assert cli._config(args, {}).gopher.allow_local_hosts is True
    if args.command == "fetch":
        assert args.url == "gopher://x/"


def test_setting_before_command_survives() -> None:
    """A setting given before the command is not reset by the command's defaults."""
    args = cli._parser().parse_args(["--gopher-timeout-seconds", "7", "fetch", "gopher://x/"])
    assert cli._config(args, {}).gopher.timeout_seconds == 7


def test_option_wins_over_environment() -> None:
    """An option wins over its environment variable, wherever it is written."""
    args = cli._parser().parse_args(["fetch", "gopher://x/", "--gopher-timeout-seconds", "7"])
    config = cli._config(args, {"GOPHER_TIMEOUT_SECONDS": "3", "GEMINI_TIMEOUT_SECONDS": "4"})
    assert (config.gopher.timeout_seconds, config.gemini.timeout_seconds) == (7, 4)


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["fetch"],
        ["serve"],
        ["trust", "list"],
        ["trust", "pin"],
        ["trust", "remove"],
        ["trust", "import"],
        ["identity", "create"],
    ],
)
def test_every_help_lists_the_settings(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command's --help lists every setting, with its variable."""
    assert main([*command, "--help"], environ={}) == 0
    out = capsys.readouterr().out
    for setting in SETTINGS:
        assert f"--{setting.option}" in out and setting.variable in out


@pytest.mark.parametrize(
    "argv",
    [
        ["fetch"],
        ["--no-such-option"],
        ["fetch", "gopher://x/", "--offset", "many"],
        ["trust"],
        ["trust", "pin", "capsule.example"],
        ["frobnicate"],
        ["fetch", "gopher://x/", "--gopher-timeout-seconds", "-1"],
        ["serve", "--transport", "smoke"],
        ["serve", "--allowed-host", "http://evil.example/"],
    ],
)
def test_usage_error_is_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A usage error is one line on stderr naming it, exit status 2."""
    assert main(argv, environ={}) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert captured.err.startswith("gophergem")


def test_unwritable_log_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log file that cannot be written is one line naming it, exit status 2."""
    path = str(tmp_path / "missing" / "gophergem.log")
    status = main(["trust", "list"], environ={"GOPHERGEM_LOG_FILE": path})
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert path in err and "GOPHERGEM_LOG_FILE" in err


def test_log_file_error_from_start_logging(tmp_path: Path) -> None:
    """start_logging refuses an unwritable file with LogFileError, before logging starts."""
    from gophergem._log import LogFileError, start_logging

    with pytest.raises(LogFileError, match="cannot write"):
        start_logging("INFO", str(tmp_path))  # a directory


# --- trust and identity commands ---------------------------------------------------------


def run(
    argv: list[str], environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    status = main(argv, environ=environ)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_trust_list(stores: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """trust list shows each pin readably, or as the trust tool's JSON with --json."""
    assert run(["trust", "list"], stores, capsys)[:2] == (0, "No pins.\n")
    FilePinStore(stores["GEMINI_TOFU_STORAGE_PATH"]).put(a_pin())
    status, out, _ = run(["trust", "list"], stores, capsys)
    assert status == 0 and "capsule.example:1965" in out and FP in out
    status, out, _ = run(["trust", "list", "--json", "CAPSULE.example"], stores, capsys)
    (entry,) = json.loads(out)["entries"]
    assert entry["fingerprint"] == FP and entry["expired"] is False
    status, out, _ = run(["trust", "list", "--json", "other.example"], stores, capsys)
    assert json.loads(out) == {"kind": "trust_list", "entries": []}


def test_trust_remove_needs_the_pinned_fingerprint(
    stores: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """trust remove with another fingerprint is refused (1); with the pinned one it removes."""
    store = FilePinStore(stores["GEMINI_TOFU_STORAGE_PATH"])
    store.put(a_pin())
    status, out, err = run(["trust", "remove", "capsule.example", OTHER], stores, capsys)
    assert status == 1 and "FINGERPRINT_MISMATCH" in err and out == ""
    assert store.all() == [a_pin()]
    status, out, _ = run(["trust", "remove", "capsule.example", FP, "--json"], stores, capsys)
    assert status == 0 and json.loads(out)["action"] == "remove"
    assert store.all() == []


def test_trust_pin_unpinned_host(
    stores: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """trust pin on a host with no pin pins it; again with the same fingerprint is fine."""
    argv = ["trust", "pin", "capsule.example", OTHER.upper(), "--port", "1966"]
    for _ in range(2):
        status, out, _ = run(argv, stores, capsys)
        assert status == 0 and OTHER in out
    (pin,) = FilePinStore(stores["GEMINI_TOFU_STORAGE_PATH"]).all()
    assert (pin.host, pin.port, pin.fingerprint) == ("capsule.example", 1966, OTHER)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_trust_pin_over_pin_refused_without_consent(
    stores: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    json_flag: list[str],
) -> None:
    """With no terminal to ask and no --replace, pin over a pin is PIN_EXISTS (1); kept."""
    monkeypatch.setattr(trust_command, "_terminal_yes", lambda question: None)
    store = FilePinStore(stores["GEMINI_TOFU_STORAGE_PATH"])
    store.put(a_pin())
    status, out, err = run(["trust", "pin", "capsule.example", OTHER, *json_flag], stores, capsys)
    assert status == 1
    shown = json.loads(out)["error"] if json_flag else {"message": err, "next_step": err}
    assert FP in shown["message"] and "--replace" in shown["next_step"]
    assert f"gophergem trust remove capsule.example {FP}" in shown["next_step"]
    assert store.all() == [a_pin()]


def test_trust_pin_replace_flag(stores: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """--replace is the user's explicit consent: the pin is replaced."""
    store = FilePinStore(stores["GEMINI_TOFU_STORAGE_PATH"])
    store.put(a_pin())
    status, _, _ = run(["trust", "pin", "capsule.example", OTHER, "--replace"], stores, capsys)
    assert status == 0 and store.get("capsule.example", 1965).fingerprint == OTHER


@pytest.mark.parametrize(("answer", "replaced"), [(True, True), (False, False)])
def test_trust_pin_asks_at_a_terminal(
    stores: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: bool,
    replaced: bool,
) -> None:
    """At a terminal the person is asked, shown both fingerprints; only yes replaces."""
    questions: list[str] = []

    def ask(question: str) -> bool:
        questions.append(question)
        return answer

    monkeypatch.setattr(trust_command, "_terminal_yes", ask)
    store = FilePinStore(stores["GEMINI_TOFU_STORAGE_PATH"])
    store.put(a_pin())
    status, _, _ = run(["trust", "pin", "capsule.example", OTHER], stores, capsys)
    (question,) = questions
    assert FP in question and OTHER in question
    assert status == (0 if replaced else 1)
    assert store.get("capsule.example", 1965).fingerprint == (OTHER if replaced else FP)


def test_terminal_yes_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a terminal nobody is asked, and that is not a yes."""
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert trust_command._terminal_yes("Replace?") is None


@pytest.mark.parametrize(
    "argv",
    [
        ["trust", "pin", "*.example", FP],
        ["trust", "pin", "capsule.example", "junk"],
        ["trust", "remove", "capsule.example", FP, "--port", "0"],
        ["identity", "create", "http://capsule.example/"],
    ],
)
def test_trust_bad_arguments_are_usage_errors(
    argv: list[str], stores: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Wildcards, junk fingerprints, bad ports and URLs are usage errors (2), one line."""
    status, out, err = run(argv, stores, capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "INVALID_REQUEST" in err


def test_trust_with_tofu_off(stores: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """With TOFU switched off the trust commands say so (1)."""
    status, _, err = run(["trust", "list", "--gemini-tofu-enabled", "false"], stores, capsys)
    assert status == 1 and "TOFU_DISABLED" in err


def test_identity_lifecycle(stores: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """identity create, a second create (refused), list, remove by fingerprint."""
    url = "gemini://capsule.example/app/"
    status, out, _ = run(["identity", "create", url, "--json"], stores, capsys)
    assert status == 0
    entry = json.loads(out)["entry"]
    assert entry["url"] == url and "key" not in json.dumps(entry)
    status, _, err = run(["identity", "create", url], stores, capsys)
    assert status == 1 and "CERTIFICATE_EXISTS" in err
    status, out, _ = run(["identity", "list"], stores, capsys)
    assert url in out and entry["fingerprint"] in out
    status, _, err = run(["identity", "remove", url, FP], stores, capsys)
    assert status == 1 and "FINGERPRINT_MISMATCH" in err
    status, out, _ = run(["identity", "remove", url, entry["fingerprint"]], stores, capsys)
    assert status == 0 and entry["fingerprint"] in out
    assert FileIdentityStore(stores["GEMINI_CLIENT_CERTS_STORAGE_PATH"]).all() == []


# --- the readable rendering --------------------------------------------------------------


def test_render_error_keeps_every_field() -> None:
    """An error shows its status, the capsule's meta (as theirs) and when to retry."""
    shown = render(
        {
            "kind": "error",
            "request_info": {"url": "gemini://x/"},
            "error": {
                "code": "SLOW_DOWN",
                "message": "Slow down.",
                "status": 44,
                "meta": "patience, friend",
                "retry_after_seconds": 60.0,
                "next_step": "Wait.",
            },
        }
    )
    assert "SLOW_DOWN" in shown and "44" in shown
    assert "the server said: patience, friend" in shown
    assert "try again in 60 s" in shown and "next: Wait." in shown


def test_render_notes() -> None:
    """The size-cap and incomplete notes and TLS warnings are shown, not dropped."""
    shown = render(
        {
            "kind": "text",
            "request_info": {"url": "gopher://x/0/a"},
            "text": "body",
            "size_capped": True,
            "incomplete": True,
            "incomplete_reason": "connection_reset",
            "note": "The server sent more than the configured size cap. The connection broke.",
            "next_offset": 4,
        }
    )
    assert "body" in shown and "size cap" in shown and "connection broke" in shown
    assert "incomplete (connection_reset)" in shown and "--offset 4" in shown
    gemini = render(
        {
            "kind": "success",
            "request_info": {"url": "gemini://x/", "tofu_warning": "first visit"},
            "content": "hi",
        }
    )
    assert "warning: first visit" in gemini


@pytest.mark.parametrize(
    ("address", "said"),
    [
        (("TCP", "127.0.0.1", 8000), "serving MCP at http://127.0.0.1:8000/mcp (and /health)"),
        (("TCP6", "::1", 8443), "serving MCP at http://[::1]:8443/mcp (and /health)"),
        (("UNIX", b"/run/gg.sock"), "serving MCP over HTTP at /mcp on the socket /run/gg.sock"),
    ],
)
def test_serve_says_where_it_listens(address: tuple[Any, ...], said: str) -> None:
    """serve names the URL of /mcp (IPv6 bracketed), or the socket it listens on."""
    from twisted.internet.address import IPv4Address, IPv6Address, UNIXAddress

    made = {"TCP": IPv4Address, "TCP6": lambda *a: IPv6Address("TCP", *a[1:])}
    host = UNIXAddress(address[1]) if address[0] == "UNIX" else made[address[0]](*address)

    class Port:
        def getHost(self) -> Any:
            return host

    assert _runner._listening_at(Port()) == said


# --- --format: the readable rendering or the JSON one, whatever stdout is ---------------


@pytest.mark.parametrize(
    "argv",
    [
        ["trust", "list"],
        ["identity", "list"],
        ["feeds", "list"],
    ],
)
def test_format_json_and_readable(
    argv: list[str], stores: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command with both renderings takes --format json|readable; --json still works."""
    environ = {**stores, "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json")}
    outputs = {}
    for flags in (["--format", "json"], ["--json"], ["--format", "readable"], []):
        assert main([*argv, *flags], environ=environ) == 0
        outputs[" ".join(flags)] = capsys.readouterr().out
    assert json.loads(outputs["--format json"]) == json.loads(outputs["--json"])
    assert outputs["--format readable"] == outputs[""]
    assert not outputs[""].startswith("{")


def test_format_json_and_json_agree_or_refuse(capsys: pytest.CaptureFixture[str]) -> None:
    """--json with --format readable is a usage error, one line."""
    assert main(["trust", "list", "--json", "--format", "readable"], environ={}) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize(
    ("flags", "tty", "as_json"),
    [
        ([], True, False),
        ([], False, True),  # piped: JSON for programs, as before
        (["--json"], True, True),
        (["--format", "json"], True, True),
        (["--format", "readable"], False, False),
        (["--format", "readable"], True, False),
    ],
)
def test_fetch_format(
    flags: list[str], tty: bool, as_json: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fetch: readable at a terminal, JSON when piped, unless --format (or --json) says."""
    monkeypatch.setattr(_runner.sys.stdout, "isatty", lambda: tty)
    args = cli._parser().parse_args(["fetch", *flags, "gopher://example.org/"])
    assert _runner._wants_json(args) is as_json


def test_render_input_links() -> None:
    """A Spartan =: link is printed with its own marker."""
    data = {
        "kind": "gemtext",
        "document": {
            "lines": [
                {
                    "type": "link",
                    "content": "=: /s Search",
                    "link": {"url": "spartan://h/s", "text": "Search", "takes_input": True},
                },
                {
                    "type": "link",
                    "content": "=> /a A",
                    "link": {"url": "spartan://h/a", "text": "A"},
                },
            ]
        },
    }
    assert render(data).splitlines()[:2] == ["=: Search  <spartan://h/s>", "=> A  <spartan://h/a>"]
