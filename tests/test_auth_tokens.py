"""
Tests for L{gophergem.auth.tokens}: the token file, its operations, its
parser, and the daemon's reading of it (L{TokenFile}).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.logger import LogEvent, formatEvent, globalLogPublisher

from gophergem.auth import tokens
from gophergem.auth.tokens import (
    TokenFile,
    TokenFileDamaged,
    add_token,
    check_name,
    hash_token,
    issue_token,
    list_tokens,
    parse_token_document,
    remove_token,
)
from gophergem.errors import FeedStoreUnavailable, InvalidRequest


@pytest.fixture
def logged() -> Any:
    """Every log event emitted during the test, formatted."""
    events: list[LogEvent] = []
    globalLogPublisher.addObserver(events.append)
    yield events
    globalLogPublisher.removeObserver(events.append)


def errors(events: list[LogEvent]) -> list[str]:
    return [
        formatEvent(e)
        for e in events
        if e.get("log_namespace") == "gophergem.auth" and e["log_level"].name == "error"
    ]


# --- the operations --------------------------------------------------------------------------


def test_add_stores_only_a_hash(tmp_path: Path) -> None:
    """add_token returns a 256-bit URL-safe token and stores its SHA-256, never the token."""
    path = tmp_path / "tokens.json"
    token = add_token(path, "alice", now=1000.0)
    assert len(token) == 43  # token_urlsafe(32): 32 bytes, base64 without padding
    text = path.read_text()
    assert token not in text
    document = json.loads(text)
    assert document["format"] == "gophergem-auth-tokens"
    assert document["entries"] == {"alice": {"sha256": hash_token(token), "created": 1000.0}}


def test_file_is_private(tmp_path: Path) -> None:
    """The token file is written with mode 0600 and a new directory with 0700."""
    path = tmp_path / "new" / "tokens.json"
    add_token(path, "alice")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_tokens_differ(tmp_path: Path) -> None:
    """Every token made is new."""
    path = tmp_path / "tokens.json"
    assert len({add_token(path, f"user{i}") for i in range(20)}) == 20


def test_rotation(tmp_path: Path) -> None:
    """Adding a name that has a token replaces it, and says so; the old token stops working."""
    path = tmp_path / "tokens.json"
    first = issue_token(path, "alice", now=1.0)
    second = issue_token(path, "alice", now=2.0)
    assert (first.replaced, second.replaced) == (False, True)
    assert list_tokens(path) == [("alice", 2.0)]
    reader = TokenFile(path)
    assert reader.principal_for(first.token) is None
    assert reader.principal_for(second.token) == "alice"


def test_issued_token_repr_hides_the_token(tmp_path: Path) -> None:
    """An IssuedToken's repr does not show the token."""
    issued = issue_token(tmp_path / "tokens.json", "alice")
    assert issued.token not in repr(issued)


def test_remove(tmp_path: Path) -> None:
    """remove_token drops a name and says whether it had a token; others stay."""
    path = tmp_path / "tokens.json"
    alice = add_token(path, "alice", now=1.0)
    bob = add_token(path, "bob", now=2.0)
    assert remove_token(path, "alice") is True
    assert remove_token(path, "alice") is False
    assert list_tokens(path) == [("bob", 2.0)]
    reader = TokenFile(path)
    assert reader.principal_for(alice) is None
    assert reader.principal_for(bob) == "bob"


def test_list_is_sorted_and_empty_without_file(tmp_path: Path) -> None:
    """list_tokens gives names and times by name; no file is an empty list."""
    path = tmp_path / "tokens.json"
    assert list_tokens(path) == []
    add_token(path, "zed", now=1.0)
    add_token(path, "amy", now=2.0)
    assert list_tokens(path) == [("amy", 2.0), ("zed", 1.0)]


@pytest.mark.parametrize("name", ["a", "x" * 64, "ci-bot@example.org", "A.b_c-1"])
def test_good_names(name: str) -> None:
    """Names of 1-64 letters, digits, '.', '_', '@' and '-' are accepted."""
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "x" * 65, "a b", "a/b", "é", "a\n", "a:b", "a\x00"])
def test_bad_names(name: str, tmp_path: Path) -> None:
    """Other names are refused with INVALID_REQUEST, and nothing is written."""
    path = tmp_path / "tokens.json"
    with pytest.raises(InvalidRequest):
        add_token(path, name)
    with pytest.raises(InvalidRequest):
        remove_token(path, name)
    assert not path.exists()


def test_damaged_file_refused_by_the_operations(tmp_path: Path) -> None:
    """
    A damaged file makes every operation fail with STATE_UNAVAILABLE naming
    it, and is left as it is: a team's tokens are never set aside or
    overwritten by an add, a remove or a list.
    """
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    for operation in (
        lambda: add_token(path, "alice"),
        lambda: remove_token(path, "alice"),
        lambda: list_tokens(path),
    ):
        with pytest.raises(FeedStoreUnavailable) as caught:
            operation()
        assert caught.value.path == str(path)
        assert path.read_text() == "{not json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_foreign_file_left_alone(tmp_path: Path) -> None:
    """A JSON file that is not a token file is refused and left untouched."""
    path = tmp_path / "tokens.json"
    path.write_text('{"some": "thing"}')
    with pytest.raises(FeedStoreUnavailable):
        add_token(path, "alice")
    assert path.read_text() == '{"some": "thing"}'


# --- the parser ------------------------------------------------------------------------------


def document(entries: Any, **extra: Any) -> bytes:
    return json.dumps(
        {"format": "gophergem-auth-tokens", "version": 1, "entries": entries, **extra}
    ).encode()


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xff",
        b"[]",
        b"null",
        b'{"format": "other", "version": 1, "entries": {}}',
        b'{"format": "gophergem-auth-tokens", "version": 2, "entries": {}}',
        b'{"format": "gophergem-auth-tokens", "version": true, "entries": {}}',
        b'{"format": "gophergem-auth-tokens", "version": 1, "entries": []}',
        document({"bad name": {"sha256": "0" * 64, "created": 1}}),
        document({"a": {"sha256": "0" * 63, "created": 1}}),
        document({"a": {"sha256": "A" * 64, "created": 1}}),
        document({"a": {"sha256": "0" * 64, "created": "now"}}),
        document({"a": {"sha256": "0" * 64, "created": True}}),
        document({"a": {"sha256": "0" * 64}}),
        document({"a": "0" * 64}),
        b'{"format": "gophergem-auth-tokens", "version": 1, "entries": '
        b'{"a": {"sha256": "' + b"0" * 64 + b'", "created": NaN}}}',
        b"[" * 100000,
    ],
)
def test_damaged_documents(raw: bytes) -> None:
    """Anything but a valid version-1 token file raises TokenFileDamaged, with one line."""
    with pytest.raises(TokenFileDamaged) as info:
        parse_token_document(raw)
    assert "\n" not in str(info.value)


def test_valid_document() -> None:
    """A valid document gives every entry, by name."""
    parsed = parse_token_document(document({"a": {"sha256": "0" * 64, "created": 5}}))
    assert parsed == {"a": tokens.TokenEntry("a", "0" * 64, 5.0)}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_parser_any_bytes(raw: bytes) -> None:
    """No bytes make the parser raise anything but TokenFileDamaged."""
    with contextlib.suppress(TokenFileDamaged):
        parse_token_document(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=70), inner),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(entries=st.dictionaries(st.text(max_size=70), json_values, max_size=4))
def test_parser_any_entries(entries: dict[str, Any]) -> None:
    """Any entries object parses whole or raises TokenFileDamaged: nothing is half-read."""
    try:
        parsed = parse_token_document(document(entries))
    except TokenFileDamaged:
        return
    assert set(parsed) == set(entries)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_name_check_any_text(name: str) -> None:
    """Any text is a valid name or raises InvalidRequest."""
    with contextlib.suppress(InvalidRequest):
        check_name(name)


# --- the daemon's reader ---------------------------------------------------------------------


def test_reader_finds_each_principal(tmp_path: Path) -> None:
    """A stored token gives its principal; any other string gives None."""
    path = tmp_path / "tokens.json"
    alice, bob = add_token(path, "alice"), add_token(path, "bob")
    reader = TokenFile(path)
    assert reader.principal_for(alice) == "alice"
    assert reader.principal_for(bob) == "bob"
    assert reader.principal_for(alice + "x") is None
    assert reader.principal_for("") is None
    assert reader.usable


def test_reader_compares_every_hash_in_constant_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every stored hash is compared with hmac.compare_digest, even after a match."""
    path = tmp_path / "tokens.json"
    token = add_token(path, "a")
    add_token(path, "b")
    add_token(path, "c")
    reader = TokenFile(path)
    reader.reload()
    compared: list[tuple[str, str]] = []
    real = tokens.hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    assert reader.principal_for(token) == "a"
    assert len(compared) == 3
    assert all(a == hash_token(token) for a, _ in compared)


def test_reader_reloads_on_change(tmp_path: Path) -> None:
    """A token added or removed by another process counts at the next call."""
    path = tmp_path / "tokens.json"
    alice = add_token(path, "alice")
    reader = TokenFile(path)
    assert reader.principal_for(alice) == "alice"
    bob = add_token(path, "bob")
    assert reader.principal_for(bob) == "bob"
    remove_token(path, "alice")
    assert reader.principal_for(alice) is None


def test_reader_missing_file_refuses_all(tmp_path: Path, logged: list[LogEvent]) -> None:
    """A missing file refuses every token, logged once at error, until it appears."""
    path = tmp_path / "tokens.json"
    reader = TokenFile(path)
    assert reader.principal_for("anything") is None
    assert reader.principal_for("anything") is None
    assert len(errors(logged)) == 1
    assert not reader.usable
    token = add_token(path, "alice")
    assert reader.principal_for(token) == "alice"


def test_reader_damaged_file_refuses_all(tmp_path: Path, logged: list[LogEvent]) -> None:
    """
    A damaged file refuses every token (even ones valid before), logs one
    error line without the token, stays where it is, and counts again once fixed.
    """
    path = tmp_path / "tokens.json"
    token = add_token(path, "alice")
    good = path.read_bytes()
    reader = TokenFile(path)
    assert reader.principal_for(token) == "alice"
    path.write_bytes(good[:-20])
    for _ in range(3):
        assert reader.principal_for(token) is None
    lines = errors(logged)
    assert len(lines) == 1
    assert token not in lines[0]
    assert "damaged" in lines[0]
    assert path.read_bytes() == good[:-20]  # the daemon never moves it aside
    path.write_bytes(good)
    os.utime(path, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    assert reader.principal_for(token) == "alice"


def test_reload_reads_now(tmp_path: Path) -> None:
    """reload reads the file even when its stat looks the same."""
    path = tmp_path / "tokens.json"
    token = add_token(path, "alice")
    reader = TokenFile(path)
    reader.reload()
    assert reader.usable
    assert reader.principal_for(token) == "alice"


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> TokenFile:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    add_token(path, "alice")
    return TokenFile(path)


@settings(max_examples=300, deadline=None)
@given(token=st.text(max_size=200))
def test_reader_never_raises(reader: TokenFile, token: str) -> None:
    """Any presented string, lone surrogates included, gives a name or None."""
    assert reader.principal_for(token) in (None, "alice")
