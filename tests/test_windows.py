"""
Reading large resources window by window (SPEC §3, §8): walks reassemble the
resource exactly from one download, and over-size resources are no dead end.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from twisted.internet.testing import MemoryReactorClock

from gophergem.fetcher._budget import cut_text, text_cost
from gophergem.mcp.server import build_server
from gophergem.policy.cache import ResponseCache
from gophergem.render.payloads import payload
from gophergem.results import GemtextResult, MenuResult, PartialLineResult, TextResult
from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork
from gophergem.wire.text import sanitise
from tests.helpers.mcp import run_with_network

HOST_IP = "192.0.2.30"  # memory reactor only: never dialled


@pytest.fixture
def net() -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("big.example", HOST_IP)
    return network


def test_menu_walk(net: MemoryNetwork) -> None:
    """A 5,000-item menu read by offset until next_offset is null comes back whole, one download."""
    lines = b"".join(b"0Item %d\t/i/%d\tbig.example\t70\r\n" % (n, n) for n in range(5000))
    server = net.listen(HOST_IP, 70, FakeGopherServer({b"": lines + b".\r\n"}))
    # A payload budget roomy enough that the item cap decides (see the
    # budget tests below for the other way round).
    fetcher = net.fetcher(max_menu_items=1000, max_rendered_chars=1_000_000)
    titles: list[str] = []
    offset: int | None = 0
    windows = 0
    while offset is not None:
        result = net.run(fetcher.gopher("gopher://big.example/", offset=offset))
        assert isinstance(result, MenuResult)
        assert result.window.total == 5000 and len(result.items) <= 1000
        assert result.cache.cached is (windows > 0)
        titles.extend(item.title for item in result.items)
        offset = result.window.next_offset
        windows += 1
    assert titles == [f"Item {n}" for n in range(5000)]
    assert windows == 5 and len(server.requests) == 1


def test_text_walk(net: MemoryNetwork) -> None:
    """A 1.5 MB text read window by window reassembles exactly; windows abut."""
    body = "".join(f"line {n:07d} {'x' * 40}\n" for n in range(30_000))
    assert len(body) > 1_500_000
    server = net.listen(HOST_IP, 70, FakeGopherServer({b"/t": body.encode()}))
    fetcher = net.fetcher(max_response_size=2 * 1024 * 1024, max_rendered_chars=50_000)
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = net.run(fetcher.gopher("gopher://big.example/0/t", offset=offset))
        assert isinstance(result, TextResult)
        assert result.window.offset == sum(map(len, pieces))
        pieces.append(result.text)
        offset = result.window.next_offset
    assert "".join(pieces) == body
    assert len(server.requests) == 1


def test_refresh_mid_walk_starts_over(net: MemoryNetwork) -> None:
    """refresh during a walk fetches afresh, and later windows come from the new download."""
    server = net.listen(HOST_IP, 70, FakeGopherServer({b"/t": b"a" * 300}))
    fetcher = net.fetcher(max_rendered_chars=100)
    net.run(fetcher.gopher("gopher://big.example/0/t"))
    server.responses[b"/t"] = b"b" * 300
    second = net.run(fetcher.gopher("gopher://big.example/0/t", offset=100, refresh=True))
    third = net.run(fetcher.gopher("gopher://big.example/0/t", offset=200))
    assert (second.text, third.text) == ("b" * 100, "b" * 100)
    assert third.cache.cached is True and len(server.requests) == 2


def test_over_size_is_not_a_dead_end(net: MemoryNetwork) -> None:
    """A 3 MB resource under a 1 MiB cap returns its first part, flagged, not an error."""
    net.listen(HOST_IP, 70, FakeGopherServer({b"/huge": b"z" * (3 * 1024 * 1024)}))
    result = net.run(net.fetcher().gopher("gopher://big.example/0/huge"))
    assert isinstance(result, TextResult)
    assert result.size == 1024 * 1024
    assert result.window.size_capped and result.window.truncated
    assert result.window.total == 1024 * 1024


def test_latin1_text(net: MemoryNetwork) -> None:
    """Latin-1 Gopher text decodes to the right characters and says so."""
    net.listen(HOST_IP, 70, FakeGopherServer({b"/l": "Grüße aus Köln, café\n".encode("latin-1")}))
    result = net.run(net.fetcher().gopher("gopher://big.example/0/l"))
    assert result.text == "Grüße aus Köln, café\n" and result.charset == "iso-8859-1"
    # Gopher declares no charset: one picked by detection is labelled a guess.
    assert result.decoding == "guessed" and payload(result)["decoding"] == "guessed"


def test_cache_ttl_and_lru() -> None:
    """Entries expire after the TTL on the fake clock, and the least recently used goes first."""
    clock = MemoryReactorClock()
    cache = ResponseCache(clock, ttl=10, max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    clock.advance(10)
    assert cache.get("a") is None and len(cache) == 1


def test_cache_ttl_zero_stores_nothing() -> None:
    """A TTL of 0 disables the cache."""
    cache = ResponseCache(MemoryReactorClock(), ttl=0)
    cache.put("a", 1)
    assert cache.get("a") is None and len(cache) == 0


def test_cache_byte_budget() -> None:
    """The cache also holds at most its byte budget, evicting the least recently used."""

    class Body:
        def __init__(self, size: int) -> None:
            self.size = size

    cache = ResponseCache(MemoryReactorClock(), ttl=60, max_entries=100, max_bytes=1000)
    cache.put("a", Body(400))
    cache.put("b", Body(400))
    cache.put("c", Body(400))
    assert cache.get("a") is None and cache.get("b") and cache.get("c")
    cache.put("huge", Body(5000))
    assert cache.get("huge") is None and len(cache) == 2


@pytest.mark.parametrize(
    "line",
    [
        b"ix\r\n",  # a quarter of a million tiny info lines in 1 MiB
        b"1a\tb\tc\t1\r\n",
        b"1Some title number here\t/some/selector/path/x\tbig.example\t70\r\n",
        b"0" + b"T" * 400 + b"\t/" + b"s" * 400 + b"\tbig.example\t70\r\n",
        "1Заголовок пункта меню\t/путь/к/файлу\tbig.example\t70\r\n".encode(),  # noqa: RUF001
    ],
    ids=["tiny-info", "tiny-links", "ordinary", "long", "cyrillic"],
)
def test_cached_menu_weighs_what_it_holds(net: MemoryNetwork, line: bytes) -> None:
    """
    A cached menu counts against the byte budget by what its parsed items
    hold in memory (measured with tracemalloc), not by its size on the wire,
    which for tiny lines is a thirtieth of it.  The estimate errs high.
    """
    data = line * (256 * 1024 // len(line)) + b".\r\n"
    net.listen(HOST_IP, 70, FakeGopherServer({b"": data}))
    fetcher = net.fetcher()
    tracemalloc.start()
    try:
        result = net.run(fetcher.gopher("gopher://big.example/"))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert isinstance(result, MenuResult) and result.window.total == len(data) // len(line)
    ((download, _),) = [
        fetcher.gopher_pipeline.cache.get(key) for key in ["gopher://big.example/1"]
    ]
    assert held <= download.weight <= 3 * held, (held, download.weight)


def test_menus_of_tiny_lines_cannot_crowd_the_cache(net: MemoryNetwork) -> None:
    """
    Under a 4 MiB budget, a 256 KiB menu of tiny lines (65,536 items) is
    too heavy to keep, so asking again downloads again; an ordinary small
    menu is kept.
    """
    tiny = b"ix\r\n" * 65536 + b".\r\n"
    small = b"0About\t/about\tbig.example\t70\r\n.\r\n"
    server = net.listen(HOST_IP, 70, FakeGopherServer({b"/tiny": tiny, b"/small": small}))
    fetcher = net.fetcher()
    fetcher.gopher_pipeline.cache.max_bytes = 4 * 1024 * 1024
    for _ in range(2):
        for selector in ("/tiny", "/small"):
            assert isinstance(
                net.run(fetcher.gopher(f"gopher://big.example/1{selector}")), MenuResult
            )
    assert server.requests == [b"/tiny", b"/small", b"/tiny"]


# --- a window bounds the whole payload (issue 11) ---------------------------------------

LIMIT = 50_000
# What a payload holds besides its window's content: request_info, the
# window and cache fields, notes.  Short URLs here; a long URL adds its length.
ENVELOPE = 1_500
GEMINI_IP = "192.0.2.31"  # memory reactor only: never dialled


def _gemini_net(body: bytes, mime: str = "text/gemini") -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("localhost", GEMINI_IP)
    network.listen_gemini(
        GEMINI_IP, 1965, FakeGeminiServer({"/": f"20 {mime}\r\n".encode() + body})
    )
    return network


def _tool(network: MemoryNetwork, name: str, url: str, **options: Any) -> tuple[str, str]:
    """Call one fetch tool through the SDK client: its text block and structuredContent (JSON)."""
    options.setdefault("max_rendered_chars", LIMIT)
    options.setdefault("max_response_size", 2 * 1024 * 1024)
    gemini = {k: v for k, v in options.items() if k != "max_menu_items"}
    server = build_server(network.fetcher(gemini=gemini, **options))

    async def body() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, {"url": url})

    result = run_with_network(network, body)
    assert not result.is_error, result.content
    return result.content[0].text, json.dumps(result.structured_content, ensure_ascii=False)


def _assert_bounded(text: str, structured: str) -> None:
    assert len(text) <= len(structured), "the text block never holds more than the structure"
    assert len(structured) <= LIMIT + ENVELOPE, len(structured)
    # Even with json.dumps's roomy default separators and every escape.
    assert len(json.dumps(json.loads(structured), ensure_ascii=False)) <= LIMIT + ENVELOPE


@pytest.mark.parametrize(
    "line",
    [b"=> a", b"=> a b", b"a", b"* a", b"> a", b"# a", b"=> /x 2024-01-01 a"],
    ids=["link", "labelled-link", "text", "list", "quote", "heading", "dated-link"],
)
def test_gemtext_of_tiny_lines_stays_in_its_window(line: bytes) -> None:
    """
    200,000 one-word gemtext lines under max_rendered_chars=50,000 give a text
    block and structuredContent of at most 50,000 characters and the envelope
    (it used to be 510,333 for links).
    """
    count = min(200_000, (1024 * 1024 - 1024) // (len(line) + 1))
    text, structured = _tool(
        _gemini_net((line + b"\n") * count), "gemini_fetch", "gemini://localhost/"
    )
    _assert_bounded(text, structured)
    data = json.loads(structured)
    assert data["truncated"] is True and data["document"]["lines"]
    assert data["next_offset"] > 0


@pytest.mark.parametrize(
    "line",
    [b"ia\tx\tx\t70\r\n", b"1a\ta\tbig.example\t70\r\n", b"0\t\x01\x02\x03\tbig.example\t70\r\n"],
    ids=["info", "link", "control-selector"],
)
def test_menu_of_tiny_items_stays_in_its_window(net: MemoryNetwork, line: bytes) -> None:
    """100,000 tiny menu items give a payload within max_rendered_chars, whatever max_menu_items."""
    net.listen(HOST_IP, 70, FakeGopherServer({b"": line * 100_000 + b".\r\n"}))
    text, structured = _tool(net, "gopher_fetch", "gopher://big.example/", max_menu_items=1_000_000)
    _assert_bounded(text, structured)
    assert json.loads(structured)["next_offset"] > 100


@pytest.mark.parametrize(
    "char", ['"', "\\", "\t", "\n"], ids=["quote", "backslash", "tab", "newline"]
)
def test_text_of_escaped_characters_stays_in_its_window(net: MemoryNetwork, char: str) -> None:
    """A text body of characters JSON escapes is cut by what they cost as JSON, not by count."""
    body = (char * 9 + "a") * 20_000
    net.listen(HOST_IP, 70, FakeGopherServer({b"/t": body.encode()}))
    text, structured = _tool(net, "gopher_fetch", "gopher://big.example/0/t")
    _assert_bounded(text, structured)
    assert json.loads(structured)["next_offset"] > LIMIT // 3
    gemini_text, gemini_structured = _tool(
        _gemini_net(body.encode(), "text/plain"), "gemini_fetch", "gemini://localhost/"
    )
    _assert_bounded(gemini_text, gemini_structured)


def test_gemtext_walk_returns_every_line_once() -> None:
    """
    Walking a page of tiny lines (links, a preformatted block, a line too
    dear to parse in one window) window by window returns every line of the
    page exactly once, in order, as one parse of the whole page would.
    """
    from gophergem.url import GeminiURL
    from gophergem.wire.gemtext import parse_gemtext

    page = (
        "".join(f'=> /p{n} {n}\n* item {n}\n```\npre "{n}" \\\n```\n' for n in range(3000))
        + "=> /"
        + "l" * 900
        + " long\n"
        + "tail\n"
    )
    network = _gemini_net(page.encode())
    fetcher = network.fetcher(gemini={"max_rendered_chars": 2_000}, max_rendered_chars=2_000)
    lines: list[Any] = []
    partial = ""
    offset: int | None = 0
    windows = 0
    while offset is not None:
        result = network.run(fetcher.gemini("gemini://localhost/", offset=offset))
        windows += 1
        assert result.window.offset == offset
        if isinstance(result, PartialLineResult):
            partial += result.text
        else:
            assert isinstance(result, GemtextResult)
            assert len(json.dumps(payload(result)["document"])) <= 2_000
            lines.extend(result.lines)
        offset = result.window.next_offset
    whole = parse_gemtext(page, GeminiURL.from_text("gemini://localhost/"))
    long_line = "=> /" + "l" * 900 + " long\n"
    assert partial == long_line  # dearer than 2,000 as a parsed link: delivered as text
    assert [line for line in whole.lines if not line.content.startswith("=> /lll")] == lines
    assert windows > 100


def test_menu_walk_under_a_payload_budget(net: MemoryNetwork) -> None:
    """A menu walked under a payload budget returns every item once, in order."""
    lines = b"".join(b"1Item %d\t/i/%d\tbig.example\t70\r\n" % (n, n) for n in range(5000))
    net.listen(HOST_IP, 70, FakeGopherServer({b"": lines + b".\r\n"}))
    fetcher = net.fetcher(max_menu_items=1000, max_rendered_chars=10_000)
    titles: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = net.run(fetcher.gopher("gopher://big.example/", offset=offset))
        assert len(json.dumps(payload(result)["items"])) <= 10_000
        titles.extend(item.title for item in result.items)
        offset = result.window.next_offset
    assert titles == [f"Item {n}" for n in range(5000)]


def test_escaped_text_walk_reassembles(net: MemoryNetwork) -> None:
    """A text of quotes and backslashes walked window by window reassembles exactly."""
    body = '"\\ab\t\n' * 5000
    net.listen(HOST_IP, 70, FakeGopherServer({b"/t": body.encode()}))
    fetcher = net.fetcher(max_rendered_chars=1_000)
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = net.run(fetcher.gopher("gopher://big.example/0/t", offset=offset))
        assert len(json.dumps(result.text)) <= 1_000 + 2
        pieces.append(result.text)
        offset = result.window.next_offset
    assert "".join(pieces) == body


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from('ab"\\\t\né☕'), min_size=1, max_size=400),
    limit=st.integers(min_value=2, max_value=300),
    data=st.data(),
)
def test_cut_text_is_the_longest_window_that_fits(text: str, limit: int, data: Any) -> None:
    """cut_text ends the window at the most characters whose JSON costs at most the limit."""
    offset = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    end = cut_text(text, offset, limit)
    assert offset < end <= len(text)
    assert len(json.dumps(text[offset:end], ensure_ascii=False)) - 2 <= limit
    if end < len(text):
        assert len(json.dumps(text[offset : end + 1], ensure_ascii=False)) - 2 > limit


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200), st.booleans())
def test_text_cost_counts_what_json_escapes(raw: str, keep_newlines: bool) -> None:
    """
    On sanitised text, text_cost (one pass of JSON's own encoder) is its
    length plus one for each character JSON escapes with two: quote,
    backslash, newline, tab, carriage return.
    """
    text = sanitise(raw, keep_newlines=keep_newlines)
    escaped = sum(text.count(c) for c in '"\\\n\t\r')
    assert text_cost(text) == len(text) + escaped
    assert text_cost(text) == len(json.dumps(text, ensure_ascii=False)) - 2
