"""
Shared helpers for the integration tests that run the console script as a
process: its environment (a fixture), a run, a free port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

DEADLINE = 60.0  # seconds a process may take before the test fails


def console_script() -> list[str]:
    """The installed C{gophergem} script, or C{python -m gophergem} without one."""
    script = Path(sys.executable).parent / "gophergem"
    if script.exists():
        return [str(script)]
    found = shutil.which("gophergem")
    return [found] if found else [sys.executable, "-m", "gophergem"]


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    """The process environment with stores under C{tmp_path} and no gophergem settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GOPHER_", "GEMINI_", "GOPHERGEM_"))
    }
    env["GEMINI_TOFU_STORAGE_PATH"] = str(tmp_path / "tofu.json")
    env["GEMINI_CLIENT_CERTS_STORAGE_PATH"] = str(tmp_path / "identities")
    return env


def gophergem(
    args: list[str], environ: dict[str, str], **options: object
) -> subprocess.CompletedProcess[str]:
    options.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*console_script(), *args],
        env=environ,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=DEADLINE,
        **options,
    )


def assert_one_line(stderr: str) -> None:
    assert "Traceback" not in stderr and "Unhandled" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith("gophergem"), stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
