"""
Tests for the twistd plugin and L{gophergem.tap}.
"""

from __future__ import annotations

import pytest
from twisted.application.service import IServiceMaker
from twisted.plugin import getPlugins
from twisted.python import usage

from gophergem import tap


@pytest.fixture(autouse=True)
def _no_reactor_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap, "_ensure_asyncio_reactor", lambda: None)


def test_plugin_is_discovered() -> None:
    """twistd finds the gophergem plugin and it points at gophergem.tap."""
    import twisted.plugins

    makers = {p.tapname: p for p in getPlugins(IServiceMaker, twisted.plugins)}
    assert makers["gophergem"].module == "gophergem.tap"


def test_options_make_a_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Options override environment variables, which override defaults."""
    monkeypatch.setenv("GOPHER_TIMEOUT_SECONDS", "12")
    monkeypatch.setenv("GOPHER_MAX_MENU_ITEMS", "7")
    options = tap.Options()
    options.parseOptions(["--gopher-max-menu-items", "9"])
    config = options["config"]
    assert config.gopher.timeout_seconds == 12
    assert config.gopher.max_menu_items == 9


@pytest.mark.parametrize(
    "argv",
    [
        ["--gopher-timeout-seconds", "soon"],
        ["--gopher-allowed-ports", "0"],
        ["--transport", "pigeon"],
    ],
)
def test_bad_options_are_usage_errors(argv: list[str]) -> None:
    """A bad value is a usage error naming what is wrong, not a traceback."""
    with pytest.raises(usage.UsageError):
        tap.Options().parseOptions(argv)


def test_other_reactor_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a non-asyncio reactor already installed, the plugin gives a usage error."""
    monkeypatch.undo()
    import sys

    fake = object()
    monkeypatch.setitem(sys.modules, "twisted.internet.reactor", fake)
    import twisted.internet

    monkeypatch.setattr(twisted.internet, "reactor", fake, raising=False)
    with pytest.raises(usage.UsageError, match="asyncio"):
        tap._ensure_asyncio_reactor()
