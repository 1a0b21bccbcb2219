"""
Tests for L{gophergem.mcp.tools.titan}: C{titan_upload} driven by the SDK's
in-process C{mcp.Client}, in the legacy (initialize) era and the 2026-07-28
era, with and without an elicitation callback, against the Titan test server
(L{gophergem.testing.titan}) on an in-memory network with real TLS.  Every
structured result is checked against the tool's outputSchema.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from gophergem.config import Config, TitanConfig
from gophergem.mcp.server import build_server
from gophergem.mcp.tools.titan import TITAN_UPLOAD
from gophergem.testing import EPOCH, MemoryNetwork, ServerTLS, make_certificate
from gophergem.testing.titan import TitanServer
from tests.helpers.mcp import run_with_network
from tests.helpers.mcp_gemini import ERAS, Asker, data, error_code, validator

ADDRESS = "192.0.2.66"  # memory reactor only: never dialled
URL = "titan://localhost/notes/a.gmi"
ALLOWED = TitanConfig(allowed_hosts=frozenset({"localhost"}))


def capsule(net: MemoryNetwork | None = None) -> tuple[MemoryNetwork, TitanServer]:
    """A network where localhost runs a Titan server (a new key each time)."""
    net = net or MemoryNetwork()
    net.resolver.add("localhost", ADDRESS)
    server = TitanServer(clock=net.reactor, tls=ServerTLS(*make_certificate(now=EPOCH)))
    net.listen(ADDRESS, 1965, server.wire_factory())
    return net, server


def call(
    net: MemoryNetwork,
    arguments: dict[str, Any],
    *,
    mode: str = "legacy",
    asker: Asker | None = None,
    titan: TitanConfig = ALLOWED,
    times: int = 1,
) -> list[Any]:
    fetcher = net.fetcher(Config(titan=titan))
    server = build_server(fetcher)

    async def body() -> list[Any]:
        from mcp import Client

        async with Client(server, mode=mode, elicitation_callback=asker) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            results = []
            for _ in range(times):
                result = await client.call_tool("titan_upload", arguments)
                validator(tools["titan_upload"].output_schema).validate(result.structured_content)
                results.append(result)
            return results

    return run_with_network(net, body)


def one(net: MemoryNetwork, arguments: dict[str, Any], **options: Any) -> Any:
    (result,) = call(net, arguments, **options)
    return result


@pytest.mark.parametrize("mode", ERAS)
def test_yes_uploads_exactly(mode: str) -> None:
    """With the user's yes the server gets the exact bytes, size, type and token."""
    net, server = capsule()
    asker = Asker("accept")
    arguments = {"url": URL, "content": "# Héllo\n", "mime": "text/plain", "token": "pw-9"}
    result = one(net, arguments, mode=mode, asker=asker)
    assert result.is_error is False
    assert data(result)["kind"] == "redirect"
    assert data(result)["new_url"] == "gemini://localhost/notes/a.gmi"
    [received] = server.uploads
    assert (received.path, received.size, received.mime, received.token) == (
        "/notes/a.gmi",
        9,
        "text/plain",
        "pw-9",
    )
    assert received.content == "# Héllo\n".encode()
    (question,) = asker.questions
    for fact in ("Host: localhost", "Path: /notes/a.gmi", "Size: 9 bytes", "Type: text/plain"):
        assert fact in question
    assert "Token: sent" in question and "pw-9" not in question
    assert "pw-9" not in str(result.content) and "pw-9" not in str(result.structured_content)


@pytest.mark.parametrize("mode", ERAS)
def test_every_upload_is_asked(mode: str) -> None:
    """Two uploads, two questions: a yes is never remembered."""
    net, server = capsule()
    asker = Asker("accept")
    call(net, {"url": URL, "content": "x"}, mode=mode, asker=asker, times=2)
    assert len(asker.questions) == 2 and len(server.uploads) == 2


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)]
)
def test_no_is_user_declined_and_nothing_sent(mode: str, action: str, confirm: bool) -> None:
    """A decline, a cancel or an accepted 'no': USER_DECLINED, nothing dialled."""
    net, server = capsule()
    result = one(net, {"url": URL, "content": "x"}, mode=mode, asker=Asker(action, confirm))
    assert error_code(result) == "USER_DECLINED"
    assert (server.uploads, net.attempts) == ([], [])


@pytest.mark.parametrize("mode", ERAS)
def test_no_consent_channel_refused(mode: str) -> None:
    """A client that cannot be asked: CONSENT_UNAVAILABLE, nothing dialled."""
    net, server = capsule()
    result = one(net, {"url": URL, "content": "x"}, mode=mode)
    assert error_code(result) == "CONSENT_UNAVAILABLE"
    assert (server.uploads, net.attempts) == ([], [])


@pytest.mark.parametrize("mode", ERAS)
def test_off_by_default_nobody_asked(mode: str) -> None:
    """Unless TITAN_ALLOWED_HOSTS names the host: BLOCKED, nobody asked, nothing dialled."""
    net, _ = capsule()
    asker = Asker("accept")
    result = one(net, {"url": URL, "content": "x"}, mode=mode, asker=asker, titan=TitanConfig())
    assert error_code(result) == "BLOCKED"
    assert "TITAN_ALLOWED_HOSTS" in data(result)["error"]["message"]
    assert (asker.questions, net.attempts) == ([], [])


def test_over_the_cap_nobody_asked() -> None:
    """Over TITAN_MAX_UPLOAD_BYTES: BLOCKED before anyone is asked or anything dialled."""
    net, _ = capsule()
    asker = Asker("accept")
    titan = attrs.evolve(ALLOWED, max_upload_bytes=3)
    result = one(net, {"url": URL, "content": "four"}, asker=asker, titan=titan)
    assert error_code(result) == "BLOCKED"
    assert "TITAN_MAX_UPLOAD_BYTES" in data(result)["error"]["message"]
    assert (asker.questions, net.attempts) == ([], [])


@pytest.mark.parametrize("mode", ERAS)
def test_zero_bytes_asked_as_a_delete(mode: str) -> None:
    """Empty content is a delete, and the question says so in those words."""
    net, server = capsule()
    server.store("/notes/a.gmi", b"old", "text/gemini")
    asker = Asker("accept")
    one(net, {"url": URL, "content": ""}, mode=mode, asker=asker)
    (question,) = asker.questions
    assert question.startswith("DELETE the page /notes/a.gmi")
    assert "delete the page" in question
    assert "/notes/a.gmi" not in server.pages


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_uploads_nothing_unless_repinned(mode: str) -> None:
    """A new key: CERTIFICATE_CHANGED and nothing uploaded when the user says no to it."""
    net, first = capsule()
    call(net, {"url": URL, "content": "one"}, asker=Asker("accept"))
    pin = net.pins.get("localhost", 1965)
    _, second = capsule(net)

    @attrs.define
    class UploadYesKeyNo(Asker):
        async def __call__(self, context: Any, params: Any) -> Any:
            self.confirm = not params.message.startswith("The Gemini server")
            return await super().__call__(context, params)

    asker = UploadYesKeyNo("accept")
    result = one(net, {"url": URL, "content": "two"}, mode=mode, asker=asker)
    assert error_code(result) == "CERTIFICATE_CHANGED"
    assert second.uploads == [] and [u.content for u in first.uploads] == [b"one"]
    assert net.pins.get("localhost", 1965) == pin
    assert len(asker.questions) == 2 and "new key" in asker.questions[1]


@pytest.mark.parametrize("mode", ERAS)
def test_changed_key_repinned_then_uploaded(mode: str) -> None:
    """A yes to the new key re-pins it and sends the upload the user agreed to."""
    net, _ = capsule()
    call(net, {"url": URL, "content": "one"}, asker=Asker("accept"))
    _, second = capsule(net)
    asker = Asker("accept")
    result = one(net, {"url": URL, "content": "two"}, mode=mode, asker=asker)
    assert data(result)["kind"] == "redirect"
    assert [u.content for u in second.uploads] == [b"two"]
    assert len(asker.questions) == 2  # the upload, then the new key
    assert (
        net.pins.get("localhost", 1965).fingerprint
        == data(result)["request_info"]["cert_fingerprint"]
    )


def test_tool_annotations_and_description() -> None:
    """It says it writes to the open world, destructively; its description stays short."""
    net, _ = capsule()
    server = build_server(net.fetcher(Config(titan=ALLOWED)))

    async def body() -> Any:
        from mcp import Client

        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}["titan_upload"]

    tool = run_with_network(net, body)
    hints = tool.annotations
    assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (
        False,
        True,
        True,
    )
    assert tool.description == TITAN_UPLOAD and len(TITAN_UPLOAD) < 250
    assert tool.input_schema["properties"]["mime"]["default"] == "text/gemini"
