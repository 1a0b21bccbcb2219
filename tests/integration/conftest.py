"""
Harness for the integration tests: a real Gopher server (gophernicus, run per
connection by socat on loopback) and the MCP SDK's own stdio client driving
C{python -m gophergem}.

Everything binds to and connects to 127.0.0.1 only.

The peers are Debian packages (C{.ci/peers.sh} installs them).  When they are
missing the tests are skipped, unless C{GOPHERGEM_REQUIRE_PEERS=1} is set (as
CI does), in which case they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_ROOT = Path(__file__).resolve().parent / "fixtures" / "gopherroot"
LOOPBACK = "127.0.0.1"

GOPHERNICUS_CANDIDATES = ("/usr/sbin/gophernicus", "/usr/local/sbin/gophernicus")

# -nf: no "Gophered by Gophernicus" footer;  -nh: no header on generated listings;
# -no: no charset conversion (bytes go out as stored);  -nv: no virtual hosting;
# -nm: no shared memory (no throttling state shared between test runs);
# -ns: no syslog;  -nu: no ~user gopherspaces.
GOPHERNICUS_OPTIONS = ("-nf", "-nh", "-no", "-nv", "-nm", "-ns", "-nu")

STARTUP_DEADLINE = 10.0  # seconds to wait for socat to accept
MCP_DEADLINE = 120.0  # seconds an async test body may take before it is failed


def _peers_required() -> bool:
    return os.environ.get("GOPHERGEM_REQUIRE_PEERS", "").strip() == "1"


def _missing_peer(reason: str) -> None:
    """Skip, or fail when CI requires the peers."""
    if _peers_required():
        pytest.fail(f"{reason} (GOPHERGEM_REQUIRE_PEERS=1; run .ci/peers.sh)", pytrace=False)
    pytest.skip(reason)


def find_gophernicus() -> str | None:
    for candidate in GOPHERNICUS_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("gophernicus")


def unused_loopback_port() -> int:
    """
    A TCP port on 127.0.0.1 that nothing listens on right now (bind to port
    0, read the port, close).  Also used as "a port where the connection is
    refused".
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def gopher_request(port: int, request: bytes, timeout: float = 5.0) -> bytes:
    """Send one raw Gopher request to 127.0.0.1:port and read the reply to EOF."""
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def make_world_readable_root() -> Path:
    """
    Copy the fixture tree into a fresh directory in the temporary directory
    (C{TMPDIR}) that the C{nobody} user can read: C{tempfile.mkdtemp} makes
    it 0700, so it is opened up here, and pytest's own C{pytest-of-root}
    may be 0700 too, so it is not used.  The caller removes C{root.parent}.
    """
    base = Path(tempfile.mkdtemp(prefix="gophergem-gopherroot-"))
    base.chmod(0o755)
    root = base / "root"
    shutil.copytree(FIXTURE_ROOT, root, symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            path = Path(dirpath, name)
            path.chmod(path.stat().st_mode | 0o555)
        for name in filenames:
            path = Path(dirpath, name)
            mode = path.stat().st_mode | 0o444
            if mode & 0o111:  # "a+X": executable for all if executable for anyone
                mode |= 0o111
            path.chmod(mode)
    root.chmod(0o755)
    # Every parent must be traversable by nobody as well.
    for parent in root.parents:
        if not os.stat(parent).st_mode & 0o001:
            shutil.rmtree(base, ignore_errors=True)
            raise RuntimeError(
                f"{parent} is not traversable by other users; gophernicus runs as nobody"
            )
    return root


@dataclass(frozen=True)
class GopherServer:
    host: str
    port: int
    root: Path

    def url(self, item_type: str = "1", selector: str = "") -> str:
        """A gopher:// URL on this server (selector given unquoted; fixture selectors are plain)."""
        return f"gopher://{self.host}:{self.port}/{item_type}{selector}"

    def raw(self, request: bytes) -> bytes:
        return gopher_request(self.port, request)


def _stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM socat and its per-connection children, then SIGKILL what is left."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _start_socat(
    socat: str, gophernicus: str, root: Path, log_path: Path
) -> tuple[subprocess.Popen[bytes], int]:
    last_error = "socat did not start"
    for _attempt in range(3):
        port = unused_loopback_port()
        command = " ".join(
            [gophernicus, "-h", LOOPBACK, "-p", str(port), "-r", str(root), *GOPHERNICUS_OPTIONS]
        )
        exec_address = f'EXEC:"{command}"'
        if os.geteuid() == 0:
            # gophernicus refuses to run as root ("Cowardly refusing to run as root").
            exec_address += ",su=nobody"
        argv = [socat, f"TCP-LISTEN:{port},bind={LOOPBACK},reuseaddr,fork", exec_address]
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # its own process group, killed as a whole
            )
        finally:
            log.close()
        deadline = time.monotonic() + STARTUP_DEADLINE
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                last_error = (
                    f"socat exited with {proc.returncode}: {log_path.read_text(errors='replace')}"
                )
                break
            try:
                reply = gopher_request(port, b"\r\n", timeout=2.0)
            except OSError:
                time.sleep(0.05)
                continue
            if b"\t" in reply and reply.endswith(b"\r\n.\r\n"):  # a menu, terminated
                return proc, port
            _stop_process_group(proc)
            raise RuntimeError(
                f"gophernicus answered the root selector with {reply[:300]!r}; socat log: "
                f"{log_path.read_text(errors='replace')}"
            )
        else:
            last_error = f"socat did not accept on {LOOPBACK}:{port} within {STARTUP_DEADLINE}s"
        _stop_process_group(proc)
    raise RuntimeError(last_error)


@pytest.fixture(scope="session")
def gopher_server() -> Iterator[GopherServer]:
    """
    gophernicus serving a fresh copy of C{fixtures/gopherroot} on 127.0.0.1,
    one process per connection forked by socat.
    """
    gophernicus = find_gophernicus()
    socat = shutil.which("socat")
    if gophernicus is None:
        _missing_peer("gophernicus is not installed")
    if socat is None:
        _missing_peer("socat is not installed")
    assert gophernicus is not None and socat is not None

    root = make_world_readable_root()
    log_path = root.parent / "socat.log"
    try:
        proc, port = _start_socat(socat, gophernicus, root, log_path)
        try:
            yield GopherServer(host=LOOPBACK, port=port, root=root)
        finally:
            _stop_process_group(proc)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture
def mcp_env() -> dict[str, str]:
    """The environment for spawning the gophergem MCP server against loopback peers."""
    env = dict(os.environ)
    env["GOPHER_ALLOW_LOCAL_HOSTS"] = "true"
    env["GOPHER_REQUESTS_PER_MINUTE"] = "0"
    env["GOPHER_RESPECT_ROBOTS_TXT"] = "false"
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + existing if existing else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def server_command() -> tuple[str, list[str]]:
    """How the MCP server is spawned: the package's C{__main__}."""
    return sys.executable, ["-m", "gophergem"]


@contextlib.asynccontextmanager
async def mcp_session(env: dict[str, str]) -> AsyncIterator[Any]:
    """
    Spawn C{python -m gophergem} with the MCP SDK's stdio client and yield
    an initialized C{mcp.ClientSession}.  The server's stderr is kept and
    printed (pytest shows it with a failure) when the body raises.
    """
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, args = server_command()
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(REPO_ROOT))
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(
                "---- stderr of python -m gophergem ----\n" + errlog.read()[-20000:] + "\n"
            )
            raise


def run_async(fn: Any, *args: Any, deadline: float = MCP_DEADLINE) -> Any:
    """
    Run an async test body to completion from a plain (sync) pytest test,
    failing it if it takes longer than C{deadline} seconds.
    """
    import anyio

    async def bounded() -> Any:
        with anyio.fail_after(deadline):
            return await fn(*args)

    return anyio.run(bounded)


def tool_payload(result: Any) -> dict[str, Any]:
    """
    The payload of a C{CallToolResult}: C{structuredContent} when present,
    else the JSON of its single text block.  Checks that the text block is
    there and decodes to the same kind and core fields.
    """
    assert len(result.content) == 1, f"expected one content block, got {result.content!r}"
    block = result.content[0]
    assert block.type == "text", block
    from_text = json.loads(block.text)
    structured = result.structured_content
    if structured is None:
        return from_text
    assert_same_core(structured, from_text)
    return structured


def assert_same_core(structured: dict[str, Any], from_text: dict[str, Any]) -> None:
    if "kind" not in structured and "error" in structured:  # a refused batch
        assert from_text["error"]["code"] == structured["error"]["code"], (structured, from_text)
        assert from_text["error"]["message"] == structured["error"]["message"]
        return
    if "result" in structured and "kind" not in structured:  # a batch
        assert isinstance(from_text.get("result"), list), from_text
        assert len(from_text["result"]) == len(structured["result"])
        for one, other in zip(structured["result"], from_text["result"], strict=True):
            assert_same_core(one, other)
        return
    assert from_text.get("kind") == structured.get("kind"), (structured, from_text)
    kind = structured.get("kind")
    if kind == "menu":
        # The text block may leave out what next_url already spells out
        # (host, port, selector, and the type of a gopher:// link), says the
        # shared host and port once (base + each item's path), and gives an
        # info line as its bare text (docs/mcp.md), so compare what a reader
        # needs.
        from gophergem.render.text import menu_links

        def item_type(item: dict[str, Any] | str, url: str) -> Any:
            if isinstance(item, str):
                return "i"
            if "type" in item or not url.startswith("gopher://"):
                return item.get("type")
            return url[len("gopher://") :].partition("/")[2][:1]

        def title(item: dict[str, Any] | str) -> Any:
            return item if isinstance(item, str) else item.get("title")

        pairs = zip(from_text["items"], menu_links(from_text), strict=True)
        shown = [(item_type(i, u), title(i), u) for i, u in pairs]
        assert shown == [(i["type"], i["title"], i["next_url"]) for i in structured["items"]]
        return
    core = {
        "text": ("text", "bytes", "charset"),
        "binary": ("bytes", "mime_type"),
        "error": ("error",),
    }.get(kind, ())
    for field in core:
        if field == "error":
            assert from_text["error"]["code"] == structured["error"]["code"]
            assert from_text["error"]["message"] == structured["error"]["message"]
        else:
            assert from_text.get(field) == structured.get(field), (
                f"{kind}.{field} differs between text and structured"
            )


# The Gemini peers (molly-brown, Jetforce) and their fixtures live in
# gemini_peers.py; importing the fixtures here registers them for every module.
from .gemini_peers import (  # noqa: E402, F401
    gemini_certs,
    gemini_env,
    jetforce_server,
    molly_brown,
    molly_brown_own,
)
