"""
Tests for L{gophergem} itself: the curated API a library user imports, loaded
lazily, and the README's library example.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.testing import MemoryReactorClock

import gophergem
from gophergem.interfaces import IFetcher

README = Path(__file__).parent.parent / "README.md"


@pytest.mark.parametrize("name", gophergem.__all__)
def test_every_public_name_resolves(name: str) -> None:
    """Each name of __all__ is there, and is the object its home module defines."""
    value = getattr(gophergem, name)
    assert value is not None
    assert name in dir(gophergem)


def test_unknown_name_is_an_attribute_error() -> None:
    """A name the package does not offer is an AttributeError, as for any module."""
    with pytest.raises(AttributeError, match="no_such_thing"):
        gophergem.no_such_thing  # type: ignore[attr-defined]  # noqa: B018


def test_import_is_cheap() -> None:
    """import gophergem loads neither Twisted nor the pipeline nor the MCP SDK."""
    code = (
        "import sys, gophergem; "
        "print(sorted(m for m in ('twisted', 'mcp', 'pydantic', 'gophergem.fetcher') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_readme_library_example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The README's library example builds an IFetcher and starts a fetch (on a memory reactor)."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"As a library.*?```python\n(.*?)```", text, re.DOTALL)
    assert match is not None, "README.md has no library example"
    memory = MemoryReactorClock()  # the example's global reactor: nothing leaves the process
    import twisted.internet

    monkeypatch.setattr(twisted.internet, "reactor", memory, raising=False)
    monkeypatch.setitem(sys.modules, "twisted.internet.reactor", memory)  # type: ignore[arg-type]
    for name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(tmp_path))
    scope: dict[str, object] = {}
    exec(compile(match.group(1), "README.md", "exec"), scope)
    assert IFetcher.providedBy(scope["fetcher"])
    assert isinstance(scope["d"], Deferred)
