"""
Acceptance test for token-file authentication: C{gophergem serve --transport
http} on 127.0.0.1 with C{GOPHERGEM_AUTH_TOKENS_FILE}, driven by plain HTTP
and by the MCP SDK's client with an C{Authorization} header.

Nothing here binds or connects to anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from gophergem.auth.tokens import add_token
from tests.helpers.daemon import daemon_env, http_get, post_mcp, running, serve_argv
from tests.helpers.mcp import bearer_session

from .conftest import LOOPBACK, run_async

pytestmark = pytest.mark.integration


def test_token_file_authentication(tmp_path: Path) -> None:
    """
    Without a token or with a wrong one /mcp answers 401 with the challenge;
    with the right one the SDK client lists the tools; /health and the
    metadata are open; a token added while running works at once; the
    daemon's output never shows a token.
    """

    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "alice")
    env = daemon_env(tmp_path, GOPHERGEM_AUTH_TOKENS_FILE=str(tokens))
    with running(serve_argv, env) as daemon:
        assert http_get(daemon.port, "/health").status == 200
        metadata = http_get(daemon.port, "/.well-known/oauth-protected-resource/mcp")
        assert metadata.status == 200
        assert json.loads(metadata.body)["resource"] == daemon.url

        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            refused = post_mcp(daemon.port, headers)
            assert refused.status == 401
            challenge = refused.getheader("WWW-Authenticate") or ""
            assert challenge.startswith("Bearer ")
            assert (
                f'resource_metadata="http://{LOOPBACK}:{daemon.port}'
                '/.well-known/oauth-protected-resource/mcp"' in challenge
            )

        async def listed(bearer: str, mode: str) -> set[str]:
            async with bearer_session(daemon.url, bearer, mode) as session:
                return {t.name for t in (await session.list_tools()).tools}

        for mode in ("legacy", "2026-07-28"):
            names = run_async(lambda mode=mode: listed(token, mode), deadline=60)
            assert "gopher_fetch" in names

        later = add_token(tokens, "bob")  # picked up on the next request
        assert "gopher_fetch" in run_async(lambda: listed(later, "legacy"), deadline=60)

        time.sleep(0.5)  # the access log lines of the last requests
        output = daemon.output()
        assert "POST /mcp" in output
        assert token not in output
        assert later not in output
        assert daemon.stop() in (0, -signal.SIGTERM), daemon.output()
        assert "Traceback" not in daemon.output()
