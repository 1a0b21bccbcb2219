"""
Tests for L{gophergem.mcp.tools.trust}: the pin and identity tools driven by
the SDK's in-process C{mcp.Client}, in both protocol eras, with and without
an elicitation callback (the helpers of L{tests.test_mcp_gemini}); each
test with the stores answering plainly, with Deferreds, and with Deferreds
that wait for the clock (L{tests.helpers.deferring}).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gophergem.url import GeminiURL
from tests.helpers.deferring import answers
from tests.helpers.fetcher import fingerprint_of
from tests.helpers.mcp_gemini import (
    ERAS,
    STALE,
    Asker,
    capsule,
    data,
    error_code,
    identity_capsule,
    one,
    session,
)

pytestmark = pytest.mark.usefixtures("answers")
__all__ = ["answers"]


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
