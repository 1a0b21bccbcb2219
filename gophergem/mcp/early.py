# -*- test-case-name: tests.test_mcp_early -*-
"""
Ready before the SDK has loaded: the answers that never change for a build.

A client that starts gophergem over stdio waits for the answers to
C{initialize} (or, in the 2026-07-28 era, C{server/discover}) and to the
list requests before it shows the server as ready.  Those answers depend
only on this build (gophergem's tools, prompts and resources, and the SDK
that serialises them), never on the request beyond its protocol version.
L{EarlyResponder} serves them from C{ready_answers.json} on a thread of its
own while the main thread is still importing the MCP SDK and Twisted, then
hands over everything it read to the real stdio transport, which replays it
all through the SDK in the order it arrived.

The answers are the SDK's own, recorded byte for byte by
C{python -m gophergem.mcp.prebuilt} for every supported protocol version;
C{tests/test_mcp_early.py} proves that the recorded file equals what the SDK
answers now.  At run time:

  - the responder stays silent unless the installed gophergem, C{mcp} and
    C{mcp-types} are the versions the answers were recorded with;
  - it answers only requests of exactly the shapes it knows (a known protocol
    version, a plain id, no unexpected parameters), in the order the
    lifecycle allows (list requests after C{notifications/initialized});
    anything else waits for the SDK, and anything odd (a second
    C{initialize}, a line that is not JSON) silences it for good;
  - when the SDK later answers a replayed request that was answered early,
    the SDK's answer is compared with the early one and dropped
    (L{gophergem.mcp.stdio.MessagePipe}); a difference is logged as an error.

This module imports only the standard library: it must cost next to nothing
before the first answer.
"""

from __future__ import annotations

import errno
import json
import os
import re
import select
import threading
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

__all__ = ["ANSWERS_FILE", "EarlyResponder", "Handover", "load_answers", "reserve_stdout"]

ANSWERS_FILE = "ready_answers.json"
FORMAT = 1

LIST_METHODS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
"""The requests whose answers never change once the session is set up."""

MODERN_META = "io.modelcontextprotocol/"
_META_KEYS = frozenset(
    MODERN_META + key for key in ("protocolVersion", "clientCapabilities", "clientInfo")
)
MAX_KNOWN_LINE = 64 * 1024
"""A request longer than this is none of the ones answered early."""

_SAFE_STRING_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")


def reserve_stdout() -> int:
    """
    Keep standard output for the MCP wire alone.

    Duplicates file descriptor 1 for the protocol and points 1 at stderr, so
    that a stray C{print} or a log observer on C{sys.stdout} can never write
    into the protocol stream.  Call it before anything logs.

    @return: The descriptor the protocol must write to.
    """
    wire = os.dup(1)
    os.dup2(2, 1)
    return wire


def _installed(distribution: str, version: str) -> bool:
    """
    Whether C{version} of C{distribution} is the one imported: its
    C{.dist-info} sits beside its package.  (C{importlib.metadata} would
    say the same, but importing it costs more than this whole module.)
    """
    if distribution == "gophergem":
        from gophergem._version import __version__

        return version == __version__
    package = distribution.replace("-", "_")
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    parent = os.path.dirname(next(iter(spec.submodule_search_locations)))
    return os.path.isdir(os.path.join(parent, f"{package}-{version}.dist-info"))


def load_answers(installed: Callable[[str, str], bool] = _installed) -> dict[str, str] | None:
    """
    The recorded answers of this build's stdio server (the one the console
    script runs, Gemini included), as C{"METHOD VERSION"} → result JSON
    text; C{None} when the file is missing or was recorded with other
    versions of gophergem or the SDK than the ones installed.
    """
    try:
        with open(os.path.join(os.path.dirname(__file__), ANSWERS_FILE), "rb") as stream:
            data = json.loads(stream.read())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    built_with = data.get("versions")
    if not isinstance(built_with, dict) or not built_with:
        return None
    for distribution, version in built_with.items():
        if not (isinstance(version, str) and installed(distribution, version)):
            return None
    texts = data.get("texts")
    table = data.get("answers")
    if not isinstance(texts, list) or not isinstance(table, dict):
        return None
    return {key: texts[index] for key, index in table.items()}


def _plain_id(value: object) -> bool:
    """An id whose JSON the SDK writes exactly as C{json.dumps} does."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**53) < value < 2**53
    return isinstance(value, str) and _SAFE_STRING_ID.match(value) is not None


def _client_info(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )


def _capabilities(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


class Handover:
    """
    What the responder passes on: every byte it read (to be replayed through
    the SDK), the requests it answered (id → the line it wrote), and notes
    for the log.
    """

    def __init__(self, data: bytes, answered: dict[Any, bytes], notes: list[str]) -> None:
        self.data = data
        self.answered = answered
        self.notes = notes


class EarlyResponder:
    """
    Read stdin on a thread and answer the requests of L{LIST_METHODS},
    C{initialize} and C{server/discover} from recorded answers, until
    L{hand_over} is called.

    @param answers: From L{load_answers}; C{None} answers nothing (the
        responder then only buffers input).
    @param wire: The descriptor answers are written to (see
        L{reserve_stdout}).
    @param stdin: The descriptor requests are read from.
    """

    def __init__(self, answers: dict[str, str] | None, wire: int, stdin: int = 0) -> None:
        self._answers = answers or {}
        self._wire = wire
        self._stdin = stdin
        self._data = bytearray()
        self._line_start = 0
        self._searched = 0
        self._answered: dict[Any, bytes] = {}
        self._notes: list[str] = []
        self._silent = answers is None
        self._era: str | None = None
        self._version: str | None = None
        self._initialized = False
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="gophergem-ready", daemon=True)
        if answers is None:
            self._notes.append("no recorded answers for this build: the SDK answers everything")

    def start(self) -> None:
        """Start reading stdin."""
        self._thread.start()

    def hand_over(self) -> Handover:
        """Stop reading (the caller reads stdin from now on) and pass on what was read."""
        if self._thread.is_alive():
            os.write(self._wake_w, b"x")
            self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)
        if self._answered:
            self._notes.append(
                f"answered {len(self._answered)} request(s) before the SDK had loaded"
            )
        return Handover(bytes(self._data), self._answered, self._notes)

    # --- the thread ---------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                readable, _, _ = select.select([self._stdin, self._wake_r], [], [])
            except InterruptedError:  # pragma: no cover - PEP 475 retries select
                continue
            except (OSError, ValueError):
                return
            if self._wake_r in readable:
                return
            try:
                chunk = os.read(self._stdin, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            if not chunk:
                return  # end of input: the transport will see it too
            self.received(chunk)

    def received(self, chunk: bytes) -> None:
        """Take C{chunk} of input: keep it for the hand-over, answer what it completes."""
        self._data += chunk
        while not self._silent:
            newline = self._data.find(b"\n", self._searched)
            if newline < 0:
                self._searched = len(self._data)
                return
            start, self._line_start = self._line_start, newline + 1
            self._searched = newline + 1
            if newline - start <= MAX_KNOWN_LINE:
                self._consider(bytes(self._data[start:newline]))

    def _stop_answering(self, why: str) -> None:
        if not self._silent:
            self._silent = True
            self._notes.append(f"stopped answering early: {why}")

    def _consider(self, line: bytes) -> None:
        line = line.rstrip(b"\r")
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            self._stop_answering("a line that is not JSON")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._stop_answering("a line that is not a JSON-RPC message")
            return
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response from the client: not ours to judge
        if "id" not in message:
            if method == "notifications/initialized" and self._era == "handshake":
                self._initialized = True
            return
        request_id = message["id"]
        if request_id in self._answered:
            self._stop_answering("a request id used twice")
            return
        key = self._key(method, message.get("params"))
        text = None if key is None or not _plain_id(request_id) else self._answers.get(key)
        if text is None:
            if method == "initialize":
                self._stop_answering("an initialize request without a recorded answer")
            return
        reply = b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (
            json.dumps(request_id).encode(),
            text.encode(),
        )
        if self._write(reply):
            self._answered[request_id] = reply[:-1]
            if method == "initialize" and key is not None:
                self._era = "handshake"
                self._version = key.split(" ", 1)[1]

    def _key(self, method: str, params: object) -> str | None:
        """The recorded answer this request gets, or C{None} (the SDK answers it)."""
        if method == "initialize":
            if self._era is not None:
                self._stop_answering("initialize after the session was set up")
                return None
            if (
                isinstance(params, dict)
                and set(params) == {"protocolVersion", "capabilities", "clientInfo"}
                and isinstance(params["protocolVersion"], str)
                and _capabilities(params["capabilities"])
                and _client_info(params["clientInfo"])
            ):
                return f"initialize {params['protocolVersion']}"
            return None
        if params is None or params == {}:
            if self._era == "handshake" and self._initialized and method in LIST_METHODS:
                return f"{method} {self._version}"
            return None
        if not (isinstance(params, dict) and set(params) == {"_meta"}):
            return None
        meta = params["_meta"]
        if not (isinstance(meta, dict) and set(meta) <= _META_KEYS):
            return None
        version = meta.get(MODERN_META + "protocolVersion")
        if (
            self._era == "handshake"
            or not isinstance(version, str)
            or not _capabilities(meta.get(MODERN_META + "clientCapabilities"))
            or (
                MODERN_META + "clientInfo" in meta
                and not _client_info(meta[MODERN_META + "clientInfo"])
            )
            or method not in ("server/discover", *LIST_METHODS)
        ):
            return None
        key = f"{method} {version}"
        if key in self._answers:
            self._era = "modern"
        return key

    def _write(self, reply: bytes) -> bool:
        view = memoryview(reply)
        while view:
            try:
                written = os.write(self._wire, view)
            except InterruptedError:  # pragma: no cover - PEP 475 retries write
                continue
            except BlockingIOError:
                select.select([], [self._wire], [])
                continue
            except OSError as error:
                if error.errno != errno.EPIPE:
                    self._notes.append(f"could not write an early answer: {error.strerror}")
                self._silent = True
                # Half a line counts as sent: the SDK must not append a whole one.
                return view.nbytes < len(reply)
            view = view[written:]
        return True
