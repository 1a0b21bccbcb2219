# -*- test-case-name: tests.test_http_secret_page -*-
"""
One-time web pages that ask the user for a capsule's sensitive input.

A Gemini capsule that answers status 11 wants a secret (a password, a
token).  The model must never see it, so the question goes to the user out
of the model's sight: L{SecretPages.open} makes a page reachable at a random
single-use token, the user's browser shows the capsule's URL and prompt with
a password field, and the answer goes straight from the form to the
Deferred the caller waits on.  MCP URL-mode elicitation hands the page's URL
to the client; the answer itself never passes through MCP.

  - L{SecretPages} holds the pending pages and their answers' Deferreds; its
    C{resource} serves them and can be mounted under any path of a site.
  - L{LoopbackListener} serves that resource on an ephemeral
    C{127.0.0.1} port for the stdio mode, only while a page is pending.
  - L{parse_form} reads the form's body; it raises only L{FormError}.

The page answers only loopback peers, only under the listener's own
C{Host}, and refuses foreign origins (the rules of
L{gophergem.http.origin.foreign_request}).  An answer is handed to the waiting
Deferred and kept nowhere else: not logged, not echoed, not stored.
"""

from __future__ import annotations

import base64
import html
import io
import ipaddress
import os
import re
from collections.abc import Callable
from urllib.parse import parse_qsl

import attrs
from mcp.server.transport_security import TransportSecuritySettings
from twisted.internet.defer import Deferred, succeed
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.internet.interfaces import (
    IAddress,
    IDelayedCall,
    IListeningPort,
    IReactorTCP,
    IReactorTime,
    IStreamServerEndpoint,
)
from twisted.python.failure import Failure
from twisted.web import http, server
from twisted.web.resource import Resource

from gophergem._plural import counted
from gophergem.errors import InputTimeout, UserDeclined
from gophergem.http.origin import foreign_request, transport_security
from gophergem.http.site import BodyCappedRequest, BoundedSite

__all__ = [
    "MAX_FORM_FIELDS",
    "MAX_FORM_SIZE",
    "PAGE_TTL_SECONDS",
    "TOKEN_BYTES",
    "FormError",
    "LoopbackListener",
    "SecretForm",
    "SecretPageResource",
    "SecretPages",
    "parse_form",
]

PAGE_TTL_SECONDS = 300.0
"""How long a page waits for its answer, by default."""

TOKEN_BYTES = 32
"""Random bytes in a page's token (43 characters of URL-safe base64)."""

MAX_FORM_SIZE = 64 * 1024
"""Largest form body accepted, in bytes; a larger one gets 413."""

MAX_FORM_FIELDS = 8
"""Most fields a form body may hold."""

_TOKEN = re.compile(rb"\A[A-Za-z0-9_-]{43}\Z")
_FORM_TYPE = b"application/x-www-form-urlencoded"

_SECURITY_HEADERS = (
    (b"Cache-Control", b"no-store"),
    (b"Referrer-Policy", b"no-referrer"),
    (b"X-Frame-Options", b"DENY"),
    (b"X-Content-Type-Options", b"nosniff"),
    (
        b"Content-Security-Policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
)


class FormError(ValueError):
    """A form body that is not one this page's form could have sent."""


@attrs.frozen
class SecretForm:
    """
    What the page's form sent: an answer, or the user's "Cancel".

    @ivar cancel: Whether the user pressed "Cancel".
    @ivar answer: The answer typed (C{None} when cancelled).  Never shown in
        a C{repr}.
    """

    cancel: bool
    answer: str | None = attrs.field(default=None, repr=False)


def parse_form(body: bytes) -> SecretForm:
    """
    Read the body of the page's form (C{application/x-www-form-urlencoded}).

    C{answer} is the typed answer (possibly empty); C{action=cancel} means
    the user pressed "Cancel", and any answer sent with it is dropped.
    Other fields are ignored.

    @raise FormError: When the body is not URL-encoded ASCII, its
        percent-escapes are not UTF-8, it holds more than
        L{MAX_FORM_FIELDS} fields, names C{answer} or C{action} twice,
        names an unknown action, or has no answer and is no cancel.  The
        error never quotes the body.
    """
    try:
        text = body.decode("ascii")
        fields = parse_qsl(
            text,
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FORM_FIELDS,
        )
    except ValueError:  # UnicodeDecodeError included
        raise FormError("The form is not URL-encoded UTF-8 text.") from None
    answers = [value for name, value in fields if name == "answer"]
    actions = [value for name, value in fields if name == "action"]
    if len(answers) > 1 or len(actions) > 1:
        raise FormError("The form names a field twice.")
    action = actions[0] if actions else "send"
    if action == "cancel":
        return SecretForm(cancel=True)
    if action != "send":
        raise FormError("The form names an unknown action.")
    if not answers:
        raise FormError("The form holds no answer.")
    return SecretForm(cancel=False, answer=answers[0])


@attrs.define
class _Page:
    """One pending page: what it shows, and who waits for its answer."""

    prompt: str
    capsule_url: str
    answer: Deferred[str]
    timer: IDelayedCall | None = None


@attrs.define
class SecretPages:
    """
    The pending one-time pages, and the resource that serves them.

    Each page is reachable at its token (a path segment below wherever
    C{resource} is mounted) until it is answered, cancelled, or C{ttl}
    seconds pass; then its token is forgotten.

    @ivar reactor: The clock the pages expire by.
    @ivar ttl: Seconds a page waits for its answer.
    @ivar random: Returns that many random bytes (C{os.urandom}).
    @ivar security: The C{Host}/C{Origin} values accepted (see
        L{gophergem.http.origin.transport_security}); C{None} for loopback names
        on the port the request arrived on, which is what a page served by
        L{LoopbackListener} wants.  The checks are made even if the settings
        switch them off.
    @ivar resource: The C{IResource} serving C{GET} and C{POST} of C{/<token>}; a leaf, to be
        used as a site's root or mounted under any path.
    """

    reactor: IReactorTime
    ttl: float = PAGE_TTL_SECONDS
    random: Callable[[int], bytes] = os.urandom
    security: TransportSecuritySettings | None = attrs.field(default=None, kw_only=True)
    resource: SecretPageResource = attrs.field(init=False)
    _pages: dict[str, _Page] = attrs.field(init=False, factory=dict)

    @resource.default
    def _resource(self) -> SecretPageResource:
        return SecretPageResource(self)

    def open(self, prompt: str, capsule_url: str) -> tuple[str, Deferred[str]]:
        """
        Make a new pending page asking C{prompt} on behalf of C{capsule_url}.

        @param prompt: The capsule's prompt, sanitised (it is HTML-escaped
            here as well).
        @param capsule_url: The URL that asked, sanitised.
        @return: The page's token (the last segment of its URL), and a
            Deferred that fires once with the answer; or fails with
            L{InputTimeout} when C{ttl} passes, or L{UserDeclined} when the
            user presses "Cancel" or L{cancel} is called.  Cancelling the
            Deferred forgets the page.
        """
        token = self._new_token()

        def forget(_: Deferred[str]) -> None:
            self._take(token)

        page = _Page(prompt, capsule_url, Deferred(forget))
        self._pages[token] = page
        page.timer = self.reactor.callLater(self.ttl, self._expire, token)
        return token, page.answer

    def cancel(self, token: str) -> None:
        """
        Decline the page C{token}: its Deferred fails with L{UserDeclined}.

        An unknown, answered or expired token is ignored.
        """
        page = self._take(token)
        if page is not None:
            page.answer.errback(
                UserDeclined(
                    message="The user cancelled the capsule's request for sensitive input; "
                    "nothing was sent to the capsule.",
                    next_step="Do not ask again unless the user wants to.",
                )
            )

    def pending(self) -> int:
        """How many pages wait for an answer."""
        return len(self._pages)

    def _find(self, token: str) -> _Page | None:
        return self._pages.get(token)

    def _submit(self, token: str, answer: str) -> None:
        """Hand C{answer} to the page's Deferred and forget the page."""
        page = self._take(token)
        if page is not None:
            page.answer.callback(answer)

    def _expire(self, token: str) -> None:
        page = self._pages.pop(token, None)
        if page is None:
            return
        page.timer = None
        page.answer.errback(
            InputTimeout(
                message=f"The user did not answer the capsule's request for sensitive input "
                f"within {counted(self.ttl / 60, 'minute')}; nothing was sent to the capsule.",
                next_step="Ask the user whether to try again.",
                temporary=True,
            )
        )

    def _take(self, token: str) -> _Page | None:
        page = self._pages.pop(token, None)
        if page is not None and page.timer is not None:
            if page.timer.active():
                page.timer.cancel()
            page.timer = None
        return page

    def _new_token(self) -> str:
        for _ in range(3):
            data = self.random(TOKEN_BYTES)
            if len(data) != TOKEN_BYTES:
                raise RuntimeError(f"the random source gave {len(data)} bytes, not {TOKEN_BYTES}")
            token = base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
            if token not in self._pages:
                return token
        raise RuntimeError("the random source keeps repeating itself")


def _is_loopback(address: IAddress) -> bool:
    """Whether C{address} is an IPv4 or IPv6 loopback address (IPv4-mapped too)."""
    host = getattr(address, "host", None)
    if not isinstance(host, str):
        return False
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _body_too_large(request: server.Request) -> bool:
    declared = request.getHeader(b"Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_FORM_SIZE:
        return True
    content = request.content
    if content is None:
        return False
    content.seek(0, io.SEEK_END)
    size = content.tell()
    content.seek(0)
    return bool(size > MAX_FORM_SIZE)


def _read_body(request: server.Request) -> bytes:
    """The request's body; the request keeps no copy (nor Twisted's parsed C{args})."""
    content = request.content
    body = content.read() if content is not None else b""
    request.content = io.BytesIO()
    request.args = {}
    return bytes(body)


_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em;"
    "line-height:1.4}code{word-break:break-all}"
    ".prompt{white-space:pre-wrap;border-left:3px solid #888;padding-left:.8em}"
    "input{font-size:1.1em;width:100%;box-sizing:border-box;margin:.5em 0}"
    "button{font-size:1em;margin-right:.5em}"
)


def _document(title: str, body: str) -> bytes:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    ).encode()


def _form_page(page: _Page, ttl: float) -> bytes:
    url = html.escape(page.capsule_url, quote=True)
    prompt = html.escape(page.prompt, quote=True)
    return _document(
        "gophergem: a capsule asks for sensitive input",
        "<h1>A capsule asks for sensitive input</h1>"
        f"<p>The Gemini capsule at</p><p><code>{url}</code></p><p>asks:</p>"
        f'<p class="prompt">{prompt}</p>'
        '<form method="post" autocomplete="off">'
        '<label for="answer">Your answer goes only to that capsule; the assistant '
        "never sees it.</label>"
        '<input type="password" name="answer" autocomplete="off" id="answer" autofocus>'
        '<button type="submit" name="action" value="send">Send</button>'
        '<button type="submit" name="action" value="cancel" formnovalidate>Cancel</button>'
        "</form>"
        f"<p>This page works once, and only for {counted(ttl / 60, 'minute')} after it was "
        "made.</p>",
    )


def _answer(request: server.Request, code: int, text: str) -> bytes:
    """Set up a short HTML page saying C{text}; return its body."""
    request.setResponseCode(code)
    data = _document("gophergem", f"<p>{html.escape(text)}</p>")
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    request.setHeader(b"Content-Length", b"%d" % len(data))
    return data


class SecretPageResource(Resource):
    """
    Serves the pages of a L{SecretPages}: C{GET /<token>} shows the form,
    C{POST /<token>} takes its answer.

    A leaf: the token is the one path segment left below where it is
    mounted.  Every answer is HTML with headers that keep it out of caches,
    frames and referrers.  In order: a peer that is not loopback gets 403; a
    foreign C{Host} 421 and a foreign C{Origin} 403; a method other than
    C{GET} or C{POST} 405; a body over L{MAX_FORM_SIZE} 413; an unknown,
    used, expired or malformed token 404 (all alike); a C{POST} that is not
    a form 415, a malformed form 400 (the page stays pending).
    """

    isLeaf = True

    def __init__(self, pages: SecretPages) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        self._pages = pages

    def render(self, request: server.Request) -> bytes:
        for name, value in _SECURITY_HEADERS:
            request.setHeader(name, value)
        if not _is_loopback(request.getClientAddress()):
            return _answer(request, 403, "This page answers only on this computer.")
        refused = foreign_request(request, self._security(request))
        if refused is not None:
            return _answer(request, *refused)
        if request.method not in (b"GET", b"POST"):
            request.setHeader(b"Allow", b"GET, POST")
            return _answer(request, 405, "Only GET and POST are allowed here.")
        if _body_too_large(request):
            return _answer(request, 413, "The form is too large.")
        token = _token(request.postpath)
        page = self._pages._find(token) if token is not None else None
        if token is None or page is None:
            return _answer(request, 404, "No such page: it was used, has expired, or never was.")
        if request.method == b"GET":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return _form_page(page, self._pages.ttl)
        kind = (request.getHeader(b"Content-Type") or b"").partition(b";")[0].strip().lower()
        if kind != _FORM_TYPE:
            return _answer(request, 415, "Send the answer with the page's form.")
        try:
            form = parse_form(_read_body(request))
        except FormError as error:
            return _answer(request, 400, f"{error} The page still waits for an answer.")
        if form.cancel:
            self._pages.cancel(token)
            return _answer(request, 200, "Cancelled. Nothing was sent to the capsule.")
        assert form.answer is not None
        self._pages._submit(token, form.answer)
        return _answer(request, 200, "Sent to the capsule. You can close this page.")

    def _security(self, request: server.Request) -> TransportSecuritySettings:
        """
        The accepted C{Host}/C{Origin} values, with the checks always on.

        C{Origin: null} is accepted: browsers send it for this page's own
        form because the page's referrer policy is C{no-referrer}.  A
        foreign page cannot use that, since it does not know the token.
        """
        base = self._pages.security
        if base is None:
            base = transport_security(getattr(request.getHost(), "port", None))
        return base.model_copy(
            update={
                "enable_dns_rebinding_protection": True,
                "allowed_origins": [*base.allowed_origins, "null"],
            }
        )


def _token(postpath: list[bytes] | None) -> str | None:
    """The token a request's remaining path names, if it is shaped like one."""
    if not postpath or len(postpath) != 1 or not _TOKEN.match(postpath[0]):
        return None
    return postpath[0].decode("ascii")


class _FormRequest(BodyCappedRequest):
    """A request whose body is refused past L{MAX_FORM_SIZE} while it arrives."""

    max_body_size = MAX_FORM_SIZE


class _QuietSite(BoundedSite):
    """A site that logs no requests: a pending page's URL is its password."""

    def log(self, request: http.Request) -> None:
        pass


@attrs.define
class LoopbackListener:
    """
    Serves a L{SecretPages} on an ephemeral loopback port, for the stdio mode.

    It listens only while a page is pending: L{open} starts listening when
    needed, and it stops once the last pending page is answered, cancelled
    or expired.  The next L{open} listens again (usually on another port).

    @ivar pages: The pages to serve (as the site's root).
    @ivar reactor: Runs the site, and by default the endpoint.
    @ivar endpoint: Where to listen; by default C{tcp:0:interface=127.0.0.1}.
    """

    pages: SecretPages
    reactor: IReactorTCP
    endpoint: IStreamServerEndpoint | None = None
    _port: IListeningPort | None = attrs.field(init=False, default=None)
    _starting: list[Deferred[str]] | None = attrs.field(init=False, default=None)
    _base_url: str = attrs.field(init=False, default="")

    def open(self, prompt: str, capsule_url: str) -> Deferred[tuple[str, Deferred[str]]]:
        """
        Make a new page (see L{SecretPages.open}) and make sure it is served.

        @return: A Deferred firing, once the site listens, with the page's
            full URL and the Deferred of its answer.  It fails when the site
            cannot listen (the page is then cancelled).
        """
        token, answer = self.pages.open(prompt, capsule_url)
        answer.addBoth(self._settled)

        def made(base: str) -> tuple[str, Deferred[str]]:
            return base + token, answer

        def failed(reason: Failure) -> Failure:
            self.pages.cancel(token)
            answer.addErrback(lambda _: None)
            return reason

        return self._listening().addCallbacks(made, failed)

    @property
    def listening(self) -> bool:
        """Whether the site is listening now."""
        return self._port is not None

    def _listening(self) -> Deferred[str]:
        if self._port is not None:
            return succeed(self._base_url)
        waiter: Deferred[str] = Deferred()
        if self._starting is not None:
            self._starting.append(waiter)
            return waiter
        self._starting = [waiter]
        site = _QuietSite(self.pages.resource, reactor=self.reactor)
        site.requestFactory = _FormRequest
        endpoint = self.endpoint or TCP4ServerEndpoint(  # type: ignore[no-untyped-call]  # Twisted: unannotated
            self.reactor, 0, interface="127.0.0.1"
        )
        endpoint.listen(site).addCallbacks(self._listened, self._not_listening)
        return waiter

    def _listened(self, port: IListeningPort) -> None:
        address = port.getHost()
        host = str(getattr(address, "host", "127.0.0.1"))
        self._base_url = f"http://{f'[{host}]' if ':' in host else host}:{address.port}/"  # type: ignore[attr-defined]
        self._port = port
        waiters, self._starting = self._starting or [], None
        for waiter in waiters:
            waiter.callback(self._base_url)
        self._settled(None)

    def _not_listening(self, reason: Failure) -> None:
        waiters, self._starting = self._starting or [], None
        for waiter in waiters:
            waiter.errback(reason)

    def _settled(self, result: object) -> object:
        """After any page settles: stop listening when none is pending."""
        if self._port is not None and self.pages.pending() == 0:
            port, self._port = self._port, None
            port.stopListening()
        return result
