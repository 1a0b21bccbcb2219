"""
Tests for L{gophergem.http.asgi} and L{gophergem.http.endpoint}: the ASGI
bridge's pitfalls, one regression test each, the body cap, the lifespan and
shutdown, the SDK's Streamable HTTP app behind it in both protocol eras, and
the session cap in front of it (L{gophergem.mcp.sessions}).

Bridge tests drive a real C{Site} over an in-memory connection on an asyncio
loop; SDK tests use a site on a 127.0.0.1 port and the SDK's own client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, MutableMapping
from typing import Annotated, Any, ClassVar

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel
from twisted.internet.task import Clock
from twisted.logger import LogLevel, capturedLogs
from twisted.web.resource import Resource
from twisted.web.server import Site

from gophergem.http import asgi
from gophergem.http.asgi import SHUTDOWN_ERROR_CODE, ASGIResource, LifespanService
from gophergem.http.endpoint import mcp_resource
from gophergem.http.origin import transport_security
from gophergem.http.site import MAX_BODY_SIZE, BodyCappedRequest
from gophergem.mcp.sessions import SessionLimit
from tests.helpers.mcp import INITIALIZE
from tests.helpers.web import (
    Wire,
    http_exchange,
    listening,
    loop_reactor,
    read_head,
    request_bytes,
    run,
    until,
)

Scope = MutableMapping[str, Any]


@contextlib.asynccontextmanager
async def no_lifespan() -> AsyncIterator[None]:
    yield


def site_for(app: Any, *, max_body_size: int = MAX_BODY_SIZE, capped: bool = True) -> Any:
    resource = ASGIResource(app, no_lifespan, max_body_size=max_body_size)
    root = Resource()
    root.putChild(b"app", resource)
    factory = BodyCappedRequest if capped else None
    return Site(root, requestFactory=factory, reactor=Clock()), resource


def serve(app: Any, test: Any, *, max_body_size: int = MAX_BODY_SIZE, capped: bool = True) -> None:
    """Run C{await test(site, resource)} while C{app} is served in memory."""

    async def body() -> None:
        site, resource = site_for(app, max_body_size=max_body_size, capped=capped)
        async with resource.serving(drain_seconds=1.0):
            await test(site, resource)

    run(body)


# --- the bridge's pitfalls ---------------------------------------------------------


def test_headers_go_out_when_the_response_starts() -> None:
    """An event stream that has sent no event yet has already sent its status and headers."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await receive()  # a quiet stream, until the client leaves

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: b"\r\n\r\n" in wire.value())
        status, headers = wire.head()
        assert status == 200
        assert headers["content-type"] == "text/event-stream"
        wire.drop()

    serve(app, test)


def test_disconnect_reaches_the_app() -> None:
    """When the client goes away mid-response, the app's receive() returns http.disconnect."""
    seen: list[str] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        seen.append((await receive())["type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        seen.append((await receive())["type"])

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("POST", "/app", b"{}"))
        await until(lambda: len(seen) == 1 and b"\r\n\r\n" in wire.value())
        wire.drop()
        await until(lambda: len(seen) == 2)

    serve(app, test)
    assert seen == ["http.request", "http.disconnect"]


def test_disconnect_follows_a_finished_response() -> None:
    """After the response is complete, receive() returns http.disconnect instead of hanging."""
    ended = asyncio.Event()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})
        assert (await receive())["type"] == "http.disconnect"
        ended.set()

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await asyncio.wait_for(ended.wait(), 5)
        assert wire.body() == b"done"
        assert not wire.transport.disconnecting  # keep-alive: the connection stays

    serve(app, test)


def test_no_write_after_the_client_left() -> None:
    """Body sent after a disconnect is dropped quietly: no error, nothing written."""
    errors: list[BaseException] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        await receive()  # the disconnect
        try:
            await send({"type": "http.response.body", "body": b"late", "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except BaseException as error:  # pragma: no cover - the regression
            errors.append(error)

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: b"first" in wire.value())
        wire.drop()
        await until(lambda: not resource._exchanges)
        assert b"late" not in wire.value()

    serve(app, test)
    assert errors == []


def test_no_write_after_finish() -> None:
    """A message sent after the final body is ignored (Twisted would raise)."""
    errors: list[BaseException] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"all"})
        try:
            await send({"type": "http.response.body", "body": b"more"})
        except BaseException as error:  # pragma: no cover - the regression
            errors.append(error)

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: not resource._exchanges)
        assert wire.body() == b"all"

    serve(app, test)
    assert errors == []


def test_failure_before_the_response_is_a_500() -> None:
    """An app that raises before starting its response gives a plain 500, no traceback."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        raise RuntimeError("secret internals")

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: not resource._exchanges)
        assert wire.head()[0] == 500
        assert b"secret" not in wire.value()

    serve(app, test)


def test_no_response_at_all_is_a_500() -> None:
    """An app that returns without answering gives a 500."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: not resource._exchanges)
        assert wire.head()[0] == 500

    serve(app, test)


def test_failure_after_the_response_started_aborts() -> None:
    """An app that fails mid-response has the connection cut, not a truncated 'success'."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"part", "more_body": True})
        raise RuntimeError("boom")

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: not resource._exchanges)
        assert wire.transport.disconnected  # abortConnection
        assert not wire.value().endswith(b"0\r\n\r\n")  # no closing chunk

    serve(app, test)


def test_no_default_content_type() -> None:
    """A response without a Content-Type does not get Twisted's text/html."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("POST", "/app", b"{}"))
        await until(lambda: not resource._exchanges)
        status, headers = wire.head()
        assert status == 202
        assert "content-type" not in headers

    serve(app, test)


def test_unknown_reason_phrases() -> None:
    """Codes Twisted has no phrase for (421) still get a proper status line."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 421, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        await until(lambda: not resource._exchanges)
        assert wire.value().startswith(b"HTTP/1.1 421 Misdirected Request\r\n")

    serve(app, test)


def test_scope() -> None:
    """The app sees the method, paths, query, lower-cased headers, addresses and body."""
    scopes: list[tuple[Scope, dict[str, Any]]] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        scopes.append((scope, await receive()))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("POST", "/app/a%20b?x=1", b"payload", {"X-Thing": "yes"}))
        await until(lambda: scopes)

    serve(app, test)
    scope, message = scopes[0]
    assert scope["type"] == "http"
    assert scope["asgi"]["spec_version"] == "2.3"
    assert (scope["method"], scope["scheme"], scope["http_version"]) == ("POST", "http", "1.1")
    assert (scope["path"], scope["raw_path"]) == ("/app/a b", b"/app/a%20b")
    assert scope["query_string"] == b"x=1"
    assert (b"x-thing", b"yes") in scope["headers"]
    assert (b"host", b"127.0.0.1:8000") in scope["headers"]
    assert scope["client"] == ("127.0.0.1", 40000)
    assert scope["server"] == ("127.0.0.1", 8000)
    assert message == {"type": "http.request", "body": b"payload", "more_body": False}


# --- the body cap ------------------------------------------------------------------


async def _never_called(scope: Scope, receive: Any, send: Any) -> None:  # pragma: no cover
    raise AssertionError("the app saw an over-size request")


def test_declared_oversize_body_refused_before_it_arrives() -> None:
    """A Content-Length over the cap is answered 413 at once and the connection closed."""

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(
            b"POST /app HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n"
            b"Content-Length: %d\r\n\r\n" % (MAX_BODY_SIZE + 1)
        )
        assert wire.value().startswith(b"HTTP/1.1 413 ")
        assert b"100 Continue" not in wire.value()
        assert wire.transport.disconnecting

    serve(_never_called, test)


def test_streamed_oversize_body_refused_while_it_arrives() -> None:
    """A chunked body is counted as it arrives and refused once past the cap."""

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(b"POST /app HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 65536
        for _ in range(MAX_BODY_SIZE // len(chunk)):
            wire.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        assert wire.value() == b""  # exactly at the cap: still fine
        wire.send(b"1\r\nx\r\n")
        assert wire.value().startswith(b"HTTP/1.1 413 ")
        assert wire.transport.disconnecting
        wire.send(b"0\r\n\r\n")  # the rest is ignored: the app never runs
        assert not resource._exchanges

    serve(_never_called, test)


def test_body_at_the_cap_reaches_the_app() -> None:
    """A body of exactly the cap is passed on whole."""
    sizes: list[int] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        sizes.append(len((await receive())["body"]))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("POST", "/app", b"y" * 4096))
        await until(lambda: sizes)

    serve(app, test, max_body_size=4096)
    assert sizes == [4096]


def test_resource_refuses_oversize_body_in_any_site() -> None:
    """Mounted in a site without BodyCappedRequest, the resource still answers 413."""

    async def test(site: Site, resource: ASGIResource) -> None:
        wire = Wire(site)
        wire.send(request_bytes("POST", "/app", b"z" * 5000))
        await until(lambda: b"\r\n\r\n" in wire.value())
        assert wire.head()[0] == 413

    serve(_never_called, test, max_body_size=4096, capped=False)


# --- lifespan and shutdown ---------------------------------------------------------


def test_requests_before_and_after_serving_get_503() -> None:
    """Outside the lifespan the endpoint answers 503."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:  # pragma: no cover
        raise AssertionError("not serving")

    async def body() -> None:
        site, resource = site_for(app)
        wire = Wire(site)
        wire.send(request_bytes("GET", "/app"))
        assert wire.head()[0] == 503
        async with resource.serving():
            pass
        late = Wire(site)
        late.send(request_bytes("GET", "/app"))
        assert late.head()[0] == 503

    run(body)


def test_lifespan_entered_and_left_in_one_task() -> None:
    """The lifespan runs in one task, so anyio task groups and cancel scopes in it work."""
    tasks: list[object] = []

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        tasks.append(asyncio.current_task())
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.sleep_forever)
            yield
            group.cancel_scope.cancel()
        tasks.append(asyncio.current_task())

    async def app(scope: Scope, receive: Any, send: Any) -> None:  # pragma: no cover
        pass

    async def body() -> None:
        with loop_reactor() as reactor:
            resource = ASGIResource(app, lifespan)
            service = LifespanService(resource, reactor)
            service.startService()
            await until(lambda: resource.serving_now)
            await service.stopService().asFuture(asyncio.get_running_loop())
            assert not resource.serving_now

    run(body)
    assert len(tasks) == 2 and tasks[0] is tasks[1]


def test_shutdown_lets_requests_in_flight_finish() -> None:
    """On stop, a request in flight is answered before the lifespan ends."""
    order: list[str] = []
    release = asyncio.Event()

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        yield
        order.append("lifespan ended")

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        order.append("request started")
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        order.append("request answered")

    async def body() -> None:
        with loop_reactor() as reactor:
            resource = ASGIResource(app, lifespan)
            root = Resource()
            root.putChild(b"app", resource)
            site = Site(root, reactor=Clock())
            service = LifespanService(resource, reactor, drain_seconds=10)
            service.startService()
            await until(lambda: resource.serving_now)
            wire = Wire(site)
            wire.send(request_bytes("POST", "/app", b"{}"))
            await until(lambda: order == ["request started"])
            stopped = service.stopService().asFuture(asyncio.get_running_loop())
            late = Wire(site)
            late.send(request_bytes("POST", "/app", b"{}"))
            await until(lambda: b"\r\n\r\n" in late.value())
            assert late.head()[0] == 503  # no new work while draining
            release.set()
            await stopped
            assert wire.body() == b"ok"

    run(body)
    assert order == ["request started", "request answered", "lifespan ended"]


def test_shutdown_cancels_what_outlives_the_lifespan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream still open after the lifespan ended is cancelled and its connection cut."""
    monkeypatch.setattr(asgi, "SETTLE_SECONDS", 0.05)
    cancelled = asyncio.Event()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            await asyncio.Event().wait()  # a stream that never ends by itself
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def body() -> None:
        site, resource = site_for(app)
        wire = Wire(site)
        async with resource.serving(drain_seconds=0.05):
            wire.send(request_bytes("GET", "/app"))
            await until(lambda: b"\r\n\r\n" in wire.value())
        assert cancelled.is_set()
        assert wire.transport.disconnected
        assert not resource._exchanges

    run(body)


CALL = json.dumps(
    {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "wait"}}
).encode()


@pytest.mark.parametrize("stream", [True, False])
def test_shutdown_answers_calls_that_outlive_the_drain(stream: bool) -> None:
    """
    A call still running when the drain period ends gets a JSON-RPC error
    for its id (on its event stream, or as the JSON answer), logged at warn.
    """
    cancelled, started = asyncio.Event(), asyncio.Event()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        started.set()
        if stream:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
        try:
            await asyncio.Event().wait()  # a call that takes longer than the drain
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def body() -> list[Any]:
        site, resource = site_for(app)
        wire = Wire(site)
        with capturedLogs() as events:
            async with resource.serving(drain_seconds=0.05):
                wire.send(request_bytes("POST", "/app", CALL))
                await until(started.is_set)
        assert cancelled.is_set()
        status, headers = wire.head()
        assert status == 200
        text = wire.body().decode()
        if stream:
            assert text.startswith("event: message\r\ndata: ")
            text = text.partition("data: ")[2]
        else:
            assert headers["content-type"] == "application/json"
        answer = json.loads(text)
        assert answer["id"] == 41
        assert answer["error"]["code"] == SHUTDOWN_ERROR_CODE
        assert "shutting down" in answer["error"]["message"]
        return list(events)

    events = run(body)
    levels = [e["log_level"] for e in events]
    assert LogLevel.warn in levels
    assert LogLevel.critical not in levels and LogLevel.error not in levels


def test_drain_period_is_the_services() -> None:
    """LifespanService drains for the period it was given, not a fixed one."""
    answered = asyncio.Event()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        await asyncio.sleep(0.2)  # finishes well inside a 10 s drain
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})
        answered.set()

    async def body() -> None:
        with loop_reactor() as reactor:
            site, resource = site_for(app)
            service = LifespanService(resource, reactor, drain_seconds=10)
            service.startService()
            await until(lambda: resource.serving_now)
            wire = Wire(site)
            wire.send(request_bytes("POST", "/app", CALL))
            await until(lambda: resource._exchanges)
            await service.stopService().asFuture(asyncio.get_running_loop())
            assert answered.is_set()
            assert wire.body() == b"done"

    run(body)


def test_sdk_call_outliving_the_drain_gets_an_error() -> None:
    """Through the SDK (legacy era), a tool call cut short by shutdown is answered, not dropped."""

    async def body() -> None:
        server, events = small_server()
        async with sdk_site(server, drain_seconds=0.1) as (port, _, service):
            session = await legacy_session(port)
            call = json.dumps(
                {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "wait"}}
            ).encode()
            reader, writer = await http_exchange(
                port,
                request_bytes(
                    "POST",
                    "/mcp",
                    call,
                    {
                        **MCP_HEADERS,
                        "Host": f"127.0.0.1:{port}",
                        "Mcp-Session-Id": session,
                        "MCP-Protocol-Version": "2025-11-25",
                    },
                ).replace(b"Host: 127.0.0.1:8000\r\n", b"", 1),
            )
            await asyncio.wait_for(events["started"].wait(), 5)
            with capturedLogs() as logged:
                await asyncio.wait_for(
                    service.stopService().asFuture(asyncio.get_running_loop()), 10
                )
            data = await asyncio.wait_for(reader.readuntil(b"\r\n0\r\n\r\n"), 5)
            writer.close()
            assert b'"id":9' in data and b'"error"' in data
            assert all(e["log_level"] is not LogLevel.critical for e in logged)

    run(body)


# --- the SDK behind the bridge, on a loopback port ---------------------------------


def small_server() -> tuple[MCPServer[Any], dict[str, asyncio.Event]]:
    events = {"started": asyncio.Event(), "cancelled": asyncio.Event()}
    server: MCPServer[Any] = MCPServer(name="test")

    @server.tool(description="Add two numbers.")
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Wait until cancelled.")
    async def wait() -> str:
        events["started"].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            events["cancelled"].set()
            raise
        return "never"  # pragma: no cover

    return server, events


@contextlib.asynccontextmanager
async def sdk_site(
    server: MCPServer[Any],
    security: Any = None,
    mount: tuple[bytes, ...] = (b"mcp",),
    drain_seconds: float = 2,
    **options: Any,
) -> AsyncIterator[tuple[int, ASGIResource, LifespanService]]:
    resource = mcp_resource(server, security=security, **options)

    def make_site(reactor: Any) -> Site:
        root = parent = Resource()
        for name in mount[:-1]:
            child = Resource()
            parent.putChild(name, child)
            parent = child
        parent.putChild(mount[-1], resource)
        return Site(root, requestFactory=BodyCappedRequest, reactor=reactor)

    async with listening(make_site) as (reactor, port):
        service = LifespanService(resource, reactor, drain_seconds=drain_seconds)
        service.startService()
        try:
            yield port, resource, service
        finally:
            if service.running:
                await service.stopService().asFuture(asyncio.get_running_loop())


class Confirm(BaseModel):
    ok: bool


def ask_first() -> Elicit[Confirm]:
    return Elicit("Go ahead?", Confirm)


@pytest.mark.parametrize(
    ("mode", "answer"), [("legacy", True), ("2026-07-28", True), ("legacy", False)]
)
def test_sdk_elicitation_round_trip(mode: str, answer: bool) -> None:
    """A tool asks the user mid-call: over the POST's event stream (legacy) or by retry (2026)."""
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": answer})

    async def body() -> None:
        server: MCPServer[Any] = MCPServer(name="test")

        @server.tool(description="Ask first, then act.")
        async def guarded(
            consent: Annotated[ElicitationResult[Confirm], Resolve(ask_first)],
        ) -> str:
            accepted = isinstance(consent, AcceptedElicitation) and consent.data.ok
            return "done" if accepted else "left alone"

        async with (
            sdk_site(server) as (port, _, _),
            Client(
                f"http://127.0.0.1:{port}/mcp", mode=mode, elicitation_callback=on_elicit
            ) as client,
        ):
            result = await client.call_tool("guarded", {})
            assert result.structured_content == {"result": "done" if answer else "left alone"}

    run(body)
    assert asked == ["Go ahead?"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_sdk_client_both_eras(mode: str) -> None:
    """The SDK's own client lists and calls tools in either protocol era."""

    async def body() -> None:
        server, _ = small_server()
        async with (
            sdk_site(server) as (port, _, _),
            Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client,
        ):
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == {"add", "wait"}
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5}

    run(body)


def test_mountable_anywhere() -> None:
    """The resource works mounted at any path of a site."""

    async def body() -> None:
        server, _ = small_server()
        async with (
            sdk_site(server, mount=(b"api", b"v1", b"mcp")) as (port, _, _),
            Client(f"http://127.0.0.1:{port}/api/v1/mcp", mode="legacy") as client,
        ):
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {
                "result": 2
            }

    run(body)


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def legacy_session(port: int) -> str:
    reader, writer = await http_exchange(
        port, request_bytes("POST", "/mcp", INITIALIZE, MCP_HEADERS) + b""
    )
    status, headers = await read_head(reader)
    writer.close()
    assert status == 200
    session = headers["mcp-session-id"]
    notify = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    reader, writer = await http_exchange(
        port,
        request_bytes(
            "POST",
            "/mcp",
            notify,
            {**MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
        ),
    )
    assert (await read_head(reader))[0] == 202
    writer.close()
    return session


def event_stream_request(session: str) -> bytes:
    """The GET that opens the event stream of C{session}."""
    return request_bytes(
        "GET",
        "/mcp",
        headers={
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": "2025-11-25",
        },
    )


def test_sdk_event_stream_headers_arrive_before_any_event() -> None:
    """The legacy GET stream shows 200 text/event-stream at once, though no event is due."""

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server) as (port, _, _):
            session = await legacy_session(port)
            reader, writer = await http_exchange(port, event_stream_request(session))
            status, headers = await asyncio.wait_for(read_head(reader), 5)
            assert status == 200
            assert headers["content-type"].startswith("text/event-stream")
            writer.close()

    run(body)


def test_sdk_stop_closes_open_event_streams() -> None:
    """Stopping the service ends an open GET stream and the lifespan promptly."""

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server) as (port, resource, service):
            session = await legacy_session(port)
            reader, writer = await http_exchange(port, event_stream_request(session))
            await read_head(reader)
            await asyncio.wait_for(service.stopService().asFuture(asyncio.get_running_loop()), 5)
            assert not resource._exchanges
            # The stream has ended: its last chunk arrived, or the connection was cut.
            # The stream has ended with its last chunk (no event was ever sent on it).
            assert await asyncio.wait_for(reader.readuntil(b"0\r\n\r\n"), 5) == b"0\r\n\r\n"
            writer.close()

    run(body)


def test_sdk_modern_disconnect_cancels_the_tool() -> None:
    """At 2026-07-28, closing the response stream cancels the tool call."""

    async def body() -> None:
        server, events = small_server()
        async with (
            sdk_site(server) as (port, resource, _),
            Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client,
        ):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "wait", {})
                await asyncio.wait_for(events["started"].wait(), 5)
                group.cancel_scope.cancel()
            await asyncio.wait_for(events["cancelled"].wait(), 5)
            await until(lambda: not resource._exchanges)

    run(body)


def test_sdk_modern_request_ends_after_its_response() -> None:
    """A modern-era request's handler ends once answered (it waits for http.disconnect)."""

    async def body() -> None:
        server, _ = small_server()
        async with (
            sdk_site(server) as (port, resource, _),
            Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client,
        ):
            await client.call_tool("add", {"a": 1, "b": 2})
            await until(lambda: not resource._exchanges)

    run(body)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Host": "mcp.example.org"}, 200),
        ({"Origin": "https://mcp.example.org"}, 200),
    ],
)
def test_sdk_host_and_origin_checked(headers: dict[str, str], status: int) -> None:
    """DNS-rebinding protection: unknown Host gets 421, unknown Origin 403."""

    async def body() -> None:
        server, _ = small_server()
        security = transport_security(None, ["mcp.example.org"])
        async with sdk_site(server, security=security) as (port, _, _):
            raw = request_bytes("POST", "/mcp", INITIALIZE, MCP_HEADERS)
            if "Host" in headers:
                raw = raw.replace(b"Host: 127.0.0.1:8000", f"Host: {headers['Host']}".encode())
            else:
                raw = raw.replace(b"Host: 127.0.0.1:8000", f"Host: 127.0.0.1:{port}".encode())
                raw = raw.replace(b"\r\n\r\n", f"\r\nOrigin: {headers['Origin']}\r\n\r\n".encode())
            reader, writer = await http_exchange(port, raw)
            assert (await read_head(reader))[0] == status
            writer.close()

    run(body)


def test_sdk_oversize_body_never_reaches_the_sdk() -> None:
    """Over a real socket, a declared over-size body is answered 413 by Twisted."""

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server) as (port, _, _):
            reader, writer = await http_exchange(
                port,
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 5000000\r\n\r\n",
            )
            assert (await read_head(reader))[0] == 413
            assert await asyncio.wait_for(reader.read(), 5) == b"Request body too large.\n"
            writer.close()

    run(body)


# --- the session cap ---------------------------------------------------------------


async def initialize(port: int) -> tuple[int, dict[str, str], bytes]:
    """POST an initialize without a session; return status, headers and body."""
    reader, writer = await http_exchange(
        port,
        request_bytes(
            "POST", "/mcp", INITIALIZE, {**MCP_HEADERS, "Host": f"127.0.0.1:{port}"}
        ).replace(b"Host: 127.0.0.1:8000\r\n", b"", 1),
    )
    status, headers = await read_head(reader)
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    writer.close()
    return status, headers, body


async def session_status(port: int, session: str) -> int:
    """The status a ping gets on C{session}: 200 while it is open, 404 once closed."""
    ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
    reader, writer = await http_exchange(
        port,
        request_bytes(
            "POST",
            "/mcp",
            ping,
            {**MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
        ),
    )
    status = (await read_head(reader))[0]
    writer.close()
    return status


async def open_stream(port: int, session: str) -> asyncio.StreamWriter:
    """Open the GET event stream of C{session} (which makes it busy); return its writer."""
    reader, writer = await http_exchange(port, event_stream_request(session))
    assert (await read_head(reader))[0] == 200
    return writer


def test_session_cap_closes_the_session_idle_longest() -> None:
    """At the cap, a new session closes the one idle for longest, not a busier one."""

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server, max_sessions=3) as (port, _, _):
            first = await legacy_session(port)
            second = await legacy_session(port)
            third = await legacy_session(port)
            assert await session_status(port, first) == 200  # first is now the freshest
            fourth = await legacy_session(port)
            assert await session_status(port, second) == 404
            for alive in (first, third, fourth):
                assert await session_status(port, alive) == 200

    run(body)


def test_session_cap_refuses_only_when_every_session_is_busy() -> None:
    """With every session holding a stream, a new one gets 503 and a JSON-RPC error."""

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server, max_sessions=2) as (port, resource, _):
            sessions = [await legacy_session(port), await legacy_session(port)]
            streams = [await open_stream(port, s) for s in sessions]
            status, headers, raw = await initialize(port)
            assert status == 503
            assert headers["content-type"] == "application/json"
            error = json.loads(raw)
            assert error["jsonrpc"] == "2.0" and error["id"] is None
            assert "Too many MCP sessions" in error["error"]["message"]
            for session in sessions:
                assert await session_status(port, session) == 200
            streams[1].close()  # the second session goes idle
            limit = resource._app
            assert isinstance(limit, SessionLimit)
            await until(lambda: sessions[1] not in limit._busy)
            assert (await initialize(port))[0] == 200
            assert await session_status(port, sessions[1]) == 404
            assert await session_status(port, sessions[0]) == 200
            streams[0].close()

    run(body)


def test_session_cap_leaves_the_stateless_era_alone() -> None:
    """2026-07-28 requests open no session and are served at the cap."""

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server, max_sessions=1) as (port, _, _):
            session = await legacy_session(port)
            stream = await open_stream(port, session)
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client:
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert not result.is_error
            stream.close()

    run(body)


@pytest.mark.parametrize("max_sessions", [2, None], ids=["capped", "uncapped"])
def test_refusal_without_a_session_hands_out_no_session_id(max_sessions: int | None) -> None:
    """GET, DELETE or a non-initialize POST without a session: 400, and no Mcp-Session-Id."""
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()

    async def body() -> None:
        server, _ = small_server()
        async with sdk_site(server, max_sessions=max_sessions) as (port, _, _):
            for raw in (
                request_bytes("GET", "/mcp", headers={"Accept": "text/event-stream"}),
                request_bytes("DELETE", "/mcp"),
                request_bytes("POST", "/mcp", ping, MCP_HEADERS),
            ):
                reader, writer = await http_exchange(port, raw)
                status, headers = await read_head(reader)
                writer.close()
                assert status == 400
                assert "mcp-session-id" not in headers
            status, headers, _ = await initialize(port)
            assert status == 200 and headers["mcp-session-id"]

    run(body)


def test_session_limit_needs_room_for_one() -> None:
    """A cap below one session is refused when the endpoint is built."""
    server, _ = small_server()
    with pytest.raises(ValueError, match="max_sessions"):
        mcp_resource(server, max_sessions=0)


class FakeSession:
    """A session of L{FakeManager}: its initialize is answered when C{answer} is set."""

    def __init__(self) -> None:
        self.answer = asyncio.Event()
        self.terminated = False
        self.calls_done = asyncio.Event()  # requests on the session wait for this
        self.calls_done.set()
        FakeManager.everyone.append(self)


class FakeManager:
    """
    The SDK session manager, as far as L{SessionLimit} sees it: a request
    without a session registers a new one at once (as the SDK does) and
    answers its initialize only when the test says; a session closed in
    between answers 404, as the SDK's transport does.
    """

    stateless = False
    everyone: ClassVar[list[FakeSession]] = []

    def __init__(self) -> None:
        FakeManager.everyone = []
        self._server_instances: dict[str, FakeSession] = {}
        self.opened = 0

    async def _discard_session(self, session_id: str, session: FakeSession) -> None:
        self._server_instances.pop(session_id, None)
        session.terminated = True
        session.answer.set()

    async def handle_request(self, scope: Scope, receive: Any, send: Any) -> None:
        named = dict(scope["headers"]).get(b"mcp-session-id")
        if named is None:
            self.opened += 1
            session_id, session = f"s{self.opened}", FakeSession()
            self._server_instances[session_id] = session
            await session.answer.wait()
            status = 404 if session.terminated else 200
            if status == 404:
                self._server_instances.pop(session_id, None)
            await reply(send, status, [(b"mcp-session-id", session_id.encode())])
            return
        session = self._server_instances.get(named.decode())
        if session is not None:
            await session.calls_done.wait()
        await reply(send, 200 if session is not None else 404)


async def reply(send: Any, status: int, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": b"{}", "more_body": False})


def user(name: str) -> Any:
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="t-" + name, client_id=name, scopes=[]))


class Call:
    """One request to a L{SessionLimit}, run as a task; its answer kept."""

    def __init__(
        self,
        limit: SessionLimit,
        session: str | None = None,
        who: str | None = None,
        *,
        slow: bool = False,
    ) -> None:
        headers = [(b"mcp-session-id", session.encode())] if session else []
        scope: Scope = {"type": "http", "method": "POST", "headers": headers}
        if who is not None:
            scope["user"] = user(who)
        self.messages: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            self.messages.append(message)
            if slow:  # let other requests run between the head and the body
                await asyncio.sleep(0)

        self.task = asyncio.ensure_future(limit(scope, receive, send))

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0].get("headers", ()))

    @property
    def session(self) -> str:
        return self.headers[b"mcp-session-id"].decode()


async def opened(limit: SessionLimit, manager: FakeManager, who: str | None = None) -> str:
    """Open a session through C{limit} and let its initialize be answered; return its id."""
    new = f"s{manager.opened + 1}"
    call = Call(limit, who=who)
    await until(lambda: new in manager._server_instances or call.task.done())
    if new in manager._server_instances:
        manager._server_instances[new].answer.set()
    await call.task
    assert call.status == 200
    return call.session


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def answer_all(calls: list[Call]) -> None:
    """Answer every pending initialize until each of C{calls} is done."""

    def answered() -> bool:
        for session in list(FakeManager.everyone):
            session.answer.set()
        return all(call.task.done() for call in calls)

    await until(answered)


def test_session_limit_never_closes_a_session_before_its_first_answer() -> None:
    """
    At the cap, new sessions still waiting for their initialize answer are
    never the ones closed to make room: a burst gets 200s and 503s, no 404.
    """

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 2)
        for _ in range(2):
            await opened(limit, manager)
        burst = [Call(limit) for _ in range(5)]
        await settle()
        await answer_all(burst)
        statuses = sorted(call.status for call in burst)
        assert 404 not in statuses
        assert statuses == [200, 200, 503, 503, 503]
        assert len(manager._server_instances) == 2

    run(body)


def test_session_limit_overlapping_opens_of_one_principal() -> None:
    """Two sessions of one principal whose answers interleave both open cleanly."""

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 5)
        calls = [Call(limit, slow=True), Call(limit, slow=True)]
        await settle()
        await answer_all(calls)
        for call in calls:
            call.task.result()  # raises what the limit raised
        assert sorted(call.status for call in calls) == [200, 200]
        assert not limit._opening

    run(body)


def test_session_limit_burst_in_waves_never_gets_404() -> None:
    """Many overlapping initializes over a full cap: each one gets 200 or 503, never 404."""

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 3)
        for _ in range(3):
            await opened(limit, manager)
        statuses: list[int] = []
        for wave in range(6):
            calls = [Call(limit) for _ in range(wave % 4 + 1)]
            await settle()
            await answer_all(calls)
            statuses.extend(call.status for call in calls)
            assert len(manager._server_instances) <= 3
        assert 404 not in statuses
        assert 200 in statuses

    run(body)


def test_session_limit_closes_only_the_principals_own_sessions() -> None:
    """A principal at the cap makes room among its own idle sessions, never another's."""

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 2)
        bobs = await opened(limit, manager, who="bob")  # idle for longest
        alices = await opened(limit, manager, who="alice")
        newer = await opened(limit, manager, who="alice")
        assert bobs in manager._server_instances
        assert alices not in manager._server_instances
        assert newer in manager._server_instances

    run(body)


def test_session_limit_refuses_when_only_others_sessions_are_idle() -> None:
    """With the cap full of another principal's idle sessions: 503, and none of theirs closed."""

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 2)
        mine = [await opened(limit, manager, who="alice") for _ in range(2)]
        call = Call(limit, who="bob")
        await call.task
        assert call.status == 503
        assert call.headers[b"retry-after"] == b"10"
        assert call.headers[b"content-type"] == b"application/json"
        error = json.loads(call.messages[1]["body"])
        assert error["jsonrpc"] == "2.0" and error["id"] is None
        assert "Too many MCP sessions" in error["error"]["message"]
        assert b"mcp-session-id" not in call.headers
        assert all(session in manager._server_instances for session in mine)

    run(body)


def test_session_limit_share_of_the_cap() -> None:
    """
    With two principals holding sessions, each may hold half the cap: one
    at its share replaces its own idle session even while there is room,
    and gets 503 when none of its own is idle.
    """

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 6)
        await opened(limit, manager, who="bob")
        alices = [await opened(limit, manager, who="alice") for _ in range(3)]
        assert len(manager._server_instances) == 4  # room for 2 more
        await opened(limit, manager, who="alice")
        assert alices[0] not in manager._server_instances
        assert len(manager._server_instances) == 4
        for session in manager._server_instances.values():
            session.calls_done.clear()
        busy = [Call(limit, s, who="alice") for s in manager._server_instances if s != "s1"]
        assert len(busy) == 3
        await settle()
        refused = Call(limit, who="alice")
        await refused.task
        assert refused.status == 503
        assert "share" in json.loads(refused.messages[1]["body"])["error"]["message"]
        assert (await opened(limit, manager, who="bob")) in manager._server_instances
        for session in manager._server_instances.values():
            session.calls_done.set()
        await asyncio.gather(*(call.task for call in busy))

    run(body)


def test_session_limit_knows_principals_behind_bearer_authentication(tmp_path: Any) -> None:
    """Behind require_token, the principal a token names is whose sessions may be closed."""
    from gophergem.auth.tokens import add_token
    from gophergem.auth.verifiers import TokenFileVerifier
    from gophergem.http.guard import BearerVerifier, auth_settings, require_token

    url = "http://127.0.0.1:8000/mcp"
    path = str(tmp_path / "tokens.json")
    tokens = {name: add_token(path, name) for name in ("alice", "bob")}
    verifier = BearerVerifier(TokenFileVerifier.from_path(path, url))
    server: MCPServer[Any] = MCPServer("t", token_verifier=verifier, auth=auth_settings(url))
    manager = FakeManager()
    limit = SessionLimit(manager, 2)
    app = require_token(limit, server, verifier)

    async def open_as(name: str) -> str:
        new = f"s{manager.opened + 1}"
        headers = [(b"authorization", b"Bearer " + tokens[name].encode())]
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        scope: Scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "headers": headers,
            "scheme": "http",
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 40000),
            "root_path": "",
        }
        task = asyncio.ensure_future(app(scope, receive, send))
        await until(lambda: new in manager._server_instances or task.done())
        if new in manager._server_instances:
            manager._server_instances[new].answer.set()
        await task
        assert sent[0]["status"] == 200, sent
        return dict(sent[0]["headers"])[b"mcp-session-id"].decode()

    async def body() -> None:
        bobs = await open_as("bob")
        alices = await open_as("alice")
        await open_as("alice")
        assert bobs in manager._server_instances
        assert alices not in manager._server_instances
        assert len(set(limit._owner.values())) == 2  # one principal each

    run(body)


def test_session_limit_counts_anonymous_callers_as_one_principal() -> None:
    """Without authentication everyone shares the whole cap, closing the idlest session."""

    async def body() -> None:
        manager = FakeManager()
        limit = SessionLimit(manager, 3)
        first, second, third = [await opened(limit, manager) for _ in range(3)]
        await Call(limit, first).task  # first is now the freshest
        fourth = await opened(limit, manager)
        assert set(manager._server_instances) == {first, third, fourth}
        assert second not in manager._server_instances

    run(body)
