# -*- test-case-name: tests.test_render_payloads -*-
"""
The compact text block: a payload printed as the compact JSON a model reads.

L{compact_text} states the facts of a structured payload (built by
L{gophergem.render.payloads}) without what only repeats a default or what
another field already says: nulls and C{false} flags go, a menu item keeps
its title and C{next_url} (which names host, port and selector), a gemtext
link line is its target and label, and a fresh fetch has no cache age.  It
reads payload dicts, never result values.

A menu says the host and port most of its links share once, as C{base}
(C{gopher://host:port}, spelt as in the links); an item on it gives only
its C{path} (C{/<type><selector>}), so its C{next_url} is C{base + path}.
Items elsewhere keep their whole C{next_url}; an info line is its bare text.
Every link can be rebuilt exactly (L{menu_links} does, and the tests check
it); C{docs/mcp.md} tells the shape.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact_request_info", "compact_text", "menu_links"]

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


_GOPHER = "gopher://"


def _compact_item(item: dict[str, Any], base: str | None) -> dict[str, Any] | str:
    # next_url already carries host, port, selector and (in a gopher:// URL,
    # right after the host) the item type; info lines need none of them.
    url = item["next_url"]
    if not url:
        if item["type"] == "i":
            title: str = item["title"]
            return title  # an info line: display text only
        return {"type": item["type"], "title": item["title"]}
    out: dict[str, Any] = {"type": item["type"], "title": item["title"]}
    if url.startswith(_GOPHER) and _url_type(url) == item["type"]:
        del out["type"]
    if base is not None and _authority(url) == base:
        out["path"] = url[len(base) :]
    else:
        out["next_url"] = url
    return out


def _url_type(url: str) -> str:
    path = url[len(_GOPHER) :].partition("/")[2]
    return path[:1]


def _authority(url: str) -> str | None:
    """C{gopher://host:port} of a gopher:// URL that has a path after it, else C{None}."""
    if not url.startswith(_GOPHER):
        return None
    slash = url.find("/", len(_GOPHER))
    return url[:slash] if slash > len(_GOPHER) else None


def _menu_base(items: list[dict[str, Any]]) -> str | None:
    """
    The C{gopher://host:port} most of the menu's links share (more than half
    of them, and at least two), or C{None}.
    """
    counts: dict[str, int] = {}
    links = 0
    for item in items:
        if item["next_url"]:
            links += 1
            authority = _authority(item["next_url"])
            if authority is not None:
                counts[authority] = counts.get(authority, 0) + 1
    if not counts:
        return None
    base, shared = max(counts.items(), key=lambda pair: pair[1])
    return base if shared >= 2 and shared * 2 > links else None


def menu_links(compact: dict[str, Any]) -> list[str]:
    """
    Every item's C{next_url} as the compact text of a menu gives it (C{""}
    for an item without a link): C{base + path}, the C{next_url} itself, or
    nothing.  What a model does to follow a link, written out.
    """
    base = compact.get("base", "")
    return [
        ""
        if isinstance(item, str)
        else base + item["path"]
        if "path" in item
        else item.get("next_url", "")
        for item in compact.get("items", [])
    ]


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
                base = _menu_base(v) if value.get("kind") == "menu" else None
                if base is not None:
                    out["base"] = base
                out[k] = [_compact_item(i, base) for i in v]
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
    no C{false} flags, and menu items reduced to what a reader needs (see
    the module's docstring for a menu's shape).
    """
    return json.dumps(_compact(data), separators=(",", ":"), ensure_ascii=False)
