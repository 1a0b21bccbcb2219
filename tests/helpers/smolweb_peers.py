"""
Real small-web peers for the integration tests: starting a peer process and
waiting until it listens, smolserve (Finger, Spartan and Nex) serving a
directory, jayhawk (a Spartan server) with one redirect, and Debian's BSD
finger daemon run per connection by socat.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.integration.conftest import (
    LOOPBACK,
    _missing_peer,
    _stop_process_group,
    unused_loopback_port,
)

STARTUP_DEADLINE = 20.0  # seconds for a peer to accept connections


def executable(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def wait_for(proc: subprocess.Popen[bytes], ports: list[int], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE
    waiting = list(ports)
    while waiting and time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the peer exited: {log.read_text(errors='replace')}")
        try:
            with socket.create_connection((LOOPBACK, waiting[0]), timeout=1.0):
                waiting.pop(0)
        except OSError:
            time.sleep(0.05)
    if waiting:
        _stop_process_group(proc)
        raise RuntimeError(f"the peer did not listen on {waiting}: {log.read_text()}")


def start_peer(argv: list[str], ports: list[int], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    wait_for(proc, ports, log)
    return proc


@dataclass(frozen=True)
class Smolserve:
    """The ports of a running smolserve, and the files it serves."""

    finger: int
    spartan: int
    nex: int
    root: Path

    @property
    def plan(self) -> Path:
        """The plan file, answered for every user (read anew for each query)."""
        return self.root / "plan.txt"


@contextlib.contextmanager
def running_smolserve(files: dict[str, str]) -> Iterator[Smolserve]:
    """
    smolserve on free loopback ports serving C{files}: C{plan.txt} (the
    finger plan) and paths under C{spartan/} and C{nex/} (their roots), each
    path to its text.  Fails (or skips) when smolserve is not installed.
    """
    command = executable("smolserve")
    if command is None:
        _missing_peer("smolserve is not installed (pip install -e '.[test]')")
    assert command is not None
    with tempfile.TemporaryDirectory(prefix="gophergem-smolserve-") as base:
        root = Path(base)
        for name in ("spartan", "nex"):
            (root / name).mkdir()
        for path, text in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
        peer = Smolserve(
            unused_loopback_port(), unused_loopback_port(), unused_loopback_port(), root
        )
        argv = [command, "--host", LOOPBACK, "--no-gemini", "--no-gopher"]
        argv += ["--finger-port", str(peer.finger), "--finger-plan", str(peer.plan)]
        argv += ["--spartan-port", str(peer.spartan), "--spartan-root", str(root / "spartan")]
        argv += ["--nex-port", str(peer.nex), "--nex-root", str(root / "nex")]
        proc = start_peer(argv, [peer.finger, peer.spartan, peer.nex], root / "log")
        try:
            yield peer
        finally:
            _stop_process_group(proc)


#: jayhawk's own file dispatcher, with one route that answers with jayhawk's redirect.
JAYHAWK = """
import sys, jayhawk
class Capsule(jayhawk.FileBasedSpartanHandler):
    root = sys.argv[1]
    def handle_request(self, host, path, data=b""):
        if path == "/old":
            self.response_code(3, "/index.gmi")
        else:
            super().handle_request(host, path, data)
jayhawk.serve(Capsule, (sys.argv[2], int(sys.argv[3])))
"""


@contextlib.contextmanager
def running_jayhawk(index: str) -> Iterator[int]:
    """jayhawk on a free loopback port, serving C{index} as its index.gmi; yields the port."""
    try:
        import jayhawk as _  # noqa: F401
    except ImportError:
        _missing_peer("jayhawk is not installed (pip install -e '.[test]')")
    with tempfile.TemporaryDirectory(prefix="gophergem-jayhawk-") as base:
        root = Path(base) / "root"
        (root / LOOPBACK).mkdir(parents=True)  # jayhawk serves root/host/path
        (root / LOOPBACK / "index.gmi").write_text(index, encoding="utf-8")
        port = unused_loopback_port()
        argv = [sys.executable, "-c", JAYHAWK, str(root), LOOPBACK, str(port)]
        proc = start_peer(argv, [port], Path(base) / "log")
        try:
            yield port
        finally:
            _stop_process_group(proc)


@dataclass(frozen=True)
class TitanPeer:
    port: int
    root: Path


@contextlib.contextmanager
def running_titan() -> Iterator[TitanPeer]:
    """The public Titan test server on a free loopback port, token C{s3cret}."""
    with tempfile.TemporaryDirectory(prefix="gophergem-titan-") as base:
        root = Path(base) / "root"
        root.mkdir()
        argv = [sys.executable, "-m", "gophergem.testing.titan", "--port", "0", "--root", str(root)]
        argv += ["--token", "s3cret"]
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline().decode().strip() or "0")
            assert port, "the Titan server did not print its port"
            wait_for(proc, [port], Path(base) / "no-log")
            yield TitanPeer(port, root)
        finally:
            _stop_process_group(proc)
            with contextlib.suppress(Exception):
                proc.stdout.close()  # type: ignore[union-attr]


#: Debian's BSD finger daemon (package C{fingerd}) and the finger program it
#: runs for every query (package C{finger}).
IN_FINGERD = "/usr/sbin/in.fingerd"
FINGER = "/usr/bin/finger"


@dataclass(frozen=True)
class FingerDaemon:
    """
    C{in.fingerd} on 127.0.0.1:C{port}, one process per connection.

    @ivar log: socat's log, one C{accepting connection} line per connection.
    """

    port: int
    log: Path

    def accepted(self) -> int:
        """How many connections socat has accepted so far."""
        return self.log.read_text(errors="replace").count("accepting connection from")


@contextlib.contextmanager
def running_fingerd() -> Iterator[FingerDaemon]:
    """
    Debian's C{in.fingerd} on a free loopback port, as inetd would run it:
    socat accepts and runs one daemon per connection with the accepted
    socket itself as its standard input, output and error (C{nofork},
    C{stderr}; the daemon asks the socket for its peer).  Its defaults
    refuse forwarding (C{user@host}) and look no name up, so it sends
    nothing anywhere; as root it drops to C{nobody} by itself.
    """
    socat = shutil.which("socat")
    for needed, package in ((IN_FINGERD, "fingerd"), (FINGER, "finger")):
        if not os.access(needed, os.X_OK):
            _missing_peer(f"{needed} is not installed (Debian package {package})")
    if socat is None:
        _missing_peer("socat is not installed")
    assert socat is not None
    with tempfile.TemporaryDirectory(prefix="gophergem-fingerd-") as base:
        log = Path(base) / "log"
        port = unused_loopback_port()
        argv = [
            socat,
            "-d",
            "-d",  # notices: one "accepting connection from" line per connection
            f"TCP-LISTEN:{port},bind={LOOPBACK},reuseaddr,fork",
            f"EXEC:{IN_FINGERD},nofork,stderr",
        ]
        proc = start_peer(argv, [port], log)
        try:
            yield FingerDaemon(port, log)
        finally:
            _stop_process_group(proc)
