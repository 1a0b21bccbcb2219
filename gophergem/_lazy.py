# -*- test-case-name: tests.test_package -*-
"""
Names a package offers but loads only when first used: its C{__getattr__}
and C{__dir__}, made once here for C{gophergem} and C{gophergem.search}, so
that importing the package costs nothing it does not need (the pure search
engines import without Twisted; C{import gophergem} loads no reactor).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, str], offered: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """
    The C{__getattr__} and C{__dir__} of C{package}: a name of C{where} is
    imported from the module it maps to on first use and then kept in the
    package's namespace, so later look-ups skip the function; C{offered}
    (its C{__all__}) is listed by C{dir()} before it is loaded.
    """
    namespace = sys.modules[package].__dict__
    listed = frozenset(offered)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | listed)

    return __getattr__, __dir__
