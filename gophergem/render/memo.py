# -*- test-case-name: tests.test_render_memo -*-
"""
Rendered results, kept: a cached window is turned into its payload and its
compact text once, and each later hit fills in only what changes per call.

The fetcher keeps the windows it cut from a cached download and hands out
the same window (its C{Window} value and its content: a menu's item tuple,
a text, a gemtext page's lines) on every hit, with fresh request and age fields
(L{gophergem.fetcher._pipeline.WindowMemo}).  L{RenderMemo} keys on that
window: the first render of a cache hit records the payload and the
compact text with markers in place of C{request_info} and
C{cache_age_seconds}; later hits copy the payload's top level, set those
two fields, and splice their JSON between the recorded pieces of text.
What comes out is exactly L{payload} and L{compact_text} of the result
(C{tests/test_render_memo.py} checks it against them).

Only cache hits are memoised (a fresh download is rendered once anyway),
and the memo is bounded by entries and by characters of text kept.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from typing import Any

import attrs

from gophergem.render.payloads import payload, request_info_payload
from gophergem.render.text import compact_request_info, compact_text
from gophergem.results import (
    FetchResult,
    GeminiResult,
    GemtextResult,
    MenuResult,
    SuccessResult,
    TextResult,
)

__all__ = ["RenderMemo", "render", "render_batch"]

MAX_ENTRIES = 256
MAX_CHARS = 8 * 1024 * 1024
"""Characters of compact text the memo keeps, at most (a few windows of the largest size)."""


def _content(result: FetchResult | GeminiResult) -> tuple[object, object] | None:
    """
    What a hit shares with the window it was cut from (its C{Window} and
    its content, compared by identity), or C{None} (not worth keeping).
    """
    content: object
    if isinstance(result, MenuResult):
        content = result.items
    elif isinstance(result, GemtextResult):
        content = result.lines
    elif isinstance(result, TextResult):
        content = result.text
    elif isinstance(result, SuccessResult):
        content = result.content
    else:
        return None
    if not result.cache.cached:
        return None
    return result.window, content


@attrs.frozen
class _Render:
    """One recorded render: the payload's top level, and its compact text in pieces."""

    content: tuple[object, object]
    static: dict[str, Any]
    pieces: tuple[str, ...]
    """The compact text split at the request-info marker and the age marker."""
    order: tuple[str, ...]
    """Which marker comes between each two pieces: C{"info"} or C{"age"}."""


@attrs.define
class RenderMemo:
    """Rendered cache hits by window content, least recently used first out."""

    max_entries: int = MAX_ENTRIES
    max_chars: int = MAX_CHARS
    _entries: OrderedDict[int, _Render] = attrs.field(factory=OrderedDict)
    _chars: int = 0
    _marker: str = attrs.field(factory=lambda: f"gophergem-{secrets.token_hex(16)}")

    def render(self, result: FetchResult | GeminiResult) -> tuple[dict[str, Any], str]:
        """C{payload(result)} and C{compact_text} of it, from the memo when it can."""
        content = _content(result)
        if content is None:
            data = payload(result)
            return data, compact_text(data)
        entry = self._entries.get(id(content[0]))
        if entry is None or not _same(entry.content, content):
            entry = self._record(result, content)
            if entry is None:
                data = payload(result)
                return data, compact_text(data)
        else:
            self._entries.move_to_end(id(content[0]))
        return self._fill(entry, result)

    def _record(
        self, result: FetchResult | GeminiResult, content: tuple[object, object]
    ) -> _Render | None:
        data = payload(result)
        info_marker, age_marker = self._marker + "-info", self._marker + "-age"
        marked = {**data, "request_info": info_marker, "cache_age_seconds": age_marker}
        text = compact_text(marked)
        quoted = {json.dumps(info_marker): "info", json.dumps(age_marker): "age"}
        pieces, order, rest = [], [], text
        while True:
            found = [(rest.find(q), q) for q in quoted if q in rest]
            if not found:
                break
            at, q = min(found)
            pieces.append(rest[:at])
            order.append(quoted[q])
            rest = rest[at + len(q) :]
        pieces.append(rest)
        if sorted(order) != ["age", "info"]:
            return None  # not the shape this memo knows: render every time
        entry = _Render(content, data, tuple(pieces), tuple(order))
        self._keep(id(content[0]), entry)
        return entry

    def _keep(self, key: int, entry: _Render) -> None:
        size = sum(map(len, entry.pieces))
        if size > self.max_chars:
            return
        self._entries[key] = entry
        self._chars += size
        while len(self._entries) > self.max_entries or self._chars > self.max_chars:
            _, old = self._entries.popitem(last=False)
            self._chars -= sum(map(len, old.pieces))

    def _fill(
        self, entry: _Render, result: FetchResult | GeminiResult
    ) -> tuple[dict[str, Any], str]:
        fresh = payload_fields(result)
        data = {**entry.static, **fresh}
        values = {
            "info": json.dumps(
                compact_request_info(fresh["request_info"]),
                separators=(",", ":"),
                ensure_ascii=False,
            ),
            "age": json.dumps(fresh["cache_age_seconds"]),
        }
        parts = [entry.pieces[0]]
        for which, piece in zip(entry.order, entry.pieces[1:], strict=True):
            parts.append(values[which])
            parts.append(piece)
        return data, "".join(parts)

    def __len__(self) -> int:
        return len(self._entries)


def _same(kept: tuple[object, object], content: tuple[object, object]) -> bool:
    return kept[0] is content[0] and kept[1] is content[1]


def payload_fields(result: FetchResult | GeminiResult) -> dict[str, Any]:
    """The payload fields of a cache hit that change from call to call."""
    assert isinstance(result, MenuResult | TextResult | GemtextResult | SuccessResult)
    return {
        "request_info": request_info_payload(result.request_info),
        "cache_age_seconds": result.cache.cache_age_seconds,
    }


_memo = RenderMemo()


def render(result: FetchResult | GeminiResult) -> tuple[dict[str, Any], str]:
    """L{payload} and L{compact_text} of C{result}, through the process's memo."""
    return _memo.render(result)


def render_batch(results: list[Any]) -> tuple[dict[str, Any], str]:
    """The payload and compact text of a batch: C{{"result": [...]}} in input order."""
    rendered = [_memo.render(result) for result in results]
    data = {"result": [d for d, _ in rendered]}
    return data, '{"result":[' + ",".join(t for _, t in rendered) + "]}"
