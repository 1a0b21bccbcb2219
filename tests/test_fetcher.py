"""
Tests for L{gophergem.fetcher}: the thin L{Fetcher} façade, its named
constructor, and batches (on an in-memory network: no sockets, no real time).
"""

from __future__ import annotations

import attrs
import pytest
from twisted.internet.testing import MemoryReactorClock
from zope.interface.verify import verifyObject

from gophergem.config import Config
from gophergem.errors import InvalidRequest
from gophergem.fetcher import MAX_BATCH, Fetcher
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.fetcher.gopher import GopherPipeline
from gophergem.interfaces import IFetcher
from gophergem.testing import FakeGopherServer, FakeResolver, MemoryNetwork
from gophergem.trust.identities import FileIdentityStore, MemoryIdentityStore
from gophergem.trust.pins import FilePinStore, MemoryPinStore
from tests.test_fetcher_gopher import HOST_IP, MENU


@pytest.fixture
def net() -> MemoryNetwork:
    network = MemoryNetwork()
    network.resolver.add("g.example", HOST_IP)
    return network


@pytest.fixture
def server(net: MemoryNetwork) -> FakeGopherServer:
    return net.listen(HOST_IP, 70, FakeGopherServer({b"": MENU, b"/about.txt": b"First\r\n.\r\n"}))


def test_batch_order(net: MemoryNetwork, server: FakeGopherServer) -> None:
    """A batch returns one result per URL, in input order, errors included."""
    urls = ["gopher://g.example/", "gopher://g.example/0/about.txt", "gopher://g.example/8"] * 16
    urls += ["http://nope/", "gopher://g.example/"]
    results = net.run(net.fetcher().gopher_batch(urls))
    assert len(results) == 50
    kinds = [type(r).__name__ for r in results]
    assert kinds[:3] == ["MenuResult", "TextResult", "FetchFailure"]
    assert results[48].error.code == "INVALID_REQUEST"


@pytest.mark.parametrize("count", [0, 51])
def test_batch_size_refused(net: MemoryNetwork, count: int) -> None:
    """
    A batch of zero or more than 50 URLs is refused as a whole: its Deferred
    fails with InvalidRequest (nothing is raised on the call) and nothing is
    dialled.
    """
    refused = net.fetcher().gopher_batch(["gopher://g.example/"] * count)
    with pytest.raises(InvalidRequest):
        net.run(refused)
    assert net.attempts == []


def test_fetcher_provides_ifetcher(net: MemoryNetwork) -> None:
    """The Fetcher is an IFetcher: the seam the tools, the CLI and a library user call."""

    fetcher = net.fetcher()
    assert verifyObject(IFetcher, fetcher)
    assert fetcher.gemini_enabled in (True, False)


def test_from_config_builds_both_pipelines(tmp_path: object) -> None:
    """
    from_config gives each protocol its pipeline and its configuration, with
    the file stores the configuration names when none are given.
    """
    environ = {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
    }
    config = Config()
    fetcher = Fetcher.from_config(config, MemoryReactorClock(), FakeResolver(), environ=environ)
    assert isinstance(fetcher.gopher_pipeline, GopherPipeline)
    assert isinstance(fetcher.gemini_pipeline, GeminiPipeline)
    assert fetcher.gopher_pipeline.config is config.gopher
    assert fetcher.gemini_pipeline.config is config.gemini
    assert isinstance(fetcher.pins, FilePinStore)
    assert isinstance(fetcher.identities, FileIdentityStore)
    assert fetcher.gemini_enabled is True


def test_from_config_keeps_given_stores_unless_switched_off() -> None:
    """Given stores are used; a store whose feature is off is not used at all."""
    pins, identities = MemoryPinStore(), MemoryIdentityStore()
    fetcher = Fetcher.from_config(
        Config(), MemoryReactorClock(), FakeResolver(), pins=pins, identities=identities
    )
    assert (fetcher.pins, fetcher.identities) == (pins, identities)
    off = attrs.evolve(
        Config(),
        gemini=attrs.evolve(Config().gemini, tofu_enabled=False, client_certs_enabled=False),
    )
    fetcher = Fetcher.from_config(
        off, MemoryReactorClock(), FakeResolver(), pins=pins, identities=identities
    )
    assert (fetcher.pins, fetcher.identities) == (None, None)


def test_from_config_caches_only_when_enabled() -> None:
    """A protocol gets a cache only when caching is on with a positive lifetime."""
    config = Config()
    no_cache = attrs.evolve(config, gopher=attrs.evolve(config.gopher, cache_ttl_seconds=0))
    fetcher = Fetcher.from_config(no_cache, MemoryReactorClock(), FakeResolver())
    assert fetcher.gopher_pipeline.cache is None
    assert fetcher.gemini_pipeline is not None and fetcher.gemini_pipeline.cache is not None


def test_without_gemini() -> None:
    """A fetcher built without a Gemini pipeline says so and refuses gemini:// at once."""
    full = Fetcher.from_config(Config(), MemoryReactorClock(), FakeResolver())
    fetcher = Fetcher(full.clock, full.gopher_pipeline)
    assert fetcher.gemini_enabled is False
    assert (fetcher.pins, fetcher.identities) == (None, None)
    with pytest.raises(RuntimeError):
        fetcher.gemini("gemini://capsule.example/")


def test_max_batch_is_fifty() -> None:
    """The batch limit the tools advertise is fifty URLs."""
    assert MAX_BATCH == 50
