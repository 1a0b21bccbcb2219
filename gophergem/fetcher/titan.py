# -*- test-case-name: tests.test_fetcher_titan -*-
"""
Titan uploads: Gemini's pipeline writing instead of reading.

An upload is checked first (L{plan_upload}: a usable C{titan://} URL, a host
C{TITAN_ALLOWED_HOSTS} names, at most C{TITAN_MAX_UPLOAD_BYTES}), with
nothing dialled; the caller then asks the user (every upload needs a yes:
L{TitanUpload.question} is what they are shown) and sends it with
L{send_upload}, through the Gemini pipeline of the same host
(L{GeminiPipeline.upload<gophergem.fetcher.gemini.GeminiPipeline.upload>}):
its addresses, pacing, deadline, pins and identities.  The answer is a
Gemini result, a redirect reported and never followed.
"""

from __future__ import annotations

import attrs
from twisted.internet.defer import CancelledError, Deferred

from gophergem._plural import counted
from gophergem.config import TitanConfig
from gophergem.errors import BlockedError, InvalidRequest, NotFetchable
from gophergem.fetcher._pipeline import failure_of
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.results import GeminiRequestInfo, GeminiResult
from gophergem.url import format_host, safe_echo
from gophergem.wire.titan import TITAN_DEFAULT_PORT, TitanURL

__all__ = ["TitanUpload", "plan_upload", "send_upload"]


@attrs.frozen
class TitanUpload:
    """
    One upload, checked and ready to send.

    @ivar url: The Titan URL with its size, mime and token.
    @ivar content: Exactly what is sent after the request line.
    """

    url: TitanURL
    content: bytes = attrs.field(repr=False)

    @property
    def where(self) -> str:
        """C{host[:port]} (the port when it is not 1965)."""
        return format_host(self.url.host, self.url.port, TITAN_DEFAULT_PORT)

    @property
    def deletes(self) -> bool:
        """Whether this is a zero-byte upload: a delete, by convention."""
        return not self.content

    @property
    def request_info(self) -> GeminiRequestInfo:
        """What the result echoes: the page's C{titan://} URL, without parameters."""
        return GeminiRequestInfo(
            url=self.url.without_parameters().to_text(),
            host=self.url.host,
            port=self.url.port,
            path=self.url.path,
            has_query=False,
        )

    def facts(self) -> str:
        """Host, path, size, type and whether a token is sent (never the token), one a line."""
        mime = self.url.mime or "not given (servers assume text/gemini)"
        token = "sent" if self.url.token is not None else "none"
        return (
            f"Host: {self.where}\nPath: {self.url.path}\n"
            f"Size: {counted(len(self.content), 'byte')}\nType: {mime}\nToken: {token}"
        )

    def question(self) -> str:
        """What the user is asked before this upload is sent."""
        if self.deletes:
            head = (
                f"DELETE the page {self.url.path} on the Titan server {self.where}? This is a "
                "zero-byte upload, which servers take as a request to delete the page."
            )
        else:
            head = f"Upload {counted(len(self.content), 'byte')} to the Titan server {self.where}?"
        act = "deleted" if self.deletes else "written"
        return f"{head}\n{self.facts()}\nSay yes only if you want this page {act}."


def plan_upload(
    config: TitanConfig,
    url: str,
    content: bytes,
    *,
    mime: str | None = None,
    token: str | None = None,
) -> TitanUpload:
    """
    Check an upload without dialling anything.

    @raise InvalidRequest: If C{url} is no usable C{titan://} URL, C{content}
        is not bytes, or the request line cannot be sent.
    @raise BlockedError: If C{TITAN_ALLOWED_HOSTS} does not name the host,
        or the upload is larger than C{TITAN_MAX_UPLOAD_BYTES}.
    """
    if not isinstance(content, bytes):
        raise InvalidRequest(message="The upload's content must be bytes.")
    if not isinstance(url, str):
        raise InvalidRequest(message="url must be a string.")
    parsed = TitanURL.for_upload(url, len(content), mime, token)
    if parsed.host not in config.allowed_hosts:
        named = "names no host" if not config.allowed_hosts else "does not name this host"
        raise BlockedError(
            message=f"Uploads to {parsed.host} are off: TITAN_ALLOWED_HOSTS {named}. "
            "Nothing was sent.",
            next_step="Only the operator can allow uploads to a host (TITAN_ALLOWED_HOSTS); "
            "tell the user.",
        )
    if len(content) > config.max_upload_bytes:
        raise BlockedError(
            message=f"The upload is {counted(len(content), 'byte')}; TITAN_MAX_UPLOAD_BYTES "
            f"allows {counted(config.max_upload_bytes, 'byte')}. Nothing was sent.",
            next_step="Upload less, or ask the operator to raise TITAN_MAX_UPLOAD_BYTES.",
        )
    parsed.request_line()  # raises when the line would be too long
    return TitanUpload(parsed, content)


def send_upload(
    pipeline: GeminiPipeline | None, config: TitanConfig, upload: TitanUpload
) -> Deferred[GeminiResult]:
    """
    Send C{upload} (checked again: a library caller may have built it by
    hand) through C{pipeline}; the Deferred always fires with a result.
    Only call this once the user has said yes.
    """
    return Deferred.fromCoroutine(_send(pipeline, config, upload))


async def _send(
    pipeline: GeminiPipeline | None, config: TitanConfig, upload: TitanUpload
) -> GeminiResult:
    info = GeminiRequestInfo(url=safe_echo(upload.url.without_parameters().to_text()))
    try:
        url = upload.url
        checked = plan_upload(
            config,
            url.without_parameters().to_text(),
            upload.content,
            mime=url.mime,
            token=url.token,
        )
        info = checked.request_info
        if pipeline is None:
            raise NotFetchable(message="This fetcher was built without Gemini, so without Titan.")
        return await pipeline.upload(checked.url, checked.content, info)
    except CancelledError:
        raise
    except Exception as error:
        return failure_of(info, error)
