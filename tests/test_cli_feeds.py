"""
Tests for C{gophergem feeds …} (L{gophergem.cli.feeds_command}): the
commands run in this process against a gopher hole on an in-memory network
(fake clock), and through L{gophergem.cli.main} for what needs no network:
one line per problem, the exit statuses, never a traceback.  The same
commands run as processes against a loopback server in
C{tests/integration/test_cli_feeds_process.py}.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet.defer import Deferred

from gophergem import cli
from gophergem.cli import feeds_command, main
from gophergem.feeds.follow import Follower
from gophergem.feeds.opml import Outline, parse_opml, write_opml
from gophergem.state.files import FileFeedStore
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import FakeGopherServer, MemoryNetwork

HOLE_IP = "192.0.2.10"  # memory reactor only: never dialled
PHLOG = "gopher://g.example/1/phlog"
GONE = "gopher://g.example:7000/1/gone"  # nothing listens there
CACHE_TTL = 300


def menu(*posts: tuple[str, str]) -> bytes:
    lines = [b"iMy phlog\tfake\t(NULL)\t0\r\n"]
    for date, title in posts:
        selector = f"/phlog/{date.replace('-', '')}.txt"
        lines.append(f"0{date} - {title}\t{selector}\tg.example\t70\r\n".encode())
    return b"".join(lines) + b".\r\n"


@pytest.fixture(autouse=True)
def no_global_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logging is process-wide: main() must not start it here."""
    import gophergem._log

    monkeypatch.setattr(gophergem._log, "start_logging", lambda *a, **k: None)


@attrs.define
class Hole:
    """A gopher hole (g.example) on a memory network, and a follower reading it."""

    net: MemoryNetwork
    server: FakeGopherServer
    follower: Follower

    def feeds(self, *argv: str) -> int:
        args = cli._parser().parse_args(["feeds", *argv])
        status: int = self.net.run(Deferred.fromCoroutine(feeds_command(self.follower, args)))
        return status

    def run(self, d: Deferred[Any]) -> Any:
        return self.net.run(d)

    def later(self) -> None:
        self.net.reactor.advance(CACHE_TTL + 1)


@pytest.fixture
def hole() -> Hole:
    net = MemoryNetwork()
    net.resolver.add("g.example", HOLE_IP)
    server = net.listen(HOLE_IP, 70, FakeGopherServer({b"/phlog": menu(("2026-10-02", "Warm"))}))
    follower = Follower(net.fetcher(), MemoryFeedStore(), now=net.reactor.seconds)
    return Hole(net, server, follower)


def lines(text: str) -> list[str]:
    return text.strip().splitlines()


def test_subscribe_then_list(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """subscribe reads the page once; list shows a table of URL, type, unread, check, error."""
    assert hole.feeds("subscribe", PHLOG) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"Subscribed to {PHLOG}: My phlog (phlog), 1 entry known,")
    assert hole.feeds("list") == 0
    header, row = lines(capsys.readouterr().out)
    assert header.split() == ["URL", "TYPE", "UNREAD", "LAST", "CHECKED", "LAST", "ERROR"]
    assert row.split()[:3] == [PHLOG, "phlog", "0"]
    assert row.split()[-1] == "-"


def test_subscribe_again_keeps_what_was_seen(
    hole: Hole, capsys: pytest.CaptureFixture[str]
) -> None:
    """Subscribing twice is fine and says so."""
    hole.feeds("subscribe", PHLOG)
    assert hole.feeds("subscribe", PHLOG, "--title", "Mine", "--json") == 0
    data = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert data == {
        "kind": "subscription",
        "url": PHLOG,
        "title": "Mine",
        "feed_type": "phlog",
        "entries_known": 1,
    }


def test_updates_newest_first_then_read(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """updates prints date, feed, title and URL, newest first; what it printed is read after."""
    hole.feeds("subscribe", PHLOG)
    hole.server.responses[b"/phlog"] = menu(
        ("2026-11-30", "Cold"), ("2026-11-02", "Cool"), ("2026-10-02", "Warm")
    )
    hole.later()
    capsys.readouterr()
    assert hole.feeds("updates") == 0
    assert lines(capsys.readouterr().out) == [
        "2026-11-30  My phlog  Cold  gopher://g.example/0/phlog/20261130.txt",
        "2026-11-02  My phlog  Cool  gopher://g.example/0/phlog/20261102.txt",
    ]
    hole.later()
    assert hole.feeds("updates") == 0
    assert lines(capsys.readouterr().out) == ["Nothing new (1 checked)."]


def test_updates_no_mark_read_limit_json(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """--no-mark-read leaves entries unread; --limit cuts and says more; --json is the payload."""
    hole.feeds("subscribe", PHLOG)
    hole.server.responses[b"/phlog"] = menu(("2026-11-30", "Cold"), ("2026-11-02", "Cool"))
    hole.later()
    capsys.readouterr()
    assert hole.feeds("updates", "--no-mark-read", "--limit", "1") == 0
    out = lines(capsys.readouterr().out)
    assert out[0].startswith("2026-11-30  My phlog  Cold")
    assert out[1].startswith("-- more:")
    assert hole.feeds("updates", "--json", "--url", PHLOG) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "feed_updates"
    assert [e["title"] for e in data["entries"]] == ["Cold", "Cool"]
    assert (data["more"], data["checked"], data["errors"]) == (False, 1, [])


def test_updates_every_feed_failed(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """When every feed fails, each is one line on stderr and the status is 1."""
    hole.feeds("subscribe", PHLOG)
    hole.net.servers.clear()  # connections are refused from now on
    hole.later()
    capsys.readouterr()
    assert hole.feeds("updates") == 1
    captured = capsys.readouterr()
    assert lines(captured.out) == ["Nothing new (1 checked)."]
    (problem,) = lines(captured.err)
    assert problem.startswith(f"gophergem: {PHLOG}: ")


def test_updates_some_feeds_failed(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """When only some feeds fail, they are listed on stderr and the status is 0."""
    hole.net.listen(HOLE_IP, 7070, FakeGopherServer({b"/other": menu(("2026-10-02", "Warm"))}))
    hole.feeds("subscribe", PHLOG)
    hole.feeds("subscribe", "gopher://g.example:7070/1/other")
    del hole.net.servers[(HOLE_IP, 7070)]
    hole.later()
    capsys.readouterr()
    assert hole.feeds("updates") == 0
    assert len(lines(capsys.readouterr().err)) == 1


def test_unsubscribe(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """unsubscribe forgets a subscription; a URL not followed is NOT_SUBSCRIBED, status 1."""
    hole.feeds("subscribe", PHLOG)
    assert hole.feeds("unsubscribe", PHLOG) == 0
    assert lines(capsys.readouterr().out)[-1] == f"Unsubscribed from {PHLOG}."
    assert hole.feeds("unsubscribe", PHLOG) == 1
    (line,) = lines(capsys.readouterr().err)
    assert line.startswith("gophergem: NOT_SUBSCRIBED: ")


def test_subscribe_failure_is_one_line(hole: Hole, capsys: pytest.CaptureFixture[str]) -> None:
    """A page that cannot be read is one line and status 1; a bad URL is status 2."""
    assert hole.feeds("subscribe", GONE) == 1
    assert hole.feeds("subscribe", "https://example.org/feed") == 2
    problems = lines(capsys.readouterr().err)
    assert len(problems) == 2
    assert problems[1].startswith("gophergem: INVALID_REQUEST: ")
    assert hole.run(hole.follower.subscriptions()) == []


def opml(*urls: str) -> bytes:
    return write_opml([Outline(url, f"Feed {n}") for n, url in enumerate(urls)])


def test_import(hole: Hole, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """import subscribes each gemini/gopher feed once, reports each, and skips other schemes."""
    source = tmp_path / "feeds.opml"
    source.write_bytes(opml(PHLOG, "https://example.org/atom.xml", GONE))
    assert hole.feeds("import", str(source)) == 1
    out = lines(capsys.readouterr().out)
    assert out[:2] == [
        f"ok       {PHLOG}  Feed 0 (phlog)",
        "skipped  https://example.org/atom.xml  not a gemini, gopher, spartan, nex or finger URL",
    ]
    assert out[2].startswith(f"error    {GONE}  CONNECTION_FAILED: ")
    assert out[3:] == ["1 subscribed, 1 failed, 1 skipped."]
    assert hole.server.requests.count(b"/phlog") == 1
    assert [s.url for s in hole.run(hole.follower.subscriptions())] == [PHLOG]


def test_export(hole: Hole, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """export writes OPML 2.0 that reads back as the subscriptions, to stdout or a file."""
    hole.feeds("subscribe", PHLOG, "--title", "Mine")
    capsys.readouterr()
    assert hole.feeds("export") == 0
    assert parse_opml(capsys.readouterr().out.encode()) == [Outline(PHLOG, "Mine")]
    target = tmp_path / "out.opml"
    assert hole.feeds("export", str(target)) == 0
    assert parse_opml(target.read_bytes()) == [Outline(PHLOG, "Mine")]
    assert capsys.readouterr().out == f"Wrote 1 subscription to {target}.\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_import_any_file(data: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever the file holds, import ends with a status and one line per problem, never raises."""
    net = MemoryNetwork()
    follower = Follower(net.fetcher(), MemoryFeedStore(), now=net.reactor.seconds)
    source = tmp_path / "any.opml"
    source.write_bytes(data)
    args = cli._parser().parse_args(["feeds", "import", str(source)])
    capsys.readouterr()
    status = net.run(Deferred.fromCoroutine(feeds_command(follower, args)))
    assert status in (0, 1, 2)
    err = capsys.readouterr().err
    if status == 2:
        assert len(lines(err)) == 1 and "is not usable OPML" in err


# --- through main(): what runs without the network ------------------------------------------


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
        "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "identities"),
        "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
    }


def test_main_list_and_export_empty(
    environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """With no subscriptions, list says so and export writes an empty list."""
    assert main(["feeds", "list"], environ) == 0
    assert capsys.readouterr().out == "No subscriptions.\n"
    assert main(["feeds", "export"], environ) == 0
    assert parse_opml(capsys.readouterr().out.encode()) == []


def test_main_list_json(environ: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """list --json is feed_list's payload, read from the store the setting names."""
    store = FileFeedStore(environ["GOPHERGEM_FEEDS_STORAGE_PATH"])
    store.subscribe(PHLOG, "My phlog", "phlog", [], 1_800_000_000)
    assert main(["feeds", "list", "--json"], environ) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "subscriptions"
    assert [e["url"] for e in data["entries"]] == [PHLOG]


def test_main_unsubscribe_not_subscribed(
    environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """unsubscribe of a URL not followed: one line, status 1."""
    assert main(["feeds", "unsubscribe", PHLOG], environ) == 1
    assert lines(capsys.readouterr().err) == [
        "gophergem: NOT_SUBSCRIBED: That URL is not one of the subscriptions. Run gophergem "
        "feeds list to see the subscriptions."
    ]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read"),
        (b"<html/>", "not OPML: root element is <html>"),
        (b"<opml", "not XML"),
        (b'<!DOCTYPE x [<!ENTITY a "b">]><opml/>', "refused"),
    ],
)
def test_main_import_bad_file(
    content: bytes | None,
    said: str,
    environ: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A missing, unreadable or not-OPML file is one line and status 2; nothing is subscribed."""
    source = tmp_path / "list.opml"
    if content is not None:
        source.write_bytes(content)
    assert main(["feeds", "import", str(source)], environ) == 2
    (line,) = lines(capsys.readouterr().err)
    assert line.startswith("gophergem: feeds import: ") and said in line
    assert main(["feeds", "list"], environ) == 0


def test_main_export_unwritable(
    environ: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file export cannot write is one line and status 2."""
    assert main(["feeds", "export", str(tmp_path / "missing" / "out.opml")], environ) == 2
    (line,) = lines(capsys.readouterr().err)
    assert line.startswith("gophergem: feeds export: cannot write")


def test_main_store_cannot_be_locked(
    environ: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    A store that cannot be locked is STATE_UNAVAILABLE for a change: one
    line naming the lock, status 1.  Reads take no lock and still work.
    """
    (tmp_path / "feeds.json.lock").mkdir()  # the lock file cannot be opened
    assert main(["feeds", "unsubscribe", PHLOG], environ) == 1
    (line,) = lines(capsys.readouterr().err)
    assert line.startswith(f"gophergem: {tmp_path / 'feeds.json.lock'}: STATE_UNAVAILABLE: ")
    for command in (["list"], ["export"]):
        assert main(["feeds", *command], environ) == 0
    assert capsys.readouterr().err == ""


def test_main_corrupt_store(
    environ: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """
    A damaged store is one STATE_UNAVAILABLE line naming the file; it is left
    as it is until the person moves it away, and then the store starts empty.
    """
    path = Path(environ["GOPHERGEM_FEEDS_STORAGE_PATH"])
    path.write_text("{not json")
    for _ in range(2):
        assert main(["feeds", "list"], environ) == 1
        (line,) = lines(capsys.readouterr().err)
        assert line.startswith(f"gophergem: {path}: STATE_UNAVAILABLE: ")
        assert "not JSON" in line
    assert path.read_text() == "{not json"
    path.rename(tmp_path / "kept.json")
    assert main(["feeds", "list"], environ) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["feeds"],
        ["feeds", "nope"],
        ["feeds", "updates", "--limit", "x"],
        ["feeds", "subscribe"],
    ],
)
def test_main_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Bad feeds arguments are one line and status 2."""
    assert main(argv, {}) == 2
    assert len(lines(capsys.readouterr().err)) == 1


def test_feeds_help_lists_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    """Each feeds action accepts every setting, like every command."""
    assert main(["feeds", "updates", "--help"], {}) == 0
    out = capsys.readouterr().out
    assert "--gophergem-feeds-storage-path" in out and "--no-mark-read" in out
