"""Tests for L{gophergem.state.keys}: the shared key files of replicas."""

from __future__ import annotations

from pathlib import Path

import pytest

from gophergem.errors import InvalidRequest
from gophergem.state.keys import read_key_ring

KEY_A = "a" * 43
KEY_B = "b" * 32


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "keys"
    path.write_text(text)
    return str(path)


def test_keys_in_order_comments_and_blanks_skipped(tmp_path: Path) -> None:
    """Every key, first one first; comments and blank lines are not keys."""
    path = _file(tmp_path, f"# new key first\n{KEY_A}\n\n  {KEY_B}  \n")
    assert read_key_ring(path) == [KEY_A, KEY_B]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "holds no key"),
        ("# only a comment\n", "holds no key"),
        ("short\n", "line 1: a key needs at least 32"),
        (f"{KEY_A}\n{KEY_A}\n", "line 2: the same key twice"),
    ],
)
def test_bad_files_are_refused_in_one_line(tmp_path: Path, text: str, said: str) -> None:
    """A file without usable keys is refused, naming the line but never a key."""
    with pytest.raises(InvalidRequest) as info:
        read_key_ring(_file(tmp_path, text))
    assert said in info.value.message
    assert "\n" not in info.value.message
    assert KEY_A not in info.value.message


def test_missing_or_binary_file(tmp_path: Path) -> None:
    """A file that cannot be read as text is refused too."""
    with pytest.raises(InvalidRequest, match="cannot read the key file"):
        read_key_ring(str(tmp_path / "absent"))
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe" * 40)
    with pytest.raises(InvalidRequest, match="not UTF-8"):
        read_key_ring(str(binary))
