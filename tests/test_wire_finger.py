"""
Tests for L{gophergem.wire.finger}: both URL spellings, the query line, and
the refusal of forwarding queries (RFC 1288 section 3.2.1).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import InvalidRequest
from gophergem.wire.finger import MAX_USER_BYTES, FingerURL, decode_answer, encode_query


@pytest.mark.parametrize(
    ("text", "host", "port", "user"),
    [
        ("finger://example.org/alice", "example.org", 79, "alice"),
        ("finger://alice@example.org", "example.org", 79, "alice"),
        ("finger://alice@Example.ORG:7979/", "example.org", 7979, "alice"),
        ("finger://example.org", "example.org", 79, ""),
        ("finger://example.org/", "example.org", 79, ""),
        ("finger://example.org/al%69ce", "example.org", 79, "alice"),
        ("finger://[::1]:79/bob#x", "::1", 79, "bob"),
        ("finger://x.org/j%C3%B6rg", "x.org", 79, "jörg"),
    ],
)
def test_both_spellings(text: str, host: str, port: int, user: str) -> None:
    """finger://host/user and finger://user@host name the same query; empty lists users."""
    url = FingerURL.from_text(text)
    assert (url.host, url.port, url.user) == (host, port, user)


def test_to_text_is_the_path_spelling() -> None:
    """The canonical URL puts the user in the path, and parses back to the same value."""
    url = FingerURL.from_text("finger://alice@example.org:79")
    assert url.to_text() == "finger://example.org/alice"
    assert FingerURL.from_text("finger://h:80/a%20b".replace("%20", "")).to_text() == (
        "finger://h:80/ab"
    )


@pytest.mark.parametrize(
    "text",
    [
        "finger://alice@relay.example@example.org",
        "finger://example.org/alice@relay.example",
        "finger://example.org/alice%40relay.example",
        "finger://alice%40relay@example.org",
        "finger://example.org/alice@",
    ],
)
def test_forwarding_is_refused(text: str) -> None:
    """A query naming another host is never sent: refused as INVALID_REQUEST, saying why."""
    with pytest.raises(InvalidRequest) as info:
        FingerURL.from_text(text)
    assert "relay" in info.value.message
    assert info.value.code == "INVALID_REQUEST"


@pytest.mark.parametrize(
    "text",
    [
        "finger://a@example.org/b",  # a user twice
        "finger://@example.org",  # an empty user before @
        "finger://example.org/a?b",  # a query
        "finger://example.org/%2FW%20alice",  # the /W switch
        "finger://example.org/a/b",
        "finger://example.org/a%0D%0Ab",
        "finger://example.org/%FF",
        "finger://example.org/" + "a" * (MAX_USER_BYTES + 1),
        "gemini://example.org/",
    ],
)
def test_refused(text: str) -> None:
    """What cannot be a plain finger query is refused before anything is dialled."""
    with pytest.raises(InvalidRequest):
        FingerURL.from_text(text)


def test_query_line() -> None:
    """The query is the user and CRLF; an empty query lists users."""
    assert FingerURL.from_text("finger://h/alice").request_line() == b"alice\r\n"
    assert encode_query() == b"\r\n"
    assert encode_query("jörg") == "jörg\r\n".encode()
    with pytest.raises(InvalidRequest):
        encode_query("a@b")


def test_decode_answer_sanitises() -> None:
    """Plans are decoded (UTF-8 or a guess), line ends made LF, escapes removed."""
    decoded = decode_answer(b"Plan:\r\n\x1b[31mred\x1b[0m caf\xc3\xa9\r\nend\rx")
    assert decoded.text == "Plan:\nred café\nend\nx"
    assert decoded.charset == "utf-8"
    assert decode_answer(bytearray(b"caf\xe9")).text == "café"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.booleans())
def test_decode_answer_never_raises(data: bytes, truncated: bool) -> None:
    """Any bytes decode to text without a control character but tab and newline."""
    text = decode_answer(data, truncated=truncated).text
    assert not any(ord(c) < 0x20 and c not in "\t\n" for c in text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=20))
def test_from_text_only_raises_invalid_request(path: str, userinfo: str) -> None:
    """No URL text makes the finger parser raise anything but InvalidRequest."""
    for text in (f"finger://h/{path}", f"finger://{userinfo}@h/{path}", f"finger://{path}"):
        try:
            url = FingerURL.from_text(text)
        except InvalidRequest:
            continue
        assert FingerURL.from_text(url.to_text()) == url
        assert url.request_line().endswith(b"\r\n")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_encode_query_only_raises_invalid_request(user: str) -> None:
    """Any user text is a query line or an InvalidRequest, never a line break sent."""
    try:
        line = encode_query(user)
    except InvalidRequest:
        return
    assert line.count(b"\n") == 1 and line.endswith(b"\r\n") and b"@" not in line
