# -*- test-case-name: tests.test_render_payloads -*-
"""
The payloads: the only place domain values become structured output.

L{payload} turns a L{gophergem.results} value into its complete structured
payload, a plain dict, one builder per result type; the other builders do
the same for a failure or refusal and for the feed and search answers.  L{gophergem.render.text}
prints a payload as the compact text a model reads.  What a payload may hold
is described by the output models in L{gophergem.mcp.schemas}, which the
tests check every payload against.  This module imports neither pydantic nor
the MCP SDK: the CLI prints payloads without loading either, and the server
does not build the models at start-up.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from gophergem.errors import GophergemError
from gophergem.results import (
    BinaryResult,
    CacheInfo,
    CertificateResult,
    FetchFailure,
    FetchResult,
    GeminiBinaryResult,
    GeminiRequestInfo,
    GeminiResult,
    GemtextResult,
    InputResult,
    MenuResult,
    PartialLineResult,
    RedirectResult,
    RequestInfo,
    SuccessResult,
    TextResult,
    Window,
)
from gophergem.wire.gemtext import GemtextLine, Link
from gophergem.wire.gopher import selector_text

__all__ = [
    "DECODING_DESCRIPTION",
    "ERROR_CODES",
    "SIZE_CAP_NOTE",
    "error_payload",
    "payload",
    "request_info_payload",
    "search_payload",
    "subscription_payload",
    "subscriptions_payload",
    "tool_error_payload",
    "unread_payload",
    "updates_payload",
]


def _error_classes(cls: type[GophergemError]) -> Iterator[type[GophergemError]]:
    for subclass in cls.__subclasses__():  # in the order errors.py defines them
        yield subclass
        yield from _error_classes(subclass)


ERROR_CODES: tuple[str, ...] = tuple(
    dict.fromkeys(cls.code for cls in _error_classes(GophergemError))
)
"""
Every stable error code: the C{code} of each L{GophergemError} subclass, in
the order C{gophergem.errors} defines them (the order of SPEC section 3), so
the output schemas do not change when the module is merely reshuffled.
"""

SIZE_CAP_NOTE = (
    "The server sent more than the configured size cap; this is the part that "
    "arrived before the cap."
)


DECODING_DESCRIPTION = (
    "Set only when the charset is not certain: guessed (no usable declaration and not "
    "UTF-8; the 8-bit charset that fits the bytes best was used) or lossy (no candidate "
    "decodes every byte; those that did not fit became U+FFFD)."
)


def tool_error_payload(error: GophergemError) -> dict[str, Any]:
    """The payload of a trust or identity tool that did nothing: C{error}, and why."""
    return {"kind": "error", "error": error.fields()}


# --- payloads ---------------------------------------------------------------


def _request_info(info: RequestInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"url": info.url}
    for name, value in (
        ("timestamp", info.timestamp),
        ("host", info.host),
        ("port", info.port),
        ("type", info.item_type),
        ("selector", info.selector),
        ("search_ignored", info.search_ignored),
    ):
        if value is not None:
            out[name] = value
    return out


def _gemini_info(info: GeminiRequestInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"url": info.url}
    for name in (
        "timestamp", "host", "port", "path", "has_query", "tls_version", "cipher",
        "cert_fingerprint", "tofu_warning", "client_cert_warning", "input_redacted",
    ):  # fmt: skip
        value = getattr(info, name)
        if value is not None:
            out[name] = value
    return out


def subscription_payload(sub: Any) -> dict[str, Any]:
    """A subscription made (or renewed): C{feed_subscribe}'s answer."""
    return {
        "kind": "subscription",
        "url": sub.url,
        "title": sub.title,
        "feed_type": sub.feed_type,
        "entries_known": sub.entries_known,
    }


def subscriptions_payload(subs: Any) -> dict[str, Any]:
    """Every subscription: C{feed_list}'s answer."""
    return {
        "kind": "subscriptions",
        "entries": [
            {
                "url": sub.url,
                "title": sub.title,
                "feed_type": sub.feed_type,
                "last_checked": sub.last_checked,
                "unread": sub.unread,
                "last_error": sub.last_error,
            }
            for sub in subs
        ],
    }


def updates_payload(updates: Any) -> dict[str, Any]:
    """What is new: C{feed_updates}'s answer (a L{gophergem.feeds.follow.Updates})."""
    return {
        "kind": "feed_updates",
        "entries": [_feed_entry(entry) for entry in updates.entries],
        "more": updates.more,
        "checked": updates.checked,
        "errors": [{"feed_url": e.feed_url, "error": e.error.fields()} for e in updates.errors],
    }


def unread_payload(entries: Any) -> dict[str, Any]:
    """The C{gophergem://feeds/updates} resource: the unread entries (L{Follower.unread})."""
    return {"kind": "unread", "entries": [_feed_entry(entry) for entry in entries]}


def _feed_entry(entry: Any) -> dict[str, Any]:
    return {
        "feed_url": entry.feed_url,
        "feed_title": entry.feed_title,
        "url": entry.url,
        "title": entry.title,
        "published": entry.published,
    }


def search_payload(found: Any) -> dict[str, Any]:
    """A search's answer (a L{gophergem.search.SearchOutcome})."""
    return {
        "kind": "search_results",
        "engine": found.engine,
        "query": found.query,
        "results": [{"title": hit.title, "url": hit.url} for hit in found.results],
        "tried": [{"engine": engine, "error": error.fields()} for engine, error in found.tried],
    }


def request_info_payload(info: RequestInfo | GeminiRequestInfo) -> dict[str, Any]:
    """The C{request_info} of a payload."""
    return _gemini_info(info) if isinstance(info, GeminiRequestInfo) else _request_info(info)


def _cache(cache: CacheInfo) -> dict[str, Any]:
    return {
        "cached": cache.cached,
        "cached_at": cache.cached_at,
        "cache_age_seconds": cache.cache_age_seconds,
    }


def _window_fields(window: Window, total_key: str) -> dict[str, Any]:
    """The window keys of a payload: where it ends, what is left, and the size-cap note."""
    out: dict[str, Any] = {
        "truncated": window.truncated,
        "next_offset": window.next_offset,
        total_key: window.total,
    }
    if window.size_capped:
        out["size_capped"] = True
        out["note"] = SIZE_CAP_NOTE
    return out


def error_payload(
    info: RequestInfo | GeminiRequestInfo | None, error: GophergemError
) -> dict[str, Any]:
    """The payload of a failure to fetch what C{info} describes (if anything)."""
    if isinstance(info, GeminiRequestInfo):
        shown = _gemini_info(info)
    elif info is not None:
        shown = _request_info(info)
    else:
        shown = {"url": ""}
    return {"kind": "error", "request_info": shown, "error": error.fields()}


@functools.singledispatch
def payload(result: FetchResult | GeminiResult) -> dict[str, Any]:
    """
    Turn a fetch result into its complete structured payload.

    One builder per result type is registered below; a value of any other
    type is a programming error.
    """
    raise TypeError(f"no payload for {type(result).__name__}")


@payload.register
def _menu(result: MenuResult) -> dict[str, Any]:
    return {
        "kind": "menu",
        "request_info": _request_info(result.request_info),
        "items": [
            {
                "type": item.item_type,
                "title": item.title,
                "selector": selector_text(item.selector),
                "host": item.host,
                "port": item.port,
                "next_url": item.next_url,
            }
            for item in result.items
        ],
        **_window_fields(result.window, "total_items"),
        **_cache(result.cache),
        **_incomplete_fields(result.incomplete_reason, result.window.size_capped),
    }


@payload.register
def _text(result: TextResult) -> dict[str, Any]:
    return {
        "kind": "text",
        "request_info": _request_info(result.request_info),
        "text": result.text,
        "bytes": result.size,
        "charset": result.charset,
        **_decoding(result.decoding),
        **_window_fields(result.window, "total_chars"),
        **_cache(result.cache),
        **_incomplete_fields(result.incomplete_reason, result.window.size_capped),
    }


@payload.register
def _binary(result: BinaryResult) -> dict[str, Any]:
    return _described(result, _request_info(result.request_info), "bytes")


@payload.register
def _gemtext(result: GemtextResult) -> dict[str, Any]:
    out = {
        "kind": "gemtext",
        "request_info": _gemini_info(result.request_info),
        "document": {
            "lines": [_line(line) for line in result.lines],
            "links": [_link(link) for link in result.links],
        },
        "size": result.size,
        "charset": result.charset,
        **_decoding(result.decoding),
        "lang": result.lang,
        **_window_fields(result.window, "total_chars"),
        **_cache(result.cache),
    }
    if result.feed_entries:
        out["feed_entries"] = [
            {"date": e.date, "title": e.title, "url": e.url} for e in result.feed_entries
        ]
    return _incomplete(out, result.incomplete_reason)


@payload.register
def _partial_line(result: PartialLineResult) -> dict[str, Any]:
    out = {
        "kind": "gemtext",
        "request_info": _gemini_info(result.request_info),
        "text": result.text,
        "partial_line": True,
        "size": result.size,
        "charset": result.charset,
        **_decoding(result.decoding),
        **_window_fields(result.window, "total_chars"),
        **_cache(result.cache),
    }
    return _incomplete(out, result.incomplete_reason)


@payload.register
def _success(result: SuccessResult) -> dict[str, Any]:
    mime = result.mime
    out = {
        "kind": "success",
        "request_info": _gemini_info(result.request_info),
        "content": result.content,
        "mime_type": {
            "type": mime.type,
            "subtype": mime.subtype,
            "charset": mime.charset,
            "lang": mime.lang,
        },
        **_decoding(result.decoding),
        "size": result.size,
        **_window_fields(result.window, "total_chars"),
        **_cache(result.cache),
    }
    return _incomplete(out, result.incomplete_reason)


@payload.register
def _gemini_binary(result: GeminiBinaryResult) -> dict[str, Any]:
    return _described(result, _gemini_info(result.request_info), "size")


def _described(
    result: BinaryResult | GeminiBinaryResult, request_info: dict[str, Any], size_key: str
) -> dict[str, Any]:
    """The payload of a binary of either protocol: described, never returned."""
    out = {
        "kind": "binary",
        "request_info": request_info,
        size_key: result.size,
        "mime_type": result.mime_type,
        "note": result.note + (" " + SIZE_CAP_NOTE if result.size_capped else ""),
        **_cache(result.cache),
    }
    if result.size_capped:
        out["size_capped"] = True
    return _incomplete(out, result.incomplete_reason)


SENSITIVE_ADVICE = (
    "The capsule asks for a secret (status 11), such as a password. Answering with the input "
    "argument puts it in front of the assistant, in the conversation. Ask the user whether "
    "they accept that; a client that offers URL-mode elicitation lets them type it on a page "
    "the assistant never sees."
)


@payload.register
def _input(result: InputResult) -> dict[str, Any]:
    out = {
        "kind": "input",
        "request_info": _gemini_info(result.request_info),
        "prompt": result.prompt,
        "sensitive": result.sensitive,
    }
    if result.sensitive:
        out["next_step"] = SENSITIVE_ADVICE
    return out


@payload.register
def _redirect(result: RedirectResult) -> dict[str, Any]:
    return {
        "kind": "redirect",
        "request_info": _gemini_info(result.request_info),
        "new_url": result.new_url,
        "permanent": result.permanent,
        "cross_host": result.cross_host,
        "scheme": result.scheme,
    }


@payload.register
def _certificate(result: CertificateResult) -> dict[str, Any]:
    return {
        "kind": "certificate",
        "request_info": _gemini_info(result.request_info),
        "status": result.status,
        "required": result.required,
        "message": result.message,
        "next_step": result.next_step,
    }


@payload.register
def _failure(result: FetchFailure) -> dict[str, Any]:
    return error_payload(result.request_info, result.error)


INCOMPLETE_NOTE = (
    "The server closed the connection without TLS close_notify; the body may be incomplete."
)

#: The note an incomplete result carries, by its C{incomplete_reason}.
INCOMPLETE_NOTES = {
    "connection_reset": "The connection broke before the server finished; this is what "
    "arrived, and the rest may be missing.",
    "no_close_notify": INCOMPLETE_NOTE,
    "deadline": "The fetch deadline passed while the server was still sending (or had not "
    "closed the connection); this is what arrived by then, and the rest may be missing.",
}


def _incomplete_fields(reason: str | None, size_capped: bool) -> dict[str, Any]:
    """The incomplete fields of a windowed payload (its note follows the size cap's)."""
    if reason is None:
        return {}
    return _incomplete({"note": SIZE_CAP_NOTE} if size_capped else {}, reason)


def _incomplete(out: dict[str, Any], reason: str | None) -> dict[str, Any]:
    """Mark C{out} incomplete, with its reason and a note, when C{reason} is set."""
    if reason is not None:
        out["incomplete"] = True
        out["incomplete_reason"] = reason
        note: str | None = out.get("note")
        out["note"] = (note + " " if note else "") + INCOMPLETE_NOTES.get(
            reason, "The body may be incomplete."
        )
    return out


def _decoding(decoding: str) -> dict[str, Any]:
    """The C{decoding} key of a text payload: only when the charset is not certain."""
    return {} if decoding == "clean" else {"decoding": decoding}


def _link(link: Link) -> dict[str, Any]:
    if link.takes_input:  # a Spartan =: link; never set on a Gemini page
        return {"url": link.url, "text": link.text, "takes_input": True}
    return {"url": link.url, "text": link.text}


def _line(line: GemtextLine) -> dict[str, Any]:
    out: dict[str, Any] = {"type": line.type, "content": line.content}
    for name in ("text", "level", "alt_text", "language"):
        value = getattr(line, name, None)
        if value is not None:
            out[name] = value
    link = getattr(line, "link", None)
    if link is not None:
        out["link"] = _link(link)
    return out
