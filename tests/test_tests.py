"""
The shape of the tests themselves: a test module imports its helpers from
C{tests/helpers/} (or a conftest, or C{tests/servers/}), never from another
test module, so that moving or deleting one test module cannot break another.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REPOSITORY = TESTS.parent


def module_name(path: Path) -> str:
    """C{tests/helpers/mcp.py} -> C{tests.helpers.mcp}; packages by their name."""
    parts = list(path.relative_to(REPOSITORY).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(name: str, source: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """
    Every module the source of module C{name} imports, anywhere in it (lazy
    imports too), relative ones made absolute, C{from p import m} as C{p.m}.
    """
    package = name if is_package else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def is_test_module(name: str) -> bool:
    """Whether C{name} is a test module of this repository (C{tests.….test_…})."""
    parts = name.split(".")
    return parts[0] == "tests" and parts[-1].startswith("test_")


def imports_of_test_modules(name: str, source: str, *, is_package: bool = False) -> list[str]:
    """The test modules that the source of module C{name} imports, as C{line: module}."""
    return [
        f"{line}: {target}"
        for line, target in imported_modules(name, source, is_package=is_package)
        if is_test_module(target)
    ]


def test_import_reader() -> None:
    """Absolute, relative, lazy and whole-module imports of test modules are all seen."""
    source = """
from tests.test_cli import a_pin
from .test_http import running
from . import test_http_auth
import tests.test_tls
from tests.helpers.mcp import network
from tests.integration.conftest import LOOPBACK
def later():
    from tests.integration.test_cli_process import environ
"""
    found = imports_of_test_modules("tests.integration.test_http", source)
    assert found == [
        "2: tests.test_cli",
        "3: tests.integration.test_http",
        "4: tests.integration.test_http_auth",
        "5: tests.test_tls",
        "9: tests.integration.test_cli_process",
    ]


@pytest.mark.parametrize(
    "path",
    sorted([*TESTS.rglob("*.py"), *(REPOSITORY / "bench").rglob("*.py")]),
    ids=lambda p: str(p.relative_to(REPOSITORY)),
)
def test_no_import_from_a_test_module(path: Path) -> None:
    """
    Nothing in the tests or the benchmarks imports a test module: what two
    modules share lives in C{tests/helpers/}.
    """
    found = imports_of_test_modules(
        module_name(path), path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py"
    )
    assert not found, f"{path.relative_to(REPOSITORY)} imports test modules: {found}"
