# -*- test-case-name: tests.test_wire_finger -*-
"""
Finger (RFC 1288), free of I/O: the URL, the query line and the answer.

The client sends one query line and the server answers with text and
closes; the caller caps how much it reads.  Both URL spellings in use are
read: C{finger://host/user} (the old URL draft) and C{finger://user@host}
(Lagrange, Bombadillo); an empty user asks for the list of users.  A query
naming another host (C{user@host}, RFC 1288 section 2.5.5) asks the server
to relay it: there is no reason to send one, and it is refused here.
"""

from __future__ import annotations

import attrs

from gophergem.errors import InvalidRequest
from gophergem.url import format_host
from gophergem.wire.smolurl import host_and_port, split_url
from gophergem.wire.text import DecodedText, decode_body, sanitise

__all__ = [
    "FINGER_DEFAULT_PORT",
    "MAX_USER_BYTES",
    "FingerURL",
    "decode_answer",
    "encode_query",
]

FINGER_DEFAULT_PORT = 79

#: The longest user name a query may carry, in bytes.
MAX_USER_BYTES = 256

_FORWARDING_MESSAGE = (
    "A finger query naming another host (user@host) asks the server to relay it; "
    "gophergem never sends one."
)
_FORWARDING_NEXT_STEP = "Finger that host directly: finger://host/user."


def _check_user(user: str) -> str:
    """
    Refuse what a user name may not hold: C{@} (a forwarding query), a
    C{/} or whitespace (RFC 1288's C{/W} switch and anything like it),
    control characters.

    @raise InvalidRequest: On any of them, or a name over L{MAX_USER_BYTES}.
    """
    if "@" in user:
        raise InvalidRequest(message=_FORWARDING_MESSAGE, next_step=_FORWARDING_NEXT_STEP)
    if any(c.isspace() or c == "/" or ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in user):
        raise InvalidRequest(
            message="A finger user name may not hold spaces, slashes or control characters."
        )
    try:
        size = len(user.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidRequest(message="The finger user name is not valid Unicode text.") from None
    if size > MAX_USER_BYTES:
        raise InvalidRequest(message=f"The finger user name is longer than {MAX_USER_BYTES} bytes.")
    return user


def _unquote(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text, errors="strict") if "%" in text else text


@attrs.frozen
class FingerURL:
    """
    A parsed C{finger://} URL.

    @ivar host: Lower-case host name, IDNA-encoded, or an IP literal.
    @ivar port: TCP port, 79 by default.
    @ivar user: The user asked about (percent-decoded); C{""} lists users.
    """

    host: str
    port: int = FINGER_DEFAULT_PORT
    user: str = attrs.field(default="", validator=lambda _s, _a, v: _check_user(v))

    @classmethod
    def from_text(cls, text: str) -> FingerURL:
        """
        Parse C{finger://host[:port][/user]} or C{finger://user@host[:port][/]}.

        @raise InvalidRequest: If C{text} is not a usable finger URL: another
            scheme, no host, a bad port, a query, a user given twice, or a
            forwarding query (a user holding C{@}, in either spelling).
        """
        parts = split_url(text, "finger")
        if parts.query is not None:
            raise InvalidRequest(message="A finger:// URL has no query; name the user in its path.")
        userinfo, at, authority = parts.authority.rpartition("@")
        try:
            from_path = _unquote(parts.path[1:])
            from_userinfo = _unquote(userinfo) if at else ""
        except UnicodeDecodeError:
            raise InvalidRequest(message="The finger user name is not valid UTF-8.") from None
        if at and from_path:
            raise InvalidRequest(
                message="The finger:// URL names a user twice (before the host and in the path)."
            )
        if ":" in userinfo:
            raise InvalidRequest(message="A finger:// URL may not carry a password.")
        if at and not from_userinfo:
            raise InvalidRequest(message="The finger:// URL has an empty user before its @.")
        host, port = host_and_port(authority, FINGER_DEFAULT_PORT, "finger")
        return cls(host=host, port=port, user=from_path or from_userinfo)

    def to_text(self) -> str:
        """Print the canonical URL: C{finger://host[:port]/user}, default port omitted."""
        from urllib.parse import quote

        authority = format_host(self.host, self.port, FINGER_DEFAULT_PORT)
        return f"finger://{authority}/{quote(self.user, safe='')}"

    def request_line(self) -> bytes:
        """The query line: the user (or nothing) and CRLF."""
        return encode_query(self.user)


def encode_query(user: str = "") -> bytes:
    """
    The query line for C{user} (C{""}: list users), ending in CRLF.

    @raise InvalidRequest: If C{user} is a forwarding query or holds what a
        user name may not.
    """
    return _check_user(user).encode("utf-8") + b"\r\n"


def decode_answer(data: bytes | bytearray, *, truncated: bool = False) -> DecodedText:
    """
    Decode a finger answer (every byte up to the close; RFC 1288 says
    ASCII, plans are often UTF-8) and sanitise it as any server text: line
    ends become C{\\n}, escape sequences and other control characters go.
    Never raises.

    @param truncated: The answer was cut at the caller's size cap.
    """
    decoded = decode_body(data, truncated=truncated)
    text = decoded.text.replace("\r\n", "\n").replace("\r", "\n")
    return attrs.evolve(decoded, text=sanitise(text))
