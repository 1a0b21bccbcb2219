# -*- test-case-name: tests.test_auth_tokens -*-
"""
The token file: bearer tokens for a small team, without an identity provider.

One JSON document (C{GOPHERGEM_AUTH_TOKENS_FILE}) maps each principal's
name to the SHA-256 of its token and the time it was made::

    {"format": "gophergem-auth-tokens", "version": 1,
     "entries": {"alice": {"sha256": "<64 hex>", "created": 1764720000.0}}}

The token itself is never stored: L{add_token} makes a new 256-bit token,
keeps its hash and hands the token back once.  Changes go through the same
file machinery as the other stores (L{DocumentFile}: a lock file beside it,
atomic replacement, mode 0600).

The daemon only reads the file (L{TokenFile}); it needs no write access to
it or its directory.  A reader sees either the old document or the new one,
since every change replaces the file whole.  A file that is missing,
unreadable or damaged refuses every token, with one line logged at error,
until it is fixed: the daemon never moves it aside or starts it afresh.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from twisted.logger import Logger

from gophergem.errors import FeedStoreUnavailable, InvalidRequest
from gophergem.state.documents import LOCK_TIMEOUT, DocumentFile

__all__ = [
    "FORMAT",
    "NAME_PATTERN",
    "IssuedToken",
    "TokenEntry",
    "TokenFile",
    "TokenFileDamaged",
    "add_token",
    "check_name",
    "hash_token",
    "issue_token",
    "list_tokens",
    "parse_token_document",
    "remove_token",
]

FORMAT = "gophergem-auth-tokens"
"""The C{format} marker of a token file."""

_VERSION = 1
_NOUN = "token file"
_FOREIGN = "Point GOPHERGEM_AUTH_TOKENS_FILE at a new file and add tokens with gophergem token add."

NAME_PATTERN = re.compile(r"[A-Za-z0-9._@-]{1,64}")
"""A principal's name: 1 to 64 of letters, digits, C{.}, C{_}, C{@} and C{-}."""

_HEX = re.compile(r"[0-9a-f]{64}")

log = Logger(namespace="gophergem.auth")


class TokenFileDamaged(ValueError):
    """
    A token file's content cannot be used; the message says why, in one
    line, and never quotes the file.
    """


@attrs.frozen
class TokenEntry:
    """
    One principal of the token file.

    @ivar name: The principal (see L{NAME_PATTERN}).
    @ivar sha256: The lower-case hex SHA-256 of its token.
    @ivar created: When the token was made, in seconds since the epoch.
    """

    name: str
    sha256: str
    created: float


@attrs.frozen
class IssuedToken:
    """
    A token just made by L{issue_token}.

    @ivar token: The bearer token; it is not stored and cannot be shown again.
    @ivar replaced: Whether the principal had a token before (now invalid).
    """

    name: str
    token: str = attrs.field(repr=False)
    replaced: bool


def check_name(name: str) -> str:
    """
    Return C{name} if it can name a principal.

    @raise InvalidRequest: When it cannot (see L{NAME_PATTERN}).
    """
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise InvalidRequest(
            message="A token name is 1 to 64 letters, digits, '.', '_', '@' or '-'.",
            next_step="Choose a name such as alice or ci-bot@example.org.",
        )
    return name


def hash_token(token: str) -> str:
    """The lower-case hex SHA-256 of C{token}'s UTF-8 (any string, lone surrogates too)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _entry(name: object, value: object) -> TokenEntry:
    """One entry of the document, checked; C{ValueError} saying what is wrong."""
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise ValueError("an entry has an invalid name")
    if not isinstance(value, dict):
        raise ValueError(f"the entry of {name} is not an object")
    digest, created = value.get("sha256"), value.get("created")
    if not isinstance(digest, str) or _HEX.fullmatch(digest) is None:
        raise ValueError(f"the entry of {name} has no valid sha256")
    if (
        isinstance(created, bool)
        or not isinstance(created, int | float)
        or not math.isfinite(created)
    ):
        raise ValueError(f"the entry of {name} has no valid created time")
    return TokenEntry(name, digest, float(created))


def _entries(entries: Mapping[str, Any]) -> dict[str, TokenEntry]:
    return {name: _entry(name, value) for name, value in entries.items()}


def parse_token_document(raw: bytes) -> dict[str, TokenEntry]:
    """
    Read a token file's bytes into its entries, by name.

    @raise TokenFileDamaged: For anything but a version-1 token file whose
        entries are all valid (nothing is half-read).
    """
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TokenFileDamaged("it is not JSON") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TokenFileDamaged("it is not a gophergem token file")
    version = document.get("version")
    if type(version) is not int or not 1 <= version <= _VERSION:
        raise TokenFileDamaged("it has an unknown format version")
    entries = document.get("entries")
    if not isinstance(entries, dict):
        raise TokenFileDamaged("it has no entries object")
    try:
        return _entries(entries)
    except ValueError as e:
        raise TokenFileDamaged(str(e)) from None


def _check(entries: dict[str, Any]) -> None:
    _entries(entries)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _document(path: str | os.PathLike[str]) -> DocumentFile:
    return DocumentFile(
        Path(path),
        kind=FORMAT,
        noun=_NOUN,
        check=_check,
        lock_timeout=LOCK_TIMEOUT,
        error=FeedStoreUnavailable,
        foreign_next_step=_FOREIGN,
    )


def issue_token(
    path: str | os.PathLike[str], name: str, *, now: float | None = None
) -> IssuedToken:
    """
    Make a new 256-bit token for C{name} and store its hash; a name that
    has a token already gets a new one (rotation: the old one stops working).

    @raise InvalidRequest: For a bad name.
    @raise FeedStoreUnavailable: When the file cannot be locked, read or
        written (C{STATE_UNAVAILABLE}).
    """
    check_name(name)
    token = secrets.token_urlsafe(32)
    created = time.time() if now is None else now

    def change(entries: dict[str, Any]) -> bool:
        replaced = name in entries
        entries[name] = {"sha256": hash_token(token), "created": created}
        return replaced

    return IssuedToken(name, token, _document(path).update(change))


def add_token(path: str | os.PathLike[str], name: str, *, now: float | None = None) -> str:
    """The token L{issue_token} makes for C{name} (replacing any it had)."""
    return issue_token(path, name, now=now).token


def remove_token(path: str | os.PathLike[str], name: str) -> bool:
    """
    Remove C{name}'s token; return whether it had one.

    @raise InvalidRequest: For a bad name.
    @raise FeedStoreUnavailable: When the file cannot be locked, read or written.
    """
    check_name(name)
    return bool(_document(path).update(lambda entries: entries.pop(name, None) is not None))


def list_tokens(path: str | os.PathLike[str]) -> list[tuple[str, float]]:
    """
    The principals and when their tokens were made, by name (never a hash).

    @raise FeedStoreUnavailable: When the file cannot be locked or read.
    """
    entries = _document(path).view(_entries)
    return [(entry.name, entry.created) for _, entry in sorted(entries.items())]


@attrs.define
class TokenFile:
    """
    The daemon's view of a token file: which principal, if any, a presented
    token belongs to.

    Each L{principal_for} looks at the file's C{stat} and reads it again when
    its size, modification time or inode changed; L{reload} reads it now
    (the daemon calls it on C{SIGHUP}).  While the file is missing,
    unreadable or damaged every token is refused; that is logged once at
    error, without the token, until the file changes.

    @ivar path: The token file.
    """

    path: Path = attrs.field(converter=Path)
    _entries: tuple[TokenEntry, ...] = attrs.field(default=(), init=False)
    _signature: tuple[int, int, int] | None = attrs.field(default=None, init=False)
    _problem: str | None = attrs.field(default=None, init=False)
    _loaded: bool = attrs.field(default=False, init=False)

    @property
    def usable(self) -> bool:
        """Whether the last read gave a valid token file (else every token is refused)."""
        return self._loaded and self._problem is None

    def principal_for(self, token: str) -> str | None:
        """
        The name of the principal whose token C{token} is, or C{None}.

        The presented token's hash is compared with every stored hash in
        constant time (C{hmac.compare_digest}), all of them every time.
        Never raises.
        """
        try:
            self._refresh()
            presented = hash_token(token)
        except Exception:  # never let a request fail with a 500
            log.failure("Checking a bearer token failed; it is refused")
            return None
        found: str | None = None
        for entry in self._entries:
            if hmac.compare_digest(presented, entry.sha256) and found is None:
                found = entry.name
        return found

    def reload(self) -> None:
        """Read the file now, whether or not it seems to have changed."""
        self._signature = None
        self._loaded = False
        self._refresh()

    def _refresh(self) -> None:
        try:
            info = os.stat(self.path)
        except OSError as e:
            self._fail(None, f"cannot be read ({os.strerror(e.errno) if e.errno else e})")
            return
        signature = (info.st_mtime_ns, info.st_size, info.st_ino)
        if self._loaded and signature == self._signature:
            return
        try:
            raw = self.path.read_bytes()
            entries = parse_token_document(raw)
        except OSError as e:
            self._fail(signature, f"cannot be read ({os.strerror(e.errno) if e.errno else e})")
            return
        except TokenFileDamaged as e:
            self._fail(signature, f"is damaged: {e}")
            return
        self._entries = tuple(entries[name] for name in sorted(entries))
        self._signature = signature
        if self._problem is not None or not self._loaded:
            log.info(
                "Token file {path}: {count} principal(s)",
                path=str(self.path),
                count=len(self._entries),
            )
        self._problem = None
        self._loaded = True

    def _fail(self, signature: tuple[int, int, int] | None, problem: str) -> None:
        self._entries = ()
        self._signature = signature
        if problem != self._problem:
            log.error(
                "The token file {path} {problem}; every bearer token is refused until it is fixed",
                path=str(self.path),
                problem=problem,
            )
        self._problem = problem
        self._loaded = signature is not None
