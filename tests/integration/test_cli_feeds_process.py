"""
C{gophergem feeds …} run as processes against gophernicus on 127.0.0.1:
subscribe, list, updates and a server gone (every feed failed: status 1,
one line), never a traceback.  Nothing here leaves loopback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli_process import assert_one_line, environ, gophergem

pytestmark = pytest.mark.integration

__all__ = ["environ"]  # the fixture, shared with test_cli_process


def test_follow_a_gopher_hole(
    gopher_server: object, environ: dict[str, str], tmp_path: Path
) -> None:
    """subscribe, list and updates fetch through the real pipeline, once each."""
    environ["GOPHER_ALLOW_LOCAL_HOSTS"] = "true"
    environ["GOPHER_RESPECT_ROBOTS_TXT"] = "false"
    environ["GOPHERGEM_FEEDS_STORAGE_PATH"] = str(tmp_path / "feeds.json")
    url = f"gopher://127.0.0.1:{gopher_server.port}/1/"  # type: ignore[attr-defined]
    done = gophergem(["feeds", "subscribe", url], environ)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Subscribed to {url}: ")
    listed = gophergem(["feeds", "list"], environ)
    assert listed.returncode == 0 and url in listed.stdout
    updates = gophergem(["feeds", "updates"], environ)
    assert (updates.returncode, updates.stdout) == (0, "Nothing new (1 checked).\n")


def test_every_feed_failed(environ: dict[str, str], tmp_path: Path) -> None:
    """A subscription whose server is gone: one line on stderr and status 1."""
    from gophergem.state.files import FileFeedStore
    from tests.helpers.cli_process import free_port

    environ["GOPHER_ALLOW_LOCAL_HOSTS"] = "true"
    environ["GOPHERGEM_FEEDS_STORAGE_PATH"] = str(tmp_path / "feeds.json")
    url = f"gopher://127.0.0.1:{free_port()}/1/"
    FileFeedStore(tmp_path / "feeds.json").subscribe(url, None, "page", [], 1_800_000_000)
    updates = gophergem(["feeds", "updates"], environ)
    assert updates.returncode == 1
    assert_one_line(updates.stderr)
    assert url in updates.stderr
