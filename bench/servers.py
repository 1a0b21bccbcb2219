"""
The loopback peers bench_gopher.py measures against, and their raw floors.

  - L{GopherServer}: a threaded Gopher server on one 127.x address, port 0,
    serving a 48-item menu, a 4 KB text and a text of exactly 1 MiB, with a
    listen backlog of 256 or (a small server) as low as asked;
  - L{GeminiServer}: a threaded Gemini server on 127.0.0.1, port 0, using
    the stdlib C{ssl} module and a self-signed certificate for C{localhost},
    answering C{20 text/gemini} with a 60-line gemtext page;
  - L{raw_gopher_fetch} and L{raw_gemini_fetch}: the blocking stdlib clients
    that are the floors for an uncached fetch.

Every address used is in 127.0.0.0/8.  The pages link only to loopback
hosts or to relative URLs, and nothing here ever follows a link.
"""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import ssl
import threading
from typing import Any

__all__ = [
    "BIG_SIZE",
    "GeminiServer",
    "GopherServer",
    "gemini_client_context",
    "raw_gemini_fetch",
    "raw_gopher_fetch",
]

BIG_SIZE = 1024 * 1024
"""Bytes on the wire for a C{/big...} selector, C{.} terminator included."""

# --------------------------------------------------------------------------
# Content
# --------------------------------------------------------------------------


def _menu(host: str, port: int) -> bytes:
    """A 48-item menu of the kind found in the wild."""
    h, p = host, port

    def info(text: str) -> str:
        return f"i{text}\t\terror.host\t1"

    def item(kind: str, title: str, selector: str) -> str:
        return f"{kind}{title}\t{selector}\t{h}\t{p}"

    lines = [
        info("=" * 60),
        info(f"  Welcome to the benchmark hole on {h}"),
        info("  Serving plain text since 1991 (or so it feels)"),
        info("=" * 60),
        info(""),
        item("0", "About this server", "/text/about.txt"),
        item("0", "README: how to navigate gopherspace", "/text/readme.txt"),
        item("1", "Phlog (weblog, gopher style)", "/menu/phlog"),
        item("7", "Search the archive (Veronica-style)", "/search"),
        info(""),
        info("--- Recent phlog posts ---"),
    ]
    posts = [
        "Rebuilding a 1994 gopher client",
        "Notes on the RFC 1436 item types",
        "Why plain text still wins",
        "A week without a web browser",
        "Packet radio and gopher",
        "Indexing menus with a shell script",
        "Running a server on a Raspberry Pi",
        "The joy of selector strings",
        "Mirroring old FTP archives into gopher",
        "A tiny gopher server in 40 lines of C",
        "Reading RSS feeds as gopher menus",
        "Winter maintenance log",
    ]
    for i, title in enumerate(posts, 1):
        lines.append(item("0", f"2024-{i:02d}-15  {title}", f"/text/phlog/2024-{i:02d}.txt"))
    lines += [
        info(""),
        info("--- Archives ---"),
        item("1", "Software archive", "/menu/software"),
        item("1", "Documents and RFCs", "/menu/docs"),
        item("1", "Old mailing-list digests", "/menu/digests"),
        item("9", "gopher-client-2.3.tar.gz", "/files/gopher-client-2.3.tar.gz"),
        item("9", "server-config-example.zip", "/files/server-config-example.zip"),
        item("g", "Screenshot of the client (GIF)", "/img/client.gif"),
        item("I", "Photo of the server rack", "/img/rack.jpg"),
        item("0", "RFC 1436: The Internet Gopher Protocol", "/text/rfc1436.txt"),
        item("0", "RFC 4266: The gopher URI Scheme", "/text/rfc4266.txt"),
        info(""),
        info("--- Elsewhere ---"),
        item("h", "Project page (HTTP mirror)", f"URL:http://{h}:{p}/project"),
        item("h", "Mailing list archive (HTTP)", f"URL:http://{h}:{p}/lists"),
        item("1", "Floodgap-style directory of servers", "/menu/servers"),
        item("1", "Community bulletin board", "/menu/bbs"),
        item("0", "Server statistics", "/text/stats.txt"),
        info(""),
        info("--- Colophon ---"),
        info("  This hole is generated for a benchmark and is not real."),
        item("0", "Contact the operator", "/text/contact.txt"),
        item("0", "Terms of use", "/text/terms.txt"),
        info(""),
        info("=" * 60),
    ]
    assert len(lines) == 48, len(lines)
    return ("\r\n".join(lines) + "\r\n.\r\n").encode("utf-8")


def _text() -> bytes:
    """About 4 KB of plain text (type 0), lines ending CRLF, closed by '.'."""
    para = (
        "The Internet Gopher protocol is designed for distributed document search and "
        "retrieval. Documents reside on many autonomous servers on the Internet. Users "
        "run client software on their desktop systems, moving from server to server "
        "with ease, browsing through and searching documents."
    )
    lines: list[str] = ["RFC 1436-ish sample text for the benchmark", ""]
    n = 0
    while sum(len(line) + 2 for line in lines) < 4000:
        n += 1
        lines.append(f"Section {n}")
        words, line = para.split(), ""
        for word in words:
            if len(line) + len(word) + 1 > 70:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines += [line, ""]
    return ("\r\n".join(lines) + "\r\n.\r\n").encode("utf-8")


def _big_text() -> bytes:
    """Plain text of exactly L{BIG_SIZE} bytes on the wire, '.' line included."""
    line = "0123456789 the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJ"
    row = (line + "\r\n").encode("ascii")
    room = BIG_SIZE - len(b".\r\n")
    full, rest = divmod(room, len(row))
    body = row * full
    assert rest != 1, "a one-byte remainder cannot be a line"
    if rest:
        body += b"x" * (rest - 2) + b"\r\n"
    body += b".\r\n"
    assert len(body) == BIG_SIZE, len(body)
    return body


def _gemtext(port: int) -> bytes:
    """A 60-line gemtext page: headings, prose, lists, a quote, links, a gemlog index."""
    base = f"gemini://localhost:{port}"
    posts = [
        ("2024-06-02", "Moving my capsule to a Raspberry Pi"),
        ("2024-05-19", "Trust on first use, explained to my mother"),
        ("2024-05-04", "A gemtext style guide for long posts"),
        ("2024-04-21", "Why I stopped counting visitors"),
        ("2024-04-07", "Client certificates for a guestbook"),
        ("2024-03-24", "Twelve months of small-web reading"),
    ]
    lines = [
        "# The benchmark capsule",
        "",
        "Welcome! This capsule is generated for a benchmark and is not real. It looks like a",
        "personal capsule of the kind found in Geminispace: a short introduction, a gemlog,",
        "some projects and a few links out.",
        "",
        "## About",
        "",
        "I write about small protocols, old hardware and the pleasure of plain text. Posts",
        "appear irregularly, usually on Sunday mornings, and are never longer than needed.",
        "",
        "> The web is a library that keeps rearranging its shelves. Gemini is a reading room.",
        "",
        "## Gemlog",
        "",
        *(f"=> gemlog/{d}-{i}.gmi {d} {title}" for i, (d, title) in enumerate(posts)),
        "=> gemlog/ All posts",
        "=> gemlog/atom.xml Atom feed",
        "",
        "## Projects",
        "",
        "* a gopher and gemini bridge for language models",
        "* a tiny gemtext to HTML converter",
        "* a phlog generator written in awk",
        "",
        "=> /projects/bridge/ The bridge: design notes",
        "=> /projects/gmi2html/ gmi2html",
        f"=> {base}/projects/phlog-awk/ phlog-awk",
        "",
        "## A snippet",
        "",
        "```sh",
        "printf 'gemini://localhost/\\r\\n' | openssl s_client -quiet -connect localhost:1965",
        "```",
        "",
        "## Elsewhere",
        "",
        "=> gopher://localhost/1/ The same notes over Gopher",
        f"=> {base}/guestbook/ Sign the guestbook (needs a client certificate)",
        "=> /search Search this capsule",
        "=> /about/contact.gmi Contact",
        "",
        "## Reading list",
        "",
        "=> gemini://localhost/docs/specification.gmi The Gemini protocol specification",
        "=> gemini://localhost/docs/gemtext.gmi A quick introduction to gemtext",
        "=> gopher://localhost/0/rfc1436.txt RFC 1436, the Gopher protocol",
        "",
        "## Colophon",
        "",
        "Served from a closet. Certificates are self-signed and pinned by your client on",
        "first use; if the fingerprint ever changes without an announcement here, please",
        "tell me before you trust the new one.",
        "",
        "Last updated 2024-06-02.",
    ]
    assert len(lines) == 60, len(lines)
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------


class _ThreadedServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


class _Base:
    """A socketserver on a thread, counting the requests it answered."""

    def __init__(
        self, host: str, handler: type[socketserver.BaseRequestHandler], backlog: int = 256
    ) -> None:
        self.host = host
        self._lock = threading.Lock()
        self.requests = 0
        self._server = _ThreadedServer((host, 0), handler, bind_and_activate=False)
        self._server.request_queue_size = backlog  # the listen backlog
        try:
            self._server.server_bind()
            self._server.server_activate()
        except BaseException:
            self._server.server_close()
            raise
        self._server.owner = self  # type: ignore[attr-defined]
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._started = False

    def count(self) -> None:
        with self._lock:
            self.requests += 1

    def start(self) -> None:
        self._thread.start()
        self._started = True

    def stop(self) -> None:
        if self._started:
            self._server.shutdown()
        self._server.server_close()
        if self._started:
            self._thread.join(timeout=5)


def _read_line(sock: Any, limit: int) -> bytes:
    data = b""
    while b"\n" not in data and len(data) < limit:
        chunk = sock.recv(limit)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].rstrip(b"\r")


class _GopherHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        owner: GopherServer = self.server.owner  # type: ignore[attr-defined]
        sock: socket.socket = self.request
        sock.settimeout(10)
        selector = _read_line(sock, 4096).split(b"\t", 1)[0]
        sock.sendall(owner.answer(selector))
        owner.count()
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)


_BIG: bytes | None = None


class GopherServer(_Base):
    """
    A threaded Gopher server on C{host}:0.

    Selector C{""}, C{"/"} or C{"/menu..."}: the 48-item menu; C{"/text..."}:
    the 4 KB text; C{"/big..."}: text of exactly 1 MiB; anything else: a
    type-3 error line.  C{backlog} is its listen backlog (a small server's
    is often 5).
    """

    def __init__(self, host: str = "127.0.0.1", *, backlog: int = 256) -> None:
        global _BIG
        super().__init__(host, _GopherHandler, backlog)
        try:
            self.menu = _menu(host, self.port)
            self.text = _text()
            if _BIG is None:
                _BIG = _big_text()
            self.big = _BIG
        except BaseException:
            self._server.server_close()
            raise

    def answer(self, selector: bytes) -> bytes:
        if selector in (b"", b"/") or selector.startswith(b"/menu"):
            return self.menu
        if selector.startswith(b"/text"):
            return self.text
        if selector.startswith(b"/big"):
            return self.big
        return b"3Not found\t\terror.host\t1\r\n.\r\n"

    def url(self, kind: str, selector: str = "") -> str:
        return f"gopher://{self.host}:{self.port}/{kind}{selector}"


class _GeminiHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        owner: GeminiServer = self.server.owner  # type: ignore[attr-defined]
        raw: socket.socket = self.request
        raw.settimeout(10)
        try:
            conn = owner.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            return
        try:
            _read_line(conn, 1026)
            conn.sendall(b"20 text/gemini; charset=utf-8\r\n" + owner.page)
            owner.count()
            # close_notify, so the client sees a complete body
            with contextlib.suppress(OSError, ssl.SSLError, ValueError):
                conn.unwrap()
        except (OSError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()


class GeminiServer(_Base):
    """
    A threaded Gemini server on 127.0.0.1:0 with a self-signed certificate
    for C{localhost}: every request gets C{20 text/gemini} and the page.
    """

    def __init__(self, cert_pem: bytes, key_pem: bytes, tmp: str) -> None:
        super().__init__("127.0.0.1", _GeminiHandler)
        try:
            cert_file = os.path.join(tmp, "gemini-cert.pem")
            key_file = os.path.join(tmp, "gemini-key.pem")
            with open(cert_file, "wb") as f:
                f.write(cert_pem)
            with open(key_file, "wb") as f:
                f.write(key_pem)
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.minimum_version = ssl.TLSVersion.TLSv1_2
            self.context.load_cert_chain(cert_file, key_file)
            self.page = _gemtext(self.port)
        except BaseException:
            self._server.server_close()
            raise

    def url(self, path: str = "/") -> str:
        return f"gemini://localhost:{self.port}{path}"


# --------------------------------------------------------------------------
# Raw floors
# --------------------------------------------------------------------------


def raw_gopher_fetch(host: str, port: int, selector: bytes = b"") -> bytes:
    """Connect, send the selector and CRLF, read to EOF."""
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(selector + b"\r\n")
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def gemini_client_context() -> ssl.SSLContext:
    """TLS >= 1.2, no CA check (Gemini certificates are self-signed)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def raw_gemini_fetch(ctx: ssl.SSLContext, url: str, port: int) -> tuple[bytes, str]:
    """
    Connect to localhost, handshake (SNI localhost, a fresh session), send
    the URL and CRLF, read to EOF.  Returns the whole answer (header and
    body) and the TLS version negotiated.
    """
    with (
        socket.create_connection(("localhost", port), timeout=10) as sock,
        ctx.wrap_socket(sock, server_hostname="localhost") as conn,
    ):
        conn.sendall(url.encode("utf-8") + b"\r\n")
        chunks = []
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
        version = conn.version() or "?"
    return b"".join(chunks), version
