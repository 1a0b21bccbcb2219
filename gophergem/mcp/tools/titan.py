# -*- test-case-name: tests.test_mcp_titan -*-
"""
The upload tool, C{titan_upload}: the one tool that writes to the world.

Every upload is checked first (L{IFetcher.titan_plan}: off unless
C{TITAN_ALLOWED_HOSTS} names the host, capped by C{TITAN_MAX_UPLOAD_BYTES},
nothing dialled), then put to the user, in both protocol eras, with the
question L{TitanUpload.question<gophergem.fetcher.titan.TitanUpload.question>}
(host, path, size, type, whether a token is sent, never the token; a
zero-byte upload is asked about as a delete).  No yes, no upload: a decline
is C{USER_DECLINED}, a client that cannot be asked C{CONSENT_UNAVAILABLE}.
A changed certificate key is asked about as for C{gemini_fetch}
(L{gophergem.mcp.tools.gemini.new_key_question}); after a yes the upload
the user already agreed to is sent.

In the 2026-07-28 era the answers come with the call's retry: the request
state binds each to this very upload (a digest of the URL, type, whether a
token is sent and the content), so a retry with other arguments is asked
afresh.
"""

# No "from __future__ import annotations": the SDK reads the tools' annotations.

import hashlib
from typing import Annotated, Any

import attrs
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import NoBackChannelError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field

from gophergem.errors import CertificateChanged, ConsentUnavailable, GophergemError, UserDeclined
from gophergem.fetcher.titan import TitanUpload
from gophergem.mcp.tools import add_tool, fetch_result, fetcher_of, wait_for
from gophergem.mcp.tools.gemini import ask_consent, new_key_question
from gophergem.results import FetchFailure, GeminiRequestInfo, GeminiResult
from gophergem.trust.decision import PresentedCertificate
from gophergem.url import safe_echo

__all__ = ["TITAN_UPLOAD", "WRITES", "register", "titan_upload"]

TITAN_UPLOAD = (
    "Write UTF-8 text to a titan:// URL; empty content deletes the page. The user is asked "
    "each time. Returns a Gemini result (a redirect is reported, not followed)."
)

WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
"""C{titan_upload}: writes to (or deletes from) a server in the open world."""

_UPLOAD = "titan-upload"
_NEW_KEY = "titan-new-key"


def _digest(upload: TitanUpload) -> str:
    """What the user's yes is about: the URL, type, token or not, and the content."""
    url = upload.url
    facts = f"{url.without_parameters().to_text()}\0{url.mime}\0{url.token is not None}\0"
    return hashlib.sha256(facts.encode() + hashlib.sha256(upload.content).digest()).hexdigest()


def _refused(upload: TitanUpload | None, url: str, error: GophergemError) -> CallToolResult:
    info = (
        upload.request_info
        if upload is not None
        else GeminiRequestInfo(url=safe_echo(url.split(";", 1)[0]) if isinstance(url, str) else "")
    )
    return fetch_result(FetchFailure(request_info=info, error=error))


async def _ask(
    ctx: Context[Any, Any], question: str, state: str
) -> bool | InputRequiredResult | None:
    try:
        return await ask_consent(ctx, question, state)
    except NoBackChannelError:  # a session that cannot carry a request (stateless HTTP)
        return None


async def titan_upload(
    ctx: Context[Any, Any],
    url: Annotated[str, Field(description="A titan:// URL.")],
    content: Annotated[str, Field(description="The page; empty deletes it.")],
    mime: Annotated[str, Field(description="MIME type.")] = "text/gemini",
    token: Annotated[str | None, Field(description="Upload token, if needed.")] = None,
) -> CallToolResult | InputRequiredResult:
    """Upload to a Titan server on the user's yes, asked each time."""
    fetcher = fetcher_of(ctx)
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        upload: TitanUpload = fetcher.titan_plan(url, data, mime=mime, token=token)
    except GophergemError as error:
        return _refused(None, url, error)
    digest = _digest(upload)
    state = ctx.request_state or ""
    if state != f"{_NEW_KEY}:{digest}":  # a new-key answer comes after the upload's yes
        answer = await _ask(ctx, upload.question(), f"{_UPLOAD}:{digest}")
        if isinstance(answer, InputRequiredResult):
            return answer
        if answer is None:
            return _refused(
                upload,
                url,
                ConsentUnavailable(
                    message="Every upload needs the user's yes, and this client cannot ask "
                    "the user; nothing was sent.",
                    next_step="Use a client that supports elicitation, or the command "
                    "gophergem titan upload.",
                ),
            )
        if answer is False:
            return _refused(
                upload,
                url,
                UserDeclined(
                    message="The user declined the upload; nothing was sent.",
                    next_step="Do not retry unless the user asks for it.",
                ),
            )
    result: GeminiResult = await wait_for(fetcher.titan_upload(url, data, mime=mime, token=token))
    if isinstance(result, FetchFailure) and isinstance(result.error, CertificateChanged):
        return await _new_key(ctx, result, url, data, mime, token, digest)
    return fetch_result(result)


async def _new_key(
    ctx: Context[Any, Any],
    result: FetchFailure,
    url: str,
    data: bytes,
    mime: str,
    token: str | None,
    digest: str,
) -> CallToolResult | InputRequiredResult:
    """A changed key (nothing was uploaded): re-pin and upload on the user's yes."""
    error = result.error
    assert isinstance(error, CertificateChanged)
    answer = await _ask(ctx, new_key_question(result), f"{_NEW_KEY}:{digest}")
    if isinstance(answer, InputRequiredResult):
        return answer
    if answer is True and isinstance(error.presented, PresentedCertificate):
        info = result.request_info
        assert info.host is not None and info.port is not None  # a certificate was presented
        fetcher = fetcher_of(ctx)
        await wait_for(fetcher.trust_presented(info.host, info.port, error.presented))
        again: GeminiResult = await wait_for(
            fetcher.titan_upload(url, data, mime=mime, token=token)
        )
        return fetch_result(again)
    if answer is False:
        result = FetchFailure(
            request_info=result.request_info,
            error=attrs.evolve(
                error,
                next_step="The user declined to trust the new certificate; nothing was "
                "uploaded. Do not retry unless they change their mind.",
            ),
        )
    return fetch_result(result)


def register(server: MCPServer[Any]) -> None:
    """Add C{titan_upload} to C{server}."""
    add_tool(
        server,
        titan_upload,
        name="titan_upload",
        title="Upload to a Titan server",
        description=TITAN_UPLOAD,
        annotations=WRITES,
    )
