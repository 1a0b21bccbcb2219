"""
Tests for L{gophergem.state.postgres}: the schema and its upgrade, the
bounds on every call (an unreachable or slow server is STATE_UNAVAILABLE
in about the timeout), the first-use pin race between two connections,
private keys sealed at rest, and principals kept apart.

The stores' behaviour itself is the contract tests' (tests/test_state_pins.py,
tests/test_state_identities.py, tests/test_state_feeds.py), which run
against these stores too.  Everything here runs on a throwaway PostgreSQL
on loopback (tests/servers/postgres.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from gophergem.config import ConfigError
from gophergem.errors import CertificateStoreUnavailable, StateUnavailable
from gophergem.trust import Pin
from tests.helpers.state import SECRET, fresh_database
from tests.servers.postgres import PostgresHarness, wait

NOW = 1_700_000_000.0


def make_pin(fingerprint: str = "sha256:" + "ab" * 32, host: str = "gem.example") -> Pin:
    return Pin(
        host=host,
        port=1965,
        fingerprint=fingerprint,
        spki="sha256:" + "cd" * 32,
        first_seen=NOW,
        last_seen=NOW,
        not_before=NOW - 10,
        expires=NOW + 10,
    )


@pytest.fixture
def pg(postgres_harness: PostgresHarness) -> Iterator[PostgresHarness]:
    postgres_harness.reset()
    yield postgres_harness


def run(harness: PostgresHarness, coroutine: Any) -> Any:
    return harness.loop.run_until_complete(coroutine)


async def blocked_on_a_lock(url: str, deadline: float = 10.0) -> None:
    """Return once some backend of the server waits for a lock (polled, with a deadline)."""
    import psycopg

    give_up = time.monotonic() + deadline
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as watcher:
        while True:
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] > 0:
                return
            assert time.monotonic() < give_up, "put_new never waited for the winner"
            await asyncio.sleep(0.01)


def connect(harness: PostgresHarness, url: str, timeout: float = 10.0, key: Any = None) -> Any:
    from gophergem.state.postgres import PostgresState

    return wait(
        PostgresState.connect(
            url, key=harness.key if key is None else key, timeout=timeout, reactor=harness.reactor
        )
    )


class TestSchema:
    def test_upgrade_applies_once(self, pg: PostgresHarness) -> None:
        """A new database is behind; upgrade applies every migration; again, nothing."""
        from gophergem.state.postgres import MIGRATIONS

        state = connect(pg, fresh_database(pg))
        try:
            assert wait(state.schema_current()) is False
            assert wait(state.pending()) == [name for name, _ in MIGRATIONS]
            assert wait(state.upgrade()) == [name for name, _ in MIGRATIONS]
            assert wait(state.upgrade()) == []
            assert wait(state.schema_current()) is True
        finally:
            wait(state.close())

    def test_concurrent_upgrades(self, pg: PostgresHarness) -> None:
        """Two upgrades at once (two replicas) apply each migration exactly once."""
        url = fresh_database(pg)
        one, two = connect(pg, url), connect(pg, url)
        try:
            results = run(
                pg,
                asyncio.gather(one.upgrade().asFuture(pg.loop), two.upgrade().asFuture(pg.loop)),
            )
            assert sorted(results, key=len) == [[], ["0001_initial"]]
        finally:
            wait(one.close())
            wait(two.close())

    def test_no_schema_is_state_unavailable(self, pg: PostgresHarness) -> None:
        """A store on a database never upgraded says to run `gophergem db upgrade`."""
        state = connect(pg, fresh_database(pg))
        try:
            with pytest.raises(StateUnavailable) as caught:
                wait(state.pins().get("gem.example", 1965))
            assert "gophergem db upgrade" in (caught.value.next_step or "")
        finally:
            wait(state.close())


class TestBounds:
    def test_unreachable_server(self, pg: PostgresHarness) -> None:
        """
        A server nothing listens for is STATE_UNAVAILABLE within about the
        timeout, and the password of the URL appears nowhere.
        """
        from gophergem.state.postgres import PostgresState

        started = time.monotonic()
        with pytest.raises(StateUnavailable) as caught:
            wait(
                PostgresState.connect(
                    f"postgresql://gg:{SECRET}@127.0.0.1:1/postgres",
                    key=None,
                    timeout=0.5,
                    reactor=pg.reactor,
                )
            )
        assert time.monotonic() - started < 3.0
        assert caught.value.code == "STATE_UNAVAILABLE"
        assert caught.value.temporary is True
        assert SECRET not in str(caught.value.fields())

    def test_slow_call(self, pg: PostgresHarness) -> None:
        """A call the server does not finish in time is STATE_UNAVAILABLE; the pool works on."""
        state = connect(pg, pg.url, timeout=0.3)

        async def slow(connection: Any) -> None:
            await connection.execute("SELECT pg_sleep(5)")

        try:
            started = time.monotonic()
            with pytest.raises(StateUnavailable) as caught:
                wait(state._runner.call(slow))
            assert time.monotonic() - started < 2.5
            assert "0.3 seconds" in caught.value.message
            assert wait(state.pins().all()) == []
        finally:
            wait(state.close())

    def test_health(self, pg: PostgresHarness) -> None:
        """health says ok while the server answers, and not ok (without failing) once closed."""
        state = connect(pg, pg.url)
        assert wait(state.health())["ok"] is True
        wait(state.close())
        health = wait(state.health())
        assert health["ok"] is False and health["detail"]


class TestFirstUse:
    def test_loser_sees_the_winner(self, pg: PostgresHarness) -> None:
        """
        While another connection's first-use insert is uncommitted, put_new
        waits; once it commits, put_new returns the winner's pin and stores nothing.
        """
        import psycopg

        winner = make_pin("sha256:" + "11" * 32)
        loser = make_pin("sha256:" + "22" * 32)

        async def race() -> Any:
            async with await psycopg.AsyncConnection.connect(pg.url) as other:
                await other.execute(
                    "INSERT INTO gophergem_pins VALUES ('', %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        winner.host,
                        winner.port,
                        winner.fingerprint,
                        winner.spki,
                        winner.first_seen,
                        winner.last_seen,
                        winner.not_before,
                        winner.expires,
                    ),
                )
                pending = pg.state.pins().put_new(loser).asFuture(pg.loop)
                await blocked_on_a_lock(pg.url)
                assert not pending.done()
                await other.commit()
                return await pending

        assert run(pg, race()) == winner
        assert wait(pg.state.pins().all()) == [winner]

    def test_two_pools_race(self, pg: PostgresHarness) -> None:
        """Two replicas racing first use: exactly one wins; both then agree on its pin."""
        other = connect(pg, pg.url)
        try:
            for n in range(5):
                host = f"race{n}.example"
                a, b = make_pin("sha256:" + "33" * 32, host), make_pin("sha256:" + "44" * 32, host)
                results = run(
                    pg,
                    asyncio.gather(
                        pg.state.pins().put_new(a).asFuture(pg.loop),
                        other.pins().put_new(b).asFuture(pg.loop),
                    ),
                )
                assert results.count(None) == 1
                stored = wait(pg.state.pins().get(host, 1965))
                assert stored in (a, b)
                assert [r for r in results if r is not None] == [stored]
        finally:
            wait(other.close())


class TestIdentitiesAtRest:
    def test_private_key_sealed(self, pg: PostgresHarness) -> None:
        """The row holds the certificate in clear and the key only sealed."""
        import psycopg

        store = pg.state.identities("alice")
        identity = wait(store.create("gem.example", 1965, "/", NOW))
        cert_pem, key_pem = wait(store.credentials(identity))
        with psycopg.connect(pg.url) as raw:
            row = raw.execute(
                "SELECT certificate_pem, key_nonce, key_sealed FROM gophergem_identities"
            ).fetchone()
        assert row is not None
        assert row[0].encode() == cert_pem
        assert b"PRIVATE KEY" not in bytes(row[2])
        assert key_pem not in bytes(row[2])
        assert len(bytes(row[1])) == 12

    def test_wrong_key(self, pg: PostgresHarness) -> None:
        """Another database key does not open the stored keys: a clear STATE_UNAVAILABLE."""
        identity = wait(pg.state.identities(None).create("gem.example", 1965, "/", NOW))
        other = connect(pg, pg.url, key=b"\x01" * 32)
        try:
            with pytest.raises(StateUnavailable) as caught:
                wait(other.identities(None).credentials(identity))
            assert "database key does not decrypt" in caught.value.message
        finally:
            wait(other.close())

    def test_row_moved_to_another_principal(self, pg: PostgresHarness) -> None:
        """A sealed key copied to another principal's row does not open there."""
        import psycopg

        identity = wait(pg.state.identities("alice").create("gem.example", 1965, "/", NOW))
        with psycopg.connect(pg.url) as raw:
            raw.execute("UPDATE gophergem_identities SET principal = 'mallory'")
        with pytest.raises(StateUnavailable):
            wait(pg.state.identities("mallory").credentials(identity))

    def test_no_key_refused(self, pg: PostgresHarness) -> None:
        """A state without a database key refuses identity stores with one line."""
        from gophergem.state.postgres import PostgresState

        keyless = wait(PostgresState.connect(pg.url, key=None, timeout=5, reactor=pg.reactor))
        try:
            with pytest.raises(ConfigError, match="GOPHERGEM_DATABASE_KEY_FILE"):
                keyless.identities(None)
            assert wait(keyless.pins().all()) == []
        finally:
            wait(keyless.close())


class TestPrincipals:
    def test_identities_are_private(self, pg: PostgresHarness) -> None:
        """An identity of one principal is invisible to another and to the owner."""
        alice = wait(pg.state.identities("alice").create("gem.example", 1965, "/", NOW))
        assert wait(pg.state.identities("bob").find("gem.example", 1965, "/")) is None
        assert wait(pg.state.identities(None).all()) == []
        with pytest.raises(CertificateStoreUnavailable):
            wait(pg.state.identities("bob").credentials(alice))
        bob = wait(pg.state.identities("bob").create("gem.example", 1965, "/", NOW))
        assert bob.fingerprint != alice.fingerprint

    def test_feeds_are_private(self, pg: PostgresHarness) -> None:
        """Subscriptions and read state belong to their principal."""
        wait(pg.state.feeds("alice").subscribe("gemini://a.example/", None, "page", [], NOW))
        assert wait(pg.state.feeds("bob").subscriptions()) == []
        assert wait(pg.state.feeds(None).get("gemini://a.example/")) is None
        assert wait(pg.state.feeds("bob").unsubscribe("gemini://a.example/")) is False
        assert len(wait(pg.state.feeds("alice").subscriptions())) == 1

    def test_pins_shared_or_per_principal(self, pg: PostgresHarness) -> None:
        """
        Pins are everyone's, whoever asks; with pins_per_principal, a
        principal's pins are their own.
        """
        shared = pg.state.pins()
        assert shared is not None
        wait(shared.put(make_pin()))
        assert pg.state.pins("alice") is shared
        apart = attrs.evolve(pg.state, pins_per_principal=True)
        alice = apart.pins("alice")
        assert alice is not None and alice is not apart.pins(None)
        assert wait(alice.get("gem.example", 1965)) is None
        wait(alice.put(make_pin(host="a.example")))
        assert [p.host for p in wait(shared.all())] == ["gem.example"]

    def test_switched_off_stores_and_feed_principals(self, pg: PostgresHarness) -> None:
        """No pins with TOFU off, no identities with them off; who has subscriptions."""
        off = attrs.evolve(pg.state, tofu_enabled=False, identities_enabled=False)
        assert off.pins("alice") is None
        assert off.identities("alice") is None
        wait(pg.state.feeds("carol").subscribe("gemini://c.example/", None, "page", [], NOW))
        found = wait(pg.state.feed_principals())
        assert found[0] is None and "carol" in found


class TestDatabaseKey:
    @pytest.mark.parametrize(
        "content",
        [
            bytes(range(32)),
            bytes(range(32)).hex().encode() + b"\n",
            b"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
        ],
        ids=["raw", "hex", "base64"],
    )
    def test_forms(self, tmp_path: Path, content: bytes) -> None:
        """The key file may hold the 32 bytes raw, in hex or in base64."""
        from gophergem.state.postgres import load_database_key

        path = tmp_path / "key"
        path.write_bytes(content)
        assert load_database_key(path) == bytes(range(32))

    @pytest.mark.parametrize(
        "content", [b"", b"short", b"ab" * 31], ids=["empty", "short", "hex31"]
    )
    def test_refused(self, tmp_path: Path, content: bytes) -> None:
        """Anything else is a one-line ConfigError that does not quote the file."""
        from gophergem.state.postgres import load_database_key

        path = tmp_path / "key"
        path.write_bytes(content)
        with pytest.raises(ConfigError) as caught:
            load_database_key(path)
        assert "\n" not in str(caught.value)
        assert "short" not in str(caught.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A key file that cannot be read is a ConfigError too."""
        from gophergem.state.postgres import load_database_key

        with pytest.raises(ConfigError, match="cannot be read"):
            load_database_key(tmp_path / "absent")


def test_drivers_not_imported_by_default() -> None:
    """Importing gophergem and its state package loads neither psycopg nor its pool."""
    code = (
        "import sys, gophergem, gophergem.state, gophergem.cli, gophergem.service;"
        "print(sorted(m for m in sys.modules if m.startswith(('psycopg', 'redis'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- a server that vanishes (no server needed: a pool of fakes) ---------------------


@attrs.define
class _FakePool:
    """
    Stands in for psycopg's pool: hands out C{connection_made()}'s
    connections, or raises C{refusal} when set; counts what it was asked.
    """

    connection_made: Any = None
    refusal: BaseException | None = None
    asked: int = 0
    checks: int = 0

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        self.asked += 1
        if self.refusal is not None:
            raise self.refusal
        yield self.connection_made()

    async def check(self) -> None:
        self.checks += 1


@attrs.define
class _Stuck:
    """A connection whose server never answers, and whose cancellation hangs too."""

    released: asyncio.Event

    async def execute(self, *args: object) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            # psycopg asks the server to cancel the query and waits for it.
            await self.released.wait()
            raise


def _settle(loop: asyncio.AbstractEventLoop, d: Any) -> Any:
    """The outcome of C{d} once C{loop} has run it (a safety limit, not a measure)."""
    return loop.run_until_complete(asyncio.wait_for(d.asFuture(loop), 20))


def _spin(loop: asyncio.AbstractEventLoop, condition: Any) -> None:
    """Let C{loop} run until C{condition()} holds (a safety limit, not a measure)."""

    async def spin() -> None:
        while not condition():
            await asyncio.sleep(0.001)

    loop.run_until_complete(asyncio.wait_for(spin(), 20))


def _stop(loop: asyncio.AbstractEventLoop, runner: Any) -> None:
    """Stop C{runner}'s tries and let its task end."""
    runner.stop()
    loop.run_until_complete(asyncio.sleep(0.01))


class TestOutage:
    def test_the_bound_does_not_wait_for_a_hung_cancellation(self) -> None:
        """
        A call on a connection that never answers fails with
        STATE_UNAVAILABLE at the state timeout, even when cancelling the
        query hangs too (psycopg then waits for the server): the answer
        does not wait for the cleanup, which goes on by itself.
        """
        from gophergem.state.postgres import PostgresPinStore
        from gophergem.state.postgres._runner import Runner

        loop = asyncio.new_event_loop()
        try:
            released = asyncio.Event()
            pool = _FakePool(lambda: _Stuck(released))
            runner = Runner(pool, 0.05, loop)  # type: ignore[arg-type]
            with pytest.raises(StateUnavailable) as caught:
                _settle(loop, PostgresPinStore(runner).get("gem.example", 1965))
            assert caught.value.message == "PostgreSQL did not answer within 0.05 seconds."
            assert caught.value.temporary is True
            assert not released.is_set()  # answered while the query was still being cancelled
            released.set()
            _stop(loop, runner)
        finally:
            loop.close()

    def test_calls_fail_at_once_while_the_server_is_down(self) -> None:
        """
        Once a call has failed and the server does not answer a try of its
        own, calls fail at once without waiting for a connection; /health
        tries the server itself; when it answers, calls flow again and the
        pool is told to replace its connections.
        """
        import psycopg

        from gophergem.state.postgres import PostgresPinStore
        from gophergem.state.postgres._runner import Runner

        class Row:
            async def fetchone(self) -> None:
                return None

        class Answers:
            async def execute(self, *args: object) -> Row:
                return Row()

        loop = asyncio.new_event_loop()
        try:
            server = {"up": False}

            async def probe() -> None:
                if not server["up"]:
                    raise psycopg.OperationalError("connection refused")

            pool = _FakePool(Answers, refusal=psycopg.OperationalError("server closed"))
            runner = Runner(pool, 2.0, loop, probe=probe, probe_interval=0.001)  # type: ignore[arg-type]
            pins = PostgresPinStore(runner)
            with pytest.raises(StateUnavailable):
                _settle(loop, pins.get("gem.example", 1965))
            _spin(loop, lambda: runner.down)
            assert pool.asked == 1

            refused = pins.get("gem.example", 1965)
            assert refused.called  # at once: no deadline waited out
            with pytest.raises(StateUnavailable) as caught:
                _settle(loop, refused)
            assert caught.value.message == "PostgreSQL could not be reached."
            assert pool.asked == 1  # the pool was not asked

            from gophergem.state.postgres import PostgresState

            state = PostgresState(runner, None, 2.0)
            assert _settle(loop, state.health())["ok"] is False
            server["up"] = True
            pool.refusal = None
            assert _settle(loop, state.health())["ok"] is True  # asked, not remembered
            assert runner.down is False
            _spin(loop, lambda: pool.checks == 1)
            assert _settle(loop, pins.get("gem.example", 1965)) is None
            assert pool.asked == 2
            _stop(loop, runner)
        finally:
            loop.close()

    def test_calls_under_way_fail_when_the_server_is_found_down(self) -> None:
        """
        A call waiting on a server that is then found gone fails at once,
        not at its deadline.
        """
        import psycopg

        from gophergem.state.postgres import PostgresPinStore
        from gophergem.state.postgres._runner import Runner

        loop = asyncio.new_event_loop()
        try:
            released = asyncio.Event()
            released.set()  # cancelling the query is quick here

            async def probe() -> None:
                raise psycopg.OperationalError("connection refused")

            pool = _FakePool(lambda: _Stuck(released))
            runner = Runner(pool, 3600.0, loop, probe=probe)  # type: ignore[arg-type]
            waiting = PostgresPinStore(runner).get("gem.example", 1965)
            loop.run_until_complete(asyncio.sleep(0.01))
            assert not waiting.called
            runner.suspect()  # as another call's failure does
            with pytest.raises(StateUnavailable) as caught:
                _settle(loop, waiting)
            assert caught.value.message == "PostgreSQL could not be reached."
            _stop(loop, runner)
        finally:
            loop.close()

    def test_back_by_itself(self) -> None:
        """While down, the server is tried again until it answers; no call is needed."""
        import psycopg

        from gophergem.state.postgres._runner import Runner

        loop = asyncio.new_event_loop()
        try:
            tries: list[bool] = []

            async def probe() -> None:
                tries.append(True)
                if len(tries) < 4:
                    raise psycopg.OperationalError("connection refused")

            pool = _FakePool(refusal=psycopg.OperationalError("server closed"))
            runner = Runner(pool, 2.0, loop, probe=probe, probe_interval=0.001)  # type: ignore[arg-type]
            runner.suspect()
            _spin(loop, lambda: runner.down)
            _spin(loop, lambda: not runner.down)
            assert len(tries) == 4
            _spin(loop, lambda: pool.checks == 1)
            _stop(loop, runner)
        finally:
            loop.close()

    def test_a_call_that_fails_otherwise_does_not_stop_the_others(self) -> None:
        """A failure after which the server still answers leaves calls going to the pool."""
        import psycopg

        from gophergem.state.postgres import PostgresPinStore
        from gophergem.state.postgres._runner import Runner

        loop = asyncio.new_event_loop()
        try:

            async def probe() -> None:
                return None

            pool = _FakePool(refusal=psycopg.OperationalError("deadlock detected"))
            runner = Runner(pool, 2.0, loop, probe=probe, probe_interval=0.001)  # type: ignore[arg-type]
            pins = PostgresPinStore(runner)
            for asked in (1, 2):
                with pytest.raises(StateUnavailable):
                    _settle(loop, pins.get("gem.example", 1965))
                _spin(loop, lambda: runner._checking is None)
                assert runner.down is False
                assert pool.asked == asked
            _stop(loop, runner)
        finally:
            loop.close()

    def test_a_broken_pooled_connection_raises_the_alarm(self) -> None:
        """
        A connection that fails the pool's check before it is handed out
        (the server closed it) makes the pool call C{broken}: the pool
        alone would quietly try others until the call's deadline.
        """
        import psycopg

        from gophergem.state.postgres import _pool

        class Closed:
            autocommit = True

            async def execute(self, *args: object) -> None:
                raise psycopg.OperationalError("server closed the connection unexpectedly")

        class Fine(Closed):
            async def execute(self, *args: object) -> None:
                return None

        alarms: list[bool] = []
        pool = _pool("postgresql://gg@127.0.0.1:1/none", 1.0, lambda: alarms.append(True))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(pool._check(Fine()))
            assert alarms == []
            with pytest.raises(psycopg.OperationalError):
                loop.run_until_complete(pool._check(Closed()))
            assert alarms == [True]
        finally:
            loop.close()

    def test_connections_find_a_vanished_server_dead(self) -> None:
        """Every connection has a connect timeout, TCP keepalives and a TCP user timeout."""
        from gophergem.state.postgres import connection_settings

        settings = connection_settings(2.0)
        assert settings["connect_timeout"] == 2
        assert settings["keepalives"] == 1
        assert settings["tcp_user_timeout"] > 0


class _NeverOpens:
    """A pool whose first connection never comes; closing it takes loop turns."""

    closed = False

    async def open(self, wait: bool, timeout: float) -> None:
        await asyncio.Event().wait()

    async def close(self, timeout: float) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        self.closed = True


def test_connect_gives_up_with_nothing_left_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    When even the pool's own wait overruns (a starved loop), connect fails
    with STATE_UNAVAILABLE only once the pool it opened is closed: a
    command that then exits leaves no coroutine for its closed loop to
    report ("Exception ignored in ... Event loop is closed").
    """
    import gophergem.state.postgres as postgres

    pool = _NeverOpens()
    monkeypatch.setattr(postgres, "_pool", lambda url, timeout, broken: pool)
    loop = asyncio.new_event_loop()
    try:
        reactor = type("Reactor", (), {"_asyncioEventloop": loop})()
        connecting = postgres.PostgresState.connect(
            "postgresql://x@127.0.0.1:1/db", key=None, timeout=0.01, reactor=reactor
        )
        with pytest.raises(StateUnavailable) as caught:
            _settle(loop, connecting)
        assert caught.value.message == "PostgreSQL did not answer within 1.01 seconds."
        assert pool.closed
    finally:
        loop.close()
