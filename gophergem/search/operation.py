# -*- test-case-name: tests.test_search_operation -*-
"""
Searching Geminispace and Gopherspace through their own search engines.

L{search} asks the configured engines in order, through the same
L{IFetcher} as every other fetch, and returns the first engine's results.
An engine whose robots.txt disallows its search path is refused by the
fetcher before the query is sent (C{BLOCKED_BY_ROBOTS}, only robots.txt was
read) and is reported in C{tried}, like every engine that failed; the next
one is asked.  The wire work (query URLs, which links are results) is in
L{gophergem.search.engines}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from twisted.internet.defer import Deferred

from gophergem.errors import GophergemError, InvalidRequest, NotFetchable
from gophergem.interfaces import IFetcher
from gophergem.results import FetchFailure, GemtextResult, InputResult, MenuResult
from gophergem.search.engines import (
    Engine,
    SearchHit,
    gemtext_hits,
    menu_hits,
    pick_engine,
    query_url,
)

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "SearchOutcome", "search"]

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@attrs.frozen
class SearchOutcome:
    """
    What a search found: the engine that answered (C{None} when none did),
    the query, its results, and the engines tried before, with their errors.
    """

    engine: str | None
    query: str
    results: tuple[SearchHit, ...]
    tried: tuple[tuple[str, GophergemError], ...]


def _engines(where: str, gemini: Sequence[str], gopher: Sequence[str]) -> list[Engine]:
    if where not in ("gemini", "gopher"):
        raise InvalidRequest(message='where must be "gemini" or "gopher".')
    urls = gemini if where == "gemini" else gopher
    return [Engine.from_text(url, where) for url in urls]


def search(
    fetcher: IFetcher,
    query: str,
    *,
    where: str = "gemini",
    engine: str | None = None,
    limit: int = DEFAULT_LIMIT,
    gemini_engines: Sequence[str] = (),
    gopher_engines: Sequence[str] = (),
) -> Deferred[SearchOutcome]:
    """
    Search for C{query}: with C{engine} only that one (one of the configured
    engines, by URL), else each configured engine for C{where} in turn until
    one answers.

    @return: Fires with the outcome; fails with L{InvalidRequest} for an
        empty or over-long query, an unknown engine, a bad C{where} or
        C{limit}.
    """
    return Deferred.fromCoroutine(
        _search(fetcher, query, where, engine, limit, gemini_engines, gopher_engines)
    )


async def _search(
    fetcher: IFetcher,
    query: str,
    where: str,
    engine: str | None,
    limit: int,
    gemini_engines: Sequence[str],
    gopher_engines: Sequence[str],
) -> SearchOutcome:
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequest(message="Give some words to search for.")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(message=f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    engines = _engines(where, gemini_engines, gopher_engines)
    if engine is not None:
        try:
            engines = [pick_engine(engines, engine)]
        except ValueError as error:
            raise InvalidRequest(message=str(error)) from None
    if not engines:
        raise InvalidRequest(message=f"No {where} search engine is configured.")
    tried: list[tuple[str, GophergemError]] = []
    for candidate in engines:
        try:
            url = query_url(candidate, query)
        except ValueError as error:
            raise InvalidRequest(message=str(error)) from None
        try:
            hits = await _ask(fetcher, candidate, url)
        except GophergemError as error:
            tried.append((candidate.url, error))
            continue
        return SearchOutcome(candidate.url, query, tuple(hits[:limit]), tuple(tried))
    return SearchOutcome(None, query, (), tuple(tried))


async def _ask(fetcher: IFetcher, engine: Engine, url: str) -> list[SearchHit]:
    result: Any
    if engine.where == "gemini":
        result = await fetcher.gemini(url)
        if isinstance(result, GemtextResult):
            return gemtext_hits(engine, result.request_info.url, result.links)
        if isinstance(result, InputResult):
            raise NotFetchable(
                message="The engine asked for input again: it did not take the query this way."
            )
    else:
        result = await fetcher.gopher(url)
        if isinstance(result, MenuResult):
            return menu_hits(engine, result.items)
    if isinstance(result, FetchFailure):
        raise result.error
    raise NotFetchable(message="The engine's answer is not a list of results.")
