"""
Real Gemini servers on loopback for the integration tests: molly-brown (Go,
Debian package C{molly-brown}) and Jetforce (Python, PyPI C{jetforce}), both
serving a fresh copy of C{fixtures/capsule}, plus the certificates they
present and an MCP session helper that can answer elicitation.

Everything listens on and connects to loopback only:

  - Jetforce runs as a subprocess (C{python -m jetforce --host 127.0.0.1}),
    never in the test process's reactor.
  - molly-brown cannot be told an address: it listens on every interface of
    its network namespace.  So it runs in a network namespace of its own
    (C{unshare --net}) that has nothing but a loopback interface, on the
    same port number inside as outside (molly-brown answers 53 to a URL
    whose port is not its own), and two socat relays join it to the test's
    loopback through a Unix socket: C{127.0.0.1:PORT -> molly.sock} outside,
    C{molly.sock -> 127.0.0.1:PORT} inside.  TLS stays end to end; the relays
    only move bytes.

The certificates (for C{localhost}, with an IP SAN for 127.0.0.1) are made
here with C{cryptography}: an original, a same-key reissue, and a
certificate with a new key, for the trust-on-first-use tests that restart
molly-brown with each.

Missing peers skip the tests, or fail them under C{GOPHERGEM_REQUIRE_PEERS=1}
(as CI runs them).  C{conftest.py} imports the fixtures from here.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import ipaddress
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LOOPBACK = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parents[2]
CAPSULE_ROOT = Path(__file__).resolve().parent / "fixtures" / "capsule"
HOSTNAME = "localhost"  # what the URLs, the certificates and the servers' Hostname say
MOLLY_BROWN_CANDIDATES = ("/usr/bin/molly-brown", "/usr/local/bin/molly-brown")
STARTUP_DEADLINE = 15.0  # seconds for a server to answer its first request


# conftest.py imports this module's fixtures, so the shared helpers are
# looked up in it when called, not imported at the top (no import cycle).
def _missing_peer(reason: str) -> None:
    from .conftest import _missing_peer as missing

    missing(reason)


def _stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    from .conftest import _stop_process_group as stop

    stop(proc)


def unused_loopback_port() -> int:
    from .conftest import unused_loopback_port as unused

    return unused()


def server_command() -> tuple[str, list[str]]:
    from .conftest import server_command as command

    return command()


# The size of the generated big gemtext page (bytes, roughly): well over the
# 2048-byte GEMINI_MAX_RESPONSE_SIZE the size-cap test sets.
BIG_PAGE_LINES = 200


def check_localhost() -> None:
    """
    The URLs name C{localhost}: make sure it can only mean loopback here.
    (gophergem tries the addresses in order, so a C{::1} first with nothing
    listening there is refused and 127.0.0.1 answers.)
    """
    try:
        infos = socket.getaddrinfo(HOSTNAME, None, type=socket.SOCK_STREAM)
    except OSError as error:
        raise RuntimeError(f"{HOSTNAME} does not resolve: {error}") from None
    addresses = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}
    if not addresses or not all(address.is_loopback for address in addresses):
        raise RuntimeError(f"{HOSTNAME} resolves to {sorted(map(str, addresses))}, not loopback")
    if ipaddress.ip_address(LOOPBACK) not in addresses:
        raise RuntimeError(f"{HOSTNAME} does not resolve to {LOOPBACK}: {sorted(addresses)}")


# --- certificates ----------------------------------------------------------


@dataclass(frozen=True)
class CertPair:
    """A certificate and its key, as PEM files, and the facts tests compare."""

    name: str
    cert_path: Path
    key_path: Path
    der: bytes
    spki_sha256: str

    @property
    def fingerprint(self) -> str:
        """C{sha256:<hex>} of the DER certificate (what gophergem reports)."""
        return "sha256:" + hashlib.sha256(self.der).hexdigest()

    @property
    def hex(self) -> str:
        return hashlib.sha256(self.der).hexdigest()


@dataclass(frozen=True)
class GeminiCerts:
    """
    C{original}; C{reissue}: a new certificate for the same key (a routine
    renewal); C{rekey}: a new key and certificate (a real change); and
    C{rekey_reissue}: a new certificate for the C{rekey} key.
    """

    original: CertPair
    reissue: CertPair
    rekey: CertPair
    rekey_reissue: CertPair


def _new_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _write_pair(directory: Path, name: str, key: Any, serial: int, days_back: int) -> CertPair:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOSTNAME)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(now - datetime.timedelta(days=days_back))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(HOSTNAME), x509.IPAddress(ipaddress.IPv4Address(LOOPBACK))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path = directory / f"{name}.cert.pem"
    key_path = directory / f"{name}.key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    spki = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return CertPair(
        name=name,
        cert_path=cert_path,
        key_path=key_path,
        der=cert.public_bytes(serialization.Encoding.DER),
        spki_sha256=hashlib.sha256(spki).hexdigest(),
    )


def make_certs(directory: Path) -> GeminiCerts:
    """Write the four certificates (two keys) into C{directory}."""
    first, second = _new_key(), _new_key()
    certs = GeminiCerts(
        original=_write_pair(directory, "original", first, 1001, days_back=2),
        reissue=_write_pair(directory, "reissue", first, 1002, days_back=1),
        rekey=_write_pair(directory, "rekey", second, 2001, days_back=2),
        rekey_reissue=_write_pair(directory, "rekey-reissue", second, 2002, days_back=1),
    )
    assert certs.original.spki_sha256 == certs.reissue.spki_sha256
    assert certs.original.spki_sha256 != certs.rekey.spki_sha256
    assert len({c.fingerprint for c in vars(certs).values()}) == 4
    return certs


# --- the capsule -----------------------------------------------------------


def big_page_text() -> str:
    """
    The generated C{big.gmi}: a heading, then many link lines of equal
    length (several KiB), so a byte cap cuts through the middle of a link.
    """
    lines = ["# A big page", ""]
    for number in range(1, BIG_PAGE_LINES + 1):
        target = f"posts/{number:04d}-a-post-with-a-fairly-long-file-name.gmi"
        lines.append(f"=> {target} Post number {number:04d}")
    return "\n".join(lines) + "\n"


def make_capsule(base: Path, source: Path = CAPSULE_ROOT) -> Path:
    """
    Copy a fixture capsule (by default C{fixtures/capsule}) to
    C{base/capsule}, point every CGI script's shebang at this interpreter
    (the servers run CGI with a bare environment, so C{/usr/bin/env python3}
    may find another Python or none), add the generated big page, and make
    it all world-readable.
    """
    root = base / "capsule"
    shutil.copytree(source, root, symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            Path(dirpath, name).chmod(0o755)
        for name in filenames:
            path = Path(dirpath, name)
            data = path.read_bytes()
            if data.startswith(b"#!/usr/bin/env python3\n"):
                path.write_bytes(
                    b"#!" + sys.executable.encode() + data[len(b"#!/usr/bin/env python3") :]
                )
                path.chmod(0o755)
            else:
                path.chmod(0o644)
    (root / "big.gmi").write_text(big_page_text(), encoding="utf-8")
    (root / "big.gmi").chmod(0o644)
    root.chmod(0o755)
    return root


# --- probing a server ------------------------------------------------------


def gemini_request(port: int, url: str, timeout: float = 5.0) -> tuple[bytes, bytes]:
    """
    One raw Gemini request to 127.0.0.1:port (SNI localhost, no verification):
    return (the server certificate, DER; the whole response).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection((LOOPBACK, port), timeout=timeout) as raw,
        context.wrap_socket(raw, server_hostname=HOSTNAME) as sock,
    ):
        der = sock.getpeercert(binary_form=True) or b""
        sock.sendall(url.encode("utf-8") + b"\r\n")
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ssl.SSLZeroReturnError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return der, b"".join(chunks)


def wait_until_serving(
    port: int, expected: CertPair, alive: Callable[[], str | None], what: str
) -> None:
    """
    Wait until 127.0.0.1:port answers C{/} with 20 and presents C{expected}.
    C{alive} returns why the server is gone (or C{None} while it runs).
    """
    url = f"gemini://{HOSTNAME}:{port}/"
    deadline = time.monotonic() + STARTUP_DEADLINE
    last = "no answer"
    while time.monotonic() < deadline:
        gone = alive()
        if gone is not None:
            raise RuntimeError(f"{what} exited: {gone}")
        try:
            der, reply = gemini_request(port, url, timeout=2.0)
        except (OSError, ssl.SSLError) as error:
            last = repr(error)
            time.sleep(0.05)
            continue
        if not reply:  # a relay up before the server behind it
            last = "empty reply"
            time.sleep(0.05)
            continue
        if der != expected.der:
            raise RuntimeError(f"{what} presents another certificate than {expected.name}")
        if not reply.startswith(b"20 "):
            raise RuntimeError(f"{what} answered {url} with {reply[:200]!r}")
        return
    raise RuntimeError(f"{what} did not serve {url} within {STARTUP_DEADLINE}s ({last})")


def _log_tail(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "(no log)"


def _spawn(argv: list[str], log_path: Path, **kwargs: Any) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group, stopped as a whole
            **kwargs,
        )
    finally:
        log.close()


def _exited(proc: subprocess.Popen[bytes], log_path: Path) -> Callable[[], str | None]:
    def check() -> str | None:
        if proc.poll() is None:
            return None
        return f"status {proc.returncode}: {_log_tail(log_path)}"

    return check


def _world_traversable(path: Path) -> None:
    """A CGI run by a server under another user must reach the capsule."""
    for parent in (path, *path.parents):
        if not os.stat(parent).st_mode & 0o001:
            raise RuntimeError(f"{parent} is not traversable by other users")


# --- molly-brown -----------------------------------------------------------


def find_molly_brown() -> str | None:
    for candidate in MOLLY_BROWN_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("molly-brown")


def _unshare_prefix() -> list[str] | None:
    """
    How to start a process in a new network namespace here: plain
    C{unshare --net} as root, with a user namespace otherwise; C{None} when
    neither works.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    candidates = [[unshare, "--net"]] if os.geteuid() == 0 else []
    candidates.append([unshare, "--map-root-user", "--net"])
    for prefix in candidates:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        if probe.returncode == 0:
            return prefix
    return None


@dataclass
class MollyBrown:
    """
    A molly-brown serving the capsule at C{gemini://localhost:PORT/}, with
    its certificate switchable by a restart (the port, the outer relay and
    the capsule stay).
    """

    port: int
    root: Path
    base: Path
    certs: GeminiCerts
    binary: str
    socat: str
    unshare: list[str]
    access_log: Path
    outer: subprocess.Popen[bytes] | None = None
    inner: subprocess.Popen[bytes] | None = None
    cert: CertPair | None = None
    restarts: int = field(default=0)
    markers: int = field(default=0)

    @property
    def socket_path(self) -> Path:
        return self.base / "molly.sock"

    def url(self, path: str = "/") -> str:
        return f"gemini://{HOSTNAME}:{self.port}{path}"

    def config_text(self, cert: CertPair) -> str:
        root = str(self.root)
        return "\n".join(
            [
                f"Port = {self.port}",
                f'Hostname = "{HOSTNAME}"',
                f'CertPath = "{cert.cert_path}"',
                f'KeyPath = "{cert.key_path}"',
                f'DocBase = "{root}/"',
                f'AccessLog = "{self.access_log}"',
                f'ErrorLog = "{self.base / "error.log"}"',
                f'CGIPaths = ["{root}/cgi-bin/", "{root}/members/"]',
                "",
                "[TempRedirects]",
                '"/old.gmi" = "/new.gmi"',
                "",
                "[PermRedirects]",
                '"/moved.gmi" = "/new.gmi"',
                "",
            ]
        )

    def start(self, cert: CertPair) -> None:
        """Start molly-brown (in its namespace) with C{cert}, and the outer relay once."""
        config = self.base / f"molly-{self.restarts}.conf"
        config.write_text(self.config_text(cert), encoding="utf-8")
        log_path = self.base / "molly.log"
        self.inner = _spawn(
            [
                *self.unshare,
                "sh",
                "-c",
                _NETNS_SCRIPT,
                sys.executable,
                _LOOPBACK_UP,
                self.socat,
                str(self.socket_path),
                str(self.port),
                self.binary,
                str(config),
            ],
            log_path,
            cwd=str(self.base),
        )
        if self.outer is None:
            self.outer = _spawn(
                [
                    self.socat,
                    f"TCP-LISTEN:{self.port},bind={LOOPBACK},reuseaddr,fork",
                    f"UNIX-CONNECT:{self.socket_path}",
                ],
                self.base / "relay.log",
            )
        self.cert = cert
        inner, outer = self.inner, self.outer

        def alive() -> str | None:
            for proc, log in ((inner, log_path), (outer, self.base / "relay.log")):
                if proc.poll() is not None:
                    return f"status {proc.returncode}: {_log_tail(log)}"
            return None

        logged = len(self.access_lines())
        wait_until_serving(self.port, cert, alive, f"molly-brown ({cert.name})")
        # The readiness probe's own request is logged from a goroutine, just
        # after the answer: wait for it, so a test's log mark taken now
        # cannot see the probe land later as a request of its own.
        deadline = time.monotonic() + 5.0
        while ("20", self.url("/")) not in self.requests_since(logged):
            if time.monotonic() > deadline:
                raise RuntimeError("molly-brown never logged the readiness probe")
            time.sleep(0.02)

    def stop_server(self) -> None:
        if self.inner is not None:
            _stop_process_group(self.inner)
            self.inner = None

    def restart(self, cert: CertPair) -> None:
        """Stop molly-brown and start it again with C{cert}, on the same port."""
        self.stop_server()
        self.restarts += 1
        self.start(cert)

    def stop(self) -> None:
        self.stop_server()
        if self.outer is not None:
            _stop_process_group(self.outer)
            self.outer = None

    # --- the access log: "time TAB client TAB status TAB url" per request ---

    def access_lines(self) -> list[str]:
        try:
            return self.access_log.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def settled_requests_since(self, mark: int) -> list[tuple[str, str]]:
        """
        (status, url) of every request logged after the first C{mark} lines,
        up to now.  A marker request is sent and waited for in the log, so
        every connection that ended before this call has been logged too:
        no fixed pause, and nothing missed because the log was slow.  The
        marker itself is left out.
        """
        self.markers += 1
        marker = self.url(f"/settle-{self.markers}")
        gemini_request(self.port, marker)
        logged = self.requests_since(mark)
        deadline = time.monotonic() + 10.0
        while not any(url == marker for _, url in logged):
            if time.monotonic() > deadline:
                raise RuntimeError(f"molly-brown never logged the marker request {marker}")
            time.sleep(0.02)
            logged = self.requests_since(mark)
        return [entry for entry in logged if entry[1] != marker]

    def requests_since(self, mark: int, at_least: int = 0) -> list[tuple[str, str]]:
        """
        (status, url) of each access log line after the first C{mark} lines,
        waiting a little for C{at_least} of them (molly-brown writes its log
        from a goroutine, just after answering).
        """
        deadline = time.monotonic() + 5.0
        while True:
            lines = self.access_lines()[mark:]
            if len(lines) >= at_least or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        out = []
        for line in lines:
            parts = line.split("\t")
            out.append((parts[2], parts[3]) if len(parts) >= 4 else ("?", line))
        return out


# Run by C{python -c} inside the new namespace, where C{lo} starts down:
# bring it up (SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP), with no need
# for iproute2.
_LOOPBACK_UP = """
import fcntl, socket, struct
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    got = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))
    flags = struct.unpack("16sH", got[:18])[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 0x1))
"""

# Inside the namespace: loopback up, the relay from the Unix socket to
# molly-brown's port in the background, then molly-brown itself (exec, so the
# process group is just these).
_NETNS_SCRIPT = (
    'set -e; "$0" -c "$1"; '
    '"$2" "UNIX-LISTEN:$3,fork,unlink-early" "TCP:127.0.0.1:$4" & '
    'exec "$5" -c "$6"'
)


@contextlib.contextmanager
def running_molly_brown(certs: GeminiCerts, cert: CertPair | None = None) -> Iterator[MollyBrown]:
    """A molly-brown serving a fresh capsule copy, stopped and removed afterwards."""
    binary = find_molly_brown()
    socat = shutil.which("socat")
    if binary is None:
        _missing_peer("molly-brown is not installed")
    if socat is None:
        _missing_peer("socat is not installed")
    unshare = _unshare_prefix()
    if unshare is None:
        _missing_peer(
            "cannot make a network namespace (unshare --net) to keep molly-brown, which "
            "listens on every interface, on loopback"
        )
    assert binary is not None and socat is not None and unshare is not None
    base = Path(tempfile.mkdtemp(prefix="gophergem-molly-"))
    base.chmod(0o755)
    try:
        root = make_capsule(base)
        _world_traversable(root)
        last_error = "molly-brown did not start"
        for _attempt in range(3):  # a free port may be taken before the relay binds it
            server = MollyBrown(
                port=unused_loopback_port(),
                root=root,
                base=base,
                certs=certs,
                binary=binary,
                socat=socat,
                unshare=unshare,
                access_log=base / "access.log",
            )
            try:
                server.start(cert or certs.original)
            except RuntimeError as error:
                server.stop()
                last_error = str(error)
                continue
            try:
                yield server
            finally:
                server.stop()
            return
        raise RuntimeError(last_error)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- Jetforce --------------------------------------------------------------


@dataclass(frozen=True)
class Jetforce:
    port: int
    root: Path
    log_path: Path
    cert: CertPair

    def url(self, path: str = "/") -> str:
        return f"gemini://{HOSTNAME}:{self.port}{path}"


def jetforce_available() -> bool:
    try:
        import jetforce  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def running_jetforce(
    certs: GeminiCerts, source: Path = CAPSULE_ROOT, name: str = "jetforce"
) -> Iterator[Jetforce]:
    """Jetforce (a subprocess) serving a fresh copy of a fixture capsule on 127.0.0.1."""
    if not jetforce_available():
        _missing_peer("jetforce is not installed (pip install -e '.[test]')")
    base = Path(tempfile.mkdtemp(prefix=f"gophergem-{name}-"))
    base.chmod(0o755)
    try:
        root = make_capsule(base, source)
        log_path = base / "jetforce.log"
        cert = certs.original
        last_error = "jetforce did not start"
        for _attempt in range(3):
            port = unused_loopback_port()
            proc = _spawn(
                [
                    sys.executable,
                    "-m",
                    "jetforce",
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(port),
                    "--hostname",
                    HOSTNAME,
                    "--dir",
                    str(root),
                    "--cgi-dir",
                    "cgi-bin",
                    "--default-lang",
                    "en",
                    "--tls-certfile",
                    str(cert.cert_path),
                    "--tls-keyfile",
                    str(cert.key_path),
                ],
                log_path,
                cwd=str(base),
            )
            try:
                wait_until_serving(port, cert, _exited(proc, log_path), name)
            except RuntimeError as error:  # e.g. the port was taken meanwhile
                last_error = str(error)
                _stop_process_group(proc)
                continue
            try:
                yield Jetforce(port=port, root=root, log_path=log_path, cert=cert)
            finally:
                _stop_process_group(proc)
            return
        raise RuntimeError(last_error)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- fixtures --------------------------------------------------------------


@pytest.fixture(scope="session")
def gemini_certs() -> Iterator[GeminiCerts]:
    """The server certificates, made once per test session."""
    check_localhost()
    directory = Path(tempfile.mkdtemp(prefix="gophergem-certs-"))
    directory.chmod(0o755)
    try:
        yield make_certs(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def molly_brown(gemini_certs: GeminiCerts) -> Iterator[MollyBrown]:
    """A molly-brown shared by a module's tests; never restarted (see L{molly_brown_own})."""
    with running_molly_brown(gemini_certs) as server:
        yield server


@pytest.fixture
def molly_brown_own(gemini_certs: GeminiCerts) -> Iterator[MollyBrown]:
    """A molly-brown for one test, which may restart it with other certificates."""
    with running_molly_brown(gemini_certs) as server:
        yield server


@pytest.fixture(scope="module")
def jetforce_server(gemini_certs: GeminiCerts) -> Iterator[Jetforce]:
    with running_jetforce(gemini_certs) as server:
        yield server


@pytest.fixture
def gemini_env(mcp_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """
    The environment for C{python -m gophergem} against loopback Gemini
    peers, with stores of its own under C{tmp_path} (never the user's).
    """
    env = dict(mcp_env)
    data = tmp_path / "data"
    data.mkdir()
    env["XDG_DATA_HOME"] = str(data)  # belt and braces: nothing lands in ~/.local/share
    env["GEMINI_TOFU_STORAGE_PATH"] = str(tmp_path / "tofu.json")
    env["GEMINI_CLIENT_CERTS_STORAGE_PATH"] = str(tmp_path / "client_certs")
    env["GEMINI_ALLOW_LOCAL_HOSTS"] = "true"
    env["GEMINI_REQUESTS_PER_MINUTE"] = "0"
    env["GEMINI_RESPECT_ROBOTS_TXT"] = "false"
    for name in list(env):  # nothing inherited may change what the tests expect
        if name.startswith("GEMINI_") and name not in {
            "GEMINI_TOFU_STORAGE_PATH",
            "GEMINI_CLIENT_CERTS_STORAGE_PATH",
            "GEMINI_ALLOW_LOCAL_HOSTS",
            "GEMINI_REQUESTS_PER_MINUTE",
            "GEMINI_RESPECT_ROBOTS_TXT",
        }:
            del env[name]
    return env


# --- the MCP client --------------------------------------------------------


@dataclass
class ElicitationRecorder:
    """
    An elicitation callback for C{ClientSession}: answers each question
    with the next of C{answers}, then with C{default} ("accept" = yes,
    confirm; "decline"; "cancel"), and keeps the questions asked.
    """

    answers: list[str] = field(default_factory=list)
    default: str = "decline"
    asked: list[Any] = field(default_factory=list)

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp_types as types

        self.asked.append(params)
        answer = self.answers.pop(0) if self.answers else self.default
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=answer)


@contextlib.asynccontextmanager
async def gemini_session(
    env: dict[str, str], elicitation: ElicitationRecorder | None = None
) -> AsyncIterator[Any]:
    """
    Spawn C{python -m gophergem} with the MCP SDK's stdio client and yield an
    initialized C{ClientSession}; with C{elicitation}, the client declares
    the elicitation capability and answers through it.  The server's stderr
    is printed when the body raises.
    """
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, args = server_command()
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(REPO_ROOT))
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, elicitation_callback=elicitation) as session,
            ):
                await session.initialize()
                yield session
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(
                "---- stderr of python -m gophergem ----\n" + errlog.read()[-20000:] + "\n"
            )
            raise


def same_fingerprint(reported: str | None, cert: CertPair) -> bool:
    """Compare a reported fingerprint (any case, colons or not, sha256: or not)."""
    if not isinstance(reported, str):
        return False
    text = reported.lower().removeprefix("sha256:").replace(":", "")
    return text == cert.hex
