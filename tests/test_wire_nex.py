"""
Tests for L{gophergem.wire.nex}: the URL, the request line, typing by
extension, and directory listings read as gemtext with absolute links.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import InvalidRequest
from gophergem.wire.nex import (
    MAX_REQUEST_BYTES,
    NexKind,
    NexURL,
    decode_document,
    kind_of,
    mime_type_of,
    parse_directory,
)


def test_url() -> None:
    """Host lower-cased, default port omitted, dot-segments removed, path never empty."""
    url = NexURL.from_text("nex://Example.org:1900/a/./b/../c.txt")
    assert url == NexURL("example.org", 1900, "/a/c.txt")
    assert url.to_text() == "nex://example.org/a/c.txt"
    assert NexURL.from_text("nex://h").to_text() == "nex://h/"
    assert NexURL.from_text("nex://h:1901/x%20y").to_text() == "nex://h:1901/x%20y"


def test_request_line() -> None:
    """The path goes out percent-decoded, as the server names its files, with CRLF."""
    assert NexURL.from_text("nex://h/").request_line() == b"/\r\n"
    assert NexURL.from_text("nex://h/a%20b/é.txt").request_line() == "/a b/é.txt\r\n".encode()
    assert NexURL.from_text("nex://h/s?q").request_line() == b"/s?q\r\n"


@pytest.mark.parametrize(
    "text",
    ["nex://h/a%0Ab", "nex://h/a%00", "nex://h/?%0D", "nex://h/" + "a" * MAX_REQUEST_BYTES],
)
def test_unsendable_paths_are_refused(text: str) -> None:
    """A path that would break the request line is refused when the URL is parsed."""
    with pytest.raises(InvalidRequest):
        NexURL.from_text(text)


@pytest.mark.parametrize(
    ("path", "kind", "mime"),
    [
        ("/", NexKind.DIRECTORY, "text/gemini"),
        ("/posts/", NexKind.DIRECTORY, "text/gemini"),
        ("/index.gmi", NexKind.GEMTEXT, "text/gemini"),
        ("/a.GEMINI", NexKind.GEMTEXT, "text/gemini"),
        ("/notes.txt", NexKind.TEXT, "text/plain"),
        ("/README", NexKind.TEXT, "text/plain"),
        ("/page.html", NexKind.TEXT, "text/html"),
        ("/cat.png", NexKind.BINARY, "image/png"),
        ("/a.tar.gz", NexKind.BINARY, "application/x-tar"),
    ],
)
def test_kind_by_extension(path: str, kind: NexKind, mime: str) -> None:
    """A trailing / is a directory; other paths are typed by their extension."""
    assert kind_of(path) is kind
    assert NexURL("h", path=path).kind is kind
    assert mime_type_of(path) == mime


def test_directory_links_are_absolute_nex_urls() -> None:
    """=> lines become links resolved against the directory; other lines are kept."""
    listing = (
        "# Directory listing for /posts/\n"
        "=> /posts/first.txt first.txt\n"
        "=> second.gmi\n"
        "=> ../ up\n"
        "=> gemini://example.org/ elsewhere\n"
        "plain line\n"
    )
    document = parse_directory(listing, NexURL.from_text("nex://h:1901/posts/"))
    assert [link.url for link in document.links] == [
        "nex://h:1901/posts/first.txt",
        "nex://h:1901/posts/second.gmi",
        "nex://h:1901/",
        "gemini://example.org/",
    ]
    assert [link.text for link in document.links] == ["first.txt", None, "up", "elsewhere"]
    assert document.lines[0].type == "heading1"
    assert document.lines[-1].type == "text"
    assert not any(link.takes_input for link in document.links)


def test_decode_document() -> None:
    """A document is decoded as UTF-8, or by a guess."""
    assert decode_document(b"caf\xc3\xa9").text == "café"
    assert decode_document(b"caf\xe9").charset != "utf-8"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_any_listing_parses(data: bytes) -> None:
    """Any bytes decode and parse as a listing, and every link is a string."""
    document = parse_directory(decode_document(data).text, NexURL("h"))
    assert all(isinstance(link.url, str) for link in document.links)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_from_text_only_raises_invalid_request(rest: str) -> None:
    """No URL text makes the nex parser raise anything but InvalidRequest."""
    for text in (f"nex://{rest}", f"nex://h/{rest}"):
        try:
            url = NexURL.from_text(text)
        except InvalidRequest:
            continue
        assert NexURL.from_text(url.to_text()) == url


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_typing_any_path_never_raises(path: str) -> None:
    """Any path has a kind and a MIME type."""
    assert isinstance(kind_of(path), NexKind)
    assert "/" in mime_type_of(path)
