"""
Tests for L{gophergem.render.memo}: a kept rendering is exactly what
L{payload} and L{compact_text} give for every hit, with its own request
and age fields; the memo stays within its bounds.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.render.memo import RenderMemo
from gophergem.render.payloads import payload
from gophergem.render.text import compact_text
from gophergem.results import (
    CacheInfo,
    GeminiRequestInfo,
    GemtextResult,
    MenuResult,
    RequestInfo,
    TextResult,
    Window,
)
from gophergem.url import GeminiURL
from gophergem.wire.gemtext import parse_gemtext
from gophergem.wire.gopher import parse_menu
from tests.helpers.mcp import MENU

CACHED = CacheInfo(cached=True, cached_at="2026-12-03T12:00:00Z", cache_age_seconds=0)
FRESH = attrs.evolve(CACHED, cached=False)


def menu(data: bytes = MENU, cache: CacheInfo = CACHED) -> MenuResult:
    items = parse_menu(data, "g.example", 70).items
    return MenuResult(
        request_info=RequestInfo(
            url="gopher://g.example/1/", timestamp="2026-12-03T12:00:00Z", item_type="1"
        ),
        items=items,
        window=Window(offset=0, next_offset=None, total=len(items)),
        cache=cache,
    )


def gemtext(text: str = "# Title\n=> /a A link\nSome text\n") -> GemtextResult:
    document = parse_gemtext(text, GeminiURL.from_text("gemini://c.example/"))
    return GemtextResult(
        request_info=GeminiRequestInfo(url="gemini://c.example/", timestamp="2026-12-03T12:00:00Z"),
        lines=document.lines,
        links=document.links,
        feed_entries=document.feed_entries,
        size=len(text),
        charset="utf-8",
        lang=None,
        window=Window(offset=0, next_offset=None, total=len(text)),
        cache=CACHED,
    )


def text(body: str = "Hello\n") -> TextResult:
    return TextResult(
        request_info=RequestInfo(url="gopher://g.example/0/about"),
        text=body,
        size=len(body),
        charset="utf-8",
        window=Window(offset=0, next_offset=None, total=len(body)),
        cache=CACHED,
    )


def hits(result: Any, count: int = 3) -> list[Any]:
    """The same window served again, older each time, once with other request fields."""
    out = []
    for age in range(1, count + 1):
        info = attrs.evolve(result.request_info, url=result.request_info.url + "?" * (age % 2))
        cache = attrs.evolve(result.cache, cache_age_seconds=age * 7)
        out.append(attrs.evolve(result, request_info=info, cache=cache))
    return out


def check(memo: RenderMemo, result: Any) -> None:
    for hit in [result, *hits(result)]:
        data, shown = memo.render(hit)
        assert data == payload(hit)
        assert list(data) == list(payload(hit))
        assert shown == compact_text(payload(hit))


def test_menu_hits() -> None:
    memo = RenderMemo()
    check(memo, menu())
    assert len(memo) == 1


def test_gemtext_and_text_hits() -> None:
    memo = RenderMemo()
    check(memo, gemtext())
    check(memo, text())
    assert len(memo) == 2


def test_fresh_downloads_are_not_kept() -> None:
    memo = RenderMemo()
    result = menu(cache=FRESH)
    assert memo.render(result) == (payload(result), compact_text(payload(result)))
    assert len(memo) == 0


def test_equal_content_of_other_windows_is_not_confused() -> None:
    """Two windows with equal (even the same interned) text are two entries."""
    memo = RenderMemo()
    first, second = text(""), attrs.evolve(text(""), request_info=RequestInfo(url="gopher://x/0/b"))
    second = attrs.evolve(second, window=Window(offset=0, next_offset=None, total=0))
    check(memo, first)
    check(memo, second)
    assert len(memo) == 2


def test_bounded() -> None:
    memo = RenderMemo(max_entries=2)
    for n in range(5):
        check(memo, text(f"body {n}\n"))
    assert len(memo) == 2
    small = RenderMemo(max_chars=50)
    check(small, text("x" * 100))
    assert len(small) == 0


@settings(max_examples=60)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=5))
def test_any_titles(titles: list[str]) -> None:
    """Whatever a server puts in titles (markers included) renders exactly."""
    lines = b"".join(
        b"1" + t.replace("\t", " ").encode("utf-8", "replace") + b"\t/x\tg.example\t70\r\n"
        for t in [*titles, "gophergem-", '"gophergem-0-info"']
    )
    check(RenderMemo(), menu(lines + b".\r\n"))
