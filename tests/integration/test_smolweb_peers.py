"""
The small web's client protocols against real servers nobody here wrote,
over real TCP on 127.0.0.1 (free ports), dialled through the connect pinch
point on the real reactor:

  - smolserve (PyPI): Finger (a plan for any user), Nex (listings and
    files) and Spartan (pages, C{=:} links, a missing path);
  - jayhawk (PyPI): Spartan, with its own file dispatcher, plus one route
    the test adds that answers with jayhawk's redirect (neither server
    redirects on its own);
  - the Titan server of L{gophergem.testing.titan}, as its own process
    (C{python -m gophergem.testing.titan}), over real TLS.

Each server runs as a subprocess in its own process group and is stopped
with it.  A missing peer skips, or fails under C{GOPHERGEM_REQUIRE_PEERS=1}
(install them with C{pip install -e '.[test]'}).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from gophergem.client.connect import Connector, reactor_resolver
from gophergem.client.finger import FingerClientProtocol
from gophergem.client.nex import NexClientProtocol
from gophergem.client.spartan import SpartanClientProtocol, SpartanResponse
from gophergem.client.titan import TitanClientProtocol
from gophergem.policy.targets import AddressPolicy
from gophergem.tls import GeminiTLSCreator
from gophergem.trust.decision import decide
from gophergem.wire.finger import FingerURL, decode_answer
from gophergem.wire.nex import NexKind, NexURL, decode_document, parse_directory
from gophergem.wire.spartan import SpartanStatus, SpartanURL, parse_page
from gophergem.wire.titan import TitanURL
from tests.helpers.smolweb_peers import (
    Smolserve,
    TitanPeer,
    running_jayhawk,
    running_smolserve,
    running_titan,
)

from .conftest import LOOPBACK

pytestmark = pytest.mark.integration

EXCHANGE_DEADLINE = 15.0  # seconds one exchange may take
CAP = 1024 * 1024

PLAN = "Working on the small web.\nCafé at noon.\n"
INDEX = "# Spartan capsule\n=> about.gmi About\n=: /search Search the capsule\n"
POST = "First post, over Nex.\n"


@pytest.fixture(scope="module")
def smolserve() -> Iterator[Smolserve]:
    files = {
        "plan.txt": PLAN,
        "spartan/index.gmi": INDEX,
        "spartan/about.gmi": "# About\n",
        "nex/posts/first.txt": POST,
        "nex/notes.txt": "Notes.\n",
    }
    with running_smolserve(files) as peer:
        yield peer


@pytest.fixture(scope="module")
def jayhawk() -> Iterator[int]:
    with running_jayhawk(INDEX) as port:
        yield port


@pytest.fixture(scope="module")
def titan_server() -> Iterator[TitanPeer]:
    with running_titan() as peer:
        yield peer


async def exchange(url: Any, protocol: Any, tls: Any = None) -> Any:
    """Dial C{url} through the pinch point on the real reactor and await the answer."""
    from twisted.internet import reactor

    connector = Connector(reactor, reactor_resolver(reactor), AddressPolicy(allow_local=True))
    d: Deferred[Any] = connector.connect(url, protocol, tls).addCallback(lambda p: p.finished)
    d.addTimeout(EXCHANGE_DEADLINE, reactor)
    return await d


# --- Finger (smolserve) ---------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["finger://{h}:{p}/alice", "finger://alice@{h}:{p}"])
@pytest_twisted.ensureDeferred
async def test_finger_plan_both_spellings(smolserve: Smolserve, spelling: str) -> None:
    """Both URL spellings read the plan, decoded and whole."""
    url = FingerURL.from_text(spelling.format(h=LOOPBACK, p=smolserve.finger))
    response = await exchange(url, FingerClientProtocol(url, CAP))
    assert response.clean and not response.overflowed
    assert decode_answer(response.data).text == PLAN


@pytest_twisted.ensureDeferred
async def test_finger_list_users(smolserve: Smolserve) -> None:
    """An empty query (finger://host/) is answered too."""
    url = FingerURL.from_text(f"finger://{LOOPBACK}:{smolserve.finger}/")
    response = await exchange(url, FingerClientProtocol(url, CAP))
    assert response.clean and decode_answer(response.data).text


# --- Nex (smolserve) --------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_nex_directory_then_file(smolserve: Smolserve) -> None:
    """A listing's links are absolute nex:// URLs; following one reads the file."""
    root = NexURL.from_text(f"nex://{LOOPBACK}:{smolserve.nex}/posts/")
    assert root.kind is NexKind.DIRECTORY
    listing = await exchange(root, NexClientProtocol(root, CAP))
    document = parse_directory(decode_document(listing.data).text, root)
    first = f"nex://{LOOPBACK}:{smolserve.nex}/posts/first.txt"
    assert first in [link.url for link in document.links]
    url = NexURL.from_text(first)
    assert url.kind is NexKind.TEXT
    response = await exchange(url, NexClientProtocol(url, CAP))
    assert response.clean and decode_document(response.data).text == POST


# --- Spartan (smolserve and jayhawk) ------------------------------------------------------


async def spartan(port: int, path: str, data: bytes | None = None) -> SpartanResponse:
    url = SpartanURL.from_text(f"spartan://{LOOPBACK}:{port}{path}")
    return await exchange(url, SpartanClientProtocol.for_url(url, CAP, data))  # type: ignore[no-any-return]


@pytest.mark.parametrize("peer", ["smolserve", "jayhawk"])
@pytest_twisted.ensureDeferred
async def test_spartan_page_and_its_input_link(request: pytest.FixtureRequest, peer: str) -> None:
    """A page is status 2 gemtext; its =: line is a link that takes input, made absolute."""
    port = request.getfixturevalue(peer)
    port = port.spartan if isinstance(port, Smolserve) else port
    response = await spartan(port, "/index.gmi")
    assert response.header.status is SpartanStatus.SUCCESS
    assert response.header.meta.startswith("text/gemini")
    base = SpartanURL.from_text(f"spartan://{LOOPBACK}:{port}/index.gmi")
    document = parse_page(bytes(response.body).decode("utf-8"), base)
    links = {link.url: link.takes_input for link in document.links}
    assert links == {
        f"spartan://{LOOPBACK}:{port}/about.gmi": False,
        f"spartan://{LOOPBACK}:{port}/search": True,
    }


@pytest.mark.parametrize("peer", ["smolserve", "jayhawk"])
@pytest_twisted.ensureDeferred
async def test_spartan_missing_path_is_a_client_error(
    request: pytest.FixtureRequest, peer: str
) -> None:
    """A missing path is status 4 with the server's message."""
    port = request.getfixturevalue(peer)
    port = port.spartan if isinstance(port, Smolserve) else port
    response = await spartan(port, "/no/such/page.gmi")
    assert response.header.status is SpartanStatus.CLIENT_ERROR
    assert response.header.meta and response.body == b""


@pytest_twisted.ensureDeferred
async def test_spartan_input_goes_as_the_data_block(smolserve: Smolserve) -> None:
    """Input sent as the data block is read by the server (it answers the page)."""
    response = await spartan(smolserve.spartan, "/index.gmi", b"some words")
    assert response.header.status is SpartanStatus.SUCCESS


@pytest_twisted.ensureDeferred
async def test_spartan_redirect_is_reported(jayhawk: int) -> None:
    """jayhawk's redirect is status 3 with a path on the same host, resolved, not followed."""
    response = await spartan(jayhawk, "/old")
    assert response.header.status is SpartanStatus.REDIRECT
    base = SpartanURL.from_text(f"spartan://{LOOPBACK}:{jayhawk}/old")
    assert base.resolve(response.header.meta) == f"spartan://{LOOPBACK}:{jayhawk}/index.gmi"


# --- Titan (gophergem.testing.titan, its own process) --------------------------------


def _creator(port: int) -> GeminiTLSCreator:
    return GeminiTLSCreator(
        "localhost", lambda cert: decide("localhost", port, None, cert, time.time())
    )


@pytest_twisted.ensureDeferred
async def test_titan_upload_over_real_tls(titan_server: TitanPeer) -> None:
    """An upload is stored byte for byte and answered with a redirect to the page."""
    content = "# Uploaded\nCafé.\n".encode()
    url = TitanURL.for_upload(
        f"titan://{LOOPBACK}:{titan_server.port}/notes/new.gmi;size=1;token=theirs",
        len(content),
        "text/gemini",
        "s3cret",
    )
    response = await exchange(
        url, TitanClientProtocol(url, content, CAP, lambda: None), _creator(titan_server.port)
    )
    assert response.header.status == 30
    assert response.header.meta == f"gemini://{LOOPBACK}:{titan_server.port}/notes/new.gmi"
    assert (titan_server.root / "notes" / "new.gmi").read_bytes() == content


@pytest_twisted.ensureDeferred
async def test_titan_wrong_token_is_refused(titan_server: TitanPeer) -> None:
    """The server's refusal is a Gemini failure status; nothing is stored."""
    url = TitanURL.for_upload(f"titan://{LOOPBACK}:{titan_server.port}/x.gmi", 1, token="bad")
    response = await exchange(
        url, TitanClientProtocol(url, b"x", CAP, lambda: None), _creator(titan_server.port)
    )
    assert response.header.status == 59
    assert not (titan_server.root / "x.gmi").exists()
