# -*- test-case-name: tests.test_testing_titan -*-
"""
A small, well-behaved Titan server for tests and for trying uploads by
hand, on loopback only.

It speaks Titan over TLS (a self-signed certificate for its host name, or
one given), accepts an upload when its request is well formed, stores it in
memory or under a directory, and answers C{30} to the C{gemini://} URL of
the page, as Titan servers usually do.  A zero-byte upload deletes the page.
It also answers plain Gemini requests for what it stores (C{20} with the
stored MIME type, C{51} otherwise), so a client can follow that redirect.

Everything it received is recorded (L{TitanServer.uploads}: path, size,
MIME type, token, the bytes and the client certificate), so a test can show
that a client sent exactly what it meant to::

    server = TitanServer(clock=net.reactor)
    net.listen("192.0.2.80", 1965, server.wire_factory())
    ...  # upload with gophergem.client.titan.TitanClientProtocol
    assert server.uploads[0].content == b"hello"

By hand, storing under a directory and printing the port it listens on::

    python -m gophergem.testing.titan --port 0 --root /tmp/capsule --token s3cret
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote_to_bytes

import attrs
from twisted.internet.interfaces import (
    IListeningPort,
    IOpenSSLServerConnectionCreator,
    IProtocolFactory,
    IReactorTCP,
    IReactorTime,
)
from twisted.internet.protocol import Factory, Protocol, ServerFactory
from twisted.protocols.tls import TLSMemoryBIOFactory

from gophergem.errors import InvalidRequest
from gophergem.url import GeminiURL
from gophergem.wire.titan import TitanURL

__all__ = ["DEFAULT_MAX_UPLOAD", "TitanServer", "Upload", "main", "serve_titan"]

#: The largest upload accepted unless told otherwise (1 MiB).
DEFAULT_MAX_UPLOAD = 1024 * 1024

_MAX_LINE = 1024 + 2


@attrs.frozen
class Upload:
    """
    One upload the server received.

    @ivar path: The page's path, percent-decoded (C{/notes/today.gmi}).
    @ivar size: The size the request announced.
    @ivar mime: The MIME type it named, or C{None}.
    @ivar token: The token it carried, or C{None}.
    @ivar content: The bytes received (C{size} of them when accepted).
    @ivar client_certificate: The client certificate presented (a pyOpenSSL
        C{X509}), or C{None}.
    @ivar accepted: Whether it was stored (or, at size 0, deleted).
    """

    path: str
    size: int
    mime: str | None
    token: str | None = attrs.field(repr=False)
    content: bytes = attrs.field(repr=False)
    client_certificate: Any = attrs.field(repr=False)
    accepted: bool


class _TitanExchange(Protocol):
    """One connection: a Titan upload or a Gemini request, answered once."""

    factory: TitanServer

    def __init__(self) -> None:
        self._buffer = b""
        self._upload: TitanURL | None = None
        self._done = False

    def dataReceived(self, data: bytes) -> None:
        if self._done:
            return
        self._buffer += data
        if self._upload is None:
            line, crlf, rest = self._buffer.partition(b"\r\n")
            if not crlf:
                if len(self._buffer) > _MAX_LINE:
                    self._answer(b"59 The request line is too long.\r\n")
                return
            self._buffer = rest
            self._request(line)
            if self._done:
                return
        assert self._upload is not None and self._upload.size is not None
        if len(self._buffer) >= self._upload.size:
            self._store(self._upload, self._buffer[: self._upload.size])

    def _request(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        if text.lower().startswith("gemini://"):
            self._serve(text)
            return
        try:
            url = TitanURL.from_text(text)
        except InvalidRequest:
            self._answer(b"59 Not a Titan or Gemini request.\r\n")
            return
        if url.size is None:
            self._answer(b"59 A Titan upload needs a size.\r\n")
        elif url.size > self.factory.max_upload:
            self._record(url, b"", accepted=False)
            self._answer(f"59 Uploads are limited to {self.factory.max_upload} bytes.\r\n".encode())
        elif self.factory.tokens and url.token not in self.factory.tokens:
            self._record(url, b"", accepted=False)
            self._answer(b"59 A valid token is required.\r\n")
        else:
            self._upload = url

    def _store(self, url: TitanURL, content: bytes) -> None:
        self.factory.store(_decoded(url.path), content, url.mime)
        self._record(url, content, accepted=True)
        self._answer(f"30 {url.gemini_url().to_text()}\r\n".encode())

    def _serve(self, text: str) -> None:
        try:
            url = GeminiURL.from_text(text)
        except InvalidRequest:
            self._answer(b"59 Not a Gemini URL.\r\n")
            return
        found = self.factory.page(_decoded(url.path))
        if found is None:
            self._answer(b"51 Not found.\r\n")
        else:
            content, mime = found
            self._answer(f"20 {mime}\r\n".encode() + content)

    def _record(self, url: TitanURL, content: bytes, *, accepted: bool) -> None:
        assert self.transport is not None
        peer = getattr(self.transport, "getPeerCertificate", lambda: None)()
        self.factory.uploads.append(
            Upload(_decoded(url.path), url.size or 0, url.mime, url.token, content, peer, accepted)
        )

    def _answer(self, response: bytes) -> None:
        self._done = True
        assert self.transport is not None
        self.transport.write(response)
        self.transport.loseConnection()


def _decoded(path: str) -> str:
    return unquote_to_bytes(path).decode("utf-8", "replace")


@attrs.define(eq=False)
class TitanServer(Factory[_TitanExchange]):
    """
    A Titan server: accepts uploads, stores them, answers C{30} to the page.

    Listen with L{wire_factory} (it adds TLS).

    @ivar root: Where pages are stored (a path under it per page), or
        C{None} to keep them in L{pages} only.
    @ivar hostname: The name its certificate is made for.
    @ivar tokens: When not empty, an upload must carry one of these tokens.
    @ivar max_upload: Larger uploads are refused (C{59}) before any byte of
        content is read.
    @ivar clock: The clock TLS runs on (a memory reactor in tests).
    @ivar tls: The server's TLS; a fresh self-signed certificate for
        C{hostname} when not given.
    @ivar uploads: Every upload request received, accepted or not, in order.
    @ivar pages: What is stored: path to C{(content, mime)}.
    """

    root: Path | None = None
    hostname: str = "localhost"
    tokens: frozenset[str] = frozenset()
    max_upload: int = DEFAULT_MAX_UPLOAD
    clock: IReactorTime | None = None
    tls: IOpenSSLServerConnectionCreator | None = None
    uploads: list[Upload] = attrs.field(factory=list, init=False)
    pages: dict[str, tuple[bytes, str]] = attrs.field(factory=dict, init=False)
    protocol = _TitanExchange
    noisy = False

    def _file(self, path: str) -> Path | None:
        """Where C{path} lives under L{root} (C{None} outside it, or without a root)."""
        if self.root is None:
            return None
        root = self.root.resolve()
        target = (root / path.lstrip("/")).resolve()
        if target == root or root not in target.parents:
            return None
        return target

    def store(self, path: str, content: bytes, mime: str | None) -> None:
        """Store C{content} at C{path} (delete it when empty)."""
        mime = mime or "text/gemini"
        target = self._file(path)
        if not content:
            self.pages.pop(path, None)
            if target is not None and target.is_file():
                target.unlink()
            return
        self.pages[path] = (content, mime)
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    def page(self, path: str) -> tuple[bytes, str] | None:
        """The stored content and MIME type of C{path}, if any."""
        if path in self.pages:
            return self.pages[path]
        target = self._file(path)
        if target is not None and target.is_file():
            return target.read_bytes(), "text/gemini" if path.endswith(".gmi") else "text/plain"
        return None

    def server_tls(self) -> IOpenSSLServerConnectionCreator:
        """The server's TLS (made once, on first use)."""
        if self.tls is None:
            from gophergem.testing import ServerTLS, make_certificate

            now = self.clock.seconds() if self.clock is not None else None
            self.tls = ServerTLS(*make_certificate(self.hostname, now=now))
        return self.tls

    def wire_factory(self) -> IProtocolFactory:
        """The factory to listen with: this one inside TLS."""
        return TLSMemoryBIOFactory(self.server_tls(), False, self, clock=self.clock)


def serve_titan(
    server: TitanServer, reactor: IReactorTCP, port: int = 0, interface: str = "127.0.0.1"
) -> IListeningPort:
    """
    Serve C{server} on a loopback port (0: any free one; read it from the
    result's C{getHost().port}).

    @raise ValueError: If C{interface} is not a loopback address.
    """
    try:
        address = ipaddress.ip_address(interface)
    except ValueError:
        raise ValueError(f"{interface!r} is not an IP address") from None
    if not address.is_loopback:
        raise ValueError(f"{interface} is not a loopback address; the Titan server stays there")
    return reactor.listenTCP(port, cast(ServerFactory, server.wire_factory()), interface=interface)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gophergem.testing.titan",
        description="Serve a small Titan (upload) server over TLS on a loopback port. "
        "Prints the port on the first line of standard output, then serves until killed.",
    )
    parser.add_argument("--port", type=int, default=0, help="0 (the default): any free port.")
    parser.add_argument(
        "--interface", default="127.0.0.1", help="A loopback address (127.0.0.1 or ::1)."
    )
    parser.add_argument("--root", type=Path, help="Store uploads under this directory.")
    parser.add_argument("--hostname", default="localhost", help="The certificate's name.")
    parser.add_argument(
        "--token", action="append", default=[], help="Require this token (repeatable)."
    )
    parser.add_argument(
        "--max-upload", type=int, default=DEFAULT_MAX_UPLOAD, help="The largest upload, in bytes."
    )
    parser.add_argument("--cert", type=Path, help="A PEM certificate (with --key).")
    parser.add_argument("--key", type=Path, help="Its PEM private key.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; see C{--help}."""
    from twisted.internet.defer import Deferred
    from twisted.internet.task import react

    from gophergem.testing import ServerTLS

    parser = _parser()
    args = parser.parse_args(argv)
    if (args.cert is None) != (args.key is None):
        parser.error("--cert and --key go together")
    try:
        ipaddress.ip_address(args.interface)
    except ValueError:
        parser.error(f"{args.interface!r} is not an IP address")
    if not ipaddress.ip_address(args.interface).is_loopback:
        parser.error(f"{args.interface} is not a loopback address")
    if args.root is not None and not args.root.is_dir():
        parser.error(f"{args.root} is not a directory")
    tls = None
    if args.cert is not None:
        tls = ServerTLS(args.cert.read_bytes(), args.key.read_bytes())

    def serve(reactor: Any) -> Deferred[None]:
        server = TitanServer(
            args.root, args.hostname, frozenset(args.token), args.max_upload, reactor, tls
        )
        listening = serve_titan(server, reactor, args.port, args.interface)
        sys.stdout.write(f"{getattr(listening.getHost(), 'port', 0)}\n")
        sys.stdout.flush()
        return Deferred()  # never fires: serve until killed

    react(serve)
    return 0  # pragma: no cover - react() exits


if __name__ == "__main__":  # pragma: no cover - python -m gophergem.testing.titan
    main()
