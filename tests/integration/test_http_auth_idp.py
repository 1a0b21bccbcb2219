"""
Acceptance test for identity-provider authentication: C{gophergem serve
--transport http} on 127.0.0.1 with C{GOPHERGEM_AUTH_ISSUER} naming a
small identity provider this test runs on loopback (RFC 8414 metadata and
a JWKS, from a thread), and the MCP SDK's client sending JWTs the test mints.

Nothing here binds or connects to anything but 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.helpers.daemon import daemon_env, http_get, post_mcp, running, serve_argv
from tests.helpers.idp import RSA_KEY, hs256_with_public_key, jwk_of, unsigned
from tests.helpers.mcp import bearer_session

from .conftest import LOOPBACK, run_async

pytestmark = pytest.mark.integration


class _Provider(ThreadingHTTPServer):
    down = False


class _Handler(BaseHTTPRequestHandler):
    server: _Provider

    def do_GET(self) -> None:
        issuer = f"http://{LOOPBACK}:{self.server.server_address[1]}"
        if self.server.down:
            self.close_connection = True
            self.connection.close()  # no answer at all
            return
        if self.path == "/.well-known/oauth-authorization-server":
            body: Any = {"issuer": issuer, "jwks_uri": issuer + "/jwks"}
        elif self.path == "/jwks":
            body = {"keys": [jwk_of(RSA_KEY, "k1", "RS256")]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def identity_provider() -> Iterator[_Provider]:
    provider = _Provider((LOOPBACK, 0), _Handler)
    thread = threading.Thread(target=provider.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.shutdown()
        provider.server_close()
        thread.join(5)


def test_jwt_from_a_loopback_identity_provider(tmp_path: Path) -> None:
    """
    The metadata names the issuer; while the provider is unreachable a JWT
    gets 503 with a JSON-RPC body; then the SDK client lists and calls tools
    with a good JWT in both eras; wrong-audience, expired, none-alg and
    HS256-with-the-public-key tokens get 401; no token reaches the output.
    """

    with identity_provider() as provider:
        issuer = f"http://{LOOPBACK}:{provider.server_address[1]}"
        env = daemon_env(tmp_path, GOPHERGEM_AUTH_ISSUER=issuer)
        with running(serve_argv, env) as daemon:

            def token(**changes: Any) -> str:
                claims = {
                    "iss": issuer,
                    "sub": "alice",
                    "aud": daemon.url,
                    "exp": int(time.time()) + 600,
                    "iat": int(time.time()),
                    "client_id": "test",
                }
                claims.update(changes)
                return jwt.encode(claims, RSA_KEY, algorithm="RS256", headers={"kid": "k1"})

            metadata = http_get(daemon.port, "/.well-known/oauth-protected-resource/mcp")
            assert json.loads(metadata.body)["authorization_servers"] == [issuer]

            good = token()
            provider.down = True
            unavailable = post_mcp(daemon.port, {"Authorization": f"Bearer {good}"})
            assert unavailable.status == 503
            provider.down = False

            async def use(bearer: str, mode: str) -> tuple[set[str], Any]:
                async with bearer_session(daemon.url, bearer, mode) as session:
                    names = {t.name for t in (await session.list_tools()).tools}
                    called = await session.call_tool("gemini_trust_list", {})
                    return names, called

            for mode in ("legacy", "2026-07-28"):
                names, called = run_async(lambda mode=mode: use(good, mode), deadline=60)
                assert "gopher_fetch" in names
                assert not called.is_error

            refused = {
                "wrong audience": token(aud="http://127.0.0.1:1/mcp"),
                "expired": token(exp=int(time.time()) - 600),
                "none": unsigned(iss=issuer, aud=daemon.url),
                "hs256 with the public key": hs256_with_public_key(iss=issuer, aud=daemon.url),
            }
            for name, bad in refused.items():
                answer = post_mcp(daemon.port, {"Authorization": f"Bearer {bad}"})
                assert answer.status == 401, name

            time.sleep(0.5)  # the access log lines of the last requests
            output = daemon.output()
            assert "POST /mcp" in output
            for secret in (good, *refused.values()):
                assert secret not in output
            assert daemon.stop() in (0, -signal.SIGTERM), daemon.output()
            assert "Traceback" not in daemon.output()
