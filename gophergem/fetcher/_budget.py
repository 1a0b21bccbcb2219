# -*- test-case-name: tests.test_windows -*-
"""
How much of a resource fits one window.

C{max_rendered_chars} bounds what a window costs once it is a payload, not
only the characters of body text it holds: a page of 200,000 one-word link
lines is a few hundred thousand characters of text, but each line becomes a
JSON object with its type, its content and its resolved link (twice: in
C{lines} and in C{links}), so counting only the text let one window grow to
ten times its limit.  Here every unit is charged what it costs as JSON:

  - body text: one per character, two for each character JSON escapes
    (C{"}, C{\\}, newline, tab, carriage return; the text is sanitised, so
    no other control character is left);
  - a gemtext line: its object in C{document.lines} with every field it
    carries, plus its link again in C{document.links} and, for a dated link,
    its C{feed_entries} object;
  - a menu item: its object in C{items} with all six fields.

Keys are counted with the roomiest separators (C{", "} and C{": "}, as
C{json.dumps} writes by default), and characters outside ASCII as one (as
the MCP SDK sends them, in UTF-8).  The content of a window therefore costs
at most C{max_rendered_chars}, in the structured content and in the compact
text block alike (the text block leaves fields out, never adds any); the
envelope (request_info, the window and cache fields, notes) comes on top.

Offsets keep their meaning (characters of a body, items of a menu), and a
window ends where the next one starts, so windows still abut exactly.  Each
window costs time in proportion to what it holds, never to the whole
resource: a gemtext window parses its lines one at a time and stops at the
first that does not fit (L{fitting_lines}).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring

from gophergem.wire.gemtext import GemtextLine
from gophergem.wire.gopher import MenuItem, selector_text

__all__ = [
    "cut_items",
    "cut_text",
    "fitting_lines",
    "line_cost",
    "menu_item_cost",
    "text_cost",
]

_SEPARATOR = 2  # ", " between two members or two elements


def text_cost(text: str) -> int:
    """
    What C{text} costs inside a JSON string (without its quotes).

    For sanitised text (the only text a payload holds) this is its length
    plus one for each C{"}, C{\\}, newline, tab and carriage return: the
    characters JSON escapes with two (C{tests/test_windows.py} checks the
    two agree).  JSON's own encoder counts them in one pass.
    """
    return len(encode_basestring(text)) - 2


def _string(text: str | None) -> int:
    """What a string member's value costs: C{null}, or the quoted string."""
    return 4 if text is None else len(encode_basestring(text))


def _member(key: str, value: int) -> int:
    return len(key) + 4 + value + _SEPARATOR  # "key": value,


# What the members of a line cost besides their values: "type": and
# "content": with their separators, the braces and the separator after the
# object; "text":, "alt_text":, "language": and "level": each with theirs.
_LINE = 2 + _member("type", 0) + _member("content", 0) + _SEPARATOR
_TEXT = _member("text", 0)
_ALT_TEXT = _member("alt_text", 0)
_LANGUAGE = _member("language", 0)
_LEVEL = _member("level", 1)
# A link object ({"url": ..., "text": ...}), its "link": key in the line and
# the separator after it in links; a feed entry's members and braces.
_LINK = 2 + _member("url", 0) + _member("text", 0)
_IN_LINE = _member("link", 0) + _SEPARATOR
_ENTRY = 2 + _member("date", 12) + _member("title", 0) + _member("url", 0) + _SEPARATOR


def line_cost(line: GemtextLine) -> int:
    """
    What one gemtext line costs in a payload: its object in C{lines}, its
    link in C{links}, and (for a link whose label may start with a date) an
    entry in C{feed_entries}.
    """
    cost = _LINE + len(line.type) + 2 + len(encode_basestring(line.content))
    if line.text is not None:
        cost += _TEXT + len(encode_basestring(line.text))
    if line.alt_text is not None:
        cost += _ALT_TEXT + len(encode_basestring(line.alt_text))
    if line.language is not None:
        cost += _LANGUAGE + len(encode_basestring(line.language))
    if line.level is not None:
        cost += _LEVEL
    link = line.link
    if link is not None:
        url = len(encode_basestring(link.url))
        label = _string(link.text)
        cost += _IN_LINE + 2 * (_LINK + url + label)
        if link.text and link.text[:1].isdigit():
            # {"date": "YYYY-MM-DD", "title": <at most the label>, "url": ...}
            cost += _ENTRY + label + url
    return cost


def menu_item_cost(item: MenuItem) -> int:
    """What one menu item costs in a payload: its object in C{items}."""
    return (
        2
        + _member("type", _string(item.item_type))
        + _member("title", _string(item.title))
        + _member("selector", _string(selector_text(item.selector)))
        + _member("host", _string(item.host))
        + _member("port", len(str(item.port)))
        + _member("next_url", _string(item.next_url))
        + _SEPARATOR
    )


def cut_text(text: str, offset: int, limit: int) -> int:
    """
    Where a window of C{text} starting at C{offset} ends: the most
    characters whose cost is at most C{limit} (at least one).
    """
    end = min(len(text), offset + limit)
    if text_cost(text[offset:end]) <= limit:
        return end
    # Escapes make it too dear: the longest prefix that fits, by bisection.
    low, high = offset + 1, end - 1
    while low < high:
        middle = (low + high + 1) // 2
        if text_cost(text[offset:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def cut_items(items: Sequence[MenuItem], offset: int, most: int, limit: int) -> int:
    """
    Where a window of menu C{items} starting at C{offset} ends: at most
    C{most} items, and only as many as cost at most C{limit} together (at
    least one, however dear).
    """
    end = min(len(items), offset + most)
    spent = 0
    for index in range(offset, end):
        spent += menu_item_cost(items[index])
        if spent > limit and index > offset:
            return index
    return end


def fitting_lines(
    lines: Iterable[tuple[GemtextLine, int]], limit: int
) -> tuple[list[GemtextLine], int] | None:
    """
    The first of C{lines} (each with where the line after it starts, as
    L{gophergem.wire.gemtext.gemtext_lines} gives them) that cost at most
    C{limit} together, and where the line after the last of them starts;
    C{None} when not even the first fits.  Lines are taken only up to the
    first that does not fit, so a lazy parse stops there.
    """
    kept: list[GemtextLine] = []
    spent = end = 0
    for line, stop in lines:
        spent += line_cost(line)
        if spent > limit:
            if not kept:
                return None
            break
        kept.append(line)
        end = stop
    return kept, end
