"""
Tests for L{gophergem.mcp.payloads}: the error codes come from the error
classes, every result type has its payload builder, and the compact text
block drops what it promises to drop.  (Each kind's payload is checked
against the output schemas in the fetcher, tool and hostile-server tests.)
"""

from __future__ import annotations

import json
import typing

import pytest

from gophergem import errors
from gophergem.mcp.payloads import (
    ERROR_CODES,
    GeminiPayload,
    GopherPayload,
    compact_text,
    error_payload,
    payload,
    tool_error_payload,
)
from gophergem.results import FetchResult, GeminiResult, RequestInfo


def every_error_class() -> list[type[errors.GophergemError]]:
    found: list[type[errors.GophergemError]] = []
    pending: list[type[errors.GophergemError]] = [errors.GophergemError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_error_codes_are_the_classes_codes() -> None:
    """
    ERROR_CODES holds each error class's code once, and nothing else, in the
    order gophergem.errors defines them (the schemas' enum keeps its order).
    """
    assert set(ERROR_CODES) == {cls.code for cls in every_error_class()}
    assert len(ERROR_CODES) == len(set(ERROR_CODES))
    assert ERROR_CODES[:3] == ("INVALID_REQUEST", "NOT_FETCHABLE", "BLOCKED")
    assert ERROR_CODES[-1] == "PIN_EXISTS"


@pytest.mark.parametrize("model", [GopherPayload, GeminiPayload])
def test_schemas_list_every_error_code(model: type[GopherPayload | GeminiPayload]) -> None:
    """The error code enum of the output schemas is ERROR_CODES."""
    text = json.dumps(model.model_json_schema())
    for code in ERROR_CODES:
        assert f'"{code}"' in text


@pytest.mark.parametrize(
    "result_type",
    sorted(
        set(typing.get_args(FetchResult)) | set(typing.get_args(GeminiResult)),
        key=lambda cls: cls.__name__,
    ),
    ids=lambda cls: cls.__name__,
)
def test_every_result_type_has_a_builder(result_type: type) -> None:
    """payload() dispatches every result type to a builder of its own."""
    assert payload.dispatch(result_type) is not payload.dispatch(object)


def test_unknown_value_is_a_type_error() -> None:
    """A value that is no result is a programming error, not an empty payload."""
    with pytest.raises(TypeError, match="str"):
        payload("not a result")  # type: ignore[arg-type]


def test_error_payload_without_request_info() -> None:
    """A failure with nothing to echo still has a request_info, with an empty URL."""
    error = errors.InvalidRequest(message="no")
    assert error_payload(None, error) == {
        "kind": "error",
        "request_info": {"url": ""},
        "error": {"code": "INVALID_REQUEST", "message": "no"},
    }


def test_error_payload_echoes_gopher_info() -> None:
    """Only the request_info fields that are set are echoed."""
    info = RequestInfo(url="gopher://g.example/1/", host="g.example", port=70)
    shown = error_payload(info, errors.DNSError(message="nx"))["request_info"]
    assert shown == {"url": "gopher://g.example/1/", "host": "g.example", "port": 70}


def test_tool_error_payload() -> None:
    """A trust tool's refusal is kind error with the error's fields."""
    assert tool_error_payload(errors.UserDeclined(message="no")) == {
        "kind": "error",
        "error": {"code": "USER_DECLINED", "message": "no"},
    }


def test_compact_text_drops_nulls_false_flags_and_fresh_cache_times() -> None:
    """No nulls, no false flags, no cache age on a fresh fetch; one line of JSON."""
    data = {
        "kind": "text",
        "request_info": {"url": "gopher://g.example/0/a", "host": "g.example", "port": 70},
        "text": "hi",
        "truncated": False,
        "next_offset": None,
        "cached": False,
        "cached_at": "2024-01-01T00:00:00Z",
        "cache_age_seconds": 0,
    }
    text = compact_text(data)
    assert "\n" not in text
    assert json.loads(text) == {
        "kind": "text",
        "request_info": {"url": "gopher://g.example/0/a"},
        "text": "hi",
    }
