"""
Every class in the package that declares an interface, public or private,
ours or Twisted's, built for real and checked with C{verifyObject} against
every interface it provides.

L{IMPLEMENTERS} says how to build each one cheaply (memory stores, fakes,
a temporary directory, a clock); L{VERIFIED_ELSEWHERE} names the test that
verifies those which need a real PostgreSQL or Redis server.  A class found
declaring an interface (C{@implementer}, C{classImplements}, or inherited
from such a class of ours) that is in neither fails
L{test_every_implementer_is_registered}, by name.

C{tests/test_interfaces.py} checks the providers of L{gophergem.interfaces}
that are not classes of their own (C{MemoryNetwork.pins},
C{DeferringStore}, ...).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock, StringTransport
from zope.interface import implementedBy, providedBy
from zope.interface.verify import verifyObject

import gophergem
from gophergem.auth.idp import _BytesProducer
from gophergem.client.connect import Connector, ReactorResolver, _Collector, _VettedEndpoint
from gophergem.client.gemini import GeminiClientProtocol
from gophergem.client.titan import TitanClientProtocol
from gophergem.fetcher import Fetcher
from gophergem.http.secret_input import LoopbackSecretInput, SiteSecretInput
from gophergem.http.secret_page import SecretPages
from gophergem.mcp.stdio import StdioMCPProtocol
from gophergem.policy.cache import ResponseCache
from gophergem.policy.local import LocalPolicy
from gophergem.policy.pacing import (
    ConcurrencyCap,
    HostConnectionLimit,
    HostPacer,
    SlowDownBoard,
)
from gophergem.policy.targets import AddressPolicy
from gophergem.state.files import FileFeedStore, FileIdentityStore, FilePinStore, FileState
from gophergem.state.memory import MemoryFeedStore, MemoryIdentityStore, MemoryPinStore
from gophergem.state.postgres import (
    PostgresFeedStore,
    PostgresIdentityStore,
    PostgresPinStore,
    PostgresState,
)
from gophergem.state.redis import (
    NearCache,
    RedisConcurrencyCap,
    RedisHostPacer,
    RedisPolicy,
    RedisResponseCache,
    RedisSlowDownBoard,
)
from gophergem.testing import FakeResolver, MemoryNetwork, ServerTLS, make_certificate
from gophergem.testing.hostile import HostileGeminiServer, HostileGopherServer, HostileTLS
from gophergem.testing.hostile._engine import _Flood
from gophergem.tls import GeminiTLSCreator
from gophergem.trust.decision import PresentedCertificate, TrustDecision, decide
from gophergem.url import GopherURL
from gophergem.wire.titan import TitanURL

PACKAGE = Path(gophergem.__file__).parent

#: Seconds since the epoch for certificates made here: a fixed time.
NOW = 1_750_000_000.0


def _judge(presented: PresentedCertificate) -> TrustDecision:
    """Decide as Gemini's TOFU does, with no pin and a fixed time."""
    return decide("localhost", 1965, None, presented, NOW)


def _vetted_endpoint(tmp: Path) -> object:
    """The endpoint a connector gives for a Gopher URL (nothing dialled yet)."""
    connector = Connector(MemoryReactorClock(), FakeResolver(), AddressPolicy())
    return connector.endpoint_for(GopherURL("gopher.example"))


def _flood(tmp: Path) -> object:
    """The producer a flooding hostile server registers on its transport."""
    server = HostileGopherServer.named("send-forever", Clock())
    exchange = server.buildProtocol(None)
    transport = StringTransport()
    exchange.makeConnection(transport)
    exchange.dataReceived(b"/\r\n")
    return transport.producer


def _hostile_tls(tmp: Path) -> object:
    """The TLS of a hostile Gemini server that presents a good certificate."""
    return HostileGeminiServer.named("silent", Clock()).tls()


#: Each implementer, and how to build an instance of it in a directory.
IMPLEMENTERS: dict[type, Callable[[Path], object]] = {
    _BytesProducer: lambda tmp: _BytesProducer(b"{}"),
    _Collector: lambda tmp: _Collector(Deferred()),
    ReactorResolver: lambda tmp: ReactorResolver(MemoryReactorClock().nameResolver),
    _VettedEndpoint: _vetted_endpoint,
    GeminiClientProtocol: lambda tmp: GeminiClientProtocol(
        b"gemini://localhost/\r\n", 1024, lambda: None
    ),
    TitanClientProtocol: lambda tmp: TitanClientProtocol(
        TitanURL("localhost"), b"x", 1024, lambda: None
    ),
    FileFeedStore: lambda tmp: FileFeedStore(tmp / "feeds.json"),
    MemoryFeedStore: lambda tmp: MemoryFeedStore(),
    Fetcher: lambda tmp: MemoryNetwork().fetcher(),
    StdioMCPProtocol: lambda tmp: StdioMCPProtocol(server=None, clock=Clock()),
    LoopbackSecretInput: lambda tmp: LoopbackSecretInput(MemoryReactorClock()),
    SiteSecretInput: lambda tmp: SiteSecretInput(SecretPages(Clock()), lambda: None),
    ResponseCache: lambda tmp: ResponseCache(Clock()),
    LocalPolicy: lambda tmp: LocalPolicy(),
    HostPacer: lambda tmp: HostPacer(Clock(), 60),
    HostConnectionLimit: lambda tmp: HostConnectionLimit(4),
    ConcurrencyCap: lambda tmp: ConcurrencyCap(4),
    SlowDownBoard: lambda tmp: SlowDownBoard(Clock()),
    AddressPolicy: lambda tmp: AddressPolicy(),
    FakeResolver: lambda tmp: FakeResolver(),
    ServerTLS: lambda tmp: ServerTLS(*make_certificate("localhost", now=NOW)),
    _Flood: _flood,
    HostileTLS: _hostile_tls,
    GeminiTLSCreator: lambda tmp: GeminiTLSCreator("localhost", _judge),
    FileIdentityStore: lambda tmp: FileIdentityStore(tmp / "client_certs"),
    MemoryIdentityStore: lambda tmp: MemoryIdentityStore(),
    FilePinStore: lambda tmp: FilePinStore(tmp / "tofu.json"),
    MemoryPinStore: lambda tmp: MemoryPinStore(),
    FileState: lambda tmp: FileState(tmp / "tofu.json", tmp / "client_certs", tmp / "feeds.json"),
}

#: Implementers that need a real server, and the test (against that server,
#: run when C{GOPHERGEM_REQUIRE_PEERS=1}) that checks them with verifyObject.
VERIFIED_ELSEWHERE: dict[type, str] = {
    PostgresPinStore: "tests/test_state_pins.py::TestPinStoreContract::test_interface",
    PostgresIdentityStore: (
        "tests/test_state_identities.py::TestIdentityStoreContract::test_interface"
    ),
    PostgresFeedStore: "tests/test_state_feeds.py::TestFeedStoreContract::test_interface",
    PostgresState: "tests/test_state_backends.py::test_a_database_url_opens_postgresql",
    RedisPolicy: "tests/test_state_redis.py::test_interfaces",
    RedisHostPacer: "tests/test_state_redis.py::test_interfaces",
    RedisConcurrencyCap: "tests/test_state_redis.py::test_interfaces",
    RedisSlowDownBoard: "tests/test_state_redis.py::test_interfaces",
    RedisResponseCache: "tests/test_state_redis.py::test_interfaces",
    NearCache: "tests/test_state_redis.py::test_interfaces",
}


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _modules() -> Iterator[ModuleType]:
    """Every module of the package (C{__main__} runs the program: left out)."""
    yield gophergem
    for info in pkgutil.walk_packages(gophergem.__path__, "gophergem."):
        if info.name.rpartition(".")[2] != "__main__":
            yield importlib.import_module(info.name)


def _declares(cls: type) -> bool:
    """Whether C{cls}, or a class of ours it inherits from, declares an interface."""
    return any(
        base.__module__.startswith("gophergem.") and implementedBy(base).declared
        for base in cls.__mro__
    )


def _found_by_import() -> set[str]:
    return {
        _name(obj)
        for module in _modules()
        for obj in vars(module).values()
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and _declares(obj)
    }


def _found_by_source() -> set[str]:
    """
    The classes decorated with C{@implementer} in the source, wherever they
    are defined (a class inside a function shows up with C{<locals>}: it
    cannot be registered, so it must move to module level).
    """
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        _scan(ast.parse(path.read_text(encoding="utf-8")), module, "", found)
    return found


def _scan(node: ast.AST, module: str, prefix: str, found: set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            qualname = prefix + child.name
            if any(_is_implementer(decorator) for decorator in child.decorator_list):
                found.add(f"{module}.{qualname}")
            _scan(child, module, qualname + ".", found)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            _scan(child, module, f"{prefix}{child.name}.<locals>.", found)
        else:
            _scan(child, module, prefix, found)


def _is_implementer(decorator: ast.expr) -> bool:
    if not isinstance(decorator, ast.Call):
        return False
    func = decorator.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in {"implementer", "implementer_only"}


def test_every_implementer_is_registered() -> None:
    """
    Every class of the package declaring an interface is built and verified
    here, or named with the test that verifies it elsewhere.
    """
    registered = {_name(cls) for cls in [*IMPLEMENTERS, *VERIFIED_ELSEWHERE]}
    missing = (_found_by_import() | _found_by_source()) - registered
    assert not missing, f"add to IMPLEMENTERS (or VERIFIED_ELSEWHERE): {sorted(missing)}"


@pytest.mark.parametrize("cls", [*IMPLEMENTERS, *VERIFIED_ELSEWHERE], ids=_name)
def test_registered_class_declares(cls: type) -> None:
    """Nothing is registered that no longer declares an interface."""
    assert _declares(cls)


@pytest.mark.parametrize("cls", list(IMPLEMENTERS), ids=_name)
def test_implementer_verifies(cls: type, tmp_path: Path) -> None:
    """A real instance passes verifyObject for every interface it provides."""
    instance = IMPLEMENTERS[cls](tmp_path)
    assert type(instance) is cls
    provided = list(providedBy(instance))
    assert set(implementedBy(cls).declared) <= set(provided)
    for interface in provided:
        assert verifyObject(interface, instance)


@pytest.mark.parametrize("cls", list(VERIFIED_ELSEWHERE), ids=_name)
def test_verified_elsewhere_exists(cls: type) -> None:
    """The test named for a class exists and calls verifyObject (read, not imported)."""
    path, *names = VERIFIED_ELSEWHERE[cls].split("::")
    node: ast.AST = ast.parse((PACKAGE.parent / path).read_text(encoding="utf-8"))
    for name in names:
        node = next(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.ClassDef | ast.FunctionDef) and child.name == name
        )
    assert "verifyObject" in {
        call.func.id
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    }


def test_source_scanner_finds_every_declaration() -> None:
    """
    The source scan finds C{@implementer} classes however they are written:
    private, through the module's name, nested in a class or in a function
    (which then cannot be registered, and so fails the registry test).
    """
    source = """
@implementer(IFetcher)
class _Private: ...

@zope.interface.implementer(IFetcher, IResolver)
class Dotted:
    @implementer(IBodyProducer)
    class _Inner: ...

def factory():
    @implementer(IFetcher)
    class Local: ...
    return Local

class Plain: ...

@attrs.define
class Decorated: ...
"""
    found: set[str] = set()
    _scan(ast.parse(source), "gophergem.example", "", found)
    assert found == {
        "gophergem.example._Private",
        "gophergem.example.Dotted",
        "gophergem.example.Dotted._Inner",
        "gophergem.example.factory.<locals>.Local",
    }
