"""
Tests for the console script's commands that need no network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gophergem.cli import main, render
from gophergem.trust.pins import FilePinStore


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
    """A file that is not a gopher-mcp pin file is one clear line on stderr, exit 1."""
    source = tmp_path / "tofu.json"
    source.write_text("not json")
    status = main(
        ["trust", "import", str(source)],
        environ={"GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "pins.json")},
    )
    captured = capsys.readouterr()
    assert status == 1
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
