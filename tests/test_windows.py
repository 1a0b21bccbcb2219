"""
Reading large resources window by window (SPEC §3, §8): walks reassemble the
resource exactly from one download, and over-size resources are no dead end.
"""

from __future__ import annotations

import tracemalloc

import pytest
from twisted.internet.testing import MemoryReactorClock

from gophergem.policy.cache import ResponseCache
from gophergem.results import MenuResult, TextResult
from gophergem.testing import FakeGopherServer, MemoryNetwork

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
    fetcher = net.fetcher(max_menu_items=1000)
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
    ((download, _),) = [fetcher.gopher_cache.get(key) for key in ["gopher://big.example/1"]]
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
    fetcher.gopher_cache.max_bytes = 4 * 1024 * 1024
    for _ in range(2):
        for selector in ("/tiny", "/small"):
            assert isinstance(
                net.run(fetcher.gopher(f"gopher://big.example/1{selector}")), MenuResult
            )
    assert server.requests == [b"/tiny", b"/small", b"/tiny"]
