"""
Tests for L{gophergem.state.backends}: the one place a state backend is
chosen, and that each backend provides L{IStateBackend}.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from zope.interface.verify import verifyObject

from gophergem.config import Config, ConfigError
from gophergem.interfaces import IStateBackend
from gophergem.state import SchemaBehind
from gophergem.state.backends import open_backend
from gophergem.state.files import FileState
from tests.helpers.state import fresh_database
from tests.servers.postgres import PostgresHarness, wait


def test_files_without_a_database(tmp_path: Path) -> None:
    """Without a database URL the backend is this machine's files, where the settings say."""
    config = Config.from_mapping(
        {
            "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
            "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "client_certs"),
            "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
        }
    )
    backend = wait(open_backend(config, None, environ={}))
    assert isinstance(backend, FileState)
    assert verifyObject(IStateBackend, backend)
    assert (backend.pins_path, backend.identities_dir, backend.feeds_path) == (
        tmp_path / "tofu.json",
        tmp_path / "client_certs",
        tmp_path / "feeds.json",
    )
    assert list(tmp_path.iterdir()) == []  # choosing creates nothing


def test_files_in_the_data_directory(tmp_path: Path) -> None:
    """Unset paths are in the data directory of the environment given."""
    backend = wait(open_backend(Config(), None, environ={"XDG_DATA_HOME": str(tmp_path)}))
    assert isinstance(backend, FileState)
    assert backend.feeds_path == tmp_path / "gophergem" / "feeds.json"


def test_a_database_without_its_key_file_is_refused_at_once() -> None:
    """
    With identities on, a database needs its key file: the refusal comes at
    once, before anything is dialled.
    """
    config = Config.from_mapping({"GOPHERGEM_DATABASE_URL": "postgresql://gg@127.0.0.1:1/gg"})
    with pytest.raises(ConfigError) as caught:
        open_backend(config, None)
    assert "GOPHERGEM_DATABASE_KEY_FILE" in str(caught.value)


def test_a_database_url_opens_postgresql(pg: PostgresHarness) -> None:
    """With a database URL the backend is the database, connected, and an IStateBackend."""
    from gophergem.state.postgres import PostgresState

    config = Config.from_mapping({"GOPHERGEM_DATABASE_URL": pg.url})
    backend = wait(open_backend(config, pg.reactor, identities=False))
    try:
        assert isinstance(backend, PostgresState)
        assert verifyObject(IStateBackend, backend)
        assert wait(backend.feed_principals()) == [None]
    finally:
        wait(backend.close())


def test_a_database_behind_fails(pg: PostgresHarness) -> None:
    """A database whose schema is behind fails with SchemaBehind, its pool closed."""
    config = Config.from_mapping({"GOPHERGEM_DATABASE_URL": fresh_database(pg)})
    with pytest.raises(SchemaBehind):
        wait(open_backend(config, pg.reactor, identities=False))


@pytest.fixture
def pg(postgres_harness: PostgresHarness) -> PostgresHarness:
    """The session's PostgreSQL server, its gophergem tables empty."""
    postgres_harness.reset()
    return postgres_harness
