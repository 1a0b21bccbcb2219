"""
Acceptance of Titan uploads as a user would check them: the SDK's own
client spawns C{python -m gophergem} over stdio (both protocol eras) and
calls C{titan_upload} against the Titan test server running as its own
process (C{python -m gophergem.testing.titan}) on loopback, with an
elicitation callback saying yes or no; and the C{gophergem titan upload}
command against the same server.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from gophergem.state.files.pins import FilePinStore
from gophergem.trust import Pin
from tests.helpers.smolweb_peers import TitanPeer, running_titan

from .conftest import LOOPBACK, REPO_ROOT, run_async, server_command, tool_payload

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def titan_server() -> Iterator[TitanPeer]:
    with running_titan() as peer:
        yield peer


TOKEN = "s3cret"  # the token the server of test_smolweb_peers requires


@pytest.fixture
def titan_env(gemini_env: dict[str, str]) -> dict[str, str]:
    env = dict(gemini_env)
    for name in [n for n in env if n.startswith("TITAN_")]:
        del env[name]
    env["TITAN_ALLOWED_HOSTS"] = LOOPBACK
    return env


class Asker:
    """An elicitation callback: C{upload} answers the upload, C{new_key} a new key."""

    def __init__(self, upload: bool, new_key: bool = False) -> None:
        self.upload, self.new_key = upload, new_key
        self.questions: list[str] = []

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.questions.append(params.message)
        yes = self.new_key if "new key" in params.message else self.upload
        return mcp_types.ElicitResult(action="accept", content={"confirm": yes})


def upload(
    env: dict[str, str], arguments: dict[str, Any], mode: str, asker: Asker | None
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    command, args = server_command()
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(REPO_ROOT))

    async def body() -> dict[str, Any]:
        async with Client(params, mode=mode, elicitation_callback=asker) as client:
            return tool_payload(await client.call_tool("titan_upload", arguments))

    return run_async(body)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_yes_uploads_exactly(
    titan_server: TitanPeer,
    titan_env: dict[str, str],
    mode: str,
) -> None:
    """With a yes the server stores exactly the bytes sent; a redirect is reported."""
    url = f"titan://{LOOPBACK}:{titan_server.port}/accepted/{mode}.gmi"
    asker = Asker(upload=True)
    text = "# Über\n=> gemini://example.org/ a link\n"
    payload = upload(titan_env, {"url": url, "content": text, "token": TOKEN}, mode, asker)
    assert payload["kind"] == "redirect", payload
    assert payload["new_url"] == f"gemini://{LOOPBACK}:{titan_server.port}/accepted/{mode}.gmi"
    stored = titan_server.root / "accepted" / f"{mode}.gmi"
    assert stored.read_bytes() == text.encode("utf-8")
    (question,) = asker.questions
    assert f"Size: {len(text.encode())} bytes" in question and "Token: sent" in question
    assert TOKEN not in question and TOKEN not in str(payload)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_no_sends_nothing(
    titan_server: TitanPeer,
    titan_env: dict[str, str],
    mode: str,
) -> None:
    """A no is USER_DECLINED and nothing reaches the server."""
    url = f"titan://{LOOPBACK}:{titan_server.port}/declined/{mode}.gmi"
    payload = upload(titan_env, {"url": url, "content": "x", "token": TOKEN}, mode, Asker(False))
    assert payload["error"]["code"] == "USER_DECLINED"
    assert not (titan_server.root / "declined").exists()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_no_consent_channel_refused(
    titan_server: TitanPeer,
    titan_env: dict[str, str],
    mode: str,
) -> None:
    """A client without elicitation: CONSENT_UNAVAILABLE, nothing sent."""
    url = f"titan://{LOOPBACK}:{titan_server.port}/unasked.gmi"
    payload = upload(titan_env, {"url": url, "content": "x", "token": TOKEN}, mode, None)
    assert payload["error"]["code"] == "CONSENT_UNAVAILABLE"
    assert not (titan_server.root / "unasked.gmi").exists()


def test_off_by_default_and_capped(
    titan_server: TitanPeer,
    titan_env: dict[str, str],
) -> None:
    """Without TITAN_ALLOWED_HOSTS, and over TITAN_MAX_UPLOAD_BYTES: BLOCKED, nobody asked."""
    url = f"titan://{LOOPBACK}:{titan_server.port}/blocked.gmi"
    off = {k: v for k, v in titan_env.items() if k != "TITAN_ALLOWED_HOSTS"}
    asker = Asker(True)
    payload = upload(off, {"url": url, "content": "x"}, "legacy", asker)
    assert payload["error"]["code"] == "BLOCKED" and "TITAN_ALLOWED_HOSTS" in str(payload)
    capped = {**titan_env, "TITAN_MAX_UPLOAD_BYTES": "3"}
    payload = upload(capped, {"url": url, "content": "four"}, "legacy", asker)
    assert payload["error"]["code"] == "BLOCKED" and "TITAN_MAX_UPLOAD_BYTES" in str(payload)
    assert asker.questions == [] and not (titan_server.root / "blocked.gmi").exists()


def test_changed_key_uploads_nothing(
    titan_server: TitanPeer,
    titan_env: dict[str, str],
) -> None:
    """A pin for another key: CERTIFICATE_CHANGED when the user keeps the pin, nothing stored."""
    FilePinStore(titan_env["GEMINI_TOFU_STORAGE_PATH"]).put(
        Pin(
            host=LOOPBACK,
            port=titan_server.port,
            fingerprint="sha256:" + "a" * 64,
            spki="sha256:" + "b" * 64,
            first_seen=0.0,
            last_seen=0.0,
            not_before=0.0,
            expires=4102444800.0,
        )
    )
    url = f"titan://{LOOPBACK}:{titan_server.port}/changed.gmi"
    asker = Asker(upload=True, new_key=False)
    payload = upload(titan_env, {"url": url, "content": "x", "token": TOKEN}, "legacy", asker)
    assert payload["error"]["code"] == "CERTIFICATE_CHANGED"
    assert len(asker.questions) == 2
    assert not (titan_server.root / "changed.gmi").exists()


def test_the_command_uploads_with_yes_only(
    titan_server: TitanPeer,
    titan_env: dict[str, str],
    tmp_path: Path,
) -> None:
    """gophergem titan upload: refused without --yes off a terminal; with it, stored exactly."""
    page = tmp_path / "page.gmi"
    page.write_bytes(b"# From the terminal\n")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    url = f"titan://{LOOPBACK}:{titan_server.port}/cli.gmi"
    argv = [sys.executable, "-m", "gophergem", "titan", "upload", "--token-file", str(token)]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, *extra, url, str(page)],
            env=titan_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )

    refused = run()
    assert refused.returncode == 1 and "CONSENT_UNAVAILABLE" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and refused.stdout == ""
    assert not (titan_server.root / "cli.gmi").exists()
    done = run("--yes", "--format", "readable")
    assert done.returncode == 0, done.stderr
    assert f"redirect (temporary): gemini://{LOOPBACK}:{titan_server.port}/cli.gmi" in done.stdout
    assert (titan_server.root / "cli.gmi").read_bytes() == b"# From the terminal\n"
