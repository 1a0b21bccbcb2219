"""
Tests for following the small web with L{gophergem.feeds.follow.Follower}:
Spartan and Nex pages read like Gemini's (gemsub or new links), a Finger
plan as one entry per text, on an in-memory network with fake servers.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred

from gophergem.errors import GophergemError
from gophergem.feeds.follow import Follower, Updates
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import FakeSmolServer, MemoryNetwork

HOST_IP = "192.0.2.30"  # memory reactor only: never dialled

GEMLOG = (
    b"# Spartan log\r\n"
    b"=> /2026-11-30-post.gmi 2026-11-30 - A post\r\n"
    b"=> 2026-10-02-older.gmi 2026-10-02 - An older post\r\n"
    b"=: /search Search this log\r\n"
)

LISTING = b"=> posts/first.txt first\r\n=> gemini://g.example/ elsewhere\r\n"

BSD_PLAN = (
    b"Login: alice          \t\t\tName: Alice\r\n"
    b"Directory: /home/alice                 Shell: /bin/sh\r\n"
    b"On since Fri Dec  4 09:00 (UTC) on pts/0, idle 0:03\r\n"
    b"No mail.\r\n"
    b"Plan:\r\n"
    b"Writing a Finger client.\r\n"
    b"More later.\r\n"
)


@attrs.define
class SmolWorld:
    """A host serving Finger, Nex and Spartan, and a follower reading it."""

    net: MemoryNetwork
    finger: FakeSmolServer
    nex: FakeSmolServer
    spartan: FakeSmolServer
    store: MemoryFeedStore
    follower: Follower

    def run(self, work: Deferred[Any]) -> Any:
        return self.net.run(work)

    def fails(self, work: Deferred[Any]) -> GophergemError:
        with pytest.raises(GophergemError) as caught:
            self.run(work)
        return caught.value

    def later(self, seconds: float = 3600) -> None:
        self.net.reactor.advance(seconds)

    def updates(self, **options: Any) -> Updates:
        result: Updates = self.run(self.follower.updates(**options))
        return result


@pytest.fixture
def world() -> SmolWorld:
    net = MemoryNetwork()
    net.resolver.add("s.example", HOST_IP)
    finger = net.listen(HOST_IP, 79, FakeSmolServer({b"alice": b"Reading.\r\n", b"bob": BSD_PLAN}))
    nex = net.listen(HOST_IP, 1900, FakeSmolServer({b"/log/": LISTING}))
    spartan = net.listen(
        HOST_IP,
        300,
        FakeSmolServer(
            {
                b"s.example /log/ 0": b"2 text/gemini\r\n" + GEMLOG,
                b"s.example /old 0": b"3 /log/\r\n",
            },
            spartan=True,
            missing=b"4 File not found\r\n",
        ),
    )
    store = MemoryFeedStore()  # answers at once
    follower = Follower(net.fetcher(), store, now=net.reactor.seconds)
    return SmolWorld(net, finger, nex, spartan, store, follower)


# --- Spartan and Nex pages ------------------------------------------------------------


def test_spartan_gemlog(world: SmolWorld) -> None:
    """A Spartan gemlog is a gemsub, its relative links made absolute spartan:// URLs."""
    subscription, new = world.run(world.follower.subscribe("spartan://S.EXAMPLE:300/log/"))
    assert new is True
    assert (subscription.url, subscription.feed_type, subscription.title) == (
        "spartan://s.example/log/",
        "gemsub",
        "Spartan log",
    )
    assert subscription.entries_known == 2
    world.later()
    world.spartan.responses[b"s.example /log/ 0"] = (
        b"2 text/gemini\r\n" + GEMLOG + b"=> /2026-12-04-new.gmi 2026-12-04 - Fresh\r\n"
    )
    found = world.updates()
    assert [(e.url, e.title, e.published) for e in found.entries] == [
        ("spartan://s.example/2026-12-04-new.gmi", "Fresh", "2026-12-04T12:00:00Z")
    ]
    assert found.errors == ()


def test_spartan_redirect_followed_when_reading(world: SmolWorld) -> None:
    """A Spartan redirect is followed when a page is read (as a Gemini one is)."""
    url, feed = world.run(Deferred.fromCoroutine(world.follower.read("spartan://s.example/old")))
    assert url == "spartan://s.example/log/"
    assert feed.feed_type == "gemsub"


def test_spartan_error(world: SmolWorld) -> None:
    """A Spartan 4 is the fetch's own error, and nothing is stored."""
    error = world.fails(world.follower.subscribe("spartan://s.example/missing"))
    assert error.code == "PERMANENT_ERROR"
    assert world.run(world.follower.subscriptions()) == []


def test_nex_directory_new_links(world: SmolWorld) -> None:
    """A Nex directory is a page whose new links are new entries, absolute nex:// URLs."""
    subscription, _ = world.run(world.follower.subscribe("nex://s.example/log/"))
    assert (subscription.feed_type, subscription.entries_known) == ("page", 2)
    world.later()
    world.nex.responses[b"/log/"] = LISTING + b"=> posts/second.txt second\r\n"
    found = world.updates()
    assert [(e.url, e.title) for e in found.entries] == [
        ("nex://s.example/log/posts/second.txt", "second")
    ]


# --- Finger plans ---------------------------------------------------------------------


def plan_entries(world: SmolWorld, url: str) -> list[tuple[str, str, bool]]:
    everything = world.store.unread(url, "1970-01-01T00:00:00Z")
    return sorted((entry.url, entry.title, entry.read) for _, entry in everything)


def test_finger_plan_subscription(world: SmolWorld) -> None:
    """Both spellings are one plan subscription, titled user@host, its text the baseline."""
    subscription, new = world.run(world.follower.subscribe("finger://alice@s.example"))
    assert new is True
    assert (subscription.url, subscription.feed_type, subscription.title) == (
        "finger://s.example/alice",
        "plan",
        "alice@s.example",
    )
    assert (subscription.entries_known, subscription.unread) == (1, 0)
    _, again = world.run(world.follower.subscribe("finger://s.example/alice"))
    assert again is False


def test_finger_plan_changes(world: SmolWorld) -> None:
    """Each changed plan is one new entry dated when first seen; the same text adds nothing."""
    url = "finger://s.example/alice"
    world.run(world.follower.subscribe(url))
    world.later()
    assert world.updates().entries == ()

    world.finger.responses[b"alice"] = b"\r\nOff to the mountains.\r\nBack in January.\r\n"
    world.later()
    first = world.updates()
    assert [(e.feed_url, e.title, e.published) for e in first.entries] == [
        (url, "Off to the mountains.", None)
    ]
    (entry,) = first.entries
    assert entry.url.startswith(url + "#") and entry.first_seen.endswith("Z")

    world.later()
    assert world.updates().entries == ()  # unchanged: nothing new

    world.finger.responses[b"alice"] = b"Reading.\r\n"  # back to the first text
    world.later()
    back = world.updates()
    assert [e.title for e in back.entries] == ["Reading."]
    assert back.entries[0].url.endswith(".2")
    assert len(plan_entries(world, url)) == 3


def test_finger_account_header_ignored(world: SmolWorld) -> None:
    """Only what follows "Plan:" counts: a changed idle time is not a new plan."""
    url = "finger://s.example/bob"
    world.run(world.follower.subscribe(url))
    world.finger.responses[b"bob"] = BSD_PLAN.replace(b"idle 0:03", b"idle 1:45")
    world.later()
    assert world.updates().entries == ()
    world.finger.responses[b"bob"] = BSD_PLAN.replace(b"More later.", b"Done.")
    world.later()
    assert [e.title for e in world.updates().entries] == ["Writing a Finger client."]


def test_finger_forwarding_refused(world: SmolWorld) -> None:
    """A forwarding query is refused before anything is fetched or stored."""
    error = world.fails(world.follower.subscribe("finger://s.example/alice@elsewhere.example"))
    assert error.code == "INVALID_REQUEST"
    assert world.finger.requests == []


@pytest.mark.parametrize("url", ["titan://s.example/x", "https://s.example/"])
def test_unfollowable_schemes(world: SmolWorld, url: str) -> None:
    """Titan (an upload) and the web cannot be followed."""
    error = world.fails(world.follower.subscribe(url))
    assert error.code == "INVALID_REQUEST"
    assert "finger://" in error.message
