"""
Tests for L{gophergem.mcp.gemini_tools}: the six Gemini tools driven by the
SDK's in-process C{mcp.Client}, in the legacy (initialize) era and the
2026-07-28 era, with and without an elicitation callback.  Every structured
result is checked against the tool's outputSchema with jsonschema; the
Gemini capsule is a fake on an in-memory network with real TLS.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import mcp_types
import pytest
from mcp import Client

from gophergem.mcp.server import build_server
from gophergem.testing import EPOCH, FakeGeminiServer, MemoryNetwork, ServerTLS, make_certificate
from gophergem.trust import Pin
from gophergem.trust.identities import FileIdentityStore
from gophergem.url import GeminiURL
from tests.mcp_helpers import run_with_network
from tests.test_fetcher_gemini import fingerprint_of

HOST_IP = "192.0.2.20"  # memory reactor only: never dialled
PAGE = b"20 text/gemini\r\n# Hello\n=> /next Next\n"
ERAS = ["legacy", "2026-07-28"]
STALE = Pin(
    host="localhost",
    port=1965,
    fingerprint="sha256:" + "a" * 64,
    spki="sha256:" + "b" * 64,
    first_seen=EPOCH - 86400,
    last_seen=EPOCH - 86400,
    not_before=EPOCH - 86400 * 400,
    expires=EPOCH + 86400 * 30,
)


@attrs.define
class Asker:
    """An elicitation callback that answers every question with C{action}."""

    action: str
    confirm: bool = True
    questions: list[str] = attrs.field(factory=list)

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.questions.append(params.message)
        if self.action == "accept":
            return mcp_types.ElicitResult(action="accept", content={"confirm": self.confirm})
        return mcp_types.ElicitResult(action=self.action)  # type: ignore[arg-type]


def capsule(
    routes: dict[str, Any] | None = None, **net_options: Any
) -> tuple[MemoryNetwork, FakeGeminiServer, ServerTLS]:
    """A network where localhost serves C{routes} over TLS with a fixed certificate."""
    net = MemoryNetwork(**net_options)
    net.resolver.add("localhost", HOST_IP)
    tls = ServerTLS(*make_certificate(now=EPOCH))
    server = net.listen_gemini(HOST_IP, 1965, FakeGeminiServer(routes or {"/": PAGE}), tls)
    return net, server, tls


@functools.cache
def _validator(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validator(schema: dict[str, Any]) -> Any:
    """A checked jsonschema validator for C{schema}, built once per distinct schema."""
    return _validator(json.dumps(schema, sort_keys=True))


def session(
    net: MemoryNetwork,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    mode: str = "legacy",
    asker: Asker | None = None,
    **gemini: Any,
) -> list[Any]:
    """
    Make C{calls} in one client session; check every structured result
    against its tool's outputSchema; return the results.
    """
    gemini.setdefault("respect_robots_txt", False)
    gemini.setdefault("requests_per_minute", 0)
    server = build_server(net.fetcher(gemini=gemini))

    async def body() -> list[Any]:
        async with Client(server, mode=mode, elicitation_callback=asker) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                if result.structured_content is not None:
                    validator(tools[name].output_schema).validate(result.structured_content)
                    compact = json.loads(result.content[0].text)
                    assert compact.get("kind") == result.structured_content.get("kind")
                results.append(result)
            return results

    return run_with_network(net, body)


def one(net: MemoryNetwork, name: str, arguments: dict[str, Any], **options: Any) -> Any:
    (result,) = session(net, [(name, arguments)], **options)
    return result


def data(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result.content
    return result.structured_content  # type: ignore[no-any-return]


def error_code(result: Any) -> str:
    assert result.is_error is True, result
    return data(result)["error"]["code"]  # type: ignore[no-any-return]


def restart_with_new_key(net: MemoryNetwork) -> FakeGeminiServer:
    """Restart localhost's capsule with a certificate for a new key."""
    return net.listen_gemini(
        HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), ServerTLS(*make_certificate(now=EPOCH))
    )


# --- gemini_fetch -----------------------------------------------------------------------

KINDS = {
    "/gemtext": (PAGE, "gemtext"),
    "/plain": (b"20 text/plain; charset=iso-8859-1\r\ncaf\xe9", "success"),
    "/png": (b"20 image/png\r\n\x89PNG\r\n\x1a\n", "binary"),
    "/ask": (b"11 Password\r\n", "input"),
    "/moved": (b"31 gemini://elsewhere.example/\r\n", "redirect"),
    "/who": (b"60 Identify yourself\r\n", "certificate"),
    "/gone": (b"52 Gone\r\n", "error"),
    "/long": (b"20 text/gemini\r\n" + b"x" * 2000 + b"\n", "gemtext"),
}


@pytest.mark.parametrize("mode", ERAS)
def test_fetch_every_kind_validates(mode: str) -> None:
    """Every result kind validates against gemini_fetch's schema; only errors set isError."""
    net, _, _ = capsule({path: response for path, (response, _) in KINDS.items()})
    calls = [("gemini_fetch", {"url": f"gemini://localhost{path}"}) for path in KINDS]
    calls.append(("gemini_fetch", {"url": "gemini://localhost/long", "offset": 0}))
    results = session(net, calls, mode=mode, max_rendered_chars=1000)
    kinds = [data(r)["kind"] for r in results]
    assert kinds == [kind for _, kind in KINDS.values()] + ["gemtext"]
    assert [r.is_error for r in results] == [kind == "error" for kind in kinds]
    by_path = dict(zip(KINDS, results, strict=False))
    assert data(by_path["/plain"])["content"] == "caf\u00e9"
    assert data(by_path["/ask"])["sensitive"] is True
    assert data(by_path["/moved"])["cross_host"] is True
    assert data(by_path["/who"])["required"] is True
    assert data(by_path["/gone"])["error"]["status"] == 52
    assert data(by_path["/long"])["partial_line"] is True
    assert "PNG" not in json.dumps(data(by_path["/png"]))
    assert data(by_path["/gemtext"])["document"]["links"] == [
        {"url": "gemini://localhost/next", "text": "Next"}
    ]


def test_fetch_input_not_echoed() -> None:
    """An answer given through input is sent percent-encoded and never echoed in the result."""
    net, server, _ = capsule({"/ask": b"20 text/plain\r\nwelcome"})
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/ask", "input": "s3cr3t pw"})
    assert server.requests == [b"gemini://localhost/ask?s3cr3t%20pw"]
    assert "s3cr3t" not in json.dumps(data(result)) and "s3cr3t" not in result.content[0].text
    assert data(result)["request_info"]["has_query"] is True


def test_fetch_echoed_secret_redacted_in_both_blocks() -> None:
    """
    A capsule that echoes a status-11 answer in its page and links: neither
    the text block nor structuredContent carries it, and request_info says
    how often it was replaced.
    """
    echo = b"20 text/gemini\r\n# Welcome back, s3cr3t pw\n=> /home?k=s3cr3t%20pw Home S3CR3T+PW\n"
    net, _, _ = capsule({"/ask": b"11 Password\r\n", "/login": echo})
    calls = [
        ("gemini_fetch", {"url": "gemini://localhost/ask"}),
        ("gemini_fetch", {"url": "gemini://localhost/login", "input": "s3cr3t pw"}),
    ]
    _, result = session(net, calls)
    text = result.content[0].text
    structured = json.dumps(data(result))
    for shown in (text, structured):
        assert "s3cr3t" not in shown.lower() and "[redacted]" in shown
    assert data(result)["request_info"]["input_redacted"] == 3
    assert json.loads(text)["request_info"]["input_redacted"] == 3


def test_gopher_url_names_gopher_fetch() -> None:
    """A gopher:// URL handed to gemini_fetch is INVALID_REQUEST naming gopher_fetch."""
    net, _, _ = capsule()
    result = one(net, "gemini_fetch", {"url": "gopher://localhost/1/"})
    assert error_code(result) == "INVALID_REQUEST"
    assert "gopher_fetch" in data(result)["error"]["message"]


# --- CERTIFICATE_CHANGED and the user's consent -------------------------------------------

_CONSENT_BUG = (
    "BUG: the consent parameters are annotated ElicitationResult[Consent] | None, which the "
    "SDK does not see as an ElicitationResult: an accepted answer arrives unwrapped (a "
    "Consent model, which _confirmed() treats as a refusal) and a declined one aborts the "
    "call with a ToolError instead of reaching the tool"
)


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_without_elicitation(mode: str) -> None:
    """A client without elicitation gets CERTIFICATE_CHANGED; nobody is asked, nothing sent."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode)
    assert error_code(result) == "CERTIFICATE_CHANGED"
    error = data(result)["error"]
    assert error["pinned_fingerprint"] == STALE.fingerprint
    assert error["presented_fingerprint"].startswith("sha256:")
    assert error["pinned_expired"] is False
    assert net.pins.all() == [STALE] and server.requests == []


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_question_shows_the_facts(mode: str) -> None:
    """The user is asked once, shown the host, both fingerprints and the old expiry."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    tls = ServerTLS(*make_certificate(now=EPOCH))
    net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}), tls)
    asker = Asker("accept")
    one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode, asker=asker)
    (question,) = asker.questions
    assert "localhost:1965" in question and STALE.fingerprint in question
    assert "2027-02-14T08:00:00Z" in question  # the pinned certificate's expiry
    assert fingerprint_of(tls.certificate_pem) in question


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_accepted_repins_and_fetches(mode: str) -> None:
    """When the user accepts the new key it is pinned and the page comes back."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    asker = Asker("accept")
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode, asker=asker)
    assert data(result)["kind"] == "gemtext" and result.is_error is False
    pin = net.pins.get("localhost", 1965)
    assert pin.fingerprint == data(result)["request_info"]["cert_fingerprint"]
    assert server.requests == [b"gemini://localhost/"]


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_declined_changes_nothing(mode: str) -> None:
    """When the user declines, the result is still CERTIFICATE_CHANGED and the pin stays."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    asker = Asker("decline")
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, mode=mode, asker=asker)
    assert len(asker.questions) == 1
    assert net.pins.all() == [STALE] and server.requests == []
    assert error_code(result) == "CERTIFICATE_CHANGED"


def test_changed_key_accepted_with_no_still_declines() -> None:
    """An accepted form that says confirm=false re-pins nothing."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    server = restart_with_new_key(net)
    asker = Asker("accept", confirm=False)
    result = one(net, "gemini_fetch", {"url": "gemini://localhost/"}, asker=asker)
    assert error_code(result) == "CERTIFICATE_CHANGED"
    assert net.pins.all() == [STALE] and server.requests == []


# --- gemini_trust_list / gemini_trust_update --------------------------------------------


def test_trust_list_after_fetch() -> None:
    """The pin a fetch made is listed with its dates; a host filter narrows the list."""
    net, _, _ = capsule()
    results = session(
        net,
        [
            ("gemini_fetch", {"url": "gemini://localhost/"}),
            ("gemini_trust_list", {}),
            ("gemini_trust_list", {"host": "LOCALHOST"}),
            ("gemini_trust_list", {"host": "other.example"}),
        ],
    )
    fetched, everything, mine, other = (data(r) for r in results)
    (entry,) = everything["entries"]
    assert entry == {
        "host": "localhost",
        "port": 1965,
        "fingerprint": fetched["request_info"]["cert_fingerprint"],
        "first_seen": "2027-01-15T08:00:00Z",
        "last_seen": "2027-01-15T08:00:00Z",
        "expires": "2028-01-15T08:00:00Z",
        "expired": False,
    }
    assert mine["entries"] == [entry] and other["entries"] == []


def test_trust_update_wrong_fingerprint_is_mismatch() -> None:
    """remove naming another fingerprint than the pinned one is FINGERPRINT_MISMATCH."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    wrong = "sha256:" + "c" * 64
    result = one(
        net,
        "gemini_trust_update",
        {"host": "localhost", "action": "remove", "fingerprint": wrong},
    )
    assert error_code(result) == "FINGERPRINT_MISMATCH"
    assert net.pins.all() == [STALE]


def test_trust_update_remove_without_elicitation() -> None:
    """A client that cannot be asked removes a pin by naming it (any spelling)."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    spelled = "A" * 2 + ":" + ":".join(["AA"] * 31)
    result = one(
        net,
        "gemini_trust_update",
        {"host": "localhost", "action": "remove", "fingerprint": spelled},
    )
    assert data(result) == {
        "kind": "trust_update",
        "action": "remove",
        "host": "localhost",
        "port": 1965,
        "fingerprint": STALE.fingerprint,
    }
    assert net.pins.all() == []


def test_trust_update_remove_accepted() -> None:
    """With an accepting user the right fingerprint removes the pin."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    asker = Asker("accept")
    arguments = {"host": "localhost", "action": "remove", "fingerprint": STALE.fingerprint}
    result = one(net, "gemini_trust_update", arguments, asker=asker)
    assert len(asker.questions) == 1
    assert data(result)["kind"] == "trust_update" and net.pins.all() == []


def test_trust_update_mismatch_with_accepting_user() -> None:
    """With an accepting user a wrong fingerprint is still FINGERPRINT_MISMATCH."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    arguments = {"host": "localhost", "action": "remove", "fingerprint": "sha256:" + "c" * 64}
    result = one(net, "gemini_trust_update", arguments, asker=Asker("accept"))
    assert error_code(result) == "FINGERPRINT_MISMATCH"
    assert net.pins.all() == [STALE]


@pytest.mark.parametrize("mode", ERAS)
def test_trust_update_declined(mode: str) -> None:
    """A user who declines gets USER_DECLINED and the pin stays."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    arguments = {"host": "localhost", "action": "remove", "fingerprint": STALE.fingerprint}
    result = one(net, "gemini_trust_update", arguments, mode=mode, asker=Asker("decline"))
    assert error_code(result) == "USER_DECLINED"
    assert net.pins.all() == [STALE]


def test_trust_update_pin_then_fetch() -> None:
    """pin sets a fingerprint from a trusted channel; a server presenting it then passes."""
    net, _, tls = capsule()
    expected = fingerprint_of(tls.certificate_pem)
    spelled = expected.removeprefix("sha256:").upper()
    results = session(
        net,
        [
            ("gemini_trust_update", {"host": "localhost", "action": "pin", "fingerprint": spelled}),
            ("gemini_fetch", {"url": "gemini://localhost/"}),
        ],
    )
    assert data(results[0])["fingerprint"] == expected
    assert data(results[1])["kind"] == "gemtext"
    pin = net.pins.get("localhost", 1965)
    assert pin.fingerprint == expected and pin.spki.startswith("sha256:")


def test_trust_update_pin_wrong_then_fetch_refused() -> None:
    """A pinned fingerprint the server does not present makes the fetch CERTIFICATE_CHANGED."""
    net, server, _ = capsule()
    results = session(
        net,
        [
            (
                "gemini_trust_update",
                {"host": "localhost", "action": "pin", "fingerprint": "d" * 64},
            ),
            ("gemini_fetch", {"url": "gemini://localhost/"}),
        ],
    )
    assert error_code(results[1]) == "CERTIFICATE_CHANGED" and server.requests == []


NEW_FINGERPRINT = "sha256:" + "e" * 64


@pytest.mark.parametrize("mode", ERAS)
def test_trust_update_pin_over_pin_without_elicitation(mode: str) -> None:
    """Without a way to ask, pin over another pin is PIN_EXISTS naming it; the pin stays."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    arguments = {"host": "localhost", "action": "pin", "fingerprint": NEW_FINGERPRINT}
    result = one(net, "gemini_trust_update", arguments, mode=mode)
    assert error_code(result) == "PIN_EXISTS"
    error = data(result)["error"]
    assert error["pinned_fingerprint"] == STALE.fingerprint
    assert STALE.fingerprint in error["message"]
    assert "remove" in error["next_step"] and STALE.fingerprint in error["next_step"]
    assert net.pins.all() == [STALE]


def test_trust_update_remove_then_pin_without_elicitation() -> None:
    """Removing the pin by name first, then pinning, is the way without elicitation."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    results = session(
        net,
        [
            (
                "gemini_trust_update",
                {"host": "localhost", "action": "remove", "fingerprint": STALE.fingerprint},
            ),
            (
                "gemini_trust_update",
                {"host": "localhost", "action": "pin", "fingerprint": NEW_FINGERPRINT},
            ),
        ],
    )
    assert [data(r)["kind"] for r in results] == ["trust_update", "trust_update"]
    assert net.pins.get("localhost", 1965).fingerprint == NEW_FINGERPRINT


@pytest.mark.parametrize("mode", ERAS)
def test_trust_update_pin_over_pin_accepted(mode: str) -> None:
    """The user is asked, shown both fingerprints; their yes replaces the pin."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    asker = Asker("accept")
    arguments = {"host": "localhost", "action": "pin", "fingerprint": NEW_FINGERPRINT}
    result = one(net, "gemini_trust_update", arguments, mode=mode, asker=asker)
    (question,) = asker.questions
    assert STALE.fingerprint in question and NEW_FINGERPRINT in question
    assert "Replace" in question
    assert data(result)["fingerprint"] == NEW_FINGERPRINT
    assert net.pins.get("localhost", 1965).fingerprint == NEW_FINGERPRINT


@pytest.mark.parametrize(
    ("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)]
)
def test_trust_update_pin_over_pin_refused(action: str, confirm: bool) -> None:
    """A user who does not say yes to replacing a pin leaves it in place."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    arguments = {"host": "localhost", "action": "pin", "fingerprint": NEW_FINGERPRINT}
    result = one(net, "gemini_trust_update", arguments, asker=Asker(action, confirm=confirm))
    assert error_code(result) == "USER_DECLINED"
    assert net.pins.all() == [STALE]


def test_trust_update_consent_is_not_an_argument() -> None:
    """Arguments spelling a consent or the pin to replace change nothing: PIN_EXISTS."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    arguments = {
        "host": "localhost",
        "action": "pin",
        "fingerprint": NEW_FINGERPRINT,
        "in_the_way": {"fingerprint": STALE.fingerprint},
        "consent": {"action": "accept", "content": {"confirm": True}},
    }
    assert error_code(one(net, "gemini_trust_update", arguments)) == "PIN_EXISTS"
    assert net.pins.all() == [STALE]


def test_trust_update_pin_same_again_is_ok() -> None:
    """Pinning the fingerprint already pinned succeeds without changing the pin."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    arguments = {"host": "localhost", "action": "pin", "fingerprint": STALE.fingerprint.upper()}
    result = one(net, "gemini_trust_update", arguments)
    assert data(result)["fingerprint"] == STALE.fingerprint
    assert net.pins.all() == [STALE]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("gemini_trust_update", {"host": "*.example", "action": "pin", "fingerprint": "a" * 64}),
        ("gemini_trust_update", {"host": "*", "action": "remove", "fingerprint": "a" * 64}),
        ("gemini_trust_list", {"host": "*.example"}),
        ("gemini_trust_update", {"host": "localhost", "action": "pin", "fingerprint": "junk"}),
    ],
    ids=["pin-wildcard", "remove-star", "list-wildcard", "bad-fingerprint"],
)
def test_trust_tools_refuse_wildcards_and_junk(name: str, arguments: dict[str, Any]) -> None:
    """Wildcard hosts and malformed fingerprints are INVALID_REQUEST; nothing changes."""
    net, _, _ = capsule()
    net.pins.put(STALE)
    assert error_code(one(net, name, arguments)) == "INVALID_REQUEST"
    assert net.pins.all() == [STALE]


# --- client identities ------------------------------------------------------------------


def identity_capsule(tmp_path: Path) -> tuple[MemoryNetwork, FakeGeminiServer]:
    """A capsule whose /app/ zone answers 60 unless a client certificate is presented."""
    net, server, _ = capsule(identities=FileIdentityStore(tmp_path / "identities"))

    def app(url: str) -> bytes:
        if server.client_certificates[-1] is None:
            return b"60 Identify yourself\r\n"
        return b"20 text/gemini\r\n# Welcome back\n"

    server.routes["/app/"] = app
    return net, server


def test_client_cert_lifecycle(tmp_path: Path) -> None:
    """create opens the zone; a second is CERTIFICATE_EXISTS; remove needs the fingerprint."""
    net, _ = identity_capsule(tmp_path)
    scope = "gemini://localhost/app/"
    create = ("gemini_client_cert_update", {"url": scope, "action": "create"})
    before, created, again, listed, after = session(
        net,
        [
            ("gemini_fetch", {"url": scope}),
            create,
            create,
            ("gemini_client_cert_list", {}),
            ("gemini_fetch", {"url": scope}),
        ],
    )
    assert data(before)["kind"] == "certificate"
    entry = data(created)["entry"]
    assert (entry["url"], entry["host"], entry["port"], entry["path"]) == (
        scope,
        "localhost",
        1965,
        "/app/",
    )
    assert entry["expired"] is False and entry["not_after"] == "2028-01-15T08:00:00Z"
    assert error_code(again) == "CERTIFICATE_EXISTS"
    assert entry["fingerprint"] in data(again)["error"]["message"]
    assert data(listed)["entries"] == [entry]
    listing = json.dumps(data(listed)) + listed.content[0].text
    for secret in ("PRIVATE", "BEGIN", ".pem", str(tmp_path), "key_file"):
        assert secret not in listing
    assert data(after)["kind"] == "gemtext"

    fingerprint = entry["fingerprint"]
    remove = {"url": scope, "action": "remove"}
    missing, wrong, removed, emptied = session(
        net,
        [
            ("gemini_client_cert_update", remove),
            ("gemini_client_cert_update", {**remove, "fingerprint": "sha256:" + "0" * 64}),
            ("gemini_client_cert_update", {**remove, "fingerprint": fingerprint.upper()}),
            ("gemini_client_cert_list", {"host": "localhost"}),
        ],
    )
    assert error_code(missing) == "INVALID_REQUEST"
    assert error_code(wrong) == "FINGERPRINT_MISMATCH"
    assert data(removed)["entry"]["fingerprint"] == fingerprint
    assert data(emptied)["entries"] == []


@pytest.mark.parametrize("mode", ERAS)
def test_client_cert_create_accepted(mode: str) -> None:
    """With an accepting user, create makes the identity."""
    net, _, _ = capsule()
    asker = Asker("accept")
    arguments = {"url": "gemini://localhost/app/", "action": "create"}
    result = one(net, "gemini_client_cert_update", arguments, mode=mode, asker=asker)
    assert len(asker.questions) == 1
    assert data(result)["kind"] == "client_cert_update" and len(net.identities.all()) == 1


def test_client_cert_create_declined() -> None:
    """A user who declines gets USER_DECLINED and no identity is made."""
    net, _, _ = capsule()
    arguments = {"url": "gemini://localhost/app/", "action": "create"}
    result = one(net, "gemini_client_cert_update", arguments, asker=Asker("decline"))
    assert error_code(result) == "USER_DECLINED" and net.identities.all() == []


def test_client_cert_url_for_ipv6_scope() -> None:
    """The listed url of an identity for an IPv6 host parses back to that scope."""
    net, _, _ = capsule()
    arguments = {"url": "gemini://[2001:db8::1]:1966/app/", "action": "create"}
    results = session(
        net, [("gemini_client_cert_update", arguments), ("gemini_client_cert_list", {})]
    )
    (entry,) = data(results[1])["entries"]
    url = GeminiURL.from_text(entry["url"])
    assert (url.host, url.port, url.path) == ("2001:db8::1", 1966, "/app/")


# --- batch and the tool list ----------------------------------------------------------


def test_batch_in_input_order() -> None:
    """gemini_batch_fetch returns one result per URL in input order and never sets isError."""
    net, _, _ = capsule({"/a": PAGE, "/b": b"51 missing\r\n", "/c": b"10 Name?\r\n"})
    urls = [f"gemini://localhost/{p}" for p in ("c", "b", "a", "b")]
    result = one(net, "gemini_batch_fetch", {"urls": urls})
    assert result.is_error is False
    assert [r["kind"] for r in data(result)["result"]] == ["input", "error", "gemtext", "error"]
    assert [r["request_info"]["url"] for r in data(result)["result"]] == urls


@pytest.mark.parametrize("count", [0, 51])
def test_batch_size_refused(count: int) -> None:
    """A batch of zero or 51 URLs is refused as INVALID_REQUEST without fetching."""
    net, server, _ = capsule()
    result = one(net, "gemini_batch_fetch", {"urls": ["gemini://localhost/"] * count})
    assert result.is_error is True
    assert data(result)["error"]["code"] == "INVALID_REQUEST" and data(result)["result"] == []
    assert server.requests == []


def test_tool_annotations() -> None:
    """Fetch tools are read-only and open-world; lists read-only local; updates destructive."""
    net, _, _ = capsule()
    server = build_server(net.fetcher())

    async def body() -> Any:
        async with Client(server, mode="legacy") as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = run_with_network(net, body)
    hints = {
        name: (
            tools[name].annotations.read_only_hint,
            tools[name].annotations.destructive_hint,
            tools[name].annotations.open_world_hint,
        )
        for name in tools
        if name.startswith("gemini_")
    }
    assert hints == {
        "gemini_fetch": (True, False, True),
        "gemini_batch_fetch": (True, False, True),
        "gemini_trust_list": (True, False, False),
        "gemini_client_cert_list": (True, False, False),
        "gemini_trust_update": (False, True, False),
        "gemini_client_cert_update": (False, True, False),
    }
    assert tools["gemini_trust_update"].annotations.idempotent_hint is True
    for name in hints:
        assert tools[name].output_schema["type"] == "object"


def test_page_cut_by_the_deadline_is_marked_incomplete() -> None:
    """
    A capsule that sends a page and holds the connection: gemini_fetch
    returns the page at the deadline, marked incomplete (deadline), valid
    against the output schema, the mark kept in the compact text block.
    """
    import asyncio

    net = MemoryNetwork()
    net.resolver.add("localhost", HOST_IP)
    tls = ServerTLS(*make_certificate(now=EPOCH))
    net.listen_gemini(HOST_IP, 1965, FakeGeminiServer({"/": PAGE}, close=False), tls)
    server = build_server(net.fetcher(gemini={"respect_robots_txt": False, "timeout_seconds": 3}))

    async def body() -> tuple[Any, Any]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools, await client.call_tool("gemini_fetch", {"url": "gemini://localhost/"})

    async def main() -> tuple[Any, Any]:
        async def pump() -> None:
            while True:
                net.flush()
                net.reactor.advance(0.25)
                await asyncio.sleep(0)

        pumping = asyncio.ensure_future(pump())
        try:
            return await body()
        finally:
            pumping.cancel()

    tools, result = asyncio.run(main())
    data = result.structured_content
    validator(tools["gemini_fetch"].output_schema).validate(data)
    assert data["kind"] == "gemtext" and data["document"]["lines"][0]["content"] == "# Hello"
    assert (data["incomplete"], data["incomplete_reason"]) == (True, "deadline")
    compact = json.loads(result.content[0].text)
    assert compact["incomplete_reason"] == "deadline"
