"""
The Finger client against a finger daemon nobody here wrote: Debian's BSD
C{in.fingerd} (packages C{fingerd} and C{finger}), run per connection by
socat on 127.0.0.1 as inetd would run it (L{running_fingerd}).

The daemon answers from the system's own accounts, so the tests ask only
about what every system has: the list of logged-in users (often nobody),
the C{nobody} account, and a name no system has.  Through
L{Fetcher.smolweb<gophergem.fetcher.Fetcher.smolweb>} on the real reactor
(the whole pipeline: URL, policy, pinch point, client, decoding), and once
through the MCP SDK's own client over stdio calling C{smolweb_fetch}.

A missing peer skips, or fails under C{GOPHERGEM_REQUIRE_PEERS=1}
(C{.ci/peers.sh} installs it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from gophergem.config import Config
from gophergem.fetcher import Fetcher
from gophergem.results import FetchFailure, TextResult
from tests.helpers.hostile_process import gophergem_env
from tests.helpers.smolweb_peers import FingerDaemon, running_fingerd

from .conftest import LOOPBACK, mcp_session, run_async, tool_payload

pytestmark = pytest.mark.integration

#: No system has this account, nor anyone by this name.
UNKNOWN = "nosuchuser-gophergem"


@pytest.fixture(scope="module")
def fingerd() -> Iterator[FingerDaemon]:
    with running_fingerd() as daemon:
        yield daemon


def _fetcher() -> Fetcher:
    """A fetcher on the real reactor allowed to dial loopback, unpaced, with no cache."""
    from twisted.internet import reactor

    config = Config.from_mapping(
        {
            "SMOLWEB_ALLOW_LOCAL_HOSTS": "true",
            "SMOLWEB_REQUESTS_PER_MINUTE": "0",
            "SMOLWEB_CACHE_ENABLED": "false",
            "SMOLWEB_TIMEOUT_SECONDS": "15",
        }
    )
    return Fetcher.from_config(config, reactor)


async def _text(url: str) -> str:
    result = await _fetcher().smolweb(url)
    assert isinstance(result, TextResult), result
    assert result.incomplete_reason is None, result
    return result.text


def _is_user_list(text: str) -> bool:
    """BSD finger's list: a header line over the users, or its one line for none."""
    return text == "No one logged on.\n" or text.startswith("Login")


@pytest_twisted.ensureDeferred
async def test_list_users(fingerd: FingerDaemon) -> None:
    """An empty query is the daemon's list of logged-in users."""
    text = await _text(f"finger://{LOOPBACK}:{fingerd.port}/")
    assert _is_user_list(text), text


@pytest_twisted.ensureDeferred
async def test_one_user_both_spellings(fingerd: FingerDaemon) -> None:
    """Both spellings ask the daemon (two connections) and read the same answer, CRLF decoded."""
    before = fingerd.accepted()
    path_form = await _text(f"finger://{LOOPBACK}:{fingerd.port}/nobody")
    user_form = await _text(f"finger://nobody@{LOOPBACK}:{fingerd.port}")
    assert fingerd.accepted() - before == 2
    assert path_form == user_form
    assert path_form.startswith("Login: nobody"), path_form
    assert "Directory: " in path_form and "\r" not in path_form


@pytest_twisted.ensureDeferred
async def test_unknown_user(fingerd: FingerDaemon) -> None:
    """A name no system has: the finger program's one-line message, as text."""
    text = await _text(f"finger://{LOOPBACK}:{fingerd.port}/{UNKNOWN}")
    assert text == f"finger: {UNKNOWN}: no such user.\n"


@pytest_twisted.ensureDeferred
async def test_follow_a_plan(fingerd: FingerDaemon) -> None:
    """
    Followed as a plan, the daemon's account description is left out: the
    C{nobody} account says C{No Plan.}, an empty plan, and reading it again
    finds nothing new.
    """
    from gophergem.feeds.follow import Follower
    from gophergem.feeds.parse import NO_PLAN
    from gophergem.state.memory import MemoryFeedStore

    follower = Follower(_fetcher(), MemoryFeedStore())
    subscription, _ = await follower.subscribe(f"finger://nobody@{LOOPBACK}:{fingerd.port}")
    assert (subscription.feed_type, subscription.title) == ("plan", f"nobody@{LOOPBACK}")
    updates = await follower.updates()
    assert (updates.entries, updates.errors, updates.checked) == ((), (), 1)
    _, feed = await Deferred.fromCoroutine(follower.read(subscription.url))
    assert [entry.title for entry in feed.entries] == [NO_PLAN]


@pytest.mark.parametrize(
    "spelling",
    ["finger://{h}:{p}/nobody@{h}", "finger://nobody%40{h}@{h}:{p}"],
)
@pytest_twisted.ensureDeferred
async def test_forwarding_refused_before_dialling(fingerd: FingerDaemon, spelling: str) -> None:
    """A forwarding query is INVALID_REQUEST and the daemon never sees a connection."""
    before = fingerd.accepted()
    result = await _fetcher().smolweb(spelling.format(h=LOOPBACK, p=fingerd.port))
    assert isinstance(result, FetchFailure), result
    assert result.error.code == "INVALID_REQUEST"
    assert fingerd.accepted() == before


def test_smolweb_fetch_over_stdio(fingerd: FingerDaemon, tmp_path: Path) -> None:
    """
    The SDK's client calls smolweb_fetch (no cache, so each URL is asked):
    the list, a user both ways and an unknown user, one connection each; a
    forwarding query is INVALID_REQUEST with no connection.
    """
    finger = f"finger://{LOOPBACK}:{fingerd.port}"
    env = gophergem_env(
        tmp_path,
        SMOLWEB_ALLOW_LOCAL_HOSTS="true",
        SMOLWEB_REQUESTS_PER_MINUTE="0",
        SMOLWEB_CACHE_ENABLED="false",
    )
    urls = [
        f"{finger}/",
        f"{finger}/nobody",
        f"finger://nobody@{LOOPBACK}:{fingerd.port}",
        f"{finger}/{UNKNOWN}",
        f"{finger}/nobody@{LOOPBACK}",
    ]

    async def body() -> list[dict[str, Any]]:
        async with mcp_session(env) as session:
            return [
                tool_payload(await session.call_tool("smolweb_fetch", {"url": url})) for url in urls
            ]

    before = fingerd.accepted()
    listing, path_form, user_form, unknown, forwarding = run_async(body)
    assert fingerd.accepted() - before == 4
    for payload in (listing, path_form, user_form, unknown):
        assert payload["kind"] == "text", payload
    assert _is_user_list(listing["text"]), listing
    assert path_form["text"].startswith("Login: nobody"), path_form
    assert user_form["text"] == path_form["text"]
    for plan in (path_form, user_form):
        assert plan["request_info"]["url"] == f"{finger}/nobody", plan
    assert unknown["text"] == f"finger: {UNKNOWN}: no such user.\n"
    assert forwarding["kind"] == "error", forwarding
    assert forwarding["error"]["code"] == "INVALID_REQUEST"
