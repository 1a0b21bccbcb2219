# -*- test-case-name: tests.test_search_engines -*-
"""
Search engines of Geminispace and Gopherspace, without I/O.

An L{Engine} is one configured search service: a Gemini page that answers
status 10 and takes the search as its query (Kennedy, TLGS,
geminispace.info), or a Gopher type-7 item that takes it after a tab
(Veronica-2).  This module reads the settings that list them
(L{parse_engines}), picks one (L{pick_engine}), builds the URL that asks it
(L{query_url}), names the path its robots.txt must allow (L{robots_path})
and turns its answer into results (L{gemtext_hits}, L{menu_hits}), leaving
out the engine's own navigation.

Fetching is not done here: the caller sends L{query_url}'s URL through the
fetcher, so the allowlists, the robots.txt gate and pacing apply as they do
to any other fetch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

import attrs

from gophergem.errors import InvalidRequest
from gophergem.url import GEMINI_MAX_URL_BYTES, GeminiURL, GopherURL, safe_echo, scheme_of
from gophergem.wire.gemtext import Link
from gophergem.wire.gopher import MAX_TITLE_CHARS, MenuItem, selector_text
from gophergem.wire.robots import gemini_robot_paths, gopher_robot_paths
from gophergem.wire.text import sanitise_line

__all__ = [
    "DEFAULT_GEMINI_ENGINES",
    "DEFAULT_GOPHER_ENGINES",
    "WHERE",
    "Engine",
    "SearchHit",
    "default_engines",
    "gemtext_hits",
    "menu_hits",
    "parse_engines",
    "pick_engine",
    "query_url",
    "robots_path",
    "robots_paths",
]

WHERE = ("gemini", "gopher")
"""The spaces one can search: the values of L{Engine.where}."""

DEFAULT_GEMINI_ENGINES: tuple[str, ...] = (
    "gemini://kennedy.gemi.dev/search",
    "gemini://tlgs.one/search",
    "gemini://geminispace.info/search",
)
"""
The Gemini engines used when none are configured, tried in this order.
TLGS excludes its search path for every robot in its robots.txt, so with the
wildcard agent among ours it is skipped as blocked.
"""

DEFAULT_GOPHER_ENGINES: tuple[str, ...] = ("gopher://gopher.floodgap.com:70/7/v2/vs",)
"""The Gopher engines used when none are configured: Veronica-2."""

#: Schemes a result may have: the small web, and the web it links to.
_RESULT_SCHEMES = frozenset({"gemini", "gopher", "spartan", "http", "https"})

#: Longest result URL kept; anything longer cannot be a useful result.
_MAX_URL_CHARS = 2048

#: How much of a bad setting entry an error message quotes.
_SHOWN_CHARS = 120

_SEPARATORS = re.compile(r"[\s,]+")


@attrs.frozen
class Engine:
    """
    One search engine.

    Build it with L{Engine.from_text} (or L{parse_engines}), which checks
    the URL and stores its canonical spelling; an C{Engine} constructed
    directly is taken as it is.

    @ivar url: The engine's canonical URL, without any query:
        C{gemini://tlgs.one/search}, C{gopher://gopher.floodgap.com/7/v2/vs}
        (a default port is left out).
    @ivar where: C{"gemini"} or C{"gopher"}: the space it searches, which is
        the scheme of its URL.
    """

    url: str
    where: str

    @classmethod
    def from_text(cls, text: str, where: str) -> Engine:
        """
        Check one configured engine URL.

        @param where: C{"gemini"} or C{"gopher"}: which setting it came from.
        @raise ValueError: With one line naming C{text} and what is wrong: a
            URL of another scheme, not a URL at all, a Gemini URL that
            already has a query, a Gopher item that is not of type 7 or
            already carries search terms.
        """
        if where not in WHERE:
            raise ValueError(f"{_shown(where)} is not a space to search (gemini or gopher)")
        text = text.strip()
        if scheme_of(text) != where:
            raise ValueError(f"{_shown(text)} is not a {where}:// URL")
        if where == "gemini":
            return cls(_gemini_engine_url(text), where)
        return cls(_gopher_engine_url(text), where)


@attrs.frozen
class SearchHit:
    """
    One search result.

    @ivar title: What the engine called it, sanitised and clipped; the URL
        when the engine gave no title.  Never empty.
    @ivar url: The absolute URL of the result; Gemini and Gopher URLs in
        their canonical spelling.
    """

    title: str
    url: str


def _shown(text: str) -> str:
    """Quote a piece of a setting in an error message: one line, not too long."""
    return repr(safe_echo(text, _SHOWN_CHARS))


def _gemini_engine_url(text: str) -> str:
    try:
        url = GeminiURL.from_text(text)
    except InvalidRequest as error:
        raise ValueError(f"{_shown(text)} is not a usable gemini URL: {error.message}") from None
    if url.query is not None:
        raise ValueError(f"{_shown(text)} already has a query; name the search page without one")
    if len(url.to_text().encode("utf-8")) >= GEMINI_MAX_URL_BYTES:
        raise ValueError(f"{_shown(text)} leaves no room for a query in a Gemini request")
    return url.to_text()


def _gopher_engine_url(text: str) -> str:
    try:
        url = GopherURL.from_text(text)
    except InvalidRequest as error:
        raise ValueError(f"{_shown(text)} is not a usable gopher URL: {error.message}") from None
    if url.item_type != "7":
        raise ValueError(
            f"{_shown(text)} is a type-{safe_echo(url.item_type)} item; "
            "a Gopher search engine is a type-7 item"
        )
    if url.search is not None:
        raise ValueError(
            f"{_shown(text)} already carries search terms; name the type-7 item without them"
        )
    return url.to_text()


def _entries(value: str) -> list[str]:
    """
    The URLs a setting names: a JSON array of strings, or URLs separated by
    commas or whitespace.
    """
    stripped = value.strip()
    if stripped.startswith("["):
        try:
            loaded = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            raise ValueError("starts with [ but is not a JSON array of URLs") from None
        if not isinstance(loaded, list) or not all(isinstance(i, str) for i in loaded):
            raise ValueError("must be a JSON array of strings")
        return [entry.strip() for entry in loaded if entry.strip()]
    return [entry for entry in _SEPARATORS.split(stripped) if entry]


def parse_engines(value: str, where: str) -> tuple[Engine, ...]:
    """
    Read a setting listing search engines, in order of preference.

    Like the other list settings: URLs separated by commas (or whitespace),
    or a JSON array of strings.  An engine named twice is kept once, where
    it first appears.

    @param value: The setting's text.
    @param where: C{"gemini"} or C{"gopher"}: the space its engines search.
    @raise ValueError: With one line: naming the first bad entry and what
        is wrong with it (see L{Engine.from_text}), or saying that the
        setting names no engine.
    """
    if where not in WHERE:
        raise ValueError(f"{_shown(where)} is not a space to search (gemini or gopher)")
    engines: dict[str, Engine] = {}
    for entry in _entries(value):
        engine = Engine.from_text(entry, where)
        engines.setdefault(engine.url, engine)
    if not engines:
        raise ValueError("names no search engine; unset it to use the defaults")
    return tuple(engines.values())


def default_engines(where: str) -> tuple[Engine, ...]:
    """
    The engines searched when none are configured.

    @raise ValueError: When C{where} is neither C{"gemini"} nor C{"gopher"}.
    """
    if where == "gemini":
        return parse_engines(",".join(DEFAULT_GEMINI_ENGINES), where)
    return parse_engines(",".join(DEFAULT_GOPHER_ENGINES), where)


def _canonical_engine_url(text: str) -> str | None:
    """C{text} in the spelling an L{Engine} keeps, or C{None} when it is no URL of ours."""
    text = text.strip()
    try:
        if scheme_of(text) == "gemini":
            return GeminiURL.from_text(text).to_text()
        if scheme_of(text) == "gopher":
            return GopherURL.from_text(text).to_text()
    except InvalidRequest:
        return None
    return None


def pick_engine(engines: Iterable[Engine], engine_url: str | None) -> Engine:
    """
    Choose the engine to ask.

    @param engines: The configured engines, in order of preference.
    @param engine_url: The URL of the engine wanted, in any spelling of it
        (C{gopher://gopher.floodgap.com:70/7/v2/vs} names
        C{gopher://gopher.floodgap.com/7/v2/vs}); C{None} for the first.
    @raise ValueError: When no engine is configured, or C{engine_url} is
        not one of them (the message names it).
    """
    candidates = tuple(engines)
    if engine_url is None:
        if not candidates:
            raise ValueError("no search engine is configured")
        return candidates[0]
    wanted = _canonical_engine_url(engine_url) if isinstance(engine_url, str) else None
    for engine in candidates:
        if wanted is not None and engine.url == wanted:
            return engine
    known = ", ".join(engine.url for engine in candidates) or "none"
    shown = _shown(engine_url) if isinstance(engine_url, str) else "that"
    raise ValueError(f"{shown} is not a configured search engine (configured: {known})")


def _gemini(engine: Engine) -> GeminiURL:
    """The engine's URL, parsed; a L{ValueError} when it is not a Gemini engine."""
    try:
        if engine.where == "gemini":
            return GeminiURL.from_text(engine.url)
    except InvalidRequest:
        pass
    raise ValueError(f"{_shown(engine.url)} is not a usable gemini search engine")


def _gopher(engine: Engine) -> GopherURL:
    """The engine's URL, parsed; a L{ValueError} when it is not a Gopher engine."""
    try:
        if engine.where == "gopher":
            return GopherURL.from_text(engine.url)
    except InvalidRequest:
        pass
    raise ValueError(f"{_shown(engine.url)} is not a usable gopher search engine")


def query_url(engine: Engine, query: str) -> str:
    """
    The URL that asks C{engine} for C{query}, to fetch as it is.

    For a Gemini engine, the engine URL with the query as its query part,
    percent-encoded as UTF-8 (a space is C{%20}, never C{+}: engines decode
    the whole query).  For a Gopher engine, the type-7 URL with the query as
    its search terms (C{%09} then the terms), which the fetcher sends as
    C{selector TAB terms}; C{fetcher.gopher(engine.url, search=query)} asks
    the same thing.  Either way, parsing the URL back gives exactly
    C{query}.

    @raise ValueError: When C{query} is empty or blank, is not valid Unicode
        text, is too long for a Gemini request (C{"query too long: ..."}),
        or holds a tab, line break or NUL for a Gopher engine; or when
        C{engine} was built by hand from an unusable URL.  The message
        never quotes the query.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query is empty")
    try:
        raw = query.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("query is not valid Unicode text") from None
    if engine.where == "gemini":
        url = _gemini(engine)
        try:
            return url.with_input(query).to_text()
        except InvalidRequest:
            raise ValueError(
                f"query too long: as a Gemini URL it would take more than "
                f"{GEMINI_MAX_URL_BYTES} bytes"
            ) from None
    if any(byte in raw for byte in b"\t\r\n\x00"):
        raise ValueError("query may not hold a tab, line break or NUL for a Gopher engine")
    return _gopher(engine).with_search(raw).to_text()


def robots_path(engine: Engine) -> str:
    """
    The path whose robots.txt rules decide whether C{engine} may be asked:
    the search page's path for Gemini (C{/search}), the selector for Gopher
    (C{/v2/vs}, with a leading C{/} added when it has none).  L{robots_paths}
    gives every spelling the robots.txt gate tests.

    @raise ValueError: When C{engine} was built by hand from an unusable URL.
    """
    if engine.where == "gemini":
        return _gemini(engine).path
    selector = selector_text(_gopher(engine).selector)
    return selector if selector.startswith("/") else "/" + selector


def robots_paths(engine: Engine) -> list[str]:
    """
    Every spelling of the engine's search path a robots.txt rule may be
    written against, for the robots.txt gate: for Gemini the path and the
    path with a query (so C{Disallow: /search?} applies), for Gopher the
    spellings of L{gophergem.wire.robots.gopher_robot_paths}.
    """
    if engine.where == "gemini":
        return gemini_robot_paths(_gemini(engine).path, "")
    url = _gopher(engine)
    return gopher_robot_paths(url.item_type, selector_text(url.selector))


# --- results -----------------------------------------------------------------------


@attrs.frozen
class _Target:
    """Where a result points: its canonical URL, host and port (if known)."""

    url: str
    host: str
    port: int | None
    gopher: GopherURL | None = None


def _target(text: object) -> _Target | None:
    """
    Read a result's URL: C{None} unless it is an absolute URL of a result
    scheme, with a host, no whitespace, and not overlong.
    """
    if not isinstance(text, str):
        return None
    text = sanitise_line(text).strip()
    if not text or len(text) > _MAX_URL_CHARS or any(c.isspace() for c in text):
        return None
    scheme = scheme_of(text)
    if scheme not in _RESULT_SCHEMES or text[len(scheme) + 1 : len(scheme) + 3] != "//":
        return None
    try:
        if scheme == "gemini":
            gemini = GeminiURL.from_text(text)
            return _Target(gemini.to_text(), gemini.host, gemini.port)
        if scheme == "gopher":
            gopher = GopherURL.from_text(text)
            return _Target(gopher.to_text(), gopher.host, gopher.port, gopher)
        host = urlsplit(text).hostname
    except (InvalidRequest, ValueError):
        return None
    return _Target(text, host, None) if host else None


def _host_of(url: str) -> str | None:
    """The host of a Gemini or Gopher URL, or C{None} when it is neither."""
    target = _target(url)
    return None if target is None else target.host


def _title(text: object, url: str) -> str:
    """A result's title: its label sanitised and clipped, else its URL."""
    title = sanitise_line(text).strip() if isinstance(text, str) else ""
    title = title or url
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def gemtext_hits(engine: Engine, page_url: str, links: Iterable[Link]) -> list[SearchHit]:
    """
    The results on a Gemini engine's answer page, in the engine's order.

    Results are the links to other hosts.  Links to the engine's own host,
    or to the host of C{page_url}, are its navigation (the next page, a new
    search, its home page; TLGS writes them as relative links) and are left
    out, as are links that are not absolute URLs of the small web or the
    web (C{mailto:}, C{data:}...).  A URL listed twice is kept once.
    Never raises.

    @param page_url: The URL the answer came from (after redirects).
    @param links: The page's links, resolved against C{page_url}, as
        L{gophergem.wire.gemtext.parse_gemtext} gives them.
    """
    own = {_host_of(engine.url), _host_of(page_url)} - {None}
    hits: dict[str, SearchHit] = {}
    for link in links:
        target = _target(getattr(link, "url", None))
        if target is None or target.host in own or target.url in hits:
            continue
        hits[target.url] = SearchHit(_title(getattr(link, "text", None), target.url), target.url)
    return list(hits.values())


def _service_selectors(engine: Engine) -> tuple[str, int, bytes, bytes] | None:
    """
    The engine's host, port, selector, and the folder its service lives in
    (C{/v2} for C{/v2/vs}; empty when the selector has none).
    """
    try:
        url = GopherURL.from_text(engine.url)
    except InvalidRequest:
        return None
    folder = url.selector.rpartition(b"/")[0]
    return url.host, url.port, url.selector, folder


def _is_service_item(target: _Target, service: tuple[str, int, bytes, bytes] | None) -> bool:
    """Whether C{target} points back at the engine's own search service."""
    if service is None or target.gopher is None:
        return False
    host, port, selector, folder = service
    item = target.gopher
    if (item.host, item.port) != (host, port):
        return False
    if item.item_type == "7" or item.selector == selector:
        return True
    return bool(folder) and (item.selector == folder or item.selector.startswith(folder + b"/"))


def menu_hits(engine: Engine, items: Iterable[MenuItem]) -> list[SearchHit]:
    """
    The results in a Gopher engine's answer menu (Veronica-2 style), in the
    menu's order.

    Every item that links somewhere is a result, except information lines
    (C{i}), errors (C{3}) and the items that point back at the engine's own
    search service on its host and port: any search (type 7) there, the
    engine's selector, and what lives in the same folder (C{/v2/...} for
    C{/v2/vs}: help, statistics, the next page).  A URL listed twice is kept
    once.  Never raises.

    @param items: The menu's items, as L{gophergem.wire.gopher.parse_menu}
        gives them.
    """
    service = _service_selectors(engine) if engine.where == "gopher" else None
    own_host = _host_of(engine.url) if engine.where == "gemini" else None
    hits: dict[str, SearchHit] = {}
    for item in items:
        if getattr(item, "item_type", "i") in ("i", "3"):
            continue
        target = _target(getattr(item, "next_url", None))
        if target is None or target.url in hits:
            continue
        if target.host == own_host or _is_service_item(target, service):
            continue
        hits[target.url] = SearchHit(_title(getattr(item, "title", None), target.url), target.url)
    return list(hits.values())
