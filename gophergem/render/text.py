# -*- test-case-name: tests.test_render_payloads -*-
"""
The compact text block: a payload printed as the compact JSON a model reads.

L{compact_text} states the facts of a structured payload (built by
L{gophergem.render.payloads}) without what only repeats a default or what
another field already says: nulls and C{false} flags go, a menu item keeps
its title and C{next_url} (which names host, port and selector), a gemtext
link line is its target and label, and a fresh fetch has no cache age.  It
reads payload dicts, never result values.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact_request_info", "compact_text"]

_DROP_WHEN_FALSE = frozenset(
    {
        "truncated",
        "size_capped",
        "search_ignored",
        "cached",
        "incomplete",
        "partial_line",
        "has_query",
    }
)
# request_info keys the text block leaves out: the URL spells out the first
# five; the TLS details stay in structuredContent (warnings are kept).
_DERIVABLE_FROM_URL = frozenset(
    {"host", "port", "type", "selector", "path", "tls_version", "cipher", "cert_fingerprint"}
)


def _compact_line(line: dict[str, Any]) -> dict[str, Any]:
    # The marker-less text and the level follow from content and type; a link
    # line is best read as its resolved target and label.
    if line["type"] == "link" and "link" in line:
        out = {"type": "link", "url": line["link"]["url"]}
        if line["link"].get("text"):
            out["text"] = line["link"]["text"]
        if line["link"].get("takes_input"):  # a Spartan =: link
            out["takes_input"] = True
        return out
    out = {"type": line["type"], "content": line["content"]}
    for key in ("alt_text", "language"):
        if line.get(key):
            out[key] = line[key]
    return out


def _compact_item(item: dict[str, Any]) -> dict[str, Any]:
    # next_url already carries host, port, selector and (in a gopher:// URL,
    # right after the host) the item type; info lines need none of them.
    url = item["next_url"]
    if not url:
        return {"type": item["type"], "title": item["title"]}
    if url.startswith("gopher://") and _url_type(url) == item["type"]:
        return {"title": item["title"], "next_url": url}
    return {"type": item["type"], "title": item["title"], "next_url": url}


def _url_type(url: str) -> str:
    path = url[len("gopher://") :].partition("/")[2]
    return path[:1]


def compact_request_info(info: dict[str, Any]) -> dict[str, Any]:
    """The C{request_info} of the compact text: what the URL does not already say."""
    return {
        key: value
        for key, value in info.items()
        if key not in _DERIVABLE_FROM_URL and value is not None and value is not False
    }


def _compact(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if v is None or (k in _DROP_WHEN_FALSE and v is False):
                continue
            if k == "items" and isinstance(v, list):
                out[k] = [_compact_item(i) for i in v]
            elif k == "document" and isinstance(v, dict):
                # Link lines already carry every link; the separate list repeats them.
                out[k] = {"lines": [_compact_line(line) for line in v["lines"]]}
            elif k == "request_info" and isinstance(v, dict):
                out[k] = compact_request_info(v)
            else:
                out[k] = _compact(v, k)
        if "cached" not in out:
            # A fresh fetch: its age and time are the request timestamp.
            out.pop("cached_at", None)
            out.pop("cache_age_seconds", None)
        return out
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def compact_text(data: dict[str, Any]) -> str:
    """
    Print C{data} as compact JSON for the model: no indentation, no nulls,
    no C{false} flags, and menu items reduced to what a reader needs.
    """
    return json.dumps(_compact(data), separators=(",", ":"), ensure_ascii=False)
