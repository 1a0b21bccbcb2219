"""
Tests for L{gophergem.render.text}: the compact text of a Gopher menu says
the host and port its links share once (C{base}) and each item on it only
its C{path}, and every item's link can still be rebuilt from the text alone
(L{menu_links}), for any menu the parser can produce.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gophergem.render.text import compact_text, menu_links
from gophergem.wire.gopher import parse_menu, selector_text


def menu_payload(data: bytes, host: str = "g.example", port: int = 70) -> dict[str, Any]:
    """The payload of the menu C{data} (the fields L{compact_text} reads)."""
    menu = parse_menu(data, host, port)
    return {
        "kind": "menu",
        "request_info": {"url": f"gopher://{host}:{port}/1", "host": host, "port": port},
        "items": [
            {
                "type": item.item_type,
                "title": item.title,
                "selector": selector_text(item.selector),
                "host": item.host,
                "port": item.port,
                "next_url": item.next_url,
            }
            for item in menu.items
        ],
        "total_items": len(menu.items),
    }


def types_shown(compact: dict[str, Any]) -> list[str]:
    """Each item's type as the text gives it: stated, or the path's (or URL's) first character."""
    out = []
    for item in compact["items"]:
        if isinstance(item, str):
            out.append("i")
        elif "type" in item:
            out.append(item["type"])
        elif "path" in item:
            out.append(item["path"][1:2])
        else:
            out.append(item["next_url"].split("/", 3)[3][:1])
    return out


MENU = (
    b"iWelcome\t\terror.host\t1\r\n"
    b"0About\t/about.txt\tg.example\t7070\r\n"
    b"1Phlog\t/phlog\tg.example\t7070\r\n"
    b"7Search\t/search\tg.example\t7070\r\n"
    b"1Elsewhere\t/\tother.example\t70\r\n"
    b"hWeb\tURL:https://example.org/\tg.example\t7070\r\n"
    b"3Oops\t\terror.host\t1\r\n"
    b".\r\n"
)


def test_shared_host_and_port_said_once() -> None:
    """
    The links on the menu's own host:port are a base and paths; a link
    elsewhere keeps its URL, a web link its type; an info line is its text.
    """
    data = menu_payload(MENU, port=7070)
    compact = json.loads(compact_text(data))
    assert compact["base"] == "gopher://g.example:7070"
    assert compact["items"] == [
        "Welcome",
        {"title": "About", "path": "/0/about.txt"},
        {"title": "Phlog", "path": "/1/phlog"},
        {"title": "Search", "path": "/7/search"},
        {"title": "Elsewhere", "next_url": "gopher://other.example/1/"},
        {"type": "h", "title": "Web", "next_url": "https://example.org/"},
        {"type": "3", "title": "Oops"},
    ]
    assert list(compact) == ["kind", "request_info", "base", "items", "total_items"]
    assert menu_links(compact) == [item["next_url"] for item in data["items"]]
    assert types_shown(compact) == [item["type"] for item in data["items"]]


def test_no_base_without_a_shared_host() -> None:
    """A menu whose links go to different places (a directory of servers) keeps whole URLs."""
    data = menu_payload(
        b"1One\t/\ta.example\t70\r\n1Two\t/\tb.example\t70\r\n1Three\t/\tc.example\t70\r\n"
    )
    compact = json.loads(compact_text(data))
    assert "base" not in compact
    assert [item["next_url"] for item in compact["items"]] == [
        "gopher://a.example/1/",
        "gopher://b.example/1/",
        "gopher://c.example/1/",
    ]
    # A lone link on a host is not worth a base either.
    compact = json.loads(
        compact_text(menu_payload(b"iHi\t\terror.host\t1\r\n0A\t/a\tg.example\t70\r\n"))
    )
    assert "base" not in compact and compact["items"][1]["next_url"] == "gopher://g.example/0/a"


def test_the_payload_is_unchanged() -> None:
    """Only the text is shorter: the structured payload keeps every field of every item."""
    data = menu_payload(MENU, port=7070)
    before = json.dumps(data)
    compact_text(data)
    assert json.dumps(data) == before
    assert all(
        set(item) == {"type", "title", "selector", "host", "port", "next_url"}
        for item in data["items"]
    )


def test_batch_menus_each_have_their_own_base() -> None:
    """In a batch, each menu says its own base."""
    one = menu_payload(MENU, port=7070)
    two = menu_payload(MENU.replace(b"g.example\t7070", b"h.example\t70"), host="h.example")
    compact = json.loads(compact_text({"result": [one, two]}))
    assert [m["base"] for m in compact["result"]] == [
        "gopher://g.example:7070",
        "gopher://h.example",
    ]
    for shown, data in zip(compact["result"], (one, two), strict=True):
        assert menu_links(shown) == [item["next_url"] for item in data["items"]]


_TYPES = st.sampled_from([*"0123456789+:;<IMPTdghiIps", "\x01", "\x80", " ", "%", ""])
_HOSTS = st.sampled_from(
    ["g.example", "g.example", "g.example", "G.Example", "other.example", "::1", "", "bad host"]
)
_FIELD = st.binary(max_size=20).filter(
    lambda b: b"\t" not in b and b"\r" not in b and b"\n" not in b
)
_PORTS = st.sampled_from([b"70", b"7070", b"", b"x", b"99999", b"1"])


@st.composite
def menus(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(_TYPES).encode("latin-1")
        if draw(st.booleans()):
            lines.append(kind + draw(_FIELD))  # no TAB: display-only text
            continue
        selector = draw(st.one_of(_FIELD, st.just(b"URL:https://example.org/x")))
        host = draw(_HOSTS).encode()
        lines.append(kind + draw(_FIELD) + b"\t" + selector + b"\t" + host + b"\t" + draw(_PORTS))
    return b"\r\n".join(lines) + b"\r\n.\r\n"


@given(menus(), st.sampled_from([("g.example", 70), ("g.example", 7070), ("::1", 70)]))
def test_every_link_can_be_rebuilt_from_the_text(data: bytes, origin: tuple[str, int]) -> None:
    """For any menu, the text gives back every item's next_url exactly, and its type."""
    payload = menu_payload(data, *origin)
    compact = json.loads(compact_text(payload))
    assert menu_links(compact) == [item["next_url"] for item in payload["items"]]
    assert types_shown(compact) == [item["type"] for item in payload["items"]]
    assert len(compact["items"]) == len(payload["items"])  # offsets still count items


def test_menu_text_ceiling() -> None:
    """
    A regression ceiling for our own text (no comparison with any other
    server here; bench/bench_context.py measures that): 40 links on the
    menu's host and 8 info lines.
    """
    lines = [b"i" + b"-" * 30 + b"\t\terror.host\t1"] * 8
    lines += [
        b"0Post number %d\t/text/phlog/post-%02d.txt\t127.0.0.1\t35417" % (i, i) for i in range(40)
    ]
    data = menu_payload(b"\r\n".join(lines) + b"\r\n.\r\n", "127.0.0.1", 35417)
    text = compact_text(data)
    assert len(text) <= 2900, len(text)  # 4,116 before the base
