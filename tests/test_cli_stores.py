"""
The CLI's read-only store commands never move, rename or create anything
(issue 21, item 8); C{trust remove} of an unpinned host and the exit
statuses of C{trust import} (item 17).

Each read command runs on a store file holding a README or bytes that are
not text: it exits 1 with one line on standard error naming the file and
what is wrong, and the directory (the file's bytes and mtime, no lock file,
no copy) is as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gophergem.cli import main
from gophergem.state.files import FilePinStore
from gophergem.state.paths import gopher_mcp_pin_paths
from tests.helpers.trust import a_pin

README = b"# gophergem\n\nReads Gopherspace and Geminispace for AI assistants.\n"
GARBAGE = bytes(range(256))
OLD = 1_600_000_000_000_000_000
FP = "sha256:" + "ab" * 32


@pytest.fixture(autouse=True)
def no_global_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process-wide logging is started by the commands run here."""
    import gophergem._log

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)


def snapshot(directory: Path) -> dict[str, tuple[bytes | None, int]]:
    out = {}
    for entry in sorted(directory.rglob("*")):
        info = entry.lstat()
        out[str(entry.relative_to(directory))] = (
            entry.read_bytes() if entry.is_file() else None,
            info.st_mtime_ns,
        )
    return out


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "store" / "tofu.json"),
        "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "store"),
        "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "store" / "feeds.json"),
        "GOPHERGEM_AUTH_TOKENS_FILE": str(tmp_path / "store" / "tokens.json"),
    }


#: Each read command and the file it reads, under store/.
READS = {
    "trust list": (["trust", "list"], "tofu.json"),
    "trust list --json": (["trust", "list", "--json"], "tofu.json"),
    "trust list HOST": (["trust", "list", "gem.example"], "tofu.json"),
    "identity list": (["identity", "list"], "identities.json"),
    "token list": (["token", "list"], "tokens.json"),
    "feeds list": (["feeds", "list"], "feeds.json"),
    "feeds export": (["feeds", "export"], "feeds.json"),
}


@pytest.mark.parametrize("content", [README, GARBAGE], ids=["readme", "garbage"])
@pytest.mark.parametrize("command", sorted(READS))
def test_read_command_changes_nothing(
    command: str, content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    A read command on a file that is not a valid store: exit 1, the file
    named in the one line (or in the JSON), and the directory untouched.
    """
    argv, name = READS[command]
    store = tmp_path / "store"
    store.mkdir()
    path = store / name
    path.write_bytes(content)
    os.utime(path, ns=(OLD, OLD))
    before = snapshot(tmp_path)
    assert main(argv, environment(tmp_path)) == 1
    out, err = capsys.readouterr()
    if "--json" in argv:
        error = json.loads(out)["error"]
        assert error["path"] == str(path) and "not JSON" in error["message"]
    else:
        (line,) = err.splitlines()
        assert str(path) in line and "not JSON" in line
        assert "Traceback" not in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", sorted(READS))
def test_read_command_on_missing_store_creates_nothing(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read of a store that does not exist is empty and creates no file or directory."""
    argv, _ = READS[command]
    assert main(argv, environment(tmp_path)) == 0
    assert list(tmp_path.iterdir()) == []


def test_trust_remove_unpinned_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """
    trust remove of a host with no pin says it is not pinned (status 1), not
    that a fingerprint does not match; the JSON keeps the specified code.
    """
    env = environment(tmp_path)
    FilePinStore(env["GEMINI_TOFU_STORAGE_PATH"]).put(a_pin())
    assert main(["trust", "remove", "gem.example", FP], env) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "gophergem: gem.example:1965 is not pinned: there is no pin to remove, "
        "and nothing was changed.\n"
    )
    assert main(["trust", "remove", "gem.example", FP, "--port", "1966", "--json"], env) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "FINGERPRINT_MISMATCH"
    assert error["message"].startswith("gem.example:1966 is not pinned")
    assert FilePinStore(env["GEMINI_TOFU_STORAGE_PATH"]).all() == [a_pin()]


def test_trust_import_missing_file_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Naming a file that does not exist is a usage error: one line, status 2."""
    missing = tmp_path / "nowhere" / "tofu.json"
    assert main(["trust", "import", str(missing)], environment(tmp_path)) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert str(missing) in line and "No such file" in line
    assert not (tmp_path / "store").exists()


def test_trust_import_none_found_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No PATH and no gopher-mcp file in its usual places: one line, status 2."""
    env = environment(tmp_path)
    assert not any(Path(p).exists() for p in gopher_mcp_pin_paths(env))
    assert main(["trust", "import"], env) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "no gopher-mcp tofu.json found" in line


@pytest.mark.parametrize(
    "content",
    [README, b"[1, 2]", b'{"a:1965": {"fingerprint": "nope"}}', b""],
    ids=["readme", "json-list", "no-usable-entry", "empty"],
)
def test_trust_import_invalid_file_is_usage_error(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that is not a gopher-mcp pin file is a usage error too (status 2)."""
    source = tmp_path / "tofu.json"
    source.write_bytes(content)
    assert main(["trust", "import", str(source)], environment(tmp_path)) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gophergem: trust import: {source}: ")
    assert not (tmp_path / "store").exists()


def test_trust_import_into_damaged_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    A good file into a pin store that is not valid: status 1 (the store, not
    the argument, is wrong), the store named and left as it is.
    """
    env = environment(tmp_path)
    source = tmp_path / "gopher-mcp.json"
    source.write_text(json.dumps({"gem.example:1965": {"fingerprint": "ab" * 32}}))
    store = tmp_path / "store"
    store.mkdir()
    pins = store / "tofu.json"
    pins.write_bytes(README)
    assert main(["trust", "import", str(source)], env) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gophergem: {pins}: CERTIFICATE_STORE_UNAVAILABLE: ")
    assert pins.read_bytes() == README
    assert sorted(p.name for p in store.iterdir()) == ["tofu.json", "tofu.json.lock"]
