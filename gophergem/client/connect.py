# -*- test-case-name: tests.test_client_connect -*-
"""
The connect pinch point: resolve, vet every address, dial a vetted one.

Every outgoing connection gophergem makes goes through L{Connector.connect},
which takes a URL and a protocol instance and hands the protocol back
connected (as C{connectProtocol} does); the URL's scheme picks TLS.
The host is resolved once (or read as an IP literal in any spelling), every
address is checked against the L{IAddressPolicy}, and the connection goes to
the vetted address itself, so no second lookup can be rebound to somewhere
else.  TLS (SNI, trust on first use) keeps the host name.
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import ip_address
from typing import Any, Protocol, TypeVar, cast

import attrs
from twisted.internet import defer
from twisted.internet import error as ierror
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP6ClientEndpoint
from twisted.internet.interfaces import (
    IAddress,
    IConnector,
    IDelayedCall,
    IHostnameResolver,
    IHostResolution,
    IOpenSSLClientConnectionCreator,
    IProtocol,
    IProtocolFactory,
    IReactorTCP,
    IReactorTime,
    IResolutionReceiver,
    IStreamClientEndpoint,
)
from twisted.internet.protocol import ClientFactory, Factory
from twisted.internet.protocol import Protocol as TwistedProtocol
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from zope.interface import implementer

from gophergem.errors import BlockedError, ConnectionFailed, DNSError, FetchTimeout, GophergemError
from gophergem.interfaces import IAddressPolicy, IResolver
from gophergem.policy.addresses import IPAddress, parse_ip_literal
from gophergem.url import GeminiURL, GopherURL
from gophergem.wire.smolweb import SmolwebURL
from gophergem.wire.titan import TitanURL

__all__ = ["Connector", "ReactorResolver", "TCPReactor", "reactor_resolver"]

log = Logger()

_P = TypeVar("_P", bound=TwistedProtocol)


@implementer(IResolutionReceiver)
@attrs.define
class _Collector:
    done: Deferred[list[IPAddress]]
    found: list[IPAddress] = attrs.field(factory=list)

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        pass

    def addressResolved(self, address: IAddress) -> None:
        host = getattr(address, "host", None)
        if host is None:
            return
        try:
            parsed = ip_address(host.partition("%")[0])
        except ValueError:
            return
        if parsed not in self.found:
            self.found.append(parsed)

    def resolutionComplete(self) -> None:
        self.done.callback(self.found)


@implementer(IResolver)
@attrs.frozen
class ReactorResolver:
    """Resolve through the reactor's own L{IHostnameResolver}."""

    name_resolver: IHostnameResolver

    async def _resolve(self, host: str) -> list[IPAddress]:
        done: Deferred[list[IPAddress]] = Deferred()
        self.name_resolver.resolveHostName(_Collector(done), host, portNumber=0)
        try:
            found = await done
        except Exception as exc:  # pragma: no cover - resolvers report via the receiver
            raise DNSError(message="The host name could not be resolved.") from exc
        if not found:
            raise DNSError(message="The host name did not resolve to any address.")
        return found

    def resolve(self, host: str) -> Deferred[list[IPAddress]]:
        """Look C{host} up; fails with L{DNSError} when nothing is found."""
        return Deferred.fromCoroutine(self._resolve(host))


_REFUSED = (
    "The host resolves to an address that is not publicly routable (loopback, "
    "private, link-local or reserved); such targets are refused."
)


class TCPReactor(Protocol):
    """
    What the connector needs of a reactor: L{IReactorTCP}'s C{connectTCP}
    and L{IReactorTime} (connect timeouts, TLS write buffering).  Every
    real reactor and C{MemoryReactorClock} provide both.
    """

    def connectTCP(
        self,
        host: str,
        port: int,
        factory: ClientFactory,
        timeout: float = 30.0,
        bindAddress: tuple[str, int] | None = None,
    ) -> IConnector: ...

    def callLater(
        self, delay: float, callable: Callable[..., Any], *args: object, **kw: object
    ) -> IDelayedCall: ...

    def seconds(self) -> float: ...


@attrs.frozen
class Connector:
    """
    Resolve, vet and dial: the one place a URL becomes a connection.

    @ivar reactor: Provides L{IReactorTCP} and L{IReactorTime}.
    @ivar resolver: Where host names are looked up.
    @ivar policy: Which addresses may be dialled.
    """

    reactor: TCPReactor
    resolver: IResolver
    policy: IAddressPolicy
    connect_timeout: float = 30.0

    async def addresses_for(self, host: str) -> list[IPAddress]:
        """
        Resolve C{host} (or read it as an IP literal) and vet every address.

        @raise BlockedError: If any address is refused: an answer mixing a
            public and a private address is treated as an attack.
        @raise DNSError: If the name does not resolve.
        """
        literal = parse_ip_literal(host)
        addresses = [literal] if literal is not None else await self.resolver.resolve(host)
        if not addresses:
            raise DNSError(message="The host name did not resolve to any address.")
        if not all(self.policy.permits(address) for address in addresses):
            log.info("refused {host}: a resolved address is not public", host=host)
            raise BlockedError(
                message=_REFUSED,
                next_step="Do not retry under another spelling; the operator can allow "
                "local targets deliberately with *_ALLOW_LOCAL_HOSTS=true.",
            )
        return addresses

    def endpoint_for(
        self,
        url: GopherURL | GeminiURL | SmolwebURL,
        tls: IOpenSSLClientConnectionCreator | None = None,
    ) -> IStreamClientEndpoint:
        """
        The endpoint for C{url}'s host and port, through a vetted address
        (in the manner of C{Agent}'s C{endpointForURI}).

        The scheme picks TLS: a C{gemini://} or C{titan://} URL is always
        dialled over TLS with C{tls} (which then must be given), a
        C{gopher://}, C{finger://}, C{nex://} or C{spartan://} URL never.

        @raise ValueError: When C{tls} does not fit the scheme.
        """
        if isinstance(url, GeminiURL | TitanURL):
            if tls is None:
                raise ValueError("gemini:// and titan:// are TLS only: give the connection creator")
        elif tls is not None:
            raise ValueError(
                "gopher://, finger://, nex:// and spartan:// are plain TCP: "
                "no connection creator applies"
            )
        return _VettedEndpoint(self, url.host, url.port, tls)

    def connect(
        self,
        url: GopherURL | GeminiURL | SmolwebURL,
        protocol: _P,
        tls: IOpenSSLClientConnectionCreator | None = None,
    ) -> Deferred[_P]:
        """
        Connect C{protocol} to C{url}'s server (see L{endpoint_for}) and
        hand it back connected, as C{connectProtocol} does.

        Addresses are tried in order until one accepts.  Cancelling the
        Deferred stops the attempt (it fails with C{CancelledError}).

        @return: A Deferred firing with C{protocol}, or failing with
            L{BlockedError}, L{DNSError}, L{ConnectionFailed} or
            L{FetchTimeout}.
        """
        factory = Factory.forProtocol(lambda: protocol)
        factory.noisy = False  # one factory per connection: no "Starting factory" lines
        connected = self.endpoint_for(url, tls).connect(factory)
        return connected.addCallback(lambda _: protocol)

    async def _dial(
        self,
        host: str,
        port: int,
        factory: IProtocolFactory,
        tls: IOpenSSLClientConnectionCreator | None,
    ) -> IProtocol:
        addresses = await self.addresses_for(host)
        last: GophergemError = ConnectionFailed(message="No address could be reached.")
        for address in addresses:
            endpoint_type = TCP6ClientEndpoint if address.version == 6 else TCP4ClientEndpoint
            tcp = cast(IReactorTCP, self.reactor)  # documented: it provides both
            endpoint = endpoint_type(tcp, str(address), port, timeout=self.connect_timeout)
            wire_factory = factory
            if tls is not None:
                # Built here rather than with wrapClientTLS so that TLS's write
                # buffering runs on our reactor, not the global one.
                clock = cast(IReactorTime, self.reactor)
                wire_factory = TLSMemoryBIOFactory(tls, True, factory, clock=clock)
            try:
                try:
                    protocol = await endpoint.connect(wire_factory)
                except ierror.ConnectingCancelledError:
                    # Cancelled by the fetch's deadline: let addTimeout see a
                    # cancellation, so the caller reports TIMEOUT.
                    raise defer.CancelledError() from None
                if tls is not None:
                    return cast(TLSMemoryBIOProtocol, protocol).wrappedProtocol
                return protocol
            except ierror.ConnectionRefusedError:
                last = ConnectionFailed(
                    message=f"The server refused the connection on port {port}.",
                    next_step="Check the host and port; the server may be down.",
                )
            except (ierror.TimeoutError, ierror.TCPTimedOutError):
                last = FetchTimeout(message="Connecting to the server timed out.", temporary=True)
            except ierror.ConnectError as exc:
                last = ConnectionFailed(message=f"Could not connect: {exc.__class__.__name__}.")
        raise last


@implementer(IStreamClientEndpoint)
@attrs.frozen
class _VettedEndpoint:
    """C{host}:C{port} through the connector: resolved, vetted, dialled (over C{tls})."""

    connector: Connector
    host: str
    port: int
    tls: IOpenSSLClientConnectionCreator | None

    def connect(self, protocolFactory: IProtocolFactory) -> Deferred[IProtocol]:
        return Deferred.fromCoroutine(
            self.connector._dial(self.host, self.port, protocolFactory, self.tls)
        )


def reactor_resolver(reactor: object) -> ReactorResolver:
    """The default resolver for C{reactor}: its C{nameResolver}."""
    return ReactorResolver(reactor.nameResolver)  # type: ignore[attr-defined]
