"""
Tests for parsing large responses off the reactor thread
(L{gophergem.fetcher._pipeline.offloader}): which responses go, that a fetch
waits for the parse, that the deadline still holds, and that a real
reactor's thread pool runs the work.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred
from twisted.internet.testing import MemoryReactorClock

from gophergem.fetcher import _pipeline
from gophergem.fetcher._pipeline import OFFLOAD_BYTES, offloader, run_inline
from gophergem.results import FetchFailure, GemtextResult, MenuResult, TextResult
from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork
from tests.helpers.offload import HeldOffload

GOPHER_IP = "192.0.2.40"  # memory reactor only: never dialled
GEMINI_IP = "192.0.2.41"

BIG_MENU = b"ix\r\n" * (OFFLOAD_BYTES // 4 + 1) + b".\r\n"
BIG_TEXT = b"line of text\r\n" * (OFFLOAD_BYTES // 14 + 1) + b".\r\n"
BIG_LATIN = b"caf\xe9 cr\xe8me\r\n" * (OFFLOAD_BYTES // 12 + 1) + b".\r\n"
SMALL_MENU = b"0About\t/about\tg.example\t70\r\n.\r\n"
BIG_PAGE = b"20 text/gemini\r\n" + b"=> /x a link\n" * (OFFLOAD_BYTES // 13 + 1)
SMALL_PAGE = b"20 text/gemini\r\n# Hello\n"


@pytest.fixture
def net() -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("g.example", GOPHER_IP)
    network.resolver.add("localhost", GEMINI_IP)
    network.listen(
        GOPHER_IP,
        70,
        FakeGopherServer(
            {b"/big": BIG_MENU, b"/text": BIG_TEXT, b"/latin": BIG_LATIN, b"/small": SMALL_MENU}
        ),
    )
    network.listen_gemini(
        GEMINI_IP, 1965, FakeGeminiServer({"/big": BIG_PAGE, "/small": SMALL_PAGE})
    )
    return network


def fetcher_with(net: MemoryNetwork, offload: Any) -> Any:
    fetcher = net.fetcher(gemini={"respect_robots_txt": False, "requests_per_minute": 0})
    fetcher.gopher_pipeline.offload = offload
    fetcher.gemini_pipeline.offload = offload
    return fetcher


def fired(d: Deferred[Any]) -> list[Any]:
    box: list[Any] = []
    d.addBoth(box.append)
    return box


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("gopher://g.example/1/big", MenuResult),
        ("gopher://g.example/0/text", TextResult),
        ("gopher://g.example/0/latin", TextResult),
        ("gemini://localhost/big", GemtextResult),
    ],
)
def test_large_response_waits_for_the_offloaded_parse(
    net: MemoryNetwork, url: str, kind: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    A response of OFFLOAD_BYTES or more is parsed through the offload, and
    the fetch waits (plain ASCII text from PLAIN_OFFLOAD_BYTES, here made as
    small).
    """
    monkeypatch.setattr(_pipeline, "PLAIN_OFFLOAD_BYTES", OFFLOAD_BYTES)
    held = HeldOffload()
    fetcher = fetcher_with(net, held)
    fetch = fetcher.gemini if url.startswith("gemini") else fetcher.gopher
    box = fired(fetch(url))
    for _ in range(50):
        net.flush()
    assert box == [] and len(held.held) == 1  # downloaded, parse pending
    held.run_all()
    assert isinstance(box[0], kind), box


@pytest.mark.parametrize("url", ["gopher://g.example/0/text", "gemini://localhost/big"])
def test_plain_text_decoded_in_place(net: MemoryNetwork, url: str) -> None:
    """
    A body of plain ASCII text under PLAIN_OFFLOAD_BYTES is decoded right
    here, however much larger than OFFLOAD_BYTES: no thread hop, and no pool
    thread's malloc arena left holding its copies.
    """
    assert len(BIG_TEXT) >= OFFLOAD_BYTES and len(BIG_PAGE) >= OFFLOAD_BYTES
    held = HeldOffload()
    fetcher = fetcher_with(net, held)
    fetch = fetcher.gemini if url.startswith("gemini") else fetcher.gopher
    result = net.run(fetch(url))
    assert isinstance(result, TextResult | GemtextResult), result
    assert held.held == []


@pytest.mark.parametrize("url", ["gopher://g.example/1/small", "gemini://localhost/small"])
def test_small_response_parsed_in_place(net: MemoryNetwork, url: str) -> None:
    """A small response never goes through the offload (no thread hop for it)."""
    held = HeldOffload()
    fetcher = fetcher_with(net, held)
    fetch = fetcher.gemini if url.startswith("gemini") else fetcher.gopher
    result = net.run(fetch(url))
    assert not isinstance(result, FetchFailure), result
    assert held.held == []


def test_deadline_holds_while_parsing(net: MemoryNetwork) -> None:
    """
    A parse that does not finish in time ends the fetch in TIMEOUT at the
    deadline; its late result is dropped without an error.
    """
    held = HeldOffload()
    fetcher = fetcher_with(net, held)
    box = fired(fetcher.gopher("gopher://g.example/1/big"))
    for _ in range(50):
        net.flush()
    assert len(held.held) == 1
    net.reactor.advance(fetcher.gopher_pipeline.config.timeout_seconds)
    assert isinstance(box[0], FetchFailure) and box[0].error.code == "TIMEOUT"
    held.run_all()  # the thread finishing late changes nothing


def test_memory_reactor_runs_inline() -> None:
    """Without threads (a memory reactor) the offload is run_inline."""
    assert offloader(MemoryReactorClock()) is run_inline
    box = fired(run_inline(lambda: 7))
    assert box == [7]
    failed = fired(run_inline(lambda: 1 // 0))
    assert failed[0].check(ZeroDivisionError)


@pytest_twisted.ensureDeferred
async def test_real_reactor_uses_its_thread_pool() -> None:
    """On a real reactor the work runs on a pool thread, and its result comes back."""
    from twisted.internet import reactor

    offload = offloader(reactor)
    assert offload is not run_inline
    here = threading.get_ident()
    there = await offload(threading.get_ident)
    assert there != here
    with pytest.raises(ZeroDivisionError):
        await offload(lambda: 1 // 0)
