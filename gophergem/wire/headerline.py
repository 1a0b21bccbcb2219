# -*- test-case-name: tests.test_wire_gemini,tests.test_wire_spartan -*-
"""
The one-line response header that Gemini and Spartan share (C{status SP
meta CRLF}), read from a stream of bytes, free of I/O.

L{HeaderLineParser} buffers the line, refuses it as soon as it is too
long, and hands the line (without its line end) to the protocol's own
C{parse_header}.  Each protocol's C{HeaderParser} subclasses it and says
only what differs: its limit, its messages, its header type and whether a
bare LF ends the line.  L{decode_meta} reads the META of either.
"""

from __future__ import annotations

from typing import ClassVar, Generic, NoReturn, TypeVar

import attrs

from gophergem.errors import InvalidStatus, ProtocolError

__all__ = ["HeaderLineParser", "decode_meta"]

_Header = TypeVar("_Header")


@attrs.define
class HeaderLineParser(Generic[_Header]):
    """
    Read one header line from a stream of bytes, then keep what follows.

    A subclass sets the class variables and L{_parse}.

    @cvar max_bytes: The longest line accepted, its line end included.
    @cvar too_long: The message when the line is longer than C{max_bytes}.
    @cvar cut_short: The message when the stream ends inside the line.
    @cvar bare_lf: The message refusing a line ended by a bare LF, or
        C{None} to accept such a line.

    @ivar rest: The bytes after the header, once it is complete.  Data fed
        after that is appended here: a client should take C{rest} once and
        hand later data to its body buffer instead.
    @ivar header: The header, once complete.
    """

    max_bytes: ClassVar[int]
    too_long: ClassVar[str]
    cut_short: ClassVar[str]
    bare_lf: ClassVar[str | None] = None

    _buffer: bytearray = attrs.field(factory=bytearray, init=False)
    rest: bytes = attrs.field(default=b"", init=False)
    header: _Header | None = attrs.field(default=None, init=False)
    _failure: ProtocolError | InvalidStatus | None = attrs.field(default=None, init=False)

    def _parse(self, line: bytes) -> _Header:
        """
        Read one complete line, without its line end.

        @raise ProtocolError: If the line is malformed.
        @raise InvalidStatus: If its status is not one the protocol defines.
        """
        raise NotImplementedError

    def feed(self, data: bytes) -> _Header | None:
        """
        Add C{data}.

        @return: The header once it is complete (on this call and every
            later one), else C{None}.
        @raise ProtocolError: If the header is malformed or too long.
        @raise InvalidStatus: If its status is not one the protocol defines.
        """
        if self._failure is not None:
            raise self._failure
        if self.header is not None:
            self.rest += data
            return self.header
        end = data.find(b"\n")
        if end < 0:
            if len(self._buffer) + len(data) >= self.max_bytes:
                self._fail(ProtocolError(message=self.too_long))
            self._buffer += data
            return None
        if len(self._buffer) + end + 1 > self.max_bytes:
            self._fail(ProtocolError(message=self.too_long))
        line = bytes(self._buffer) + data[:end]
        if line.endswith(b"\r"):
            line = line[:-1]
        elif self.bare_lf is not None:
            self._fail(ProtocolError(message=self.bare_lf))
        try:
            self.header = self._parse(line)
        except (ProtocolError, InvalidStatus) as failure:
            self._fail(failure)
        self._buffer = bytearray()
        self.rest = data[end + 1 :]
        return self.header

    def eof(self) -> None:
        """
        Say that the stream ended.

        @raise ProtocolError: If no complete header arrived.
        """
        if self._failure is not None:
            raise self._failure
        if self.header is None:
            if self._buffer:
                message = self.cut_short
            else:
                message = "The connection closed before any response arrived."
            self._fail(ProtocolError(message=message))

    def _fail(self, failure: ProtocolError | InvalidStatus) -> NoReturn:
        self._failure = failure
        self._buffer = bytearray()
        raise failure


def decode_meta(raw: bytes, status: int, limit: int, header: str) -> str:
    """
    Decode a header's META: at most C{limit} bytes of UTF-8.

    @param header: What the messages call the header (C{"response"}).
    @raise ProtocolError: If C{raw} is too long or not UTF-8 (naming C{status}).
    """
    if len(raw) > limit:
        raise ProtocolError(
            message=f"The {header} META is longer than {limit} bytes.", status=status
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(
            message=f"The {header} META is not valid UTF-8.", status=status
        ) from None
