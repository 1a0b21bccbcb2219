"""
The MCP tools that read a file store leave a file that is not a valid
store exactly as it is and answer an error result (issue 21, item 8), and
C{gemini_trust_update remove} of an unpinned host says it is not pinned
(item 17), as the CLI does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gophergem.feeds.follow import Follower
from gophergem.state.files import FileFeedStore, FileIdentityStore, FilePinStore
from tests.helpers.mcp_feeds import drive
from tests.helpers.mcp_feeds import error_code as feed_error_code
from tests.helpers.mcp_gemini import STALE, capsule, data, error_code, one, session

README = b"# gophergem\n\nReads Gopherspace and Geminispace for AI assistants.\n"
OLD = 1_600_000_000_000_000_000


def snapshot(directory: Path) -> dict[str, tuple[bytes | None, int]]:
    out = {}
    for entry in sorted(directory.rglob("*")):
        info = entry.lstat()
        out[str(entry.relative_to(directory))] = (
            entry.read_bytes() if entry.is_file() else None,
            info.st_mtime_ns,
        )
    return out


def plant(path: Path, content: bytes = README) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.utime(path, ns=(OLD, OLD))
    return path


def test_pin_reads_through_tools_change_nothing(tmp_path: Path) -> None:
    """
    gemini_trust_list, the fetch path's pin read and a removal's check, on a
    pin file holding a README: error results saying what is wrong (not
    where: the path is the operator's), and the directory as it was.
    """
    path = plant(tmp_path / "tofu.json")
    net, _, _ = capsule(pins=FilePinStore(path))
    before = snapshot(tmp_path)
    remove = {"host": "localhost", "action": "remove", "fingerprint": STALE.fingerprint}
    results = session(
        net,
        [
            ("gemini_trust_list", {}),
            ("gemini_trust_list", {"host": "localhost"}),
            ("gemini_fetch", {"url": "gemini://localhost/"}),
            ("gemini_trust_update", remove),
        ],
    )
    for result in results:
        assert error_code(result) == "CERTIFICATE_STORE_UNAVAILABLE"
        error = data(result)["error"]
        assert "not JSON" in error["message"]
        assert str(tmp_path) not in str(data(result)) + result.content[0].text
    assert snapshot(tmp_path) == before


def test_identity_list_tool_changes_nothing(tmp_path: Path) -> None:
    """gemini_client_cert_list on an index holding a README: an error, nothing moved."""
    plant(tmp_path / "client_certs" / "identities.json")
    net, _, _ = capsule(identities=FileIdentityStore(tmp_path / "client_certs"))
    before = snapshot(tmp_path)
    result = one(net, "gemini_client_cert_list", {})
    assert error_code(result) == "CERTIFICATE_STORE_UNAVAILABLE"
    assert "not JSON" in data(result)["error"]["message"]
    assert snapshot(tmp_path) == before


def test_feed_list_tool_changes_nothing(tmp_path: Path) -> None:
    """feed_list and feed_updates on a feed file holding a README: STATE_UNAVAILABLE."""
    path = plant(tmp_path / "feeds.json")
    net, _, _ = capsule()
    follower = Follower(net.fetcher(), FileFeedStore(path), now=net.reactor.seconds)
    before = snapshot(tmp_path)

    async def script(client: Any, call: Any) -> list[Any]:
        return [await call("feed_list", {}), await call("feed_updates", {})]

    for result in drive(net, script, follower=follower):
        assert feed_error_code(result) == "STATE_UNAVAILABLE"
        assert str(tmp_path) not in str(result.structured_content)
    assert snapshot(tmp_path) == before


def test_trust_update_remove_unpinned_host() -> None:
    """remove on a host with no pin says it is not pinned (code FINGERPRINT_MISMATCH)."""
    net, _, _ = capsule()
    arguments = {"host": "localhost", "action": "remove", "fingerprint": STALE.fingerprint}
    result = one(net, "gemini_trust_update", arguments)
    assert error_code(result) == "FINGERPRINT_MISMATCH"
    error = data(result)["error"]
    assert error["message"].startswith("localhost:1965 is not pinned")
    assert "gemini_trust_list" in error["next_step"]
    assert net.pins.all() == []
