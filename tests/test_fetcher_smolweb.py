"""
Tests for L{gophergem.fetcher.smolweb} and its peers
L{gophergem.fetcher.finger}, L{gophergem.fetcher.nex} and
L{gophergem.fetcher.spartan}: the small web's pipelines on an in-memory
network (no sockets, no real time), and L{gophergem.fetcher.Fetcher.smolweb}
dispatching by scheme.
"""

from __future__ import annotations

from ipaddress import ip_address

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.protocol import Factory, Protocol

from gophergem.mcp.schemas import SmolwebPayload
from gophergem.render.payloads import payload
from gophergem.results import (
    BinaryResult,
    FetchFailure,
    GeminiBinaryResult,
    GemtextResult,
    MenuResult,
    RedirectResult,
    SuccessResult,
    TextResult,
)
from gophergem.testing import FakeGopherServer, FakeSmolServer, MemoryNetwork
from gophergem.testing.hostile import (
    FINGER_BEHAVIOURS,
    NEX_BEHAVIOURS,
    SPARTAN_BEHAVIOURS,
    HostilePlainServer,
    listen_hostile,
)
from tests.helpers.fetcher import REFUSED_ANSWERS, REFUSED_LITERALS

HOST_IP = "192.0.2.20"  # never dialled: the memory reactor only records it

PLAN = b"Plan:\r\nHacking on \x1b[31mgophergem\x1b[0m.\r\n"
LISTING = (
    b"# Directory listing for /\r\n=> /posts/ posts/\r\n=> notes.txt notes\r\n"
    b"=> gemini://g.example/ elsewhere\r\n"
)
PAGE = b"# Hello\r\n=> /other.gmi Other\r\n=: /search Search\r\n=> nex://n.example/ a nex link\r\n"


@pytest.fixture
def net() -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("s.example", HOST_IP)
    return network


@pytest.fixture
def finger(net: MemoryNetwork) -> FakeSmolServer:
    return net.listen(HOST_IP, 79, FakeSmolServer({b"alice": PLAN, b"": b"alice\r\nbob\r\n"}))


@pytest.fixture
def nex(net: MemoryNetwork) -> FakeSmolServer:
    return net.listen(
        HOST_IP,
        1900,
        FakeSmolServer(
            {
                b"/": LISTING,
                b"/notes.txt": b"x" * 5000,
                b"/page.gmi": PAGE,
                b"/cat.png": b"\x89PNG\r\n\x1a\nrest",
            }
        ),
    )


def _search(data: bytes) -> bytes:
    return b"2 text/gemini\r\nYou asked: " + data + b"\r\n"


@pytest.fixture
def spartan(net: MemoryNetwork) -> FakeSmolServer:
    return net.listen(
        HOST_IP,
        300,
        FakeSmolServer(
            {
                b"s.example / 0": b"2 text/gemini; charset=utf-8\r\n" + PAGE,
                b"s.example /plain.txt 0": b"2 text/plain\r\nplain words\r\n",
                b"s.example /img 0": b"2 image/png\r\n\x89PNG",
                b"s.example /moved 0": b"3 /new\r\n",
                b"s.example /broken 0": b"5 The server broke\r\n",
                b"s.example /robots.txt 0": b"4 Not found\r\n",
                **{f"s.example /search {n}".encode(): _search for n in range(1, 64)},
            },
            spartan=True,
            missing=b"4 File not found\r\n",
        ),
    )


# --- Finger -------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["finger://s.example/alice", "finger://alice@s.example"])
def test_finger_plan_both_spellings(net: MemoryNetwork, finger: FakeSmolServer, url: str) -> None:
    """Both URL spellings ask for the user's plan: a text, sanitised (no escapes)."""
    result = net.run(net.fetcher().smolweb(url))
    assert isinstance(result, TextResult), result
    assert result.text == "Plan:\nHacking on gophergem.\n"
    assert result.request_info.url == "finger://s.example/alice"
    assert (result.request_info.host, result.request_info.port) == ("s.example", 79)
    assert result.request_info.timestamp is not None
    assert finger.requests == [(b"alice", b"")]


def test_finger_lists_users(net: MemoryNetwork, finger: FakeSmolServer) -> None:
    """An empty user sends an empty query line: the list of users."""
    result = net.run(net.fetcher().smolweb("finger://s.example/"))
    assert isinstance(result, TextResult) and result.text == "alice\nbob\n"
    assert finger.requests == [(b"", b"")]


@pytest.mark.parametrize(
    "url", ["finger://s.example/bob@other.example", "finger://bob%40other.example@s.example"]
)
def test_finger_forwarding_refused(net: MemoryNetwork, finger: FakeSmolServer, url: str) -> None:
    """A forwarding query is INVALID_REQUEST, and nothing is looked up or dialled."""
    result = net.run(net.fetcher().smolweb(url))
    assert isinstance(result, FetchFailure) and result.error.code == "INVALID_REQUEST"
    assert net.attempts == [] and net.resolver.lookups == []


def test_finger_takes_no_input(net: MemoryNetwork, finger: FakeSmolServer) -> None:
    """input for a finger URL is refused: the user is named in the URL."""
    result = net.run(net.fetcher().smolweb("finger://s.example/alice", input="x"))
    assert isinstance(result, FetchFailure) and result.error.code == "INVALID_REQUEST"
    assert net.attempts == []


def test_finger_cached_and_refreshed(net: MemoryNetwork, finger: FakeSmolServer) -> None:
    """A second fetch is served from the cache; refresh asks again."""
    fetcher = net.fetcher()
    net.run(fetcher.smolweb("finger://s.example/alice"))
    again = net.run(fetcher.smolweb("finger://s.example/alice"))
    assert isinstance(again, TextResult) and again.cache.cached
    fresh = net.run(fetcher.smolweb("finger://s.example/alice", refresh=True))
    assert isinstance(fresh, TextResult) and not fresh.cache.cached
    assert len(finger.requests) == 2


# --- Nex ----------------------------------------------------------------------------


def test_nex_directory_is_a_document_of_absolute_links(
    net: MemoryNetwork, nex: FakeSmolServer
) -> None:
    """A directory listing comes back as gemtext whose links are absolute URLs."""
    result = net.run(net.fetcher().smolweb("nex://s.example/"))
    assert isinstance(result, GemtextResult), result
    assert [link.url for link in result.links] == [
        "nex://s.example/posts/",
        "nex://s.example/notes.txt",
        "gemini://g.example/",
    ]
    assert result.request_info.path == "/"
    assert nex.requests == [(b"/", b"")]


def test_nex_text_windows(net: MemoryNetwork, nex: FakeSmolServer) -> None:
    """A text file is a text result, read in windows by offset."""
    fetcher = net.fetcher(smolweb={"max_rendered_chars": 2000})
    first = net.run(fetcher.smolweb("nex://s.example/notes.txt"))
    assert isinstance(first, TextResult), first
    assert first.window.total == 5000 and first.window.next_offset is not None
    rest = net.run(fetcher.smolweb("nex://s.example/notes.txt", offset=first.window.next_offset))
    assert isinstance(rest, TextResult) and rest.cache.cached
    assert first.text + rest.text == "x" * (first.window.next_offset + len(rest.text))
    past = net.run(fetcher.smolweb("nex://s.example/notes.txt", offset=6000))
    assert isinstance(past, FetchFailure) and past.error.code == "INVALID_REQUEST"


def test_nex_gemtext_file(net: MemoryNetwork, nex: FakeSmolServer) -> None:
    """A .gmi file is gemtext; Nex has no input links, so =: is a text line."""
    result = net.run(net.fetcher().smolweb("nex://s.example/page.gmi"))
    assert isinstance(result, GemtextResult)
    assert [link.url for link in result.links] == [
        "nex://s.example/other.gmi",
        "nex://n.example/",
    ]


def test_nex_binary_described(net: MemoryNetwork, nex: FakeSmolServer) -> None:
    """A binary file is described, never returned."""
    result = net.run(net.fetcher().smolweb("nex://s.example/cat.png"))
    assert isinstance(result, BinaryResult)
    assert result.mime_type == "image/png" and result.size == 12


def test_nex_never_closing_ends_by_the_deadline(net: MemoryNetwork) -> None:
    """A Nex server that sends and never closes: what arrived, marked, by the deadline."""
    net.listen(HOST_IP, 1900, FakeSmolServer({b"/a.txt": b"partial"}, close=False))
    fetcher = net.fetcher(smolweb={"timeout_seconds": 5})
    result = net.run(fetcher.smolweb("nex://s.example/a.txt"), advance=1)
    assert isinstance(result, TextResult), result
    assert result.text == "partial" and result.incomplete_reason == "deadline"


def test_nex_silent_server_times_out(net: MemoryNetwork) -> None:
    """A Nex server that sends nothing and never closes: TIMEOUT at the deadline."""
    net.listen(HOST_IP, 1900, FakeSmolServer({}, close=False))
    fetcher = net.fetcher(smolweb={"timeout_seconds": 5})
    result = net.run(fetcher.smolweb("nex://s.example/"), advance=1)
    assert isinstance(result, FetchFailure) and result.error.code == "TIMEOUT"


# --- Spartan ------------------------------------------------------------------------


def test_spartan_page_marks_input_links(net: MemoryNetwork, spartan: FakeSmolServer) -> None:
    """A Spartan page is gemtext: =: links take input; links of every scheme absolute."""
    result = net.run(net.fetcher().smolweb("spartan://s.example/"))
    assert isinstance(result, GemtextResult), result
    assert [(link.url, link.takes_input) for link in result.links] == [
        ("spartan://s.example/other.gmi", False),
        ("spartan://s.example/search", True),
        ("nex://n.example/", False),
    ]
    assert spartan.requests == [(b"s.example / 0", b"")]


def test_spartan_input_is_the_data_block(net: MemoryNetwork, spartan: FakeSmolServer) -> None:
    """input is sent as the data block; the URL shown never carries it; not cached."""
    fetcher = net.fetcher()
    result = net.run(fetcher.smolweb("spartan://s.example/search", input="café"))
    assert isinstance(result, GemtextResult), result
    assert result.lines[0].content == "You asked: café"
    assert spartan.requests == [(b"s.example /search 5", "café".encode())]
    assert result.request_info.url == "spartan://s.example/search"
    assert result.request_info.has_query is True
    net.run(fetcher.smolweb("spartan://s.example/search", input="café"))
    assert len(spartan.requests) == 2  # never cached


def test_spartan_query_is_the_data_block(net: MemoryNetwork, spartan: FakeSmolServer) -> None:
    """A URL's query is sent the same way, decoded."""
    net.run(net.fetcher().smolweb("spartan://s.example/search?a%20b"))
    assert spartan.requests == [(b"s.example /search 3", b"a b")]


def test_spartan_redirect_reported(net: MemoryNetwork, spartan: FakeSmolServer) -> None:
    """A 3 is reported with its absolute target and never followed."""
    result = net.run(net.fetcher().smolweb("spartan://s.example/moved"))
    assert isinstance(result, RedirectResult), result
    assert result.new_url == "spartan://s.example/new"
    assert (result.permanent, result.cross_host, result.scheme) == (False, False, "spartan")
    assert len(spartan.requests) == 1


@pytest.mark.parametrize(
    ("path", "code", "status"),
    [("/missing", "PERMANENT_ERROR", 4), ("/broken", "TEMPORARY_ERROR", 5)],
)
def test_spartan_errors(
    net: MemoryNetwork, spartan: FakeSmolServer, path: str, code: str, status: int
) -> None:
    """4 and 5 each have their own code, with the status and the server's message."""
    result = net.run(net.fetcher().smolweb(f"spartan://s.example{path}"))
    assert isinstance(result, FetchFailure), result
    assert (result.error.code, result.error.status) == (code, status)
    assert result.error.meta in ("File not found", "The server broke")


def test_spartan_text_and_binary(net: MemoryNetwork, spartan: FakeSmolServer) -> None:
    """text/* is a success with its MIME type; anything else is described."""
    fetcher = net.fetcher()
    text = net.run(fetcher.smolweb("spartan://s.example/plain.txt"))
    assert isinstance(text, SuccessResult) and text.content == "plain words\n"
    binary = net.run(fetcher.smolweb("spartan://s.example/img"))
    assert isinstance(binary, GeminiBinaryResult) and binary.mime_type == "image/png"


def test_spartan_robots_txt(net: MemoryNetwork) -> None:
    """robots.txt is read over Spartan; a disallowed path is BLOCKED_BY_ROBOTS."""
    server = net.listen(
        HOST_IP,
        300,
        FakeSmolServer(
            {b"s.example /robots.txt 0": b"2 text/plain\r\nUser-agent: *\nDisallow: /\n"},
            spartan=True,
        ),
    )
    fetcher = net.fetcher(smolweb={"respect_robots_txt": True})
    result = net.run(fetcher.smolweb("spartan://s.example/page"))
    assert isinstance(result, FetchFailure) and result.error.code == "BLOCKED_BY_ROBOTS"
    assert server.requests == [(b"s.example /robots.txt 0", b"")]


def test_finger_and_nex_never_probe_robots(net: MemoryNetwork, finger: FakeSmolServer) -> None:
    """Finger has no robots.txt convention: nothing but the query is sent."""
    fetcher = net.fetcher(smolweb={"respect_robots_txt": True})
    assert isinstance(net.run(fetcher.smolweb("finger://s.example/alice")), TextResult)
    assert finger.requests == [(b"alice", b"")]


# --- the policy, across schemes ------------------------------------------------------


@pytest.mark.parametrize("host", REFUSED_LITERALS)
@pytest.mark.parametrize("scheme", ["finger", "nex", "spartan"])
def test_refused_literal_spellings(net: MemoryNetwork, scheme: str, host: str) -> None:
    """Every spelling of a non-public address is BLOCKED with no lookup and no connection."""
    fetcher = net.fetcher(smolweb={"allow_local_hosts": False})
    result = net.run(fetcher.smolweb(f"{scheme}://{host}/"))
    assert isinstance(result, FetchFailure) and result.error.code == "BLOCKED", result
    assert net.attempts == [] and net.resolver.lookups == []


@pytest.mark.parametrize("name", sorted(REFUSED_ANSWERS))
@pytest.mark.parametrize("scheme", ["finger", "nex", "spartan"])
def test_refused_resolver_answers(net: MemoryNetwork, scheme: str, name: str) -> None:
    """A name resolving to any refused address is BLOCKED, and nothing is dialled."""
    net.resolver.add(name, *REFUSED_ANSWERS[name])
    fetcher = net.fetcher(smolweb={"allow_local_hosts": False})
    result = net.run(fetcher.smolweb(f"{scheme}://{name}/"))
    assert isinstance(result, FetchFailure) and result.error.code == "BLOCKED"
    assert net.attempts == []


def test_allowlist(net: MemoryNetwork, finger: FakeSmolServer) -> None:
    """SMOLWEB_ALLOWED_HOSTS and _PORTS refuse before any lookup."""
    fetcher = net.fetcher(smolweb={"allowed_hosts": frozenset({"other.example"})})
    result = net.run(fetcher.smolweb("finger://s.example/alice"))
    assert isinstance(result, FetchFailure) and result.error.code == "BLOCKED"
    assert net.resolver.lookups == []


def test_pacing_is_shared_across_schemes(
    net: MemoryNetwork, finger: FakeSmolServer, nex: FakeSmolServer
) -> None:
    """One host's turns are shared by Finger and Nex: the second fetch waits its turn."""
    fetcher = net.fetcher(smolweb={"requests_per_minute": 1, "timeout_seconds": 600})
    assert isinstance(net.run(fetcher.smolweb("finger://s.example/alice")), TextResult)
    waiting = fetcher.smolweb("nex://s.example/notes.txt")
    net.flush()
    assert not waiting.called and nex.requests == []
    net.reactor.advance(60)
    assert isinstance(net.run(waiting), TextResult)


def test_other_schemes_go_to_their_own_pipelines(net: MemoryNetwork) -> None:
    """gopher:// gives what gopher() gives; input is the type-7 search."""
    net.listen(
        HOST_IP,
        70,
        FakeGopherServer({b"/q": lambda t: b"iYou: " + (t or b"") + b"\tf\t(NULL)\t0\r\n.\r\n"}),
    )
    fetcher = net.fetcher()
    via_smolweb = net.run(fetcher.smolweb("gopher://s.example/7/q", input="hi"))
    direct = net.run(net.fetcher().gopher("gopher://s.example/7/q", search="hi"))
    assert isinstance(via_smolweb, MenuResult)
    assert attrs.evolve(via_smolweb, cache=direct.cache, request_info=direct.request_info) == direct  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["titan://s.example/x", "http://s.example/", "", "s.example"])
def test_unknown_schemes_refused(net: MemoryNetwork, url: str) -> None:
    """A scheme smolweb_fetch does not read is INVALID_REQUEST, nothing dialled."""
    result = net.run(net.fetcher().smolweb(url))
    assert isinstance(result, FetchFailure) and result.error.code == "INVALID_REQUEST"
    assert net.attempts == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_url_gives_a_result(url: str) -> None:
    """
    Whatever the text, a result comes back (never an exception, never an
    internal FETCH_ERROR), and no non-public address is dialled.
    """
    network = MemoryNetwork()
    fetcher = network.fetcher(smolweb={"allow_local_hosts": False})
    for scheme in ("finger://", "nex://", "spartan://"):
        result = network.run(fetcher.smolweb(scheme + url))
        assert not (isinstance(result, FetchFailure) and result.error.code == "FETCH_ERROR")
    assert all(not ip_address(host).is_private for host, _ in network.attempts)


def test_a_server_that_resets(net: MemoryNetwork) -> None:
    """A connection reset before any byte is CONNECTION_FAILED."""

    class Reset(Protocol):
        def connectionMade(self) -> None:
            assert self.transport is not None
            self.transport.abortConnection()

    net.listen(HOST_IP, 79, Factory.forProtocol(Reset))
    result = net.run(net.fetcher().smolweb("finger://s.example/alice"))
    assert isinstance(result, FetchFailure) and result.error.code == "CONNECTION_FAILED"


# --- hostile servers ------------------------------------------------------------------

HOSTILE = sorted(
    [("finger", n) for n in FINGER_BEHAVIOURS]
    + [("nex", n) for n in NEX_BEHAVIOURS]
    + [("spartan", n) for n in SPARTAN_BEHAVIOURS]
)


@pytest.mark.parametrize(("scheme", "name"), HOSTILE, ids=[f"{s}:{n}" for s, n in HOSTILE])
def test_hostile_fetch_ends_by_the_deadline(scheme: str, name: str) -> None:
    """
    Every hostile behaviour ends by the deadline with a result the tool's
    output schema accepts, never an internal error, and nothing left open.
    """
    net = MemoryNetwork()
    net.resolver.add("bad.example", HOST_IP)
    port = {"finger": 79, "nex": 1900, "spartan": 300}[scheme]
    server = HostilePlainServer.playing(scheme, name, net.reactor)
    listen_hostile(net, HOST_IP, port, server)
    fetcher = net.fetcher(smolweb={"timeout_seconds": 5, "max_response_size": 64 * 1024})
    started = net.reactor.seconds()
    path = "/alice" if scheme == "finger" else "/"
    result = net.run(fetcher.smolweb(f"{scheme}://bad.example{path}"), advance=0.25)
    assert net.reactor.seconds() - started <= 5.25
    assert not (isinstance(result, FetchFailure) and result.error.code == "FETCH_ERROR"), result
    SmolwebPayload.model_validate(payload(result))
    net.flush()
    assert server.open == 0
