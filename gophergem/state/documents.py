# -*- test-case-name: tests.test_state_pins -*-
"""
The file machinery under the file stores: one JSON document in one file,
shared safely by several processes and surviving crashes.

  - Every change takes an exclusive C{flock} on a sibling lock file
    (C{<file>.lock}), re-reads the document under the lock, applies the
    change, writes a temporary file in the same directory, C{fsync}s it,
    C{os.replace}s it over the old one and C{fsync}s the directory.  A change
    made by another process is never lost, and a crash leaves either the old
    document or the new one, never a torn one.
  - A read takes no lock and creates, moves and changes nothing (no lock
    file, no directory): since every change replaces the file whole, a
    reader sees either the document before a change or the one after it.
    A store that does not exist yet reads as empty.
  - A lock that cannot be taken within L{LOCK_TIMEOUT} seconds (polled with
    C{LOCK_NB}, a bounded number of times) raises the store's error
    (L{CertificateStoreUnavailable} unless the store names another).
  - A file that is not a valid store (not JSON, not an object, a JSON file
    gophergem did not write, a newer format, a malformed entry, a
    directory, an unreadable file) is refused by reads and changes alike and
    left exactly as it is: the error says what is wrong, and carries the
    file's path in L{GophergemError.path} for a person at a terminal.  It is
    never moved aside or overwritten: a damaged pin store that quietly
    started afresh would re-arm blind trust for every host, and a damaged
    token file would lock out the whole team.

The path of a store goes to the log and to C{error.path}, never into an
error message (a message may reach a model; the path is the operator's).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import attrs
from twisted.logger import Logger

from gophergem.errors import CertificateStoreUnavailable, GophergemError

__all__ = [
    "LOCK_POLL_INTERVAL",
    "LOCK_TIMEOUT",
    "DocumentFile",
    "fsync_directory",
    "write_atomically",
]

_fcntl: ModuleType | None
if sys.platform == "win32":  # pragma: no cover - POSIX only
    _fcntl = None
else:
    import fcntl as _fcntl

_T = TypeVar("_T")

_IMPORT_PINS = (
    "Point the setting at a new file; pins from gopher-mcp can be "
    "imported with `gophergem trust import PATH`."
)

_REPAIR = (
    "Repair the file, or move it away so that gophergem starts an empty store "
    "in its place; nothing else will touch it."
)

#: How long a store call waits for another process's lock, in seconds.  Store
#: calls are synchronous (a pin decision is made inside a TLS callback), so
#: this bounds how long a wedged peer can stall us.
LOCK_TIMEOUT = 3.0

#: Seconds between two attempts at a contended lock.
LOCK_POLL_INTERVAL = 0.05

log = Logger(namespace="gophergem.trust")


def fsync_directory(directory: Path) -> None:
    """Flush a directory's entries (a rename in it) to stable storage."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as e:  # pragma: no cover - file systems without directory fsync
        if e.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """
    Replace C{path} with C{data} (mode 0600): temporary file in the same
    directory, C{fsync}, C{os.replace}, C{fsync} of the directory.

    @raise OSError: When any step fails; C{path} is then untouched and the
        temporary file is gone.
    """
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(stream.fileno(), 0o600)
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(path.parent)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _canonical(entries: dict[str, Any]) -> str:
    return json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@attrs.define
class DocumentFile:
    """
    One versioned JSON document in one file::

        {"format": KIND, "version": VERSION, "entries": {...}}

    @ivar path: The document's file; its lock is C{<path>.lock} beside it.
    @ivar kind: The C{format} marker that says the file is ours.
    @ivar noun: What the store is, for messages ("certificate pin store").
    @ivar check: Validates the entries after parsing; raising C{ValueError},
        C{TypeError} or C{KeyError} marks the document damaged (refused).
    @ivar version: The format version written; a newer one is refused.
    @ivar private_directory: Keep the parent directory at mode 0700 even when
        it already existed (the identity store's own directory).
    @ivar lock_timeout: Seconds to wait for a contended lock.
    @ivar poll_interval: Seconds between two attempts at it.
    @ivar error: The error every failure raises (its class, built with the
        message, C{next_step} and C{temporary} fields).
    @ivar foreign_next_step: The advice given when the file is valid JSON
        that gophergem did not write.
    @ivar prepare: Called before the first change makes the directory, if
        given (a principal's store writes whose it is); reads never call it.
    """

    path: Path = attrs.field(converter=Path)
    kind: str
    noun: str
    check: Callable[[dict[str, Any]], None] = lambda entries: None
    version: int = 1
    private_directory: bool = False
    lock_timeout: float = LOCK_TIMEOUT
    poll_interval: float = LOCK_POLL_INTERVAL
    error: type[GophergemError] = CertificateStoreUnavailable
    foreign_next_step: str = _IMPORT_PINS
    prepare: Callable[[], None] | None = None
    _swept: bool = attrs.field(default=False, init=False)

    @property
    def lock_path(self) -> Path:
        """The sibling file that carries the C{flock}."""
        return self.path.with_name(self.path.name + ".lock")

    def read(self) -> dict[str, Any]:
        """Return the current entries (empty when there is no file yet)."""
        return self.view(lambda entries: entries)

    def view(self, inspect: Callable[[dict[str, Any]], _T]) -> _T:
        """
        Call C{inspect} with the current entries and return what it returns.

        Nothing is locked, created or moved: the document read is the last
        one a change completed.  Files named by the entries may be removed
        by another process meanwhile; a caller reading them
        (L{read_beside}) checks again when one is gone.
        """
        return inspect(self._load())

    def update(self, change: Callable[[dict[str, Any]], _T]) -> _T:
        """
        Call C{change} with the current entries under the exclusive lock; if
        it altered them, write them back durably before the lock is released.
        If C{change} raises, nothing is written.  A file that is not a valid
        store is refused, untouched.
        """
        self._ensure_directory()
        with self._locked():
            entries = self._load()
            if not self._swept:
                self._sweep_temporaries()
            before = _canonical(entries)
            result = change(entries)
            if _canonical(entries) != before:
                self._write(entries)
            return result

    def write_beside(self, name: str, data: bytes) -> None:
        """
        Durably write a file (mode 0600) next to the document, for a change
        in progress; call only from inside L{update}.
        """
        try:
            write_atomically(self.path.parent / name, data)
        except OSError as e:
            log.error(
                "Could not write {file} of the {noun}: {error}",
                file=str(self.path.parent / name),
                noun=self.noun,
                error=os.strerror(e.errno) if e.errno else str(e),
            )
            raise self._unavailable("could not be written", path=self.path.parent / name) from e

    def read_beside(self, name: str) -> bytes:
        """
        Read a file next to the document; call from inside L{view}.

        @raise FileNotFoundError: When it is not there (another process may
            just have removed it with its entry).
        """
        try:
            return (self.path.parent / name).read_bytes()
        except FileNotFoundError:
            raise
        except OSError as e:
            log.error(
                "Could not read {file} of the {noun}: {error}",
                file=str(self.path.parent / name),
                noun=self.noun,
                error=os.strerror(e.errno) if e.errno else str(e),
            )
            raise self._unavailable("could not be read", path=self.path.parent / name) from e

    # -- locking ----------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if _fcntl is None:  # pragma: no cover - POSIX only
            log.error("File stores need POSIX file locks; {noun} unusable", noun=self.noun)
            raise self._unavailable("cannot be locked on this platform")
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            log.error(
                "Could not open the lock {path} of the {noun}: {error}",
                path=str(self.lock_path),
                noun=self.noun,
                error=os.strerror(e.errno) if e.errno else str(e),
            )
            raise self._unavailable("could not be locked", path=self.lock_path) from e
        try:
            operation = _fcntl.LOCK_EX | _fcntl.LOCK_NB
            attempts = 1
            if self.lock_timeout > 0 and self.poll_interval > 0:
                attempts += math.ceil(self.lock_timeout / self.poll_interval)
            for attempt in range(attempts):
                try:
                    _fcntl.flock(fd, operation)
                    break
                except BlockingIOError:
                    if attempt == attempts - 1:
                        log.warn(
                            "The {noun} at {path} stayed locked for {seconds}s",
                            noun=self.noun,
                            path=str(self.path),
                            seconds=self.lock_timeout,
                        )
                        raise self._unavailable(
                            "is locked by another process",
                            temporary=True,
                            next_step="Try again in a moment; if it persists, another "
                            "gophergem process sharing the store may be stuck.",
                        ) from None
                    time.sleep(self.poll_interval)
                except OSError as e:
                    log.error(
                        "Could not lock the {noun} at {path}: {error}",
                        noun=self.noun,
                        path=str(self.path),
                        error=os.strerror(e.errno) if e.errno else str(e),
                    )
                    raise self._unavailable("could not be locked") from e
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    # -- reading and writing -----------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            # No file yet, or a parent that is a file: nothing is stored
            # there (a change says what is wrong with the directory).
            return {}
        except IsADirectoryError:
            raise self._invalid("is a directory, not a file") from None
        except OSError as e:
            raise self._invalid(
                f"could not be read ({os.strerror(e.errno) if e.errno else e})",
                next_step="Check the file's permissions and the setting that names it.",
            ) from e
        try:
            document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except UnicodeDecodeError:
            raise self._invalid("is not JSON (it is not UTF-8 text)") from None
        except (ValueError, RecursionError) as e:
            raise self._invalid(f"is not JSON ({e})") from None
        if not isinstance(document, dict) or document.get("format") != self.kind:
            raise self._invalid(
                f'is a file gophergem did not write (no "format": "{self.kind}")',
                next_step=self.foreign_next_step,
            )
        version = document.get("version")
        if type(version) is not int or version < 1:
            raise self._invalid("is damaged: it has no valid format version")
        if version > self.version:
            raise self._invalid(
                f"was written by a newer gophergem (format version {version}; this one reads "
                f"up to {self.version})",
                next_step="Upgrade gophergem, or point it at another store.",
            )
        entries = document.get("entries")
        if not isinstance(entries, dict):
            raise self._invalid("is damaged: it has no entries object")
        try:
            self.check(entries)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise self._invalid(f"is damaged: a bad entry ({e})") from None
        return entries

    def _write(self, entries: dict[str, Any]) -> None:
        document = {"format": self.kind, "version": self.version, "entries": entries}
        data = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        try:
            write_atomically(self.path, data.encode("utf-8"))
        except OSError as e:
            log.error(
                "Could not write the {noun} at {path}: {error}",
                noun=self.noun,
                path=str(self.path),
                error=os.strerror(e.errno) if e.errno else str(e),
            )
            raise self._unavailable("could not be written") from e

    def _ensure_directory(self) -> None:
        directory = self.path.parent
        try:
            if self.prepare is not None:
                self.prepare()
            if not directory.is_dir():
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(directory, 0o700)  # mkdir's mode is subject to the umask
            elif self.private_directory and directory.stat().st_mode & 0o077:
                log.warn(
                    "Tightening {path} to mode 0700 (it was {mode:o})",
                    path=str(directory),
                    mode=directory.stat().st_mode & 0o777,
                )
                os.chmod(directory, 0o700)
        except OSError as e:
            log.error(
                "Could not prepare the directory {path} of the {noun}: {error}",
                path=str(directory),
                noun=self.noun,
                error=os.strerror(e.errno) if e.errno else str(e),
            )
            raise self._unavailable("could not be created") from e

    def _sweep_temporaries(self) -> None:
        # Under the exclusive lock nobody else is half-way through a write of
        # this document, so its temporary files are leftovers of a crash.
        self._swept = True
        prefix = f".{self.path.name}."
        with contextlib.suppress(OSError):
            for leftover in self.path.parent.iterdir():
                if leftover.name.startswith(prefix) and leftover.name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        leftover.unlink()

    # -- errors -------------------------------------------------------------

    def _unavailable(
        self,
        what: str,
        *,
        temporary: bool = False,
        next_step: str | None = None,
        path: Path | None = None,
    ) -> GophergemError:
        return self.error(
            message=f"The {self.noun} {what}.",
            next_step=next_step or "Check the store's location and permissions (see the log).",
            temporary=temporary,
            path=str(self.path if path is None else path),
        )

    def _invalid(self, what: str, *, next_step: str | None = None) -> GophergemError:
        """The error for a file that cannot be used as the store; it is left alone."""
        log.error(
            "The {noun} at {path} {what}; it was left as it is",
            noun=self.noun,
            path=str(self.path),
            what=what,
        )
        return self.error(
            message=f"The {self.noun} {what}; nothing was read or changed.",
            next_step=next_step or _REPAIR,
            temporary=False,
            path=str(self.path),
        )
