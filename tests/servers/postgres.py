"""
A throwaway PostgreSQL 15 server on loopback for the tests that need one.

The session fixture L{postgres_url} makes a cluster in a temporary
directory (C{initdb} with trust authentication for the user C{gg}), starts
it on 127.0.0.1 at a free port with durability switched off, and stops it
when the session ends.  When the binaries are missing the tests that use it
are skipped, unless C{GOPHERGEM_REQUIRE_PEERS=1} (CI), where they fail.

C{initdb} refuses to run as root, so as root (CI) every server command runs
as the C{postgres} user through C{runuser}, in a directory it owns.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from twisted.internet.asyncioreactor import AsyncioSelectorReactor
from twisted.internet.defer import Deferred

__all__ = [
    "PostgresHarness",
    "crash_postgres",
    "find_binaries",
    "postgres_harness",
    "postgres_url",
    "restart_postgres",
    "start_postgres",
    "wait",
]

#: Where Debian puts the server binaries (they are not on PATH).
_BINARY_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin")

USER = "gg"


def find_binaries() -> Path | None:
    """The directory holding C{initdb} and C{pg_ctl}, or C{None}."""
    for directory in _BINARY_DIRS:
        if os.access(os.path.join(directory, "initdb"), os.X_OK):
            return Path(directory)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


def _require() -> bool:
    return os.environ.get("GOPHERGEM_REQUIRE_PEERS", "").strip() == "1"


def start_postgres(base: Path, binaries: Path) -> tuple[str, Path]:
    """
    Make and start a cluster under C{base}; return its URL and data directory.
    """
    data = base / "data"
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(base, account.pw_uid, account.pw_gid)
    base.chmod(0o700)
    run = {"check": True, "capture_output": True, "timeout": 60}
    subprocess.run(
        _as_server_user(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "-N",
                "--no-instructions",
            ]
        ),
        **run,  # type: ignore[call-overload]
    )
    port = _free_port()
    options = (
        f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=60"
    )
    subprocess.run(
        _as_server_user(
            [
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(base / "pg.log"),
                "-w",
                "-t",
                "30",
                "-o",
                options,
                "start",
            ]
        ),
        **run,  # type: ignore[call-overload]
    )
    deadline = time.monotonic() + 30
    while True:
        ready = subprocess.run(
            [str(binaries / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-t", "2"],
            capture_output=True,
        )
        if ready.returncode == 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("PostgreSQL did not become ready")
        time.sleep(0.1)
    return f"postgresql://{USER}@127.0.0.1:{port}/postgres", data


def crash_postgres(data: Path) -> int:
    """
    Kill every process of the server running on C{data} with SIGKILL at
    once (the postmaster and all it started), as a crash would; return how
    many.  L{restart_postgres} starts it again.
    """
    import signal

    postmaster = int((data / "postmaster.pid").read_text().splitlines()[0])
    pids = [postmaster]
    tasks = Path(f"/proc/{postmaster}/task")
    for task in tasks.iterdir():
        try:
            pids.extend(int(pid) for pid in (task / "children").read_text().split())
        except OSError:
            continue
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # Gone, so that the server can start again on the same data directory.
    deadline = time.monotonic() + 30
    for pid in pids:
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.01)
    return len(pids)


def restart_postgres(base: Path, binaries: Path, data: Path, port: int) -> None:
    """
    Start the server made by L{start_postgres} again (after a crash:
    recovery) and wait for it; raise C{RuntimeError} with pg_ctl's words
    when it does not start.
    """
    options = (
        f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=60"
    )
    started = subprocess.run(
        _as_server_user(
            [
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(base / "pg.log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ]
        ),
        capture_output=True,
        text=True,
        timeout=90,
    )
    if started.returncode != 0:
        log = (base / "pg.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()}\n{log}")


def _stop(binaries: Path, data: Path) -> None:
    subprocess.run(
        _as_server_user(
            [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        ),
        capture_output=True,
        timeout=60,
    )


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a throwaway PostgreSQL on loopback, for the whole session."""
    binaries = find_binaries()
    if binaries is None:
        reason = "PostgreSQL server binaries (initdb, pg_ctl) are not installed"
        if _require():
            pytest.fail(f"{reason} (GOPHERGEM_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(reason)
    base = Path(tempfile.mkdtemp(prefix="gophergem-pg-"))
    data = base / "data"
    try:
        url, data = start_postgres(base, binaries)
        yield url
    finally:
        _stop(binaries, data)
        shutil.rmtree(base, ignore_errors=True)


#: The loop of the session's harness, once there is one: L{wait} runs it.
_loop: asyncio.AbstractEventLoop | None = None


def wait(value: Any) -> Any:
    """
    The value of a store call: a plain value as it is, a L{Deferred}'s
    result (its failure raised) once the harness's loop has run it.  The
    contract tests wrap every store call in it, so one body serves the
    stores that answer at once and those that answer later.
    """
    if not isinstance(value, Deferred):
        return value
    if _loop is None:  # a Deferred not waiting on PostgreSQL: it fired already
        box: list[Any] = []
        value.addBoth(box.append)
        assert box, "the Deferred has not fired and there is no loop to run"
        result = box[0]
        if hasattr(result, "raiseException"):
            result.raiseException()
        return result
    return _loop.run_until_complete(value.asFuture(_loop))


@attrs.define
class PostgresHarness:
    """
    One L{PostgresState} on the throwaway server, on a private asyncio loop
    that L{wait} runs (never the global reactor).

    @ivar url: The server's URL.
    @ivar loop: The loop the pool lives on.
    @ivar reactor: Twisted's asyncio reactor on that loop (not installed).
    @ivar state: The state, upgraded to the current schema.
    @ivar key: The database key it seals identity keys with.
    """

    url: str
    loop: asyncio.AbstractEventLoop
    reactor: Any
    state: Any
    key: bytes

    def reset(self) -> None:
        """Empty every gophergem table."""

        async def truncate(connection: Any) -> None:
            await connection.execute(
                "TRUNCATE gophergem_pins, gophergem_identities, gophergem_entries,"
                " gophergem_subscriptions"
            )

        wait(self.state._runner.call(truncate))


@pytest.fixture(scope="session")
def postgres_harness(postgres_url: str) -> Iterator[PostgresHarness]:
    """A connected, upgraded L{PostgresState} for the whole session."""
    global _loop
    from gophergem.state.postgres import PostgresState

    loop = asyncio.new_event_loop()
    reactor = AsyncioSelectorReactor(loop)
    _loop = loop
    key = bytes(range(32))
    try:
        state = wait(PostgresState.connect(postgres_url, key=key, timeout=10.0, reactor=reactor))
        wait(state.upgrade())
        yield PostgresHarness(postgres_url, loop, reactor, state, key)
        wait(state.close())
    finally:
        _loop = None
        loop.close()
