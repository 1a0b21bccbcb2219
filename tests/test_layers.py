"""
The import layering of STYLE.md, checked by reading every module's imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "gophergem"

PURE_ALLOWED = {"attrs", "idna", "gophergem"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def modules(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in PACKAGE.glob(pattern))


def is_stdlib(name: str) -> bool:
    import sys

    return name.split(".")[0] in sys.stdlib_module_names


@pytest.mark.parametrize(
    "path", modules("wire/*.py", "url.py", "policy/addresses.py"), ids=lambda p: p.name
)
def test_pure_modules(path: Path) -> None:
    """Pure modules import only the standard library, attrs, idna and other pure modules."""
    for name in imports_of(path):
        top = name.split(".")[0]
        if is_stdlib(name) or top in PURE_ALLOWED - {"gophergem"}:
            continue
        if name == "gophergem.interfaces" and path.name == "addresses.py":
            continue  # the policy declares which interface it provides
        assert name.startswith(("gophergem.wire", "gophergem.url", "gophergem.errors")), (
            f"{path.name} imports {name}"
        )


@pytest.mark.parametrize(
    "path",
    [p for p in modules("**/*.py") if "mcp" not in p.parts],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_mcp_imports_the_sdk(path: Path) -> None:
    """Only the mcp package imports the MCP SDK or asyncio at module level (wiring aside)."""
    if path.name in ("cli.py", "tap.py", "service.py"):
        return
    for name in imports_of(path):
        assert not name.startswith(("mcp", "asyncio", "anyio")), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", modules("**/*.py"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_global_reactor_outside_wiring(path: Path) -> None:
    """Only the wiring modules import the global reactor."""
    if path.name in ("cli.py", "service.py", "tap.py"):
        return
    source = path.read_text()
    assert "from twisted.internet import reactor" not in source
    assert "twisted.internet.reactor" not in source or path.name == "testing.py"
