"""
Tests for L{gophergem.fetcher.gopher}: the whole Gopher pipeline on an
in-memory network (no sockets, no real time).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.internet.protocol import Factory, Protocol

from gophergem.fetcher import gopher as gopher_pipeline
from gophergem.mcp.schemas import GopherPayload
from gophergem.render.payloads import payload
from gophergem.results import BinaryResult, FetchFailure, MenuResult, TextResult
from gophergem.testing import FakeGopherServer, MemoryNetwork
from gophergem.wire import gopher as gopher_wire
from tests.helpers.fetcher import HOST_IP, MENU, REFUSED_ANSWERS, REFUSED_LITERALS


@pytest.fixture
def net() -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("g.example", HOST_IP)
    return network


@pytest.fixture
def server(net: MemoryNetwork) -> FakeGopherServer:
    return net.listen(
        HOST_IP,
        70,
        FakeGopherServer(
            {
                b"": MENU,
                b"/about.txt": b"First\r\n..dotted\r\n.\r\n",
                b"/caf\xe9.bin": b"\x89PNG\r\n\x1a\nrest",
                b"/search": lambda terms: (
                    b"iYou asked: " + (terms or b"") + b"\tf\t(NULL)\t0\r\n.\r\n"
                ),
            }
        ),
    )


def test_menu(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A menu comes back as items with next_url, and the request was the empty selector."""
    result = net.run(net.fetcher().gopher("gopher://g.example/"))
    assert isinstance(result, MenuResult)
    assert [i.item_type for i in result.items] == ["i", "1", "0", "9", "7"]
    assert result.items[0].next_url == ""
    assert result.items[1].next_url == "gopher://g.example/1/sub"
    assert server.requests == [b""]
    assert result.request_info.timestamp == "2027-01-15T08:00:00Z"


def test_following_next_url_sends_exact_bytes(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """Following a next_url sends exactly the selector bytes the menu named (Latin-1 here)."""
    fetcher = net.fetcher()
    menu = net.run(fetcher.gopher("gopher://g.example/"))
    result = net.run(fetcher.gopher(menu.items[3].next_url))
    assert isinstance(result, BinaryResult)
    assert server.requests[-1] == b"/caf\xe9.bin"
    assert (result.mime_type, result.size) == ("image/png", 12)


def test_text_unstuffed(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """Text loses its terminator and its dot-stuffing."""
    result = net.run(net.fetcher().gopher("gopher://g.example/0/about.txt"))
    assert isinstance(result, TextResult)
    assert result.text == "First\n.dotted\n"


def test_search_argument(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """The search argument is sent as selector TAB terms on a type-7 item."""
    result = net.run(net.fetcher().gopher("gopher://g.example/7/search", search="two words"))
    assert server.requests[-1] == b"/search\ttwo words"
    assert isinstance(result, MenuResult)
    assert result.items[0].title == "You asked: two words"


def test_search_query_in_url(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A ?query on a type-7 URL still works as the search."""
    net.run(net.fetcher().gopher("gopher://g.example/7/search?hello%20there"))
    assert server.requests[-1] == b"/search\thello there"


def test_search_ignored_on_other_types(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """Search terms on a non-search item are dropped, and the result says so."""
    result = net.run(net.fetcher().gopher("gopher://g.example/0/about.txt", search="x"))
    assert server.requests[-1] == b"/about.txt"
    assert result.request_info.search_ignored is True


@pytest.mark.parametrize("item_type", ["8", "T", "2"])
def test_interactive_types_never_connect(net: MemoryNetwork, item_type: str) -> None:
    """Telnet, tn3270 and CSO items answer NOT_FETCHABLE without a lookup or a connection."""
    result = net.run(net.fetcher().gopher(f"gopher://g.example/{item_type}"))
    assert isinstance(result, FetchFailure)
    assert result.error.code == "NOT_FETCHABLE"
    assert result.request_info.timestamp is None
    assert net.attempts == [] and net.resolver.lookups == []


@pytest.mark.parametrize(
    "answer",
    [["10.0.0.5"], ["93.184.216.34", "127.0.0.1"], ["169.254.169.254"], ["::ffff:127.0.0.1"]],
)
def test_private_answers_are_blocked(net: MemoryNetwork, answer: list[str]) -> None:
    """A name resolving to any non-public address is BLOCKED and nothing is dialled."""
    net.resolver.add("evil.example", *answer)
    result = net.run(net.fetcher(allow_local_hosts=False).gopher("gopher://evil.example/"))
    assert isinstance(result, FetchFailure)
    assert result.error.code == "BLOCKED"
    assert net.attempts == []


def test_literal_spelling_blocked_without_lookup(net: MemoryNetwork) -> None:
    """A decimal spelling of 127.0.0.1 is refused without asking the resolver."""
    result = net.run(net.fetcher(allow_local_hosts=False).gopher("gopher://2130706433/"))
    assert result.error.code == "BLOCKED"
    assert net.resolver.lookups == [] and net.attempts == []


def test_vetted_address_is_dialled(net: MemoryNetwork) -> None:
    """The connection goes to the vetted address that the name resolved to."""
    net.resolver.add("public.example", "93.184.216.34")
    net.listen("93.184.216.34", 70, FakeGopherServer({b"": b".\r\n"}))
    net.run(net.fetcher(allow_local_hosts=False).gopher("gopher://public.example/"))
    assert net.attempts == [("93.184.216.34", 70)]


def test_dns_failure(net: MemoryNetwork) -> None:
    """An unknown host name is a DNS_ERROR."""
    result = net.run(net.fetcher().gopher("gopher://nowhere.example/"))
    assert result.error.code == "DNS_ERROR"


def test_refused(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A closed port is CONNECTION_FAILED, never an empty menu."""
    result = net.run(net.fetcher().gopher("gopher://g.example:7070/"))
    assert result.error.code == "CONNECTION_FAILED"


def test_deadline(net: MemoryNetwork) -> None:
    """A server that never answers ends in TIMEOUT at the deadline, on the fake clock."""
    net.listen(HOST_IP, 70, FakeGopherServer({b"": b""}, close=False))
    start = net.reactor.seconds()
    d = net.fetcher(timeout_seconds=5).gopher("gopher://g.example/")
    net.flush()
    net.reactor.advance(4.9)
    net.flush()
    assert not d.called
    result = net.run(d, advance=0.2)
    assert result.error.code == "TIMEOUT"
    assert net.reactor.seconds() - start == pytest.approx(5.1)


def test_size_cap_returns_first_part(net: MemoryNetwork) -> None:
    """A body over the size cap is cut there and returned as a flagged window, not an error."""
    net.listen(HOST_IP, 70, FakeGopherServer({b"/big": b"x" * 5000}))
    result = net.run(net.fetcher(max_response_size=1024).gopher("gopher://g.example/0/big"))
    assert isinstance(result, TextResult)
    assert result.size == 1024 and result.window.size_capped and result.window.truncated
    assert result.text == "x" * 1024


def test_cache_and_refresh(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A repeat is served from the cache; refresh fetches again; the TTL expires entries."""
    fetcher = net.fetcher()
    first = net.run(fetcher.gopher("gopher://g.example/"))
    net.reactor.advance(10)
    second = net.run(fetcher.gopher("gopher://g.example/"))
    assert (first.cache.cached, second.cache.cached) == (False, True)
    assert second.cache.cache_age_seconds == 10
    assert len(server.requests) == 1
    net.run(fetcher.gopher("gopher://g.example/", refresh=True))
    assert len(server.requests) == 2
    net.reactor.advance(301)
    again = net.run(fetcher.gopher("gopher://g.example/"))
    assert again.cache.cached is False and len(server.requests) == 3


def test_errors_are_not_cached(net: MemoryNetwork) -> None:
    """A failed fetch is not remembered: the next call tries again."""
    fetcher = net.fetcher()
    net.run(fetcher.gopher("gopher://g.example/"))
    net.listen(HOST_IP, 70, FakeGopherServer({b"": b".\r\n"}))
    result = net.run(fetcher.gopher("gopher://g.example/"))
    assert isinstance(result, MenuResult)


@pytest.mark.parametrize(
    ("url", "parser", "cutter"),
    [
        ("gopher://g.example/", "parse_menu", "cut_items"),
        ("gopher://g.example/0/about.txt", "parse_text", "cut_text"),
    ],
    ids=["menu", "text"],
)
def test_cache_hit_neither_parses_nor_cuts(
    net: MemoryNetwork,
    server: FakeGopherServer,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    parser: str,
    cutter: str,
) -> None:
    """A cache hit reuses the window cut from the download: no parse, no cut, same content."""
    calls: list[str] = []
    for module, name in ((gopher_wire, parser), (gopher_pipeline, cutter)):
        real = getattr(module, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    fetcher = net.fetcher()
    first = net.run(fetcher.gopher(url))
    assert sorted(calls) == sorted([parser, cutter])
    calls.clear()
    second = net.run(fetcher.gopher(url))
    assert calls == [] and second.cache.cached is True
    assert attrs.evolve(second, cache=first.cache) == first


def test_cache_hit_ages(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """On a kept window only the age fields change from call to call, with the clock."""
    fetcher = net.fetcher()
    first = net.run(fetcher.gopher("gopher://g.example/0/about.txt"))
    ages = []
    for step in (7, 60):
        net.reactor.advance(step)
        hit = net.run(fetcher.gopher("gopher://g.example/0/about.txt"))
        assert hit.cache.cached is True and hit.cache.cached_at == first.cache.cached_at
        assert hit.request_info == first.request_info
        ages.append(hit.cache.cache_age_seconds)
    assert ages == [7, 67] and len(server.requests) == 1


def test_kept_window_takes_this_calls_request(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A kept window echoes the request of the call it answers, not the first call's."""
    fetcher = net.fetcher()
    net.run(fetcher.gopher("gopher://g.example/0/about.txt"))
    hit = net.run(fetcher.gopher("gopher://g.example/0/about.txt", search="x"))
    assert hit.cache.cached is True and hit.request_info.search_ignored is True


def test_refresh_discards_kept_windows(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """After refresh, every window comes from the new download, kept ones included."""
    fetcher = net.fetcher()
    net.run(fetcher.gopher("gopher://g.example/0/about.txt"))
    server.responses[b"/about.txt"] = b"Second\r\n.\r\n"
    fresh = net.run(fetcher.gopher("gopher://g.example/0/about.txt", refresh=True))
    hit = net.run(fetcher.gopher("gopher://g.example/0/about.txt"))
    assert fresh.text == hit.text == "Second\n" and hit.cache.cached is True


def test_kept_windows_count_in_the_cache_weight(net: MemoryNetwork) -> None:
    """A cached download weighs what it holds plus its window allowance, never exceeded."""
    lines = b"".join(b"0Item %d\t/%d\tg.example\t70\r\n" % (n, n) for n in range(3000))
    net.listen(HOST_IP, 70, FakeGopherServer({b"": lines + b".\r\n"}))
    fetcher = net.fetcher(max_rendered_chars=5_000)
    offset: int | None = 0
    while offset is not None:
        offset = net.run(fetcher.gopher("gopher://g.example/", offset=offset)).window.next_offset
    cache = fetcher.gopher_pipeline.cache
    hit = cache.get("gopher://g.example/1")
    assert hit is not None
    download = hit[0]
    memo = download.windows
    assert len(memo) > 0 and memo._spent <= memo.allowance
    assert download.weight == download.held + memo.allowance
    assert cache._bytes == download.weight


def test_menu_windows(net: MemoryNetwork) -> None:
    """A long menu is read window by window from one download; windows abut."""
    lines = b"".join(b"0Item %d\t/%d\tg.example\t70\r\n" % (n, n) for n in range(25))
    server = net.listen(HOST_IP, 70, FakeGopherServer({b"": lines + b".\r\n"}))
    fetcher = net.fetcher(max_menu_items=10)
    seen, offset = [], 0
    while offset is not None:
        result = net.run(fetcher.gopher("gopher://g.example/", offset=offset))
        seen.extend(i.title for i in result.items)
        assert result.window.total == 25
        offset = result.window.next_offset
    assert seen == [f"Item {n}" for n in range(25)]
    assert len(server.requests) == 1


def test_offset_past_end(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """An offset past the end is INVALID_REQUEST naming the size."""
    result = net.run(net.fetcher().gopher("gopher://g.example/", offset=99))
    assert result.error.code == "INVALID_REQUEST"
    assert "5 items" in result.error.message


def test_allowlists(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """Hosts and ports off the configured allowlists are BLOCKED before any lookup."""
    fetcher = net.fetcher(allowed_hosts=frozenset({"other.example"}))
    assert net.run(fetcher.gopher("gopher://g.example/")).error.code == "BLOCKED"
    fetcher = net.fetcher(allowed_ports=frozenset({7070}))
    assert net.run(fetcher.gopher("gopher://g.example/")).error.code == "BLOCKED"
    assert net.resolver.lookups == []


def test_overlong_selector(net: MemoryNetwork) -> None:
    """A selector over the configured length is INVALID_REQUEST."""
    result = net.run(net.fetcher(max_selector_length=10).gopher("gopher://g.example/0" + "a" * 11))
    assert result.error.code == "INVALID_REQUEST"


def test_robots_disallow_blocks(net: MemoryNetwork) -> None:
    """A path robots.txt disallows for us is BLOCKED_BY_ROBOTS; only the probe was sent."""
    server = net.listen(
        HOST_IP,
        70,
        FakeGopherServer(
            {b"robots.txt": b"User-agent: *\r\nDisallow: /secret\r\n", b"/secret": b"no"}
        ),
    )
    fetcher = net.fetcher(respect_robots_txt=True)
    result = net.run(fetcher.gopher("gopher://g.example/0/secret"))
    assert result.error.code == "BLOCKED_BY_ROBOTS"
    assert server.requests == [b"robots.txt"]
    net.run(fetcher.gopher("gopher://g.example/0/public"))
    assert server.requests == [b"robots.txt", b"/public"]  # the rules were cached


def test_robots_fail_open(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A Gopher host without a usable robots.txt imposes no rules."""
    result = net.run(net.fetcher(respect_robots_txt=True).gopher("gopher://g.example/"))
    assert isinstance(result, MenuResult)
    assert server.requests == [b"robots.txt", b""]


def test_deadline_covers_robots_probe(net: MemoryNetwork) -> None:
    """A robots.txt probe that never answers spends the fetch's one deadline."""
    net.listen(HOST_IP, 70, FakeGopherServer({}, missing=b"", close=False))
    fetcher = net.fetcher(respect_robots_txt=True, timeout_seconds=3)
    result = net.run(fetcher.gopher("gopher://g.example/"), advance=0.5)
    assert result.error.code == "TIMEOUT"


def test_same_host_paced(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """At 60 a minute the second fetch of a host is not sent before one second has passed."""
    fetcher = net.fetcher(requests_per_minute=60, cache_enabled=False)
    first = fetcher.gopher("gopher://g.example/", refresh=True)
    net.flush()
    assert first.called and server.requests == [b""]
    second = fetcher.gopher("gopher://g.example/0/about.txt", refresh=True)
    net.flush()
    net.reactor.advance(0.999)
    net.flush()
    assert not second.called and server.requests == [b""]
    net.reactor.advance(0.001)
    net.flush()
    assert second.called and server.requests == [b"", b"/about.txt"]


def test_pacing_same_host(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """Ten fetches of one host at 60 a minute take nine seconds of fake time."""
    fetcher = net.fetcher(requests_per_minute=60, cache_enabled=False)
    start = net.reactor.seconds()
    pending = [fetcher.gopher("gopher://g.example/", refresh=True) for _ in range(10)]
    done = []
    for d in pending:
        d.addCallback(lambda r: done.append(net.reactor.seconds() - start))
    for _ in range(12):
        net.flush()
        net.reactor.advance(1)
    assert done == [float(n) for n in range(10)]


def test_pacing_different_hosts_in_parallel(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """Different hosts are not paced against each other."""
    net.resolver.add("h.example", HOST_IP)
    fetcher = net.fetcher(requests_per_minute=60)
    first = fetcher.gopher("gopher://g.example/")
    second = fetcher.gopher("gopher://h.example/")
    net.flush()
    assert first.called and second.called


# Literal spellings: never looked up, never dialled.
@pytest.mark.parametrize("host", REFUSED_LITERALS)
@pytest.mark.parametrize("scheme", ["gopher", "gemini"])
def test_refused_literal_spellings(net: MemoryNetwork, scheme: str, host: str) -> None:
    """Every spelling of a non-public address is BLOCKED with no lookup and no connection."""
    fetcher = net.fetcher(allow_local_hosts=False, gemini={"allow_local_hosts": False})
    fetch = fetcher.gopher if scheme == "gopher" else fetcher.gemini
    result = net.run(fetch(f"{scheme}://{host}/"))
    assert isinstance(result, FetchFailure) and result.error.code == "BLOCKED", result
    assert net.attempts == [] and net.resolver.lookups == []
    assert "127.0.0.1" not in result.error.message  # the refused address is not echoed


@pytest.mark.parametrize("name", sorted(REFUSED_ANSWERS))
def test_refused_resolver_answers(net: MemoryNetwork, name: str) -> None:
    """A name resolving to any refused address is BLOCKED, and nothing is dialled."""
    net.resolver.add(name, *REFUSED_ANSWERS[name])
    result = net.run(net.fetcher(allow_local_hosts=False).gopher(f"gopher://{name}/"))
    assert result.error.code == "BLOCKED" and net.attempts == []


def test_refused_spelling_count() -> None:
    """The table holds at least forty refused spellings."""
    assert len(REFUSED_LITERALS) + len(REFUSED_ANSWERS) >= 40


# --- partial content: resets and the deadline --------------------------------------


class _ResetAfter(Protocol):
    """Answers any selector with C{factory.data}, then aborts (a reset)."""

    def dataReceived(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(self.factory.data)  # type: ignore[attr-defined]
        self.transport.abortConnection()  # type: ignore[attr-defined]


class ResettingServer(Factory):
    protocol = _ResetAfter

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.connections = 0

    def buildProtocol(self, addr: object) -> Protocol | None:
        self.connections += 1
        return super().buildProtocol(addr)


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/", MenuResult), ("/0/x", TextResult), ("/9/x", BinaryResult)],
    ids=["menu", "text", "binary"],
)
def test_reset_mid_answer_is_incomplete(net: MemoryNetwork, path: str, kind: type) -> None:
    """
    A menu, text or binary cut by a reset keeps what arrived, marked
    incomplete (connection_reset) in the result and the payload, and is not
    cached: the next call fetches again.
    """
    server = net.listen(HOST_IP, 70, ResettingServer(b"iFirst\tf\t(NULL)\t0\r\n1Sec"))
    fetcher = net.fetcher()
    result = net.run(fetcher.gopher(f"gopher://g.example{path}"))
    assert isinstance(result, kind)
    assert result.incomplete and result.incomplete_reason == "connection_reset"
    data = payload(result)
    GopherPayload.model_validate(data)
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "connection_reset")
    again = net.run(fetcher.gopher(f"gopher://g.example{path}"))
    assert not again.cache.cached and server.connections == 2


def test_reset_after_a_terminated_text_is_whole(net: MemoryNetwork) -> None:
    """A text that ended with its '.' line is whole even if the connection was then reset."""
    net.listen(HOST_IP, 70, ResettingServer(b"All of it.\r\n.\r\n"))
    result = net.run(net.fetcher().gopher("gopher://g.example/0/x"))
    assert isinstance(result, TextResult) and not result.incomplete
    assert result.text == "All of it.\n"


def test_reset_before_any_byte_is_an_error(net: MemoryNetwork) -> None:
    """A reset before the server sent anything stays an error, never an empty result."""
    net.listen(HOST_IP, 70, ResettingServer(b""))
    for path in ("/", "/0/x"):
        result = net.run(net.fetcher().gopher(f"gopher://g.example{path}"))
        assert result.error.code == "CONNECTION_FAILED", path


def test_clean_close_of_a_menu_without_terminator_is_whole(net: MemoryNetwork) -> None:
    """A menu without its '.' line, closed cleanly, is whole and cached (SPEC: tolerated)."""
    server = net.listen(HOST_IP, 70, FakeGopherServer({b"": b"iNo dot\tf\t(NULL)\t0\r\n"}))
    fetcher = net.fetcher()
    result = net.run(fetcher.gopher("gopher://g.example/"))
    assert isinstance(result, MenuResult) and not result.incomplete
    assert "incomplete" not in payload(result)
    assert net.run(fetcher.gopher("gopher://g.example/")).cache.cached
    assert server.requests == [b""]


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/", MenuResult), ("/0/x", TextResult), ("/9/x", BinaryResult)],
    ids=["menu", "text", "binary"],
)
def test_deadline_after_bytes_returns_them(net: MemoryNetwork, path: str, kind: type) -> None:
    """
    A server that sends part of an answer and holds the connection: at the
    deadline the part comes back as its kind, marked incomplete (deadline),
    not cached; the connection is closed.
    """
    server = net.listen(
        HOST_IP, 70, FakeGopherServer({}, missing=b"iPart\tf\t(NULL)\t0\r\n0Hal", close=False)
    )
    fetcher = net.fetcher(timeout_seconds=5)
    start = net.reactor.seconds()
    d = fetcher.gopher(f"gopher://g.example{path}")
    net.flush()
    net.reactor.advance(4.9)
    net.flush()
    assert not d.called
    result = net.run(d, advance=0.2)
    assert net.reactor.seconds() - start == pytest.approx(5.1)
    assert isinstance(result, kind)
    assert result.incomplete_reason == "deadline"
    data = payload(result)
    GopherPayload.model_validate(data)
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    assert "deadline" in data["note"]
    net.run(fetcher.gopher(f"gopher://g.example{path}"), advance=1)
    assert len(server.requests) == 2


def test_deadline_keeps_every_whole_menu_line(net: MemoryNetwork) -> None:
    """Every menu line that arrived before the deadline is there; a half line is kept as text."""
    net.listen(
        HOST_IP, 70, FakeGopherServer({}, missing=b"iPart\tf\t(NULL)\t0\r\n0Hal", close=False)
    )
    result = net.run(net.fetcher(timeout_seconds=2).gopher("gopher://g.example/"), advance=1)
    assert [item.title for item in result.items] == ["Part", "0Hal"]


def test_deadline_in_robots_probe_keeps_no_partial_policy(net: MemoryNetwork) -> None:
    """
    A robots.txt that stalls halfway is never read as a policy: the deadline
    ends the fetch in TIMEOUT, and no rules are remembered from the part.
    """
    robots = b"User-agent: *\r\nDisallow: /"  # "Disallow: /private" was coming
    server = net.listen(
        HOST_IP,
        70,
        FakeGopherServer({b"robots.txt": robots, b"": MENU}, close=False),
    )
    fetcher = net.fetcher(respect_robots_txt=True, timeout_seconds=3)
    result = net.run(fetcher.gopher("gopher://g.example/"), advance=0.5)
    assert result.error.code == "TIMEOUT"
    assert server.requests == [b"robots.txt"]


def test_caller_cancel_is_not_a_deadline(net: MemoryNetwork) -> None:
    """A caller that cancels a fetch after bytes arrived gets no result marked deadline."""
    net.listen(HOST_IP, 70, FakeGopherServer({}, missing=b"some text", close=False))
    d = net.fetcher(timeout_seconds=5).gopher("gopher://g.example/0/x")
    net.flush()
    box: list[object] = []
    d.addBoth(box.append)
    d.cancel()
    net.flush()
    assert box and not isinstance(box[0], TextResult), box


@pytest.mark.parametrize(
    ("item_type", "data"),
    [
        ("0", b"line one\r\n..two\r\n.\r\n"),
        ("1", b"iHello\t\terror.host\t1\r\n.\r\n"),
        ("9", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
    ],
)
def test_parse_consumes_the_raw_bytes(item_type: str, data: bytes) -> None:
    """Parsing empties the handed-over buffer: only the parsed download holds the body."""
    from gophergem.client.gopher import RawResponse
    from gophergem.url import GopherURL

    raw = RawResponse(bytearray(data), overflowed=False, clean=True)
    url = GopherURL("example.org", 70, item_type, b"/x")
    download = gopher_pipeline._parse(url, gopher_wire.category(item_type), raw, 0.0)
    assert raw.data == b""
    assert download.size == len(data)
    held = [
        v
        for v in attrs.asdict(download, recurse=False).values()
        if isinstance(v, bytes | bytearray)
    ]
    assert held == []


@pytest.mark.parametrize(
    ("seconds", "said"), [(1, "within 1 second."), (2.5, "within 2.5 seconds.")]
)
def test_counts_in_messages_agree(net: MemoryNetwork, seconds: float, said: str) -> None:
    """A count of one in a message takes the singular: 1 item, 1 second."""
    net.listen(HOST_IP, 70, FakeGopherServer({b"/one": b"iOnly\tf\t(NULL)\t0\r\n.\r\n"}))
    result = net.run(net.fetcher().gopher("gopher://g.example/1/one", offset=9))
    assert result.error.message.endswith("the resource has 1 item.")
    net.listen(HOST_IP, 71, FakeGopherServer({b"": b""}, close=False))
    d = net.fetcher(timeout_seconds=seconds).gopher("gopher://g.example:71/")
    result = net.run(d, advance=0.5)
    assert result.error.message.endswith(said)
