"""
Tests for L{gophergem.wire.titan}: the URL's parameters, parsed and built,
a link's own parameters ignored for an upload, and the request.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.errors import InvalidRequest
from gophergem.url import GeminiURL
from gophergem.wire.titan import (
    MAX_REQUEST_LINE_BYTES,
    HeaderParser,
    ResponseHeader,
    TitanURL,
    encode_request,
)


def test_parameters_parsed() -> None:
    """size, mime and token are path parameters, values percent-decoded."""
    url = TitanURL.from_text(
        "titan://Example.org/notes/a.gmi;size=12;mime=text/plain;token=s%3Bcret"
    )
    assert url == TitanURL("example.org", 1965, "/notes/a.gmi", 12, "text/plain", "s;cret")
    assert TitanURL.from_text("titan://h:1966/x;MIME=a/b;size=0;junk;x=y").size == 0
    assert TitanURL.from_text("titan://h/x").size is None


def test_to_text_hides_the_token() -> None:
    """A printed URL never shows the token; the request line carries it."""
    url = TitanURL("h", 1965, "/a", 3, "text/gemini; charset=utf-8", "t;=k")
    assert url.to_text() == "titan://h/a;size=3;mime=text/gemini%3B%20charset%3Dutf-8;token=***"
    assert (
        url.request_line()
        == b"titan://h/a;size=3;mime=text/gemini%3B%20charset%3Dutf-8;token=t%3B%3Dk\r\n"
    )
    assert "t;=k" not in repr(url)
    assert TitanURL.from_text(url.to_text(show_token=True)) == url


def test_a_links_parameters_are_ignored() -> None:
    """for_upload drops what the link said and sends the caller's own."""
    url = TitanURL.for_upload("titan://h/a;size=999;mime=x/y;token=theirs", 5)
    assert (url.size, url.mime, url.token) == (5, None, None)
    assert url.without_parameters() == TitanURL("h", path="/a")
    assert url.gemini_url() == GeminiURL("h", 1965, "/a")


def test_request() -> None:
    """The line and exactly the content; a zero-byte upload (a delete) is size=0."""
    assert encode_request(TitanURL("h", path="/a"), b"hey") == b"titan://h/a;size=3\r\nhey"
    assert encode_request(TitanURL.for_upload("titan://h:1966/a", 0), b"") == (
        b"titan://h:1966/a;size=0\r\n"
    )
    with pytest.raises(InvalidRequest):
        encode_request(TitanURL("h", size=4), b"hey")


@pytest.mark.parametrize(
    "text",
    [
        "titan://h/a?q",
        "titan://h/a;size=-1",
        "titan://h/a;size=1e3",
        "titan://h/a;size=%C2%B2",
        "titan://h/a;token=%0A",
        "titan://h/a;mime=%FF",
        "gemini://h/a",
    ],
)
def test_refused(text: str) -> None:
    """A query, a size that is not a count of bytes, control characters: refused."""
    with pytest.raises(InvalidRequest):
        TitanURL.from_text(text)


def test_upload_arguments_are_checked() -> None:
    """A negative size, or a token holding a line break, is refused."""
    with pytest.raises(InvalidRequest):
        TitanURL.for_upload("titan://h/a", -1)
    with pytest.raises(InvalidRequest):
        TitanURL.for_upload("titan://h/a", 1, token="a\r\nb")
    with pytest.raises(InvalidRequest):
        TitanURL("h").request_line()
    with pytest.raises(InvalidRequest):
        TitanURL("h", path="/" + "a" * MAX_REQUEST_LINE_BYTES, size=1).request_line()


def test_the_answer_is_a_gemini_response() -> None:
    """Titan's answer is read with Gemini's header parser."""
    parser = HeaderParser()
    assert parser.feed(b"30 gemini://h/a\r\n") == ResponseHeader(30, "gemini://h/a")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_from_text_only_raises_invalid_request(rest: str) -> None:
    """No URL text makes the titan parser raise anything but InvalidRequest."""
    for text in (f"titan://{rest}", f"titan://h/a;{rest}", f"titan://h/{rest}"):
        try:
            url = TitanURL.from_text(text)
        except InvalidRequest:
            continue
        assert TitanURL.from_text(url.to_text(show_token=True)) == url
