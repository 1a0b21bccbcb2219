"""
Hostile servers against the whole fetcher, in memory (L{gophergem.testing.hostile}).

Every behaviour of the harness gets the same aftermath check
(L{test_every_behaviour_ends_cleanly}): the result has the expected kind and
code, it arrives by the deadline, the hostile connection is closed, no
response buffer ever held more than its cap, the trust store holds a pin only
when a valid handshake completed, and the same fetcher (with room for one
fetch at a time, so a leaked slot would show) still serves well-behaved
hosts.  The tests after it check what is particular to each behaviour.

Everything runs on a L{MemoryNetwork}: no sockets, and time is its fake clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred
from twisted.logger import LogEvent, formatEvent, globalLogPublisher

from gophergem.mcp.schemas import GeminiPayload, GopherPayload
from gophergem.policy.pacing import MAX_SLOW_DOWN_SECONDS
from gophergem.render.payloads import payload
from gophergem.render.text import compact_text
from gophergem.results import (
    FetchFailure,
    GemtextResult,
    InputResult,
    MenuResult,
    PartialLineResult,
    RedirectResult,
    SuccessResult,
    TextResult,
)
from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork
from gophergem.testing.hostile import (
    FLOOD_INTERVAL,
    FLOOD_LIMIT,
    GEMINI_BEHAVIOURS,
    GOPHER_BEHAVIOURS,
    HostileGeminiServer,
    HostileGopherServer,
    listen_hostile,
)
from gophergem.wire.gemini import MAX_HEADER_BYTES
from gophergem.wire.gopher import ResponseBuffer
from gophergem.wire.robots import MAX_ROBOTS_BYTES

HOSTILE = "hostile.example"
HOSTILE_IP = "192.0.2.66"  # memory network only: never dialled
GOOD = "good.example"
GOOD_IP = "192.0.2.10"
DEADLINE = 5.0
STEP = 10 * FLOOD_INTERVAL  # fake seconds per network round: ten flood chunks at most
SECRET = "hunter2SECRETxyz"  # letters and digits: the same percent-encoded or not
GOOD_MENU = b"iAll is well\t\tgood.example\t70\r\n.\r\n"
GOOD_PAGE = b"20 text/gemini\r\n# All is well\n"

# --- the world: one memory network with a hostile host and a good one -------------


@attrs.define
class BufferWatch:
    """Every (bytes held, cap) a ResponseBuffer reached, from any protocol."""

    peaks: list[tuple[int, int]] = attrs.field(factory=list)

    def within_caps(self) -> bool:
        return all(size <= limit for size, limit in self.peaks)

    def largest(self) -> int:
        return max((size for size, _ in self.peaks), default=0)


@pytest.fixture
def buffers(monkeypatch: pytest.MonkeyPatch) -> BufferWatch:
    """Record what every ResponseBuffer (Gopher and Gemini bodies) holds after each feed."""
    watch = BufferWatch()
    original = ResponseBuffer.feed

    def feed(self: ResponseBuffer, data: bytes) -> bool:
        stop = original(self, data)
        watch.peaks.append((self.size, self.limit))
        return stop

    monkeypatch.setattr(ResponseBuffer, "feed", feed)
    return watch


@attrs.define
class World:
    net: MemoryNetwork
    buffers: BufferWatch
    good_gopher: FakeGopherServer
    good_gemini: FakeGeminiServer

    def gopher(self, name: str, **config: Any) -> tuple[HostileGopherServer, Any]:
        server = listen_hostile(
            self.net, HOSTILE_IP, 70, HostileGopherServer.named(name, self.net.reactor)
        )
        config.setdefault("timeout_seconds", DEADLINE)
        config.setdefault("max_concurrent_requests", 1)
        return server, self.net.fetcher(**config)  # type: ignore[return-value]

    def gemini(self, name: str, **config: Any) -> tuple[HostileGeminiServer, Any]:
        server = HostileGeminiServer.named(name, self.net.reactor, HOSTILE)
        listen_hostile(self.net, HOSTILE_IP, 1965, server)
        config.setdefault("timeout_seconds", DEADLINE)
        config.setdefault("max_concurrent_requests", 1)
        return server, self.net.fetcher(gemini=config)

    def run(self, d: Deferred[Any]) -> Any:
        return self.net.run(d, advance=STEP)

    def timed(self, d: Deferred[Any]) -> tuple[Any, float]:
        start = self.net.reactor.seconds()
        result = self.run(d)
        return result, self.net.reactor.seconds() - start

    def still_serves(self, fetcher: Any) -> None:
        """The fetcher still fetches from well-behaved hosts, Gopher and Gemini."""
        assert isinstance(self.run(fetcher.gopher(f"gopher://{GOOD}/", refresh=True)), MenuResult)
        page = self.run(fetcher.gemini(f"gemini://{GOOD}/", refresh=True))
        assert isinstance(page, GemtextResult), page


@pytest.fixture
def world(buffers: BufferWatch) -> World:
    net = MemoryNetwork()
    net.resolver.add(HOSTILE, HOSTILE_IP)
    net.resolver.add(GOOD, GOOD_IP)
    good_gopher = net.listen(GOOD_IP, 70, FakeGopherServer({b"": GOOD_MENU}))
    good_gemini = net.listen_gemini(
        GOOD_IP, 1965, FakeGeminiServer({"/": GOOD_PAGE}), hostname=GOOD
    )
    return World(net, buffers, good_gopher, good_gemini)


def kind_of(result: Any) -> str:
    """C{error:CODE} for a failure, else the payload's kind (C{partial_line} marked)."""
    if isinstance(result, FetchFailure):
        return f"error:{result.error.code}"
    if isinstance(result, PartialLineResult):
        return "partial_line"
    return str(payload(result)["kind"])


def shown(result: Any) -> str:
    """Everything a model would be shown: the structured payload and the text block."""
    data = payload(result)
    return repr(data) + compact_text(data)


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    """Every Twisted log event emitted meanwhile, formatted (failures included)."""
    lines: list[str] = []

    def observe(event: LogEvent) -> None:
        lines.append(formatEvent(event) or "")
        if "log_failure" in event:
            lines.append(event["log_failure"].getTraceback())

    globalLogPublisher.addObserver(observe)
    try:
        yield lines
    finally:
        globalLogPublisher.removeObserver(observe)


# --- every behaviour: the aftermath ---------------------------------------------------

# (protocol, behaviour) -> (path, expected kind, fetcher config overrides)
_ROBOTS = {"respect_robots_txt": True}
EXPECTED: dict[tuple[str, str], tuple[str, str, dict[str, Any]]] = {
    ("gopher", "trickle"): ("/", "menu", {}),
    ("gopher", "silent"): ("/", "error:TIMEOUT", {}),
    ("gopher", "never-close"): ("/", "menu", {}),
    ("gopher", "hold-mid-answer"): ("/", "menu", {}),
    ("gopher", "send-forever"): ("/0/text", "text", {}),
    ("gopher", "send-forever-utf8"): ("/0/text", "text", {"max_response_size": 1024}),
    ("gopher", "close-silently"): ("/0/text", "text", {}),
    ("gopher", "reset-mid-menu"): ("/", "menu", {}),
    ("gopher", "no-terminator"): ("/", "menu", {}),
    ("gopher", "lf-only"): ("/", "menu", {}),
    ("gopher", "cr-only"): ("/", "menu", {}),
    ("gopher", "huge-line"): ("/0/text", "text", {}),
    ("gopher", "many-items"): ("/", "menu", {"max_response_size": 64 * 1024}),
    ("gopher", "nul-invalid-utf8"): ("/", "menu", {}),
    ("gopher", "control-selectors"): ("/", "menu", {}),
    ("gopher", "ansi-bidi"): ("/", "menu", {}),
    ("gopher", "menu-ssrf-links"): ("/", "menu", {}),
    ("gopher", "robots-huge"): ("/", "menu", _ROBOTS),
    ("gopher", "robots-binary"): ("/", "menu", _ROBOTS),
    ("gopher", "robots-forever"): ("/", "menu", _ROBOTS),
    ("gemini", "trickle"): ("/", "error:TIMEOUT", {}),
    ("gemini", "silent"): ("/", "error:TIMEOUT", {}),
    ("gemini", "handshake-stall"): ("/", "error:TIMEOUT", {}),
    ("gemini", "never-close"): ("/", "gemtext", {}),
    ("gemini", "header-then-hold"): ("/", "error:TIMEOUT", {}),
    ("gemini", "status-then-hold"): ("/", "error:PERMANENT_ERROR", {}),
    ("gemini", "send-forever"): ("/", "success", {}),
    ("gemini", "send-forever-utf8"): ("/", "success", {"max_response_size": 1024}),
    ("gemini", "header-no-crlf"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "header-lf-only"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "status-non-numeric"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "status-one-digit"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "status-three-digit"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "status-27"): ("/", "gemtext", {}),
    ("gemini", "status-99"): ("/", "error:INVALID_STATUS", {}),
    ("gemini", "meta-too-long"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "meta-invalid-utf8"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "header-spaces-forever"): ("/", "error:PROTOCOL_ERROR", {}),
    ("gemini", "no-close-notify"): ("/", "gemtext", {}),
    ("gemini", "tls-alert"): ("/", "error:TLS_ERROR", {}),
    ("gemini", "tls-old-version"): ("/", "error:TLS_ERROR", {}),
    ("gemini", "not-tls"): ("/", "error:TLS_ERROR", {}),
    ("gemini", "cert-not-yet-valid"): ("/", "error:CERTIFICATE_NOT_YET_VALID", {}),
    ("gemini", "cert-expired"): ("/", "gemtext", {}),
    ("gemini", "cert-other-name"): ("/", "gemtext", {}),
    ("gemini", "cert-new-key-every-time"): ("/", "gemtext", {}),
    ("gemini", "redirect-private"): ("/", "redirect", {}),
    ("gemini", "redirect-metadata"): ("/", "redirect", {}),
    ("gemini", "redirect-other-scheme"): ("/", "redirect", {}),
    ("gemini", "redirect-self"): ("/", "redirect", {}),
    ("gemini", "slow-down-absurd"): ("/", "error:TEMPORARY_ERROR", {}),
    ("gemini", "slow-down-text"): ("/", "error:TEMPORARY_ERROR", {}),
    ("gemini", "robots-huge"): ("/", "gemtext", _ROBOTS),
    ("gemini", "robots-binary"): ("/", "gemtext", _ROBOTS),
    ("gemini", "robots-redirect"): ("/", "error:ROBOTS_UNAVAILABLE", _ROBOTS),
    ("gemini", "hostile-links"): ("/", "gemtext", {}),
    ("gemini", "nul-invalid-utf8"): ("/", "gemtext", {}),
    ("gemini", "ansi-bidi"): ("/", "gemtext", {}),
    ("gemini", "huge-line"): ("/", "partial_line", {}),
    ("gemini", "bogus-charset"): ("/", "success", {}),
    ("gemini", "sensitive-input"): ("/", "input", {}),
    ("gemini", "sensitive-echo"): ("/", "input", {}),
    ("gemini", "sensitive-echo-body"): ("/", "input", {}),
}

# Gemini behaviours that never complete a valid handshake: nothing may be pinned.
UNPINNED = {"handshake-stall", "tls-alert", "tls-old-version", "not-tls", "cert-not-yet-valid"}


def test_every_behaviour_has_an_expectation() -> None:
    """Each behaviour of the harness is covered by the aftermath test below."""
    registered = {("gopher", n) for n in GOPHER_BEHAVIOURS} | {
        ("gemini", n) for n in GEMINI_BEHAVIOURS
    }
    assert registered == set(EXPECTED)
    assert len(registered) >= 25


@pytest.mark.parametrize(
    ("protocol", "name"), sorted(EXPECTED), ids=[f"{p}:{n}" for p, n in sorted(EXPECTED)]
)
def test_every_behaviour_ends_cleanly(world: World, protocol: str, name: str) -> None:
    """
    Against every hostile behaviour: the expected kind and code by the deadline,
    nothing left open, no buffer over its cap, a schema-valid payload, pins only
    after a valid handshake, and the same fetcher keeps serving.
    """
    path, expected, config = EXPECTED[(protocol, name)]
    if protocol == "gopher":
        server, fetcher = world.gopher(name, **config)
        result, elapsed = world.timed(fetcher.gopher(f"gopher://{HOSTILE}{path}"))
        GopherPayload.model_validate(payload(result))
    else:
        server, fetcher = world.gemini(name, **config)
        result, elapsed = world.timed(fetcher.gemini(f"gemini://{HOSTILE}{path}"))
        GeminiPayload.model_validate(payload(result))
        pinned = world.net.pins.get(HOSTILE, 1965)
        assert (pinned is None) == (name in UNPINNED), pinned
    compact_text(payload(result))
    assert kind_of(result) == expected, result
    assert elapsed <= DEADLINE + STEP
    world.net.flush()
    assert server.open == 0, "the client left a hostile connection open"
    assert server.bytes_sent < FLOOD_LIMIT, "the client never cut the flood"
    assert world.buffers.within_caps(), max(world.buffers.peaks)
    world.still_serves(fetcher)


# --- Gopher ----------------------------------------------------------------------------


def test_gopher_trickle_is_cut_at_the_deadline(world: World) -> None:
    """
    A server sending a byte a second is cut off at the deadline, not after
    the whole menu; what arrived comes back marked incomplete (deadline).
    """
    server, fetcher = world.gopher("trickle")
    d = fetcher.gopher(f"gopher://{HOSTILE}/")
    world.net.flush()
    world.net.reactor.advance(DEADLINE - 0.1)
    world.net.flush()
    assert not d.called
    result, _ = world.timed(d)
    assert isinstance(result, MenuResult)
    assert result.incomplete_reason == "deadline"
    assert server.bytes_sent <= DEADLINE + 1
    assert server.open == 0


def test_gopher_silent_server_times_out(world: World) -> None:
    """A server that reads the selector and says nothing ends in TIMEOUT, connection closed."""
    server, fetcher = world.gopher("silent")
    result, elapsed = world.timed(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert result.error.code == "TIMEOUT"
    assert elapsed == pytest.approx(DEADLINE, abs=STEP)
    assert server.requests == [b""]


def test_gopher_never_close_menu_ends_at_its_terminator(world: World) -> None:
    """A terminated menu is complete at its '.' line even if the server never closes."""
    server, fetcher = world.gopher("never-close")
    result, elapsed = world.timed(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert isinstance(result, MenuResult) and elapsed == 0
    assert [i.title for i in result.items] == ["Welcome to a well-behaved corner", "About"]
    world.net.flush()
    assert server.open == 0


def test_gopher_never_close_terminated_text_is_whole(world: World) -> None:
    """
    A text body is read to the close; when the deadline ends a text that
    already ended with its '.' line, the text is whole, and cached as such.
    """
    server, fetcher = world.gopher("never-close")
    result, elapsed = world.timed(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert isinstance(result, TextResult) and not result.incomplete
    assert result.text == "The whole text arrived.\n"
    assert elapsed == pytest.approx(DEADLINE, abs=STEP)
    assert server.open == 0
    again = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert again.cache.cached and server.connections == 1


@pytest.mark.parametrize(
    ("path", "kind"), [("/", "menu"), ("/0/text", "text"), ("/9/binary", "binary")]
)
def test_gopher_hold_mid_answer_returns_what_arrived(world: World, path: str, kind: str) -> None:
    """
    A server that sends part of an answer and holds the connection: at the
    deadline the part comes back as its kind, marked incomplete (deadline),
    and it is not cached (the next call fetches again).
    """
    server, fetcher = world.gopher("hold-mid-answer")
    result, elapsed = world.timed(fetcher.gopher(f"gopher://{HOSTILE}{path}"))
    data = payload(result)
    GopherPayload.model_validate(data)
    assert data["kind"] == kind, data
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    assert "deadline" in data["note"]
    assert '"incomplete_reason":"deadline"' in compact_text(data)
    assert elapsed == pytest.approx(DEADLINE, abs=STEP)
    world.net.flush()
    assert server.open == 0
    again = world.run(fetcher.gopher(f"gopher://{HOSTILE}{path}"))
    assert not again.cache.cached and again.incomplete
    assert server.connections == 2


def test_gopher_hold_mid_answer_keeps_the_lines(world: World) -> None:
    """The part of a menu that arrived before the deadline keeps every whole line."""
    _, fetcher = world.gopher("hold-mid-answer")
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert [i.title for i in result.items] == ["iPlain info line", "A text", "A menu"]
    text = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert text.text == "The first half of a text, and then noth"


@pytest.mark.parametrize("path", ["/", "/0/text", "/9/binary"])
def test_gopher_reset_is_reported_incomplete(world: World, path: str) -> None:
    """
    A menu, text or binary cut by a reset keeps what arrived, marked
    incomplete (connection_reset), and is not cached.
    """
    server, fetcher = world.gopher("reset-mid-menu")
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}{path}"))
    data = payload(result)
    GopherPayload.model_validate(data)
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "connection_reset")
    assert "connection broke" in data["note"]
    world.run(fetcher.gopher(f"gopher://{HOSTILE}{path}"))
    assert server.connections == 2


def test_gopher_clean_close_without_terminator_is_whole(world: World) -> None:
    """A menu without its '.' line that the server closed cleanly is whole (SPEC: tolerated)."""
    _, fetcher = world.gopher("no-terminator")
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert isinstance(result, MenuResult) and not result.incomplete
    assert "incomplete" not in payload(result)


def test_gopher_send_forever_is_cut_at_the_cap(world: World) -> None:
    """An endless body is cut at the size cap and returned as a flagged first part."""
    server, fetcher = world.gopher("send-forever", max_response_size=32 * 1024)
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert isinstance(result, TextResult)
    assert result.size == 32 * 1024 and result.window.size_capped and result.window.truncated
    assert world.buffers.largest() == 32 * 1024
    assert 32 * 1024 <= server.bytes_sent < 32 * 1024 + 11 * 16 * 1024
    assert payload(result)["size_capped"] is True


def test_gopher_send_forever_next_window_needs_no_second_flood(world: World) -> None:
    """Reading a capped body on serves later windows from the first download."""
    server, fetcher = world.gopher("send-forever", max_rendered_chars=10_000)
    first = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    second = world.run(
        fetcher.gopher(f"gopher://{HOSTILE}/0/text", offset=first.window.next_offset)
    )
    # Newlines cost two characters as JSON: the window holds a little less than 10,000.
    assert 9_000 < first.window.next_offset <= 10_000
    assert second.cache.cached and second.window.offset == first.window.next_offset
    assert server.connections == 1


def test_gopher_utf8_cut_inside_a_character_stays_utf8(world: World) -> None:
    """A UTF-8 body cut inside a character keeps its text; only the broken tail goes."""
    _, fetcher = world.gopher("send-forever-utf8", max_response_size=1024)
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert result.size == 1024 and result.window.size_capped
    assert result.charset == "utf-8"
    assert result.text.startswith("café\ncafé\n")


def test_gopher_close_silently_menu_is_an_error(world: World) -> None:
    """A menu request answered by a bare close is an error with a code, not an empty menu."""
    _, fetcher = world.gopher("close-silently")
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert kind_of(result) in ("error:CONNECTION_FAILED", "error:PROTOCOL_ERROR")


def test_gopher_close_silently_does_not_poison_the_cache(world: World) -> None:
    """Whatever an empty answer became, the next fetch asks the server again."""
    server, fetcher = world.gopher("close-silently")
    world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    second = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text", refresh=True))
    assert isinstance(second, TextResult) and server.connections == 2


@pytest.mark.parametrize("name", ["no-terminator", "lf-only", "cr-only", "reset-mid-menu"])
def test_gopher_framing_variants_keep_every_line(world: World, name: str) -> None:
    """Menus without a terminator, with LF or CR line ends, or cut short keep every line."""
    _, fetcher = world.gopher(name)
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert isinstance(result, MenuResult)
    assert [(i.item_type, i.title) for i in result.items[:3]] == [
        ("i", "iPlain info line"),
        ("0", "A text"),
        ("1", "A menu"),
    ]
    assert result.items[1].next_url == "gopher://localhost/0/text"
    assert result.items[2].next_url == "gopher://localhost/1/menu"


def test_gopher_huge_line_text_is_windowed(world: World) -> None:
    """A million-byte line without a line break arrives whole and is shown a window at a time."""
    _, fetcher = world.gopher("huge-line", max_rendered_chars=50_000)
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert result.size == 1_000_001 and not result.window.size_capped
    assert len(result.text) == 50_000 and result.window.next_offset == 50_000
    assert result.window.total == 1_000_001


def test_gopher_huge_line_menu_title_is_bounded(world: World) -> None:
    """A menu whose one line is a million bytes is not handed to the model whole."""
    _, fetcher = world.gopher("huge-line", max_rendered_chars=50_000)
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert isinstance(result, MenuResult)
    assert len(compact_text(payload(result))) <= 60_000


def test_gopher_many_items_are_windowed(world: World) -> None:
    """A menu of tiny items up to the cap is parsed whole and shown a window at a time."""
    _, fetcher = world.gopher(
        "many-items",
        max_response_size=64 * 1024,
        max_menu_items=1000,
        max_rendered_chars=1_000_000,  # the item cap decides here, not the payload budget
    )
    result = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    assert isinstance(result, MenuResult)
    assert len(result.items) == 1000 and result.window.next_offset == 1000
    assert result.window.total == 64 * 1024 // 6 + 1  # the last item is cut short
    assert result.window.size_capped


def test_gopher_nul_and_invalid_utf8(world: World) -> None:
    """NUL bytes never reach the model; invalid UTF-8 neither fails nor walls of U+FFFD."""
    _, fetcher = world.gopher("nul-invalid-utf8")
    menu = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    text = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    titles = [i.title for i in menu.items]
    assert titles[0] == "NULin title"
    for shown_text in (shown(menu), shown(text), text.text, *titles):
        assert "\x00" not in shown_text and "\\x00" not in shown_text
        assert "\ufffd" not in shown_text
    # The selector with an invalid byte is kept exactly and can be followed.
    assert menu.items[1].selector == b"/t\xfe"
    assert menu.items[1].next_url.endswith("/0/t%FE")


def test_gopher_control_selectors(world: World) -> None:
    """
    Control bytes in selectors travel percent-encoded in next_url and are sent
    back exactly when it is followed; a control type byte makes a display line.
    """
    server, fetcher = world.gopher("control-selectors")
    menu = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    urls = [i.next_url for i in menu.items]
    assert urls[0] == "gopher://localhost/0/a%00b"
    assert "%1B" in urls[1] and "%7F%07" in urls[2]
    assert menu.items[4].item_type == "i" and urls[4] == ""
    assert urls[5] == "gopher://localhost/0/ok"  # the control byte is dropped from the host
    data = shown(menu)
    for control in ("\x00", "\x1b", "\x7f", "\x07", "\x0c", "\x01"):
        assert control not in data
    world.net.resolver.add("localhost", HOSTILE_IP)
    followed = world.run(fetcher.gopher(urls[1]))
    assert isinstance(followed, TextResult)
    assert server.requests[-1] == b"/\x1b[31mred"
    assert followed.request_info.selector == "/%1B[31mred"
    # A NUL can never be sent in a selector line: that link is refused, undialled.
    connections = server.connections
    refused = world.run(fetcher.gopher(urls[0]))
    assert kind_of(refused) == "error:INVALID_REQUEST"
    assert server.connections == connections


def test_gopher_ansi_and_bidi_are_removed(world: World) -> None:
    """ANSI sequences go whole; bidi, zero-width, separators, private use and BEL go too."""
    _, fetcher = world.gopher("ansi-bidi")
    menu = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    text = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/text"))
    assert menu.items[0].title == "Title: RED evil zero sep private bell"
    assert text.text == "Text: RED evil zero sep private bell\n"
    for data in (shown(menu), shown(text)):
        for char in ("\x1b", "[31m", "[2J", "\u202e", "\u200b", "\u2028", "\ue000", "\x07"):
            assert char not in data


def test_gopher_menu_links_to_forbidden_targets(world: World) -> None:
    """
    Menu links to a metadata service, a private network or a loopback
    spelling are BLOCKED when followed, without dialling; web links are only
    reported, and handing them to gopher_fetch fetches nothing.
    """
    _, fetcher = world.gopher("menu-ssrf-links")
    menu = world.run(fetcher.gopher(f"gopher://{HOSTILE}/"))
    urls = [i.next_url for i in menu.items]
    assert urls[:3] == [
        "gopher://169.254.169.254:80/0/latest/meta-data/",
        "gopher://10.0.0.1/1/",
        "gopher://2130706433/1/",
    ]
    assert urls[3:] == [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
    ]
    attempts = list(world.net.attempts)
    strict = world.net.fetcher(allow_local_hosts=False)
    for url in urls[:3]:
        assert kind_of(world.run(strict.gopher(url))) == "error:BLOCKED", url
    for url in urls[3:]:
        assert kind_of(world.run(strict.gopher(url))) == "error:INVALID_REQUEST", url
    assert world.net.attempts == attempts


def test_gopher_robots_huge_is_read_up_to_its_cap(world: World) -> None:
    """
    A two-megabyte robots.txt is read up to the robots cap: the rule before the
    cap counts, the Disallow-everything after it does not.
    """
    server, fetcher = world.gopher("robots-huge", respect_robots_txt=True)
    assert isinstance(world.run(fetcher.gopher(f"gopher://{HOSTILE}/")), MenuResult)
    blocked = world.run(fetcher.gopher(f"gopher://{HOSTILE}/0/private"))
    assert kind_of(blocked) == "error:BLOCKED_BY_ROBOTS"
    assert server.requests.count(b"robots.txt") == 1
    assert (MAX_ROBOTS_BYTES, MAX_ROBOTS_BYTES) in world.buffers.peaks


@pytest.mark.parametrize("name", ["robots-binary", "robots-forever"])
def test_gopher_unusable_robots_fails_open(world: World, name: str) -> None:
    """Binary or endless robots.txt imposes no rules (Gopher fails open) and is asked once."""
    server, fetcher = world.gopher(name, respect_robots_txt=True)
    for path in ("/", "/0/anything"):
        result = world.run(fetcher.gopher(f"gopher://{HOSTILE}{path}"))
        assert not isinstance(result, FetchFailure), result
    assert server.requests.count(b"robots.txt") == 1
    assert world.buffers.within_caps()


# --- Gemini: time and size ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["trickle", "silent", "handshake-stall", "header-then-hold"])
def test_gemini_slow_servers_time_out_at_the_deadline(world: World, name: str) -> None:
    """
    A server that trickles its header, stalls, or sends a success header and
    no body byte ends in TIMEOUT at the deadline.
    """
    server, fetcher = world.gemini(name)
    d = fetcher.gemini(f"gemini://{HOSTILE}/")
    world.net.flush()
    world.net.reactor.advance(DEADLINE - 0.1)
    world.net.flush()
    assert not d.called
    result, _ = world.timed(d)
    assert result.error.code == "TIMEOUT"
    world.net.flush()
    assert server.open == 0


def test_gemini_never_close_returns_the_page_at_the_deadline(world: World) -> None:
    """
    A server that sends a whole page and holds the connection (egsam's "no
    close"): at the deadline the page comes back marked incomplete
    (deadline), and it is not cached.
    """
    server, fetcher = world.gemini("never-close")
    d = fetcher.gemini(f"gemini://{HOSTILE}/")
    world.net.flush()
    world.net.reactor.advance(DEADLINE - 0.1)
    world.net.flush()
    assert not d.called
    result, _ = world.timed(d)
    assert isinstance(result, GemtextResult)
    assert [line.content for line in result.lines] == ["# Welcome", "All is well here."]
    data = payload(result)
    GeminiPayload.model_validate(data)
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    world.net.flush()
    assert server.open == 0
    world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert server.connections == 2


def test_gemini_status_without_body_is_not_waited_on(world: World) -> None:
    """A non-success header is the whole response: a server that then holds is not waited on."""
    server, fetcher = world.gemini("status-then-hold")
    result, elapsed = world.timed(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.error.code == "PERMANENT_ERROR" and result.error.status == 51
    assert elapsed < 1
    world.net.flush()
    assert server.open == 0


def test_gemini_handshake_stall_pins_nothing(world: World) -> None:
    """A server that never finishes the handshake leaves the pin store untouched."""
    _, fetcher = world.gemini("handshake-stall")
    world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert world.net.pins.all() == []


def test_gemini_send_forever_is_cut_at_the_cap(world: World) -> None:
    """An endless body is cut at the size cap and returned, flagged, as complete-to-the-cap."""
    server, fetcher = world.gemini("send-forever", max_response_size=32 * 1024)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(result, SuccessResult)
    assert result.size == 32 * 1024 and result.window.size_capped
    assert not result.incomplete  # we cut it; the server did not drop it
    assert world.buffers.largest() == 32 * 1024
    assert server.bytes_sent < 32 * 1024 + 11 * 16 * 1024


def test_gemini_utf8_cut_inside_a_character_stays_utf8(world: World) -> None:
    """A declared-UTF-8 body cut inside a character keeps its text; only the broken tail goes."""
    _, fetcher = world.gemini("send-forever-utf8", max_response_size=1024)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.size == 1024 and result.window.size_capped
    assert result.mime.charset == "utf-8"
    assert result.content.startswith("café\ncafé\n")


def test_gemini_header_spaces_forever_is_refused_early(world: World) -> None:
    """A header that never ends is refused once it passes 1029 bytes, long before the deadline."""
    server, fetcher = world.gemini("header-spaces-forever")
    result, elapsed = world.timed(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.error.code == "PROTOCOL_ERROR"
    assert elapsed < 1
    assert server.bytes_sent < MAX_HEADER_BYTES + 11 * 1024


@pytest.mark.parametrize(
    "name",
    [
        "header-no-crlf",
        "header-lf-only",
        "status-non-numeric",
        "status-one-digit",
        "status-three-digit",
        "meta-too-long",
        "meta-invalid-utf8",
    ],
)
def test_gemini_malformed_headers(world: World, name: str) -> None:
    """Every malformed header is a PROTOCOL_ERROR, never a page, and is not cached."""
    server, fetcher = world.gemini(name)
    first = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    second = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert kind_of(first) == kind_of(second) == "error:PROTOCOL_ERROR"
    assert server.connections == 2


def test_gemini_undefined_success_status(world: World) -> None:
    """27, undefined but in the success family, is read as a success."""
    _, fetcher = world.gemini("status-27")
    page = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(page, GemtextResult) and page.lines[0].text == "Undefined success"


def test_gemini_status_outside_every_family(world: World) -> None:
    """99 is INVALID_STATUS carrying the status, and is not cached."""
    server, fetcher = world.gemini("status-99")
    for _ in range(2):
        error = world.run(fetcher.gemini(f"gemini://{HOSTILE}/")).error
        assert (error.code, error.status) == ("INVALID_STATUS", 99)
    assert server.connections == 2


def test_gemini_no_close_notify_is_reported_incomplete(world: World) -> None:
    """
    A body ended without TLS close_notify is returned but marked incomplete
    (no_close_notify), and never replayed from the cache as if whole.
    """
    server, fetcher = world.gemini("no-close-notify")
    first = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(first, GemtextResult) and first.incomplete
    assert payload(first)["incomplete"] is True
    assert payload(first)["incomplete_reason"] == "no_close_notify"
    again = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert not again.cache.cached and again.incomplete
    assert server.connections == 2


# --- Gemini: TLS and trust ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["tls-alert", "tls-old-version", "not-tls"])
def test_gemini_tls_failures(world: World, name: str) -> None:
    """An alert, an old TLS version or no TLS at all: TLS_ERROR, no request line, no pin."""
    server, fetcher = world.gemini(name)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/secret"))
    assert result.error.code == "TLS_ERROR"
    assert not any(b"gemini://" in r for r in server.requests)
    assert world.net.pins.all() == []


def test_gemini_not_yet_valid_certificate(world: World) -> None:
    """A certificate valid from tomorrow is refused in the handshake: no request, no pin."""
    server, fetcher = world.gemini("cert-not-yet-valid")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.error.code == "CERTIFICATE_NOT_YET_VALID"
    assert server.requests == [] and world.net.pins.all() == []


def test_gemini_expired_certificate_is_accepted_with_a_warning(world: World) -> None:
    """By default an expired certificate is pinned and used, with a tofu_warning."""
    _, fetcher = world.gemini("cert-expired")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(result, GemtextResult)
    assert "expired" in result.request_info.tofu_warning
    assert world.net.pins.get(HOSTILE, 1965).fingerprint == result.request_info.cert_fingerprint


def test_gemini_expired_certificate_refused_pins_nothing(world: World) -> None:
    """With reject_expired an expired certificate is refused: no request, no pin."""
    server, fetcher = world.gemini("cert-expired", tofu_reject_expired=True)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.error.code == "CERTIFICATE_EXPIRED"
    assert server.requests == [] and world.net.pins.all() == []


def test_gemini_certificate_for_another_name(world: World) -> None:
    """A self-signed certificate for another name is a tofu_warning, not a failure."""
    _, fetcher = world.gemini("cert-other-name")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(result, GemtextResult)
    assert "another name" in result.request_info.tofu_warning
    assert world.net.pins.get(HOSTILE, 1965) is not None


def test_gemini_new_key_every_time_keeps_the_first_pin(world: World) -> None:
    """A key that changes is CERTIFICATE_CHANGED before any request; the first pin stays."""
    server, fetcher = world.gemini("cert-new-key-every-time")
    first = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    pin = world.net.pins.get(HOSTILE, 1965)
    assert pin.fingerprint == first.request_info.cert_fingerprint
    second = world.run(fetcher.gemini(f"gemini://{HOSTILE}/other"))
    assert second.error.code == "CERTIFICATE_CHANGED"
    assert second.error.pinned_fingerprint == pin.fingerprint
    assert second.error.presented_fingerprint != pin.fingerprint
    assert world.net.pins.get(HOSTILE, 1965) == pin
    assert len(server.requests) == 1  # nothing was sent to the changed key


# --- Gemini: redirects, slow down, robots ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "target", "blocked"),
    [
        ("redirect-private", "gemini://10.0.0.1/", "error:BLOCKED"),
        (
            "redirect-metadata",
            "gemini://169.254.169.254/latest/meta-data/",
            "error:BLOCKED",
        ),
        ("redirect-other-scheme", "file:///etc/passwd", "error:INVALID_REQUEST"),
    ],
)
def test_gemini_hostile_redirects_are_reported_not_followed(
    world: World, name: str, target: str, blocked: str
) -> None:
    """A redirect is only a string: never dialled, and refused when the model follows it."""
    _, fetcher = world.gemini(name)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(result, RedirectResult)
    assert result.new_url == target and result.cross_host
    assert result.scheme == target.split(":", 1)[0]
    assert {a for a, _ in world.net.attempts} == {HOSTILE_IP}
    strict = world.net.fetcher(gemini={"allow_local_hosts": False})
    assert kind_of(world.run(strict.gemini(result.new_url))) == blocked
    assert {a for a, _ in world.net.attempts} == {HOSTILE_IP}


def test_gemini_redirect_loop_is_not_followed(world: World) -> None:
    """A redirect to itself is one request and one result; the model sees the repeat."""
    server, fetcher = world.gemini("redirect-self")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/loop"))
    assert result.new_url == f"gemini://{HOSTILE}/loop" and not result.cross_host
    assert len(server.requests) == 1


def test_gemini_absurd_slow_down_is_clamped(world: World) -> None:
    """44 with a wait of 999,999,999 seconds backs off for the one-hour maximum, then ends."""
    server, fetcher = world.gemini("slow-down-absurd")
    first = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert (first.error.code, first.error.status) == ("TEMPORARY_ERROR", 44)
    assert first.error.retry_after_seconds == MAX_SLOW_DOWN_SECONDS
    waiting = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert waiting.error.code == "SLOW_DOWN" and len(server.requests) == 1
    world.net.reactor.advance(MAX_SLOW_DOWN_SECONDS)
    world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert len(server.requests) == 2


def test_gemini_slow_down_with_text_backs_off_exponentially(world: World) -> None:
    """44 with free text waits one second, then two, then four."""
    _, fetcher = world.gemini("slow-down-text")
    waits = []
    for _ in range(3):
        result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
        waits.append(result.error.retry_after_seconds)
        world.net.reactor.advance(result.error.retry_after_seconds)
    assert waits == [1, 2, 4]
    assert result.error.meta == "Please go away for a while"


def test_gemini_robots_huge_is_read_up_to_its_cap(world: World) -> None:
    """The rule before the robots cap counts; the one two megabytes in does not."""
    server, fetcher = world.gemini("robots-huge", respect_robots_txt=True)
    assert isinstance(world.run(fetcher.gemini(f"gemini://{HOSTILE}/")), GemtextResult)
    blocked = world.run(fetcher.gemini(f"gemini://{HOSTILE}/private"))
    assert blocked.error.code == "BLOCKED_BY_ROBOTS"
    assert sum(b"/robots.txt" in r for r in server.requests) == 1
    assert (MAX_ROBOTS_BYTES, MAX_ROBOTS_BYTES) in world.buffers.peaks


def test_gemini_robots_binary_imposes_no_rules(world: World) -> None:
    """A binary robots.txt holds no rules: the page is fetched."""
    _, fetcher = world.gemini("robots-binary", respect_robots_txt=True)
    assert isinstance(world.run(fetcher.gemini(f"gemini://{HOSTILE}/private")), GemtextResult)


def test_gemini_robots_redirect_fails_closed_without_following(world: World) -> None:
    """robots.txt redirecting to a private address: ROBOTS_UNAVAILABLE, undialled, backed off."""
    server, fetcher = world.gemini("robots-redirect", respect_robots_txt=True)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.error.code == "ROBOTS_UNAVAILABLE"
    assert "INVALID_REDIRECT" in result.error.message
    again = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert again.error.code == "ROBOTS_UNAVAILABLE"
    assert len(server.requests) == 1
    assert {a for a, _ in world.net.attempts} == {HOSTILE_IP}


# --- Gemini: content ----------------------------------------------------------------------


def test_gemini_hostile_links_are_data(world: World) -> None:
    """
    Links to file:, data:, javascript:, the metadata service, a private
    network and loopback are listed as they are; following any of them
    fetches nothing.
    """
    _, fetcher = world.gemini("hostile-links")
    page = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    urls = [link.url for link in page.links]
    assert urls[:3] == [
        "file:///etc/passwd",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "javascript:alert(1)",
    ]
    assert urls[3:6] == [
        "gemini://169.254.169.254/latest/meta-data/",
        "gemini://10.0.0.1/",
        "gemini://[::1]/",
    ]
    assert urls[6] == "gemini://localhost/"  # the ANSI sequence around it is gone
    assert "\x1b" not in shown(page)
    attempts = list(world.net.attempts)
    strict = world.net.fetcher(gemini={"allow_local_hosts": False})
    for url in urls[:3]:
        assert kind_of(world.run(strict.gemini(url))) == "error:INVALID_REQUEST", url
    for url in urls[3:6]:
        assert kind_of(world.run(strict.gemini(url))) == "error:BLOCKED", url
    assert world.net.attempts == attempts


def test_gemini_nul_and_invalid_utf8(world: World) -> None:
    """NUL bytes never reach the model and invalid UTF-8 does not fail the page."""
    _, fetcher = world.gemini("nul-invalid-utf8")
    page = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert page.lines[0].text == "NULhere"
    assert "\x00" not in shown(page) and "\\x00" not in shown(page)


def test_gemini_ansi_and_bidi_in_prompt_meta_and_page(world: World) -> None:
    """Prompts, error META and page lines lose ANSI sequences and bidi controls."""
    _, fetcher = world.gemini("ansi-bidi")
    page = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    prompt = world.run(fetcher.gemini(f"gemini://{HOSTILE}/prompt"))
    error = world.run(fetcher.gemini(f"gemini://{HOSTILE}/error"))
    clean = "RED evil zero sep private bell"
    assert page.lines[0].text == clean
    assert isinstance(prompt, InputResult) and prompt.prompt == clean
    assert error.error.meta == clean
    for result in (page, prompt, error):
        for char in ("\x1b", "[31m", "\u202e", "\u200b", "\u2028", "\ue000", "\x07"):
            assert char not in shown(result)


def test_gemini_huge_line_is_a_partial_line_window(world: World) -> None:
    """A million-byte gemtext line is plain text windows, never parsed as half a link."""
    _, fetcher = world.gemini("huge-line", max_rendered_chars=50_000)
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert isinstance(result, PartialLineResult)
    assert len(result.text) == 50_000 and result.window.next_offset == 50_000
    assert payload(result).get("partial_line") is True


def test_gemini_bogus_charset_falls_back(world: World) -> None:
    """A charset that does not exist falls back to detection instead of failing."""
    _, fetcher = world.gemini("bogus-charset")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/"))
    assert result.content == "plain café\n"


# --- Gemini: secrets ----------------------------------------------------------------------


def test_gemini_sensitive_answer_is_never_shown_or_logged(
    world: World, log_lines: list[str]
) -> None:
    """
    The answer to an 11 prompt goes to the server, and nowhere else: not the
    result, not the text block, not a log line, not the cache.
    """
    server, fetcher = world.gemini("sensitive-input")
    prompt = world.run(fetcher.gemini(f"gemini://{HOSTILE}/login"))
    assert isinstance(prompt, InputResult) and prompt.sensitive
    answered = world.run(fetcher.gemini(f"gemini://{HOSTILE}/login", input=SECRET))
    assert isinstance(answered, GemtextResult)
    assert server.requests[-1] == f"gemini://{HOSTILE}/login?{SECRET}".encode()
    assert answered.request_info.has_query
    assert answered.request_info.url == f"gemini://{HOSTILE}/login"
    assert SECRET not in shown(answered)
    again = world.run(fetcher.gemini(f"gemini://{HOSTILE}/login", input=SECRET))
    assert not again.cache.cached and len(server.requests) == 3
    assert not any(SECRET in line for line in log_lines)


def test_gemini_sensitive_answer_not_in_failures(world: World, log_lines: list[str]) -> None:
    """When the answered request fails (here: a 44 from the same capsule), the secret stays out."""
    _, fetcher = world.gemini("slow-down-text")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/login", input=SECRET))
    refused = world.run(fetcher.gemini(f"gemini://{HOSTILE}/login", input=SECRET))
    for failure in (result, refused):
        assert SECRET not in shown(failure)
    assert not any(SECRET in line for line in log_lines)


def test_gemini_echoed_sensitive_answer_is_redacted(world: World) -> None:
    """A secret the capsule echoes back in its redirect is not handed on in the result."""
    _, fetcher = world.gemini("sensitive-echo")
    result = world.run(fetcher.gemini(f"gemini://{HOSTILE}/", input=SECRET))
    assert isinstance(result, RedirectResult)
    assert SECRET not in shown(result)


# --- many at once ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["gopher", "gemini"])
def test_batch_against_a_trickle_ends_by_one_deadline(world: World, protocol: str) -> None:
    """
    Fifty fetches from a trickling host all end by the one deadline, and
    every connection is closed afterwards.
    """
    # Room for all fifty at once: no global cap, and a per-host limit above 50.
    server, fetcher = getattr(world, protocol)(
        "trickle", max_concurrent_requests=0, max_connections_per_host=64
    )
    urls = [f"{protocol}://{HOSTILE}/0/{n}" for n in range(50)]
    results, elapsed = world.timed(getattr(fetcher, f"{protocol}_batch")(urls))
    # A Gopher trickle has begun its body: each fetch returns what arrived,
    # marked incomplete.  A Gemini trickle is still in its header: TIMEOUT.
    if protocol == "gopher":
        assert {(kind_of(r), r.incomplete_reason) for r in results} == {("text", "deadline")}
    else:
        assert [kind_of(r) for r in results] == ["error:TIMEOUT"] * 50
    assert elapsed <= DEADLINE + STEP
    assert server.connections == 50
    world.net.flush()
    assert server.open == 0
    world.still_serves(fetcher)


@pytest.mark.parametrize("protocol", ["gopher", "gemini"])
def test_capped_batch_against_a_trickle_ends_by_one_deadline(world: World, protocol: str) -> None:
    """
    Fifty fetches from a trickling host, two at a time, all end by the one
    deadline: waiting for a turn spends the same budget, so a slow host cannot
    stretch a batch to 25 deadlines.
    """
    server, fetcher = getattr(world, protocol)("trickle", max_concurrent_requests=2)
    urls = [f"{protocol}://{HOSTILE}/0/{n}" for n in range(50)]
    results, elapsed = world.timed(getattr(fetcher, f"{protocol}_batch")(urls))
    # The two Gopher fetches reading at the deadline return what arrived; the
    # rest never had a turn (TIMEOUT), as every Gemini fetch is still in its header.
    timeouts = 48 if protocol == "gopher" else 50
    assert [kind_of(r) for r in results].count("error:TIMEOUT") == timeouts
    assert all(r.incomplete_reason == "deadline" for r in results if kind_of(r) == "text")
    assert elapsed <= DEADLINE + STEP
    world.net.flush()
    assert server.open == 0


@pytest.mark.parametrize("protocol", ["gopher", "gemini"])
def test_connect_that_never_completes_is_a_timeout(
    world: World, protocol: str, log_lines: list[str]
) -> None:
    """A connection attempt that never completes (SYNs dropped) ends in TIMEOUT at the deadline."""
    _, fetcher = getattr(world, protocol)("silent")
    box: list[Any] = []
    getattr(fetcher, protocol)(f"{protocol}://192.0.2.99/").addBoth(box.append)
    world.net.reactor.advance(0)  # the attempt is recorded, never connected: no flush
    world.net.reactor.advance(DEADLINE + STEP)
    assert [kind_of(r) for r in box] == ["error:TIMEOUT"]
    assert not any("Traceback" in line for line in log_lines)
