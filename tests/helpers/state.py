"""
Shared helpers for the state tests: a files state in a directory, a fresh
PostgreSQL database.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import attrs

from gophergem.config import Config
from gophergem.state.files import FileState
from tests.servers.postgres import PostgresHarness


def file_state(tmp_path: Path, **kw: object) -> FileState:
    """A FileState whose stores all live under C{tmp_path}."""
    config = Config.from_mapping(
        {
            "GEMINI_TOFU_STORAGE_PATH": str(tmp_path / "tofu.json"),
            "GEMINI_CLIENT_CERTS_STORAGE_PATH": str(tmp_path / "client_certs"),
            "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
        }
    )
    return attrs.evolve(FileState.from_config(config, {}), **kw)


SECRET = "hunter2-not-for-logs"


def fresh_database(harness: PostgresHarness) -> str:
    """A new, empty database on the server; its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(harness.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    return harness.url.rsplit("/", 1)[0] + "/" + name
