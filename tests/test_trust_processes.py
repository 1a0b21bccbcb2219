"""
L{gophergem.state.files.FilePinStore} shared by real processes: concurrent
writers lose nothing, concurrent first uses of one host leave exactly one
winner, and a writer killed mid-run leaves a loadable store holding every
pin whose write had returned.

The children are C{python -c} programs importing gophergem; they never open
a socket.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from gophergem.state.files import FilePinStore
from tests.helpers.trust import go

ROOT = Path(__file__).resolve().parent.parent

# argv: store path, name, count (-1: forever).  Prints "ready", waits for a
# line on stdin, then writes pins <name>-<i>.example, printing each host once
# put() has returned.
_WRITER = """
import sys
from gophergem.trust import Pin
from gophergem.state.files import FilePinStore

store = FilePinStore(sys.argv[1])
name, count = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
i = 0
while count < 0 or i < count:
    host = f"{name}-{i}.example"
    store.put(Pin(host=host, port=1965, fingerprint="sha256:" + "ab" * 32, spki="",
                  first_seen=float(i), last_seen=float(i), not_before=0.0, expires=0.0))
    print(host, flush=True)
    i += 1
"""


# argv: store path, name.  Prints "ready", waits for a line on stdin, then
# tries 20 times to be first to pin first-<i>.example with its own
# fingerprint, printing "won" or "lost <fingerprint of the winner>" each time.
_FIRST_USER = """
import sys
from gophergem.trust import Pin
from gophergem.state.files import FilePinStore

store = FilePinStore(sys.argv[1])
mine = "sha256:" + sys.argv[2] * 64
print("ready", flush=True)
sys.stdin.readline()
for i in range(20):
    existing = store.put_new(Pin(host=f"first-{i}.example", port=1965, fingerprint=mine,
                                 spki="", first_seen=0.0, last_seen=0.0, not_before=0.0,
                                 expires=0.0))
    print(i, "won" if existing is None else "lost " + existing.fingerprint, flush=True)
"""


def start_writer(
    path: Path, name: str, count: int | None = None, program: str = _WRITER
) -> subprocess.Popen[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    extra = [] if count is None else [str(count)]
    child = subprocess.Popen(
        [sys.executable, "-c", program, str(path), name, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=environment,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Two processes writing 50 pins each into one store at once leave all 100."""
    path = tmp_path / "tofu.json"
    children = [start_writer(path, name, 50) for name in ("left", "right")]
    for child in children:
        go(child)
    acknowledged: set[str] = set()
    for child in children:
        out, _ = child.communicate(timeout=30)
        assert child.returncode == 0
        acknowledged.update(out.split())
    assert len(acknowledged) == 100
    assert {pin.host for pin in FilePinStore(path).all()} == acknowledged


def test_concurrent_first_uses_have_one_winner(tmp_path: Path) -> None:
    """
    Three processes racing to pin the same 20 hosts first (put_new): each
    host has exactly one winner, every loser was told the winner's pin, and
    the store holds the winner's.
    """
    path = tmp_path / "tofu.json"
    children = {digit: start_writer(path, digit, program=_FIRST_USER) for digit in ("a", "b", "c")}
    for child in children.values():
        go(child)
    winners: dict[str, list[str]] = {}
    told: dict[str, set[str]] = {}
    for digit, child in children.items():
        out, _ = child.communicate(timeout=30)
        assert child.returncode == 0
        for line in out.splitlines():
            i, outcome, *fingerprint = line.split()
            if outcome == "won":
                winners.setdefault(i, []).append("sha256:" + digit * 64)
            else:
                told.setdefault(i, set()).update(fingerprint)
    stored = {pin.host: pin.fingerprint for pin in FilePinStore(path).all()}
    assert len(stored) == 20
    for i in map(str, range(20)):
        assert len(winners[i]) == 1, (i, winners[i])
        assert stored[f"first-{i}.example"] == winners[i][0]
        assert told.get(i, set()) <= set(winners[i])


def test_killed_writer_loses_no_acknowledged_pin(tmp_path: Path) -> None:
    """
    A writer SIGKILLed while writing leaves a store that loads and holds every
    pin whose put() had returned; the lock dies with the process.
    """
    path = tmp_path / "tofu.json"
    child = start_writer(path, "victim", -1)
    go(child)
    assert child.stdout is not None
    acknowledged = [child.stdout.readline().strip() for _ in range(30)]
    os.kill(child.pid, signal.SIGKILL)
    # Read the rest through the same text stream: communicate() reads the raw
    # pipe and would miss lines readline() has already buffered.
    acknowledged += child.stdout.read().split()
    assert child.wait(timeout=10) == -signal.SIGKILL
    assert child.stdin is not None
    child.stdin.close()

    store = FilePinStore(path, lock_timeout=1.0)
    stored = {pin.host for pin in store.all()}
    assert set(acknowledged) <= stored
    # At most the write in flight when the signal landed got in unannounced.
    assert len(stored - set(acknowledged)) <= 1
    assert store.remove(acknowledged[0], 1965) is True
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
