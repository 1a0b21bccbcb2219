"""
The shape of the package, checked by reading every module's source: the
import layering of STYLE.md and docs/architecture.md, no import cycles, no
reach into another package's C{_private} modules or names,
C{test-case-name} headers that name test modules which exist, and no
docstring or comment citing a file that is not there.

Imports are read from the AST and sorted by where they sit:

  - C{module}: run at import time (at module level, also inside C{try} or
    an C{if} other than C{if TYPE_CHECKING});
  - C{function}: run when a function is called (a lazy import);
  - C{type}: inside C{if TYPE_CHECKING:}, seen only by the type checker.

A lazy import counts like a module-level one, for cycles and for layers
alike: it only hides a dependency from the interpreter at start-up, not from
a reader (the circle issue 12 removed was a lazy import).  A C{TYPE_CHECKING}
import counts for cycles too (a circle the type checker has to untangle is
still a circle to a reader), but not for layers: naming a type from a higher
layer in an annotation is how a lower layer states what it is handed.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Literal

import attrs
import pytest

PACKAGE = Path(__file__).parent.parent / "gophergem"
TESTS = Path(__file__).parent

PURE_ALLOWED = {"attrs", "idna", "gophergem"}

Where = Literal["module", "function", "type"]


# --- reading the package ---------------------------------------------------------------


@attrs.frozen
class Import:
    """One imported module, as the importing module names it."""

    target: str
    where: Where
    line: int


def module_name(path: Path) -> str:
    """C{gophergem/fetcher/gopher.py} -> C{gophergem.fetcher.gopher}; packages by their name."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def package_modules() -> dict[str, Path]:
    """Every module of gophergem, by dotted name."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, where: Where) -> Iterator[tuple[ast.AST, Where]]:
    """Every node under C{node}, with where an import there would run."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield statement, "type"
                yield from _walk(statement, "type")
            for statement in child.orelse:
                yield statement, where
                yield from _walk(statement, where)
            continue
        inner: Where = where
        if where == "module" and isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        ):
            inner = "function"
        yield child, where
        yield from _walk(child, inner)


def imports_in(path: Path) -> list[Import]:
    """Every import in C{path}, relative ones made absolute, C{from p import m} as C{p.m}."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node, where in _walk(ast.parse(path.read_text()), "module"):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, where, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                target = submodule if submodule in package_modules() else source
                found.append(Import(target, where, node.lineno))
    return found


def imports_of(path: Path) -> set[str]:
    """The modules C{path} imports at module level (TYPE_CHECKING included)."""
    return {i.target for i in imports_in(path) if i.where != "function"}


def runtime_imports(path: Path) -> list[Import]:
    """The imports that run: at module level or in a function."""
    return [i for i in imports_in(path) if i.where != "type"]


def modules(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in PACKAGE.glob(pattern))


def is_stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def ours(name: str) -> bool:
    return name == "gophergem" or name.startswith("gophergem.")


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


# --- pure modules and third parties ------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    modules("wire/*.py", "url.py", "_time.py", "search/engines.py", "policy/addresses.py"),
    ids=lambda p: p.name,
)
def test_pure_modules(path: Path) -> None:
    """Pure modules import only the standard library, attrs, idna and other pure modules."""
    for name in imports_of(path):
        top = name.split(".")[0]
        if is_stdlib(name) or top in PURE_ALLOWED - {"gophergem"}:
            continue
        if name == "gophergem.interfaces" and path.name == "addresses.py":
            continue  # the policy declares which interface it provides
        # The foundation's wording helpers are pure too (attrs and the standard library).
        assert name.startswith(
            (
                "gophergem.wire",
                "gophergem.url",
                "gophergem._time",
                "gophergem.errors",
                "gophergem.advice",
            )
        ), f"{path.name} imports {name}"


FEED_READERS = ("feeds/parse.py", "feeds/dates.py", "feeds/opml.py")


@pytest.mark.parametrize("path", modules(*FEED_READERS), ids=lambda p: p.name)
def test_feed_readers_are_pure(path: Path) -> None:
    """
    The feed and OPML readers are pure: the standard library, attrs,
    feedparser and defusedxml, the pure modules and each other.
    """
    readers = {f"gophergem.{name.removesuffix('.py').replace('/', '.')}" for name in FEED_READERS}
    for name in imports_of(path):
        top = name.split(".")[0]
        if is_stdlib(name) or top in {"attrs", "feedparser", "defusedxml"} or name in readers:
            continue
        assert name.startswith(
            ("gophergem.wire", "gophergem.url", "gophergem._time", "gophergem.errors")
        ), f"{path.name} imports {name}"


WIRING = ("tap.py", "service.py", "__main__.py")
"""The wiring modules at the top of the package; the console script's package C{cli/} too."""


@pytest.mark.parametrize(
    "path",
    [p for p in modules("**/*.py") if not {"mcp", "http"} & set(p.relative_to(PACKAGE).parts)],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_mcp_imports_the_sdk(path: Path) -> None:
    """
    Only the mcp package, and the http package that serves the SDK's
    Streamable HTTP app (and checks C{Host}/C{Origin} with its settings),
    import the MCP SDK, anyio or pydantic, even lazily; asyncio only there, in
    the wiring (which installs the asyncio reactor) and in the shared-state
    backends under gophergem/state/ (asyncio drivers).
    """
    for found in runtime_imports(path):
        assert not found.target.startswith(("mcp", "anyio", "pydantic")), (
            f"{relative(path)}:{found.line} imports {found.target}"
        )
        if (path.parent == PACKAGE and path.name in WIRING) or path.is_relative_to(PACKAGE / "cli"):
            continue
        if path.is_relative_to(PACKAGE / "state") and path.parent != PACKAGE / "state":
            continue  # the shared-state backends drive asyncio clients (psycopg, redis-py)
        assert not found.target.startswith("asyncio"), (
            f"{relative(path)}:{found.line} imports {found.target}"
        )


#: What auth/ may use of twisted.web: the HTTP client it asks identity providers with.
WEB_CLIENT = ("twisted.web.client", "twisted.web.iweb", "twisted.web.http_headers")


@pytest.mark.parametrize("path", modules("auth/*.py"), ids=lambda p: p.name)
def test_auth_knows_neither_mcp_nor_the_web_server(path: Path) -> None:
    """
    auth/ (tokens, verifiers, principals) imports neither the SDK nor
    gophergem.mcp nor gophergem.http, not even for types, and of twisted.web
    only the client side: the SDK's verifier and the bearer guard build on it
    from gophergem/http/.
    """
    for found in imports_in(path):
        target = found.target
        assert not target.startswith(("mcp", "gophergem.mcp", "gophergem.http")), (
            f"{relative(path)}:{found.line} imports {target}"
        )
        if target == "twisted.web" or target.startswith("twisted.web."):
            assert target.startswith(WEB_CLIENT), f"{relative(path)}:{found.line} imports {target}"


@pytest.mark.parametrize(
    "path",
    [p for p in modules("**/*.py") if "http" not in p.relative_to(PACKAGE).parts],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_http_imports_twisted_web(path: Path) -> None:
    """
    Only gophergem/http/ imports twisted.web, even lazily or for types; the
    auth package may use its HTTP client (L{WEB_CLIENT}) to reach an identity
    provider.
    """
    for found in imports_in(path):
        if not (found.target == "twisted.web" or found.target.startswith("twisted.web.")):
            continue
        if path.is_relative_to(PACKAGE / "auth") and found.target.startswith(WEB_CLIENT):
            continue
        raise AssertionError(f"{relative(path)}:{found.line} imports {found.target}")


#: The MCP side: the SDK (C{mcp}, C{mcp_types}) and gophergem's front door on it.
MCP_SIDE = ("mcp", "mcp_types", "gophergem.mcp")


@pytest.mark.parametrize("path", modules("render/**/*.py"), ids=lambda p: relative(p))
def test_render_is_free_of_mcp(path: Path) -> None:
    """
    Nothing under gophergem/render imports the MCP SDK or L{gophergem.mcp},
    not even lazily or for types: the CLI renders through it without either.
    """
    for found in imports_in(path):
        assert not any(
            found.target == side or found.target.startswith(side + ".") for side in MCP_SIDE
        ), f"{relative(path)}:{found.line} imports {found.target}"


@pytest.mark.parametrize("path", modules("**/*.py"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_global_reactor_outside_wiring(path: Path) -> None:
    """Only the wiring modules import the global reactor."""
    if (path.parent == PACKAGE and path.name in WIRING) or path.is_relative_to(PACKAGE / "cli"):
        return
    source = path.read_text()
    assert "from twisted.internet import reactor" not in source
    assert "twisted.internet.reactor" not in source or path.name == "testing.py"


# --- layers ----------------------------------------------------------------------------------

#: The layers, lowest first; a module may import (at run time) only from its
#: own layer or below.  A module is in the layer of its longest listed prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundation",
        (
            "gophergem._version",
            "gophergem._lazy",
            "gophergem._log",
            "gophergem.errors",
            "gophergem._plural",
            "gophergem.advice",
            "gophergem._time",
            "gophergem._defer",
        ),
    ),
    ("interfaces", ("gophergem.interfaces",)),
    (
        "pure",
        (
            "gophergem.url",
            "gophergem.wire",
            "gophergem.search.engines",
            "gophergem.policy.addresses",
        ),
    ),
    # Reading feeds and OPML is pure (feedparser and defusedxml aside, see
    # test_feed_readers_are_pure); the rest of gophergem.feeds keeps state.
    ("feed readers", ("gophergem.feeds.parse", "gophergem.feeds.dates", "gophergem.feeds.opml")),
    ("values", ("gophergem.results", "gophergem.config", "gophergem.feeds.values")),
    (
        "policy and stores",
        (
            "gophergem.policy",
            "gophergem.trust",
            "gophergem.feeds",
            "gophergem.auth",
            "gophergem.state",
        ),
    ),
    ("tls", ("gophergem.tls",)),
    ("client", ("gophergem.client",)),
    ("fetcher", ("gophergem.fetcher",)),
    # What the library offers on top of any IFetcher: following pages, searching
    # (the search package offers its engines and its operation alike), and each
    # authenticated caller's view of the fetcher and follower (auth.principals).
    ("capsules", ("gophergem.feeds.follow", "gophergem.search", "gophergem.auth.principals")),
    # Results (and feed and search answers) as payloads and text: shown alike
    # by the MCP tools and the CLI, so below both (see test_render_is_free_of_mcp).
    ("render", ("gophergem.render",)),
    ("mcp", ("gophergem.mcp",)),
    # The twisted.web side mounts the MCP endpoint (and builds the daemon's
    # site around it), so it sits above mcp/.
    ("http", ("gophergem.http",)),
    (
        "wiring",
        (
            "gophergem",
            "gophergem.__main__",
            "gophergem.service",
            "gophergem.tap",
            "gophergem.cli",
        ),
    ),
    ("testing", ("gophergem.testing",)),
]


def layer_of(name: str) -> int:
    """The index in L{LAYERS} of module C{name}."""
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{name} is in no layer: add it to LAYERS"
    return rank


def test_every_module_has_a_layer() -> None:
    """Every module of the package falls in one of the layers."""
    for name in package_modules():
        layer_of(name)


@pytest.mark.parametrize(
    ("name", "path"), sorted(package_modules().items()), ids=sorted(package_modules())
)
def test_imports_go_down(name: str, path: Path) -> None:
    """A module imports only from its own layer or a lower one (TYPE_CHECKING aside)."""
    mine = layer_of(name)
    upward = [
        f"line {i.line}: {i.target} ({LAYERS[layer_of(i.target)][0]}, {i.where})"
        for i in runtime_imports(path)
        if ours(i.target) and layer_of(i.target) > mine
    ]
    assert not upward, f"{name} ({LAYERS[mine][0]}) imports upward: {upward}"


#: What the client layer may import from gophergem (STYLE.md: wire and tls).
CLIENT_ALLOWED = (
    "gophergem._log",
    "gophergem.errors",
    "gophergem.interfaces",
    "gophergem.url",
    "gophergem.wire",
    "gophergem.tls",
    "gophergem.policy.addresses",
    "gophergem.client",
)


@pytest.mark.parametrize("path", modules("client/*.py"), ids=lambda p: p.name)
def test_client_imports_wire_and_tls(path: Path) -> None:
    """The thin clients build on wire/ and tls (and the pure address rules), nothing else."""
    for found in runtime_imports(path):
        if ours(found.target):
            assert any(
                found.target == allowed or found.target.startswith(allowed + ".")
                for allowed in CLIENT_ALLOWED
            ), f"client/{path.name}:{found.line} imports {found.target}"


@pytest.mark.parametrize(
    "path",
    [p for p in modules("**/*.py") if "testing" not in p.parts],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_tests_import_the_fakes(path: Path) -> None:
    """Nothing in the package imports gophergem.testing (it is for tests)."""
    for found in imports_in(path):
        assert not found.target.startswith("gophergem.testing"), (
            f"{relative(path)}:{found.line} imports {found.target}"
        )


# --- cycles ---------------------------------------------------------------------------------


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of gophergem it imports: at run time, lazily or for types."""
    known = package_modules()
    return {
        name: {i.target for i in imports_in(path) if i.target in known and i.target != name}
        for name, path in known.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder() -> None:
    """The cycle finder finds a circle through lazy edges and nothing in a tree."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_import_reader() -> None:
    """Imports are sorted into module level, function level and TYPE_CHECKING."""
    path = PACKAGE / "testing" / "hostile" / "_tls.py"
    found = {(i.target, i.where) for i in imports_in(path)}
    assert ("gophergem.testing", "module") in found
    assert ("gophergem.testing.hostile._engine", "type") in found
    assert ("OpenSSL", "function") in found


def test_import_graph_counts_type_imports() -> None:
    """The graph the cycle test reads has the TYPE_CHECKING edges too."""
    graph = import_graph()
    assert "gophergem.testing.hostile._engine" in graph["gophergem.testing.hostile._tls"]
    assert "gophergem.feeds.values" in graph["gophergem.interfaces"]


def test_errors_import_nothing_of_the_package() -> None:
    """
    C{errors.py}, which every module imports, imports nothing else from
    gophergem, not even for types: it cannot close a circle.
    """
    found = [
        f"line {i.line}: {i.target}" for i in imports_in(PACKAGE / "errors.py") if ours(i.target)
    ]
    assert not found, found


def test_no_import_cycles() -> None:
    """
    No two modules of gophergem import each other, directly or round a
    circle, counting lazy and TYPE_CHECKING imports.
    """
    circles = cycles(import_graph())
    assert not circles, "import circles: " + "; ".join(", ".join(c) for c in circles)


# --- test-case-name headers -----------------------------------------------------------------

_HEADER = re.compile(r"^# -\*- test-case-name: (?P<names>\S+) -\*-$", re.MULTILINE)


def headers() -> dict[str, list[str]]:
    """Module path -> the test modules its header names (an empty list: no header)."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        match = _HEADER.search(path.read_text())
        found[relative(path)] = match["names"].split(",") if match else []
    return found


def test_headers_name_existing_test_modules() -> None:
    """Every test-case-name header names test modules that exist."""
    missing = [
        f"{module} -> {name}"
        for module, names in headers().items()
        for name in names
        if not (TESTS.parent / (name.replace(".", "/") + ".py")).is_file()
    ]
    assert not missing, missing


def test_modules_with_code_have_a_header() -> None:
    """A module that defines a function or a class names its tests in a header."""
    bare = []
    for module, names in headers().items():
        tree = ast.parse((PACKAGE.parent / module).read_text())
        defines = any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for node in tree.body
        )
        if defines and not names and not module.endswith("__main__.py"):
            bare.append(module)
    assert not bare, bare


# --- private modules and names stay in their package ---------------------------------------


def package_of(name: str) -> str:
    """
    The package a module belongs to: C{gophergem.trust.pins} -> C{gophergem.trust},
    a top-level module (C{gophergem.tls}, C{gophergem._time}) is one of its own.
    """
    return ".".join(name.split(".")[:2])


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def reaches_in(name: str, source: str, *, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """
    The private modules and names of another package that module C{name}
    (of C{source}) imports, at module level, lazily or for types, as
    (line, dotted name).

    A name is private when a part of it below the first level starts with an
    underscore: C{gophergem.trust._storage}, C{gophergem.feeds.store._found},
    C{gophergem.tls._Key}.  The top-level C{gophergem._time} and its peers
    are private to the distribution, not to a package: any module may use
    their public names.
    """
    package = name if is_package else name.rpartition(".")[0]
    for node, _ in _walk(ast.parse(source), "module"):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source_module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source_module = node.module or ""
            targets = [f"{source_module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if (
                ours(target)
                and package_of(target) != package_of(name)
                and any(_is_private(part) for part in target.split(".")[2:])
            ):
                yield node.lineno, target


def test_private_reader() -> None:
    """
    A private module or name of another package is found in every import
    form (absolute, relative, lazy, for types); the same package's privates
    and the public names of the top-level private modules are not.
    """
    source = """
import gophergem.trust._storage
from gophergem.feeds.store import _found, parse_since
from gophergem.feeds import _hidden
from .._time import format_utc
from gophergem._log import _secret
from gophergem.state.postgres._runner import Runner
from ._runner import _Cursor
from ..redis import _policy
if TYPE_CHECKING:
    from gophergem.tls import _Key
def later():
    from ...trust.pins import _encode
"""
    found = [target for _, target in reaches_in("gophergem.state.postgres._pins", source)]
    assert found == [
        "gophergem.trust._storage",
        "gophergem.feeds.store._found",
        "gophergem.feeds._hidden",
        "gophergem._log._secret",
        "gophergem.tls._Key",
        "gophergem.trust.pins._encode",
    ]


def test_no_reach_into_another_packages_privates() -> None:
    """
    No module imports a C{_private} module or a C{_private} name of another
    package (a first-level subpackage or top-level module of gophergem), not
    even lazily or for types: what another package needs is public.
    """
    found = {
        f"{name} -> {target}": f"{relative(path)}:{line}"
        for name, path in package_modules().items()
        for line, target in reaches_in(
            name, path.read_text(), is_package=path.name == "__init__.py"
        )
    }
    reaches = sorted(f"{where} imports {entry}" for entry, where in found.items())
    assert not reaches, reaches


# --- what docstrings and comments cite exists -----------------------------------------------

REPOSITORY = PACKAGE.parent

#: A file of the repository cited by its path: C{tests/test_x.py},
#: C{docs/x.md}, C{bench/x.py}, C{gophergem/wire/gopher.py}, or a path inside
#: the package as its docstrings write them (C{trust/pins.py}).
_CITED_PATH = re.compile(
    r"(?<![\w./-])(?P<path>(?:gophergem|tests|docs|bench|tac|"
    + "|".join(sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()))
    + r")/[\w./-]*\w\.(?:py|md|json|tac|toml|cjs))\b"
)

#: A test module (or its helpers) cited by its dotted name.
_CITED_TEST_MODULE = re.compile(r"(?<![\w.])tests(?:\.\w+)+")


def sources() -> list[Path]:
    """
    The Python sources of the repository that cite files: package, tests,
    bench, tac; all but this module, whose examples cite missing files on
    purpose.
    """
    found = [
        *PACKAGE.rglob("*.py"),
        *TESTS.rglob("*.py"),
        *(REPOSITORY / "bench").rglob("*.py"),
        *(REPOSITORY / "tac").glob("*.tac"),
    ]
    return sorted(path for path in found if path != Path(__file__))


def _test_module_exists(dotted: str) -> bool:
    """Whether C{tests.a.b} names a module or package (what follows the module is its names)."""
    where = REPOSITORY
    for part in dotted.split("."):
        if (where / f"{part}.py").is_file():
            return True
        if not (where / part / "__init__.py").is_file():
            return False
        where = where / part
    return True


def missing_citations(text: str) -> list[str]:
    """The files and test modules C{text} cites that are not in the repository."""
    missing = [
        match["path"]
        for match in _CITED_PATH.finditer(text)
        if not (REPOSITORY / match["path"]).exists() and not (PACKAGE / match["path"]).exists()
    ]
    missing += [
        match[0] for match in _CITED_TEST_MODULE.finditer(text) if not _test_module_exists(match[0])
    ]
    return missing


def test_citation_reader() -> None:
    """Paths and dotted test modules are read as citations, URLs and home paths are not."""
    text = """
    See tests/test_layers.py, tests/test_gone.py, docs/testing.md, docs/gone.md,
    gophergem/wire/gopher.py, wire/gone.py, trust/pins.py, bench/bench_gopher.py,
    gophergem/mcp/ready_answers.json, tests.test_layers.headers, tests.servers.postgres,
    tests.test_gone, gopher://example.org/0/docs/x.md, /srv/tests/x.py, ~/docs/y.md.
    """
    assert missing_citations(text) == [
        "tests/test_gone.py",
        "docs/gone.md",
        "wire/gone.py",
        "tests.test_gone",
    ]


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_cited_files_exist(path: Path) -> None:
    """
    Every file a docstring, comment or header cites by its path (and every
    test module cited by its dotted name) exists: a move updates its citations.
    """
    missing = missing_citations(path.read_text(encoding="utf-8"))
    assert not missing, f"{path.relative_to(REPOSITORY)} cites what is not there: {missing}"
