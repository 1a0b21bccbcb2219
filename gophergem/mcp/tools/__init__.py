# -*- test-case-name: tests.test_mcp_tools -*-
"""
The MCP tools, one module per concern: L{gophergem.mcp.tools.gopher},
L{gophergem.mcp.tools.gemini}, L{gophergem.mcp.tools.smolweb} (every scheme
read), L{gophergem.mcp.tools.titan} (uploads), L{gophergem.mcp.tools.trust}
(pins and identities), L{gophergem.mcp.tools.feeds} and
L{gophergem.mcp.tools.search};
each has a C{register} that adds its tools to a server.

This module holds what they share: the tool annotations, finding the
fetcher a tool serves, awaiting its Deferreds, shaping a tool result,
reporting progress (L{Progress}), and asking the user (the SDK's C{Elicit}
answers).

Tools are module-level functions; the L{IFetcher} they call is the one the
server was built with, found through the call's C{Context} (L{fetcher_of}),
so no tool closes over it.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from gophergem.errors import GophergemError
from gophergem.interfaces import IFetcher
from gophergem.mcp._sdk import input_schema, publish_input_schema, publish_output_schema
from gophergem.mcp.completions import remember
from gophergem.render.memo import render, render_batch
from gophergem.render.payloads import tool_error_payload
from gophergem.render.text import compact_text
from gophergem.results import FetchResult, GeminiResult
from gophergem.url import safe_echo

__all__ = [
    "DESTRUCTIVE",
    "DESTRUCTIVE_IDEMPOTENT",
    "LOCAL_READ",
    "OUTPUT_SCHEMAS",
    "READ_ONLY",
    "Consent",
    "Progress",
    "add_tool",
    "asked",
    "batch_result",
    "can_ask",
    "confirmed",
    "fetch_result",
    "fetcher_of",
    "lean_input_schema",
    "may_proceed",
    "tool_error",
    "tool_result",
    "wait_for",
]

T = TypeVar("T")

_log = Logger()

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=True, destructive_hint=False)
"""The fetch tools: they read the open world and change nothing."""

LOCAL_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False, destructive_hint=False)
"""The listing tools: they read local stores."""

DESTRUCTIVE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
"""C{gemini_trust_update}: changes a local store; doing it twice is doing it once."""

DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
"""C{gemini_client_cert_update}: changes a local store (a new key each time)."""


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = json.loads(
    resources.files("gophergem.mcp").joinpath("output_schemas.json").read_bytes()
)
"""
Each tool's C{outputSchema}, by tool name: generated from the output models
of L{gophergem.mcp.schemas} by C{python -m gophergem.mcp.prebuilt}, and kept
equal to them by C{tests/test_mcp_schemas.py}.
"""

check_output = False
"""
Whether tools registered from now on have every result validated against
its output model by the SDK.  Off in service: the test suite turns it on
(C{tests/conftest.py}), so that every result a test sees was checked.
"""


def add_tool(
    server: MCPServer[Any],
    fn: Callable[..., Any],
    *,
    name: str,
    title: str,
    description: str,
    annotations: ToolAnnotations,
) -> None:
    """
    Add the tool C{fn} to C{server}, publishing its output schema as data
    and its input schema lean (L{lean_input_schema}).
    """
    server.add_tool(fn, name=name, title=title, description=description, annotations=annotations)
    publish_input_schema(server, name, lean_input_schema(input_schema(server, name)))
    model = None
    if check_output:
        from gophergem.mcp.schemas import OUTPUT_MODELS

        model = OUTPUT_MODELS[name]
    publish_output_schema(server, name, OUTPUT_SCHEMAS[name], model)


def lean_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """
    A tool's input schema as a model reads it best, with the same facts:
    without the C{title} keywords pydantic derives from the function's and
    the arguments' names (an argument I{named} title stays), a nullable
    argument's C{anyOf: [X, null]} as X with C{null} in its C{type}, and no
    C{default: null} (an argument left out is null).  Every tool definition
    is read by the model on every turn: these are characters it pays for.
    """
    lean = {key: value for key, value in schema.items() if key != "title"}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        lean["properties"] = {name: _lean_argument(prop) for name, prop in properties.items()}
    return lean


def _lean_argument(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return prop
    out = {key: value for key, value in prop.items() if key != "title"}
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        (branch,) = (b for b in branches if b != {"type": "null"})
        if isinstance(branch, dict) and isinstance(branch.get("type"), str):
            del out["anyOf"]
            rest = {key: value for key, value in branch.items() if key not in out}
            out = {**rest, **out, "type": [branch["type"], "null"]}
            if out.get("default", ...) is None:
                del out["default"]
    return out


def fetcher_of(ctx: Context[Any, Any]) -> IFetcher:
    """
    The L{IFetcher} working for this call: the server's own, or with
    authentication, the view of it that holds the caller's identities (see
    L{gophergem.auth.principals}).
    """
    server = ctx.mcp_server
    fetcher: IFetcher | None = getattr(server, "fetcher", None)
    if fetcher is None:
        raise RuntimeError("gophergem tools run on a server built by gophergem.mcp.server")
    principals = getattr(server, "principals", None)
    if principals is not None:
        from gophergem.mcp.caller import current_principal

        return principals.fetcher_for(current_principal())  # type: ignore[no-any-return]
    return fetcher


async def wait_for(d: Deferred[T]) -> T:
    """Await a Twisted Deferred from asyncio code on the shared loop."""
    return await d.asFuture(asyncio.get_running_loop())


def tool_result(
    data: dict[str, Any], *, error: bool | None = None, text: str | None = None
) -> CallToolResult:
    """
    A tool result: C{data} as structured content and as the compact text
    block (C{text} when it is rendered already); an error when C{data} is of
    kind error (unless C{error} says).
    """
    return CallToolResult(
        content=[TextContent(type="text", text=compact_text(data) if text is None else text)],
        structured_content=data,
        is_error=data.get("kind") == "error" if error is None else error,
    )


def fetch_result(
    result: FetchResult | GeminiResult, ctx: Context[Any, Any] | None = None
) -> CallToolResult:
    """
    The tool result of one fetch (a cache hit's rendering is kept, see
    L{render}); with the call's C{ctx}, its URL is one the caller fetched
    (offered again as a completion, see L{gophergem.mcp.completions}).
    """
    data, text = render(result)
    remember(ctx, [data])
    return tool_result(data, text=text)


def tool_error(error: GophergemError) -> CallToolResult:
    """The result of a trust or identity tool that did nothing, saying why."""
    return tool_result(tool_error_payload(error))


class Progress:
    """
    The progress notifications of one call: one per part done, numbered in
    the order they complete, each naming the part (a URL, a feed).

    L{step} is called from Twisted callbacks (plain functions) on the shared
    loop; the notifications go out one after the other, in that order, from
    one sending task, and L{finish} waits until all are out, so that every
    one comes before the call's result.  The SDK's C{report_progress} sends
    nothing unless the request carried a progress token, in either era;
    progress is a courtesy: a notification that cannot be sent is dropped.
    """

    def __init__(self, ctx: Context[Any, Any], total: int | None = None) -> None:
        self._ctx = ctx
        self.total = total
        self.done = 0
        self._waiting: deque[tuple[int, int | None, str]] = deque()
        self._sending: asyncio.Task[None] | None = None

    def step(self, message: str) -> None:
        """One more part is done: C{message} names it."""
        self.done += 1
        self._waiting.append((self.done, self.total, message))
        if self._sending is None or self._sending.done():
            self._sending = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while self._waiting:
            done, total, message = self._waiting.popleft()
            try:
                await self._ctx.report_progress(done, total, message)
            except Exception:
                _log.failure("a progress notification could not be sent")

    async def finish(self) -> None:
        """Wait until every notification is out."""
        if self._sending is not None:
            await self._sending

    def cancel(self) -> None:
        """Send nothing more (the call is over without its result)."""
        self._waiting.clear()
        if self._sending is not None:
            self._sending.cancel()


async def batch_result(
    start: Callable[
        [Callable[[int], object]],
        Deferred[list[FetchResult]] | Deferred[list[GeminiResult]],
    ],
    ctx: Context[Any, Any] | None = None,
    urls: list[str] | None = None,
) -> CallToolResult:
    """
    Run a batch fetch: C{{"result": [...]}} in input order, never an error;
    or, when the batch itself is refused (empty, too long), C{isError} with
    the reason under C{error}, whether C{start} raised it or its Deferred
    failed with it.

    C{start} is given the fetcher's C{progress} callback; with a C{ctx} and
    the batch's C{urls}, each URL done is a progress notification (the
    total is the number of URLs, the message the URL).
    """
    progress = Progress(ctx, len(urls)) if ctx is not None and urls is not None else None

    def told(index: int) -> None:
        if progress is not None and urls is not None:
            progress.step(safe_echo(str(urls[index]), 512))

    try:
        results: list[Any] = await wait_for(start(told))
        if progress is not None:
            await progress.finish()
    except GophergemError as error:
        refused = error.fields()
        return CallToolResult(
            content=[TextContent(type="text", text=compact_text({"error": refused}))],
            structured_content={"result": [], "error": refused},
            is_error=True,
        )
    except BaseException:
        if progress is not None:
            progress.cancel()
        raise
    data, text = render_batch(results)
    remember(ctx, data["result"])
    return tool_result(data, error=False, text=text)


# --- asking the user ----------------------------------------------------------


class Consent(BaseModel):
    """The user's answer to a yes/no question."""

    confirm: bool = Field(description="Yes, go ahead.")


def can_ask(ctx: Context[Any, Any]) -> bool:
    """Whether the client can put a form question to the user."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


# A tool's "consent" parameter is None when its resolver asked nobody, yet its
# annotation cannot say "| None": the SDK reads it, and would then unwrap the
# outcome (a decline would abort the call) instead of passing it on.


def asked(answer: Any) -> bool:
    """Whether the user was asked at all (a resolver returning None asks nobody)."""
    return not (isinstance(answer, AcceptedElicitation) and answer.data is None) and (
        answer is not None
    )


def confirmed(answer: Any) -> bool:
    """Whether the user said yes; C{False} when they declined or cancelled."""
    return (
        isinstance(answer, AcceptedElicitation)
        and isinstance(answer.data, Consent)
        and answer.data.confirm
    )


def may_proceed(answer: Any) -> bool:
    """For the update tools: go ahead when nobody could be asked, or the user said yes."""
    return not asked(answer) or confirmed(answer)
