# -*- test-case-name: tests.test_state_files -*-
"""
The embedded state of one machine: L{FileState}, the file stores per
principal, and the stores themselves (L{FilePinStore}, L{FileIdentityStore},
L{FileFeedStore}).

A daemon with authentication serves several people.  Their client
identities and their subscriptions (with what they have read) are theirs
alone, so each principal gets stores of their own; certificate pins describe
hosts, not people, and are shared unless C{GOPHERGEM_PINS_PER_PRINCIPAL}
says otherwise.  The principal C{None} is the machine's own user (stdio, or
a daemon without authentication): its stores are the files gophergem has
always used, so nothing moves when authentication is switched on.

A principal's stores sit beside the owner's, in a directory named by a hash
of the principal (the text is an issuer URL and a subject, which is no file
name), holding a C{PRINCIPAL} file that says whose they are::

    tofu.json                      the owner's (and everyone's shared) pins
    client_certs/                  the owner's identities
    client_certs.principals/
        3f0c…/PRINCIPAL            "https://idp.example#alice"
        3f0c…/client_certs/        Alice's identities
    feeds.json.principals/3f0c…/feeds.json

L{gophergem.state.postgres.PostgresState} offers the same methods over one
database shared by every replica.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
from twisted.internet.defer import Deferred, succeed
from zope.interface import implementer

from gophergem.config import Config
from gophergem.interfaces import IFeedStore, IIdentityStore, IPinStore, IStateBackend
from gophergem.state.files.feeds import FileFeedStore
from gophergem.state.files.identities import FileIdentityStore
from gophergem.state.files.pins import FilePinStore
from gophergem.state.paths import feed_store_path, identity_store_dir, pin_store_path

__all__ = [
    "PRINCIPAL_FILE",
    "FileFeedStore",
    "FileIdentityStore",
    "FilePinStore",
    "FileState",
    "principal_key",
]

PRINCIPAL_FILE = "PRINCIPAL"
"""The file in a principal's directory that holds the principal's text."""


def principal_key(principal: str) -> str:
    """The directory name of C{principal}: 32 hex digits of its SHA-256."""
    return hashlib.sha256(principal.encode("utf-8")).hexdigest()[:32]


def _beside(path: Path, principal: str | None) -> Path:
    """Where the store at C{path} lives for C{principal} (C{None}: C{path})."""
    if principal is None:
        return path
    return path.parent / f"{path.name}.principals" / principal_key(principal) / path.name


def _claim(path: Path, principal: str) -> None:
    """Write the C{PRINCIPAL} file of the directory holding C{path}'s store."""
    home = path.parent
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    marker = home / PRINCIPAL_FILE
    if not marker.exists():
        temporary = home / f".{PRINCIPAL_FILE}.{os.getpid()}"
        temporary.write_text(principal, encoding="utf-8")
        os.replace(temporary, marker)


@implementer(IStateBackend)
@attrs.define
class FileState:
    """
    The file stores of every principal on this machine.

    Stores are made on first use and kept, one per principal and kind, so
    that a principal's calls share one store object.

    @ivar pins_path: The shared pin file.
    @ivar identities_dir: The owner's identity directory.
    @ivar feeds_path: The owner's subscription file.
    @ivar pins_per_principal: Give each principal pins of their own.
    @ivar tofu_enabled: Whether pins are kept at all.
    @ivar identities_enabled: Whether client identities are kept at all.
    """

    pins_path: Path
    identities_dir: Path
    feeds_path: Path
    pins_per_principal: bool = False
    tofu_enabled: bool = True
    identities_enabled: bool = True
    _stores: dict[tuple[Path, str | None], Any] = attrs.field(factory=dict, init=False)

    @classmethod
    def from_config(cls, config: Config, environ: Mapping[str, str] | None = None) -> FileState:
        """The stores at the places C{config} (and C{environ}'s data directory) name."""
        environ = os.environ if environ is None else environ
        gemini = config.gemini
        return cls(
            Path(pin_store_path(gemini.tofu_storage_path, environ)),
            Path(identity_store_dir(gemini.client_certs_storage_path, environ)),
            Path(feed_store_path(config.feeds.storage_path, environ)),
            pins_per_principal=config.state.pins_per_principal,
            tofu_enabled=gemini.tofu_enabled,
            identities_enabled=gemini.client_certs_enabled,
        )

    def _store(self, base: Path, principal: str | None, make: Callable[..., Any]) -> Any:
        """
        The store at C{base} for C{principal}, made on first use.  A
        principal's home is claimed (made, with its C{PRINCIPAL} file) by the
        store's first change, never by a read: reading creates nothing.
        """
        store = self._stores.get((base, principal))
        if store is None:
            path = _beside(base, principal)
            prepare = None if principal is None else functools.partial(_claim, path, principal)
            store = self._stores[base, principal] = make(str(path), prepare=prepare)
        return store

    def pins(self, principal: str | None = None) -> IPinStore | None:
        """
        The pin store C{principal} uses: the shared one unless pins are kept
        per principal; C{None} when trust on first use is off.
        """
        if not self.tofu_enabled:
            return None
        owner = principal if self.pins_per_principal else None
        store: FilePinStore = self._store(self.pins_path, owner, FilePinStore)
        return store

    def identities(self, principal: str | None) -> IIdentityStore | None:
        """C{principal}'s identity store, or C{None} when identities are off."""
        if not self.identities_enabled:
            return None
        store: FileIdentityStore = self._store(self.identities_dir, principal, FileIdentityStore)
        return store

    def feeds(self, principal: str | None) -> IFeedStore:
        """C{principal}'s subscription store."""
        store: FileFeedStore = self._store(self.feeds_path, principal, FileFeedStore)
        return store

    def feed_principals(self) -> Deferred[list[str | None]]:
        """
        Every principal that has a subscription store: the owner (C{None})
        first, then the others in the order of their directory names.
        """
        found: list[str | None] = [None]
        root = self.feeds_path.parent / f"{self.feeds_path.name}.principals"
        try:
            homes = sorted(root.iterdir())
        except OSError:
            homes = []
        for home in homes:
            try:
                principal = (home / PRINCIPAL_FILE).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if principal_key(principal) == home.name and (home / self.feeds_path.name).exists():
                found.append(principal)
        return succeed(found)

    def health(self) -> Deferred[dict[str, object]]:
        """Files are always there to be tried: C{{"ok": True}}."""
        return succeed({"ok": True, "detail": "files"})

    def close(self) -> Deferred[None]:
        """Nothing to close."""
        return succeed(None)
