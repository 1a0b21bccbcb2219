"""
Shared helpers for the identity-provider tests: signing keys and their
JWKS entries, a token minter, and a fake C{IAgent} answering from a table
(or failing, or never answering), recording what it was asked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import attrs
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.utils import base64url_encode
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.web.client import ResponseDone
from twisted.web.http_headers import Headers
from twisted.web.iweb import IAgent, IBodyProducer
from zope.interface import implementer

ISSUER = "https://idp.example.org"
AUDIENCE = "https://mcp.example.org/mcp"

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()


def jwk_of(key: Any, kid: str, alg: str | None = None) -> dict[str, Any]:
    """The public JWK of C{key}, with C{kid} (and C{alg} if given)."""
    algorithm = {
        rsa.RSAPrivateKey: jwt.algorithms.RSAAlgorithm,
        ec.EllipticCurvePrivateKey: jwt.algorithms.ECAlgorithm,
        ed25519.Ed25519PrivateKey: jwt.algorithms.OKPAlgorithm,
    }
    for kind, handler in algorithm.items():
        if isinstance(key, kind):
            data = json.loads(handler.to_jwk(key.public_key()))
            break
    else:
        raise TypeError(key)
    data["kid"] = kid
    data["use"] = "sig"
    if alg is not None:
        data["alg"] = alg
    return data


def claims(**extra: Any) -> dict[str, Any]:
    """Good claims for L{ISSUER} and L{AUDIENCE}, valid for an hour from now."""
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "alice",
        "aud": AUDIENCE,
        "exp": now + 3600,
        "iat": now,
        "scope": "gopher gemini",
        "client_id": "claude",
    }
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def mint(
    key: Any = RSA_KEY,
    *,
    alg: str = "RS256",
    kid: str | None = "k1",
    headers: dict[str, Any] | None = None,
    **extra: Any,
) -> str:
    """A JWT with L{claims} (and C{extra}), signed by C{key}."""
    head = dict(headers or {})
    if kid is not None:
        head["kid"] = kid
    return jwt.encode(claims(**extra), key, algorithm=alg, headers=head)


def unsigned(**extra: Any) -> str:
    """A token with C{alg: none} and no signature."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return part({"alg": "none", "typ": "JWT", "kid": "k1"}) + "." + part(claims(**extra)) + "."


def hs256_with_public_key(key: Any = RSA_KEY, **extra: Any) -> str:
    """A token "signed" with HS256 keyed by C{key}'s public PEM (the alg-confusion attack)."""
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = base64url_encode(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    payload = base64url_encode(json.dumps(claims(**extra)).encode())
    signing_input = header + b"." + payload
    signature = base64url_encode(hmac.new(pem, signing_input, hashlib.sha256).digest())
    return (signing_input + b"." + signature).decode()


@attrs.frozen
class Asked:
    method: bytes
    url: str
    headers: Headers
    body: bytes | None


class FakeResponse:
    def __init__(self, code: int, body: bytes) -> None:
        self.code = code
        self.version = (b"HTTP", 1, 1)
        self.phrase = b"OK"
        self.headers = Headers()
        self.length = len(body)
        self._body = body

    def deliverBody(self, protocol: Any) -> None:
        protocol.makeConnection(StringTransport())
        protocol.dataReceived(self._body)
        protocol.connectionLost(Failure(ResponseDone()))


Answer = tuple[int, Any] | Callable[[], Deferred[Any]] | None


@implementer(IAgent)
class FakeAgent:
    """
    An C{IAgent} answering from C{routes} (URL -> (status, JSON value) or
    a callable giving a Deferred); unknown URLs get 404; C{down} refuses
    every connection.
    """

    def __init__(self, routes: dict[str, Answer] | None = None) -> None:
        self.routes: dict[str, Answer] = dict(routes or {})
        self.asked: list[Asked] = []
        self.down = False

    def urls(self) -> list[str]:
        return [a.url for a in self.asked]

    def request(
        self,
        method: bytes,
        uri: bytes,
        headers: Headers | None = None,
        bodyProducer: IBodyProducer | None = None,
    ) -> Deferred[Any]:
        body = None
        if bodyProducer is not None:
            sink = StringTransport()
            bodyProducer.startProducing(sink)
            body = sink.value()
        url = uri.decode()
        self.asked.append(Asked(method, url, headers or Headers(), body))
        if self.down:
            return fail(ConnectionRefusedError("refused"))
        answer = self.routes.get(url)
        if answer is None:
            return succeed(FakeResponse(404, b"not found"))
        if callable(answer):
            return answer()
        code, value = answer
        raw = value if isinstance(value, bytes) else json.dumps(value).encode()
        return succeed(FakeResponse(code, raw))


def idp_routes(*keys: dict[str, Any], issuer: str = ISSUER) -> dict[str, Answer]:
    """An issuer publishing RFC 8414 metadata and a JWKS with C{keys}."""
    return {
        f"{issuer}/.well-known/oauth-authorization-server": (
            200,
            {"issuer": issuer, "jwks_uri": f"{issuer}/jwks.json"},
        ),
        f"{issuer}/jwks.json": (200, {"keys": list(keys)}),
    }
