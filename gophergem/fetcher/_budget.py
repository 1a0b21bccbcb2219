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
resource.
"""

from __future__ import annotations

from collections.abc import Sequence

from gophergem.wire.gemtext import GemtextLine, Link
from gophergem.wire.gopher import MenuItem, selector_text

__all__ = ["cut_items", "cut_lines", "cut_text", "line_cost", "menu_item_cost", "text_cost"]

_SEPARATOR = 2  # ", " between two members or two elements
# The least a gemtext line can cost: {"type": "text", "content": ""} and a
# separator; a link line carries its link twice, each at least
# {"url": "", "text": null} and a separator, plus the "link" key.
_LEAST_LINE = 33
_LEAST_LINK = 2 * 25 + 8


def text_cost(text: str) -> int:
    """What C{text} costs inside a JSON string (without its quotes)."""
    return (
        len(text)
        + text.count('"')
        + text.count("\\")
        + text.count("\n")
        + text.count("\t")
        + text.count("\r")
    )


def _string(text: str | None) -> int:
    return 4 if text is None else text_cost(text) + 2  # null, or the quoted string


def _member(key: str, value: int) -> int:
    return len(key) + 4 + value + _SEPARATOR  # "key": value,


def _link_cost(link: Link) -> int:
    return 2 + _member("url", _string(link.url)) + _member("text", _string(link.text))


def line_cost(line: GemtextLine) -> int:
    """
    What one gemtext line costs in a payload: its object in C{lines}, its
    link in C{links}, and (for a link whose label may start with a date) an
    entry in C{feed_entries}.
    """
    cost = 2 + _member("type", _string(line.type)) + _member("content", _string(line.content))
    cost += _SEPARATOR
    for key in ("text", "alt_text", "language"):
        value = getattr(line, key)
        if value is not None:
            cost += _member(key, _string(value))
    if line.level is not None:
        cost += _member("level", 1)
    link = line.link
    if link is not None:
        link_cost = _link_cost(link)
        cost += _member("link", link_cost) + link_cost + _SEPARATOR
        if link.text and link.text[:1].isdigit():
            # {"date": "YYYY-MM-DD", "title": <at most the label>, "url": ...}
            cost += 2 + _member("date", 12) + _member("title", _string(link.text))
            cost += _member("url", _string(link.url)) + _SEPARATOR
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


def cut_lines(lines: Sequence[GemtextLine], limit: int) -> int:
    """How many of C{lines}, from the first, cost at most C{limit} together (maybe none)."""
    spent = 0
    for index, line in enumerate(lines):
        spent += line_cost(line)
        if spent > limit:
            return index
    return len(lines)


def lines_that_may_fit(chunk: str, limit: int) -> str:
    """
    The start of C{chunk} (whole lines) beyond which no line can fit
    C{limit}, by the least each line costs: what is worth parsing.
    """
    spent = 0
    position = 0
    size = len(chunk)
    while position < size:
        newline = chunk.find("\n", position)
        stop = size if newline < 0 else newline + 1
        spent += _LEAST_LINE + (stop - position)
        if chunk.startswith("=>", position):
            # Its target and label come back twice more (in the line's link
            # and in links), less the marker and the space between them.
            spent += _LEAST_LINK + max(0, stop - position - 4)
        if spent > limit and position > 0:
            return chunk[:position]
        position = stop
    return chunk
