# -*- test-case-name: tests.test_state_paths -*-
"""
Where the file stores live by default (SPEC §5, "Stores").

Pure functions of the environment and the platform name, so every branch
is testable on any machine; nothing here creates a directory.

  - data directory: C{$XDG_DATA_HOME/gophergem} when that is an absolute
    path, else C{~/.local/share/gophergem}, C{~/Library/Application
    Support/gophergem} on macOS, C{%LOCALAPPDATA%\\gophergem} on Windows;
  - pins: C{GEMINI_TOFU_STORAGE_PATH} (a file), else C{<data>/tofu.json};
  - identities: C{GEMINI_CLIENT_CERTS_STORAGE_PATH} (a directory), else
    C{<data>/client_certs};
  - feed subscriptions: C{GOPHERGEM_FEEDS_STORAGE_PATH} (a file), else
    C{<data>/feeds.json}.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import PurePath, PurePosixPath, PureWindowsPath

__all__ = [
    "default_data_dir",
    "feed_store_path",
    "gopher_mcp_pin_paths",
    "identity_store_dir",
    "pin_store_path",
]

_NAME = "gophergem"


def _flavour(platform: str) -> type[PurePath]:
    return PureWindowsPath if platform == "win32" else PurePosixPath


def _home(environ: Mapping[str, str], platform: str) -> PurePath:
    flavour = _flavour(platform)
    if platform == "win32":
        home = environ.get("USERPROFILE") or environ.get("HOME")
    else:
        home = environ.get("HOME")
        if not home:
            try:
                import pwd

                home = pwd.getpwuid(os.getuid()).pw_dir
            except (ImportError, KeyError):
                home = None
    if not home:
        raise ValueError(
            "No home directory is known; set GEMINI_TOFU_STORAGE_PATH and "
            "GEMINI_CLIENT_CERTS_STORAGE_PATH."
        )
    return flavour(home)


def _expand(value: str, environ: Mapping[str, str], platform: str) -> PurePath:
    """C{value} as a path, with a leading C{~} standing for the home directory."""
    flavour = _flavour(platform)
    separators = ("/", "\\") if platform == "win32" else ("/",)
    if value == "~" or value.startswith(tuple("~" + s for s in separators)):
        return _home(environ, platform) / value[2:] if len(value) > 2 else _home(environ, platform)
    return flavour(value)


def default_data_dir(environ: Mapping[str, str], platform: str = sys.platform) -> PurePath:
    """
    Return the directory gophergem keeps its stores in when none is configured.

    @param environ: The environment (C{os.environ}).
    @param platform: A C{sys.platform} value.
    @raise ValueError: When no home directory can be found.
    """
    flavour = _flavour(platform)
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and flavour(xdg).is_absolute():
        return flavour(xdg) / _NAME
    if platform == "win32":
        local = environ.get("LOCALAPPDATA", "")
        if local and flavour(local).is_absolute():
            return flavour(local) / _NAME
        return _home(environ, platform) / "AppData" / "Local" / _NAME
    if platform == "darwin":
        return _home(environ, platform) / "Library" / "Application Support" / _NAME
    return _home(environ, platform) / ".local" / "share" / _NAME


def pin_store_path(
    config_value: str | None, environ: Mapping[str, str], platform: str = sys.platform
) -> PurePath:
    """
    Return the pin store's file: C{GEMINI_TOFU_STORAGE_PATH} (C{config_value})
    when set, else C{tofu.json} in L{default_data_dir}.
    """
    if config_value:
        return _expand(config_value, environ, platform)
    return default_data_dir(environ, platform) / "tofu.json"


def feed_store_path(
    config_value: str | None, environ: Mapping[str, str], platform: str = sys.platform
) -> PurePath:
    """
    Return the feed store's file: C{GOPHERGEM_FEEDS_STORAGE_PATH}
    (C{config_value}) when set, else C{feeds.json} in L{default_data_dir}.
    """
    if config_value:
        return _expand(config_value, environ, platform)
    return default_data_dir(environ, platform) / "feeds.json"


def identity_store_dir(
    config_value: str | None, environ: Mapping[str, str], platform: str = sys.platform
) -> PurePath:
    """
    Return the identity store's directory: C{GEMINI_CLIENT_CERTS_STORAGE_PATH}
    (C{config_value}) when set, else C{client_certs} in L{default_data_dir}.
    """
    if config_value:
        return _expand(config_value, environ, platform)
    return default_data_dir(environ, platform) / "client_certs"


def gopher_mcp_pin_paths(
    environ: Mapping[str, str], platform: str = sys.platform
) -> list[PurePath]:
    """
    Where gopher-mcp keeps its C{tofu.json} when not configured otherwise,
    most likely first: its own data directory (newer releases), then the
    legacy C{~/.gemini/tofu.json}.  For C{gophergem trust import} without a
    path; the caller checks which exist.
    """
    flavour = _flavour(platform)
    candidates: list[PurePath] = []
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and flavour(xdg).is_absolute():
        candidates.append(flavour(xdg) / "gopher-mcp" / "tofu.json")
    else:
        ours = default_data_dir(environ, platform)
        candidates.append(ours.parent / "gopher-mcp" / "tofu.json")
    candidates.append(_home(environ, platform) / ".gemini" / "tofu.json")
    return candidates
