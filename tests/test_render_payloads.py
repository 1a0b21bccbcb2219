"""
Tests for L{gophergem.render.payloads} and L{gophergem.render.text}: the
error codes come from the error classes, every result type has its payload
builder, and the compact text block drops what it promises to drop.  (Each kind's payload is checked
against the output schemas in the fetcher, tool and hostile-server tests.)

The output schemas are leaner than pydantic writes them (no anyOf for
nullable fields, no titles, item schemas inline) and state the same facts as
the ones published before (tests/data/output_schemas_v1.json): the same
fields, types, enums and required names, and on real results of every kind
and one-change mutations of them they accept and reject the same.
"""

from __future__ import annotations

import functools
import json
import tempfile
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from referencing import Registry

from gophergem import errors
from gophergem.mcp.schemas import GeminiPayload, GopherPayload
from gophergem.mcp.server import build_server
from gophergem.render.payloads import (
    ERROR_CODES,
    error_payload,
    payload,
    tool_error_payload,
)
from gophergem.render.text import compact_text
from gophergem.results import FetchResult, GeminiResult, RequestInfo
from tests.helpers.mcp import call as gopher_call
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import KINDS, STALE, capsule, identity_capsule, session


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
    assert ERROR_CODES[ERROR_CODES.index("PIN_EXISTS") :] == (
        "PIN_EXISTS",
        "INPUT_TIMEOUT",
        "STATE_UNAVAILABLE",
        "NOT_SUBSCRIBED",
        "CONSENT_UNAVAILABLE",
    )


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


# --- the output schemas: cheaper for a client, the same facts -----------------------------

#: The output models, by the tool that publishes each.
OUTPUT_MODELS = {
    "gopher_fetch": "GopherPayload",
    "gopher_batch_fetch": "BatchPayload",
    "gemini_fetch": "GeminiPayload",
    "gemini_batch_fetch": "GeminiBatchPayload",
    "gemini_trust_list": "TrustListResult",
    "gemini_trust_update": "TrustUpdateResult",
    "gemini_client_cert_list": "ClientCertListResult",
    "gemini_client_cert_update": "ClientCertUpdateResult",
}

#: Each tool's outputSchema as published before issue 13 (pydantic's own output):
#: the reference the leaner schemas must agree with.
BEFORE = json.loads((Path(__file__).parent / "data" / "output_schemas_v1.json").read_text())


def published() -> dict[str, dict[str, Any]]:
    """Each tool's outputSchema as the SDK publishes it in tools/list."""
    net, _, _ = capsule()
    server = build_server(net.fetcher())

    async def body() -> dict[str, dict[str, Any]]:
        async with Client(server) as client:
            return {t.name: t.output_schema for t in (await client.list_tools()).tools}

    return run_with_network(net, body)


@functools.cache
def schemas() -> tuple[tuple[str, str], ...]:
    """(tool, schema text) for every tool with an output model, as published now."""
    tools = published()
    assert set(OUTPUT_MODELS) <= set(tools)
    return tuple((name, json.dumps(tools[name])) for name in OUTPUT_MODELS)


def checker(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=Registry())


def keywords(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) of every subschema; property names are not keywords."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key, value
            if key in ("properties", "$defs"):
                for sub in value.values():
                    yield from keywords(sub)
            elif key not in ("enum", "const", "required", "default"):
                yield from keywords(value)
    elif isinstance(schema, list):
        for sub in schema:
            yield from keywords(sub)


@pytest.mark.parametrize("name", list(OUTPUT_MODELS))
def test_schemas_have_no_null_branches_and_no_titles(name: str) -> None:
    """
    No published output schema has an anyOf (nullable fields are type
    lists) or a title keyword; a property named title is still there.
    """
    schema = json.loads(dict(schemas())[name])
    found = list(keywords(schema))
    assert [k for k, _ in found if k in ("anyOf", "title")] == []
    assert any(isinstance(v, list) and "null" in v for k, v in found if k == "type")


@pytest.mark.parametrize("name", list(OUTPUT_MODELS))
def test_schemas_are_smaller(name: str) -> None:
    """Every output schema is smaller than before (tools/list shrinks)."""
    assert len(dict(schemas())[name]) < len(json.dumps(BEFORE[OUTPUT_MODELS[name]]))


def facts(schema: dict[str, Any]) -> dict[str, Any]:
    """
    What a client may rely on, independent of spelling: for every path of
    properties (a union's branch named by its kind), the types, the enum (in
    order), the required names and whether other names are allowed.
    """
    defs = schema.get("$defs", {})
    out: dict[str, Any] = {}

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = {**defs[node["$ref"].rpartition("/")[2]], **node}
            del node["$ref"]
        return node

    def walk(node: dict[str, Any], path: str) -> None:
        node = resolve(node)
        types = node.get("type")
        types = set(types) if isinstance(types, list) else {types} - {None}
        enum = node.get("enum", [node["const"]] if "const" in node else None)
        for branch in node.get("anyOf", ()):  # the old spelling of a nullable field
            branch = resolve(branch)
            types.add(branch["type"])
            if branch != {"type": "null"}:
                node = {**branch, **{k: v for k, v in node.items() if k != "anyOf"}}
                enum = branch.get("enum", [branch["const"]] if "const" in branch else None)
        if enum is not None and "null" in types and None not in enum:
            enum = [*enum, None]
        out[path] = (
            sorted(types),
            enum,
            sorted(node.get("required", ())),
            node.get("additionalProperties"),
        )
        for key, sub in node.get("properties", {}).items():
            walk(sub, f"{path}.{key}")
        if "items" in node:
            walk(node["items"], f"{path}[]")
        branches = list(node.get("oneOf", ()))
        while "if" in node:  # the new spelling of a union: if kind is ... then ... else ...
            branches.append(node["then"])
            node = node["else"]
            if "if" not in node:
                branches.append(node)
        for branch in branches:
            kind = resolve(branch)["properties"]["kind"]["const"]
            walk(branch, f"{path}<{kind}>")

    walk(schema, "")
    return out


@pytest.mark.parametrize("name", list(OUTPUT_MODELS))
def test_schemas_state_the_same_facts(name: str) -> None:
    """
    Every field name, type, enum (in order), required name and
    additionalProperties of the old schema is in the new one, and nothing
    else; error codes added since are appended to the old list, never
    inserted or reordered.
    """
    now = facts(json.loads(dict(schemas())[name]))
    before = facts(BEFORE[OUTPUT_MODELS[name]])
    for path in set(now) - set(before):
        # A field added since (ADDED_SINCE_V1) is optional: no old payload lacks it wrongly.
        parent, _, key = path.rpartition(".")
        assert key in ADDED_SINCE_V1 and key not in now[parent][2], path
        del now[path]
    for path, (types, enum, required, extra) in before.items():
        if path.endswith(".error.code"):
            assert now[path][1][: len(enum)] == enum
            before[path] = (types, now[path][1], required, extra)
    assert now == before
    codes = [v[1] for k, v in now.items() if k.endswith(".error.code")]
    assert codes and all(c == list(ERROR_CODES) for c in codes)


def corpus() -> list[tuple[str, dict[str, Any]]]:
    """Real structured results of every kind of every tool, as the tests make them."""
    found: list[tuple[str, Any]] = []
    for url in (
        "gopher://g.example/",
        "gopher://g.example/0/about",
        "gopher://g.example/9/bin",
        "gopher://g.example:9/",
    ):
        found.append(("gopher_fetch", gopher_call("gopher_fetch", {"url": url})[1]))
    found.append(
        (
            "gopher_batch_fetch",
            gopher_call("gopher_batch_fetch", {"urls": ["gopher://g.example/"] * 2})[1],
        )
    )
    found.append(("gopher_batch_fetch", gopher_call("gopher_batch_fetch", {"urls": []})[1]))
    routes = {path: response for path, (response, _) in KINDS.items()}
    routes["/log"] = b"20 text/gemini; lang=en\r\n# Log\n=> /a.gmi 2024-01-02 A post\n"
    net, _, _ = capsule(routes)
    calls = [("gemini_fetch", {"url": f"gemini://localhost{path}"}) for path in routes]
    calls += [
        ("gemini_fetch", {"url": "gemini://localhost/long", "offset": 0}),
        ("gemini_batch_fetch", {"urls": ["gemini://localhost/gemtext", "gemini://localhost/ask"]}),
        ("gemini_batch_fetch", {"urls": []}),
    ]
    found += zip([n for n, _ in calls], session(net, calls, max_rendered_chars=1000), strict=True)
    net, _, _ = capsule()
    net.pins.put(STALE)
    calls = [("gemini_trust_list", {})]
    for fingerprint in ("sha256:" + "c" * 64, STALE.fingerprint):
        update = {"host": "localhost", "action": "remove", "fingerprint": fingerprint}
        calls.append(("gemini_trust_update", update))
    found += zip([n for n, _ in calls], session(net, calls), strict=True)
    with tempfile.TemporaryDirectory() as tmp:
        net, _ = identity_capsule(Path(tmp))
        create = (
            "gemini_client_cert_update",
            {"url": "gemini://localhost/app/", "action": "create"},
        )
        calls = [create, create, ("gemini_client_cert_list", {})]
        found += zip([n for n, _ in calls], session(net, calls), strict=True)
    return [(name, result.structured_content) for name, result in found]


@functools.cache
def cached_corpus() -> tuple[tuple[str, str], ...]:
    return tuple((name, json.dumps(data)) for name, data in corpus())


def test_corpus_covers_every_kind() -> None:
    """The corpus below holds every kind of gopher_fetch and gemini_fetch result."""
    kinds = {(name, json.loads(text).get("kind")) for name, text in cached_corpus()}
    assert {k for n, k in kinds if n == "gopher_fetch"} == {"menu", "text", "binary", "error"}
    feeds = [json.loads(text).get("feed_entries") for _, text in cached_corpus()]
    assert any(feeds)
    assert {k for n, k in kinds if n == "gemini_fetch"} == {
        "gemtext", "success", "binary", "input", "redirect", "certificate", "error",
    }  # fmt: skip


def mutations(value: Any) -> Iterator[Any]:
    """Copies of C{value} each with one change: a value's type, a null, a key gone or added."""
    if isinstance(value, dict):
        yield {**value, "unexpected": 1}
        for key, sub in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for changed in mutations(sub):
                yield {**value, key: changed}
    elif isinstance(value, list):
        yield [*value, 7]
        for index, sub in enumerate(value[:3]):
            for changed in mutations(sub):
                yield [*value[:index], changed, *value[index + 1 :]]
    for other in (None, 1, 1.5, "x", True, [], {}):
        if type(other) is not type(value) or other != value:
            yield other
    if isinstance(value, str):
        yield value + "?"


ADDED_SINCE_V1 = frozenset({"next_step"})
"""Optional fields added to the payloads after the v1 schemas (input: next_step)."""


def _without_added(value: Any) -> Any:
    """C{value} without the input payload's fields added since v1 (the v1 schema forbids them)."""
    if isinstance(value, dict):
        out = {k: _without_added(v) for k, v in value.items()}
        if out.get("kind") == "input":
            for key in ADDED_SINCE_V1:
                out.pop(key, None)
        return out
    if isinstance(value, list):
        return [_without_added(v) for v in value]
    return value


@pytest.mark.parametrize("name", list(OUTPUT_MODELS))
def test_new_schemas_accept_and_reject_what_the_old_did(name: str) -> None:
    """
    On real results and on every one-change mutation of them (a field's
    type, a null, a missing or an unknown key, an unknown enum value), the
    new schema accepts exactly what the old one accepted.
    """
    new = checker(json.loads(dict(schemas())[name]))
    old = checker(BEFORE[OUTPUT_MODELS[name]])
    samples = [json.loads(text) for tool, text in cached_corpus() if tool == name]
    assert samples
    for sample in samples:
        assert new.is_valid(sample)
    samples = [_without_added(sample) for sample in samples]
    verdicts = []
    for sample in samples:
        assert new.is_valid(sample) and old.is_valid(sample)
        for changed in mutations(sample):
            verdicts.append(old.is_valid(changed))
            assert new.is_valid(changed) == verdicts[-1], changed
    assert len(verdicts) > 50 and any(verdicts) and not all(verdicts)
