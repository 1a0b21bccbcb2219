"""Tests for L{gophergem.state.paths}: where the file stores live by default."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from gophergem.state.paths import (
    default_data_dir,
    gopher_mcp_pin_paths,
    identity_store_dir,
    pin_store_path,
)


class TestPaths:
    """Where the stores live when nothing is configured (SPEC §5, Stores)."""

    def test_xdg(self) -> None:
        """An absolute XDG_DATA_HOME wins on every platform."""
        environ = {"XDG_DATA_HOME": "/xdg", "HOME": "/home/u"}
        assert default_data_dir(environ, "linux") == PurePosixPath("/xdg/gophergem")
        assert default_data_dir(environ, "darwin") == PurePosixPath("/xdg/gophergem")

    def test_relative_xdg_ignored(self) -> None:
        """A relative XDG_DATA_HOME is invalid (XDG spec) and ignored."""
        environ = {"XDG_DATA_HOME": "rel", "HOME": "/home/u"}
        assert default_data_dir(environ, "linux") == PurePosixPath("/home/u/.local/share/gophergem")

    def test_platform_defaults(self) -> None:
        """Linux, macOS and Windows each have their own default."""
        home = {"HOME": "/home/u"}
        assert default_data_dir(home, "linux") == PurePosixPath("/home/u/.local/share/gophergem")
        assert default_data_dir(home, "darwin") == PurePosixPath(
            "/home/u/Library/Application Support/gophergem"
        )
        windows = {"LOCALAPPDATA": r"C:\Users\u\AppData\Local", "USERPROFILE": r"C:\Users\u"}
        assert default_data_dir(windows, "win32") == PureWindowsPath(
            r"C:\Users\u\AppData\Local\gophergem"
        )
        assert default_data_dir({"USERPROFILE": r"C:\Users\u"}, "win32") == PureWindowsPath(
            r"C:\Users\u\AppData\Local\gophergem"
        )

    def test_no_home(self) -> None:
        """Without any home directory the error names the settings to use."""
        with pytest.raises(ValueError, match="GEMINI_TOFU_STORAGE_PATH"):
            default_data_dir({}, "win32")

    def test_store_locations(self) -> None:
        """Pins default to tofu.json and identities to client_certs/ in the data directory."""
        environ = {"HOME": "/home/u"}
        data = PurePosixPath("/home/u/.local/share/gophergem")
        assert pin_store_path(None, environ, "linux") == data / "tofu.json"
        assert identity_store_dir(None, environ, "linux") == data / "client_certs"

    def test_configured(self) -> None:
        """A configured path is used as given, with ~ standing for home."""
        environ = {"HOME": "/home/u"}
        assert pin_store_path("/srv/pins.json", environ, "linux") == PurePosixPath("/srv/pins.json")
        assert pin_store_path("~/pins.json", environ, "linux") == PurePosixPath("/home/u/pins.json")
        assert identity_store_dir("~", environ, "linux") == PurePosixPath("/home/u")
        assert identity_store_dir(r"~\certs", {"USERPROFILE": r"C:\U"}, "win32") == (
            PureWindowsPath(r"C:\U\certs")
        )

    def test_real_environment(self) -> None:
        """The defaults work on this machine's own environment and platform."""
        assert Path(os.fspath(pin_store_path(None, os.environ))).is_absolute()

    def test_gopher_mcp_locations(self) -> None:
        """gopher-mcp's own data directory comes first, then the legacy ~/.gemini."""
        assert gopher_mcp_pin_paths({"HOME": "/home/u"}, "linux") == [
            PurePosixPath("/home/u/.local/share/gopher-mcp/tofu.json"),
            PurePosixPath("/home/u/.gemini/tofu.json"),
        ]
        assert gopher_mcp_pin_paths({"HOME": "/h", "XDG_DATA_HOME": "/x"}, "linux")[0] == (
            PurePosixPath("/x/gopher-mcp/tofu.json")
        )
