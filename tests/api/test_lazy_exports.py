"""``import workspacefs`` stays light: every layer, and every name of a package, loads on
first use (``workspacefs._lazy``).

Each package that exports lazily says its names twice: imported under ``TYPE_CHECKING``
for type checkers, and in ``_EXPORTS`` for the run time; these tests hold the two
together. What a fresh interpreter loads is checked in one, since this process has
imported every layer already.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
from collections.abc import Callable
from pathlib import Path

import pytest

import workspacefs
from support.interpreter import python

HEAVY = (
    "pyfuse3",
    "trio",
    "anyio",
    "pygit2",
    "re2",
    "xxhash",
    "pydantic",
    "httpx",
    "starlette",
    "hypercorn",
    "mcp",
    "typer",
    "rich",
)


def _init(package: str) -> Path:
    """The ``__init__.py`` of ``package``."""
    spec = importlib.util.find_spec(package)
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin)


def _lazy_packages() -> list[str]:
    """Every package of workspacefs whose ``__init__`` exports lazily."""
    packages = ["workspacefs"] + [
        info.name
        for info in pkgutil.walk_packages(workspacefs.__path__, "workspacefs.")
        if info.ispkg
    ]
    return sorted(name for name in packages if "lazy_exports(" in _init(name).read_text())


PACKAGES = _lazy_packages()


def _module(name: str) -> Callable[[], object]:
    return lambda: importlib.import_module(name)


def _attribute(module: str, name: str) -> Callable[[], object]:
    return lambda: getattr(importlib.import_module(module), name)


def _declared(package: str) -> dict[str, Callable[[], object]]:
    """What ``package``'s ``__init__`` imports under ``TYPE_CHECKING``: each name -> how to
    get the object it names without the package's own lookup."""
    tree = ast.parse(_init(package).read_text())
    declared: dict[str, Callable[[], object]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                continue
            module = importlib.util.resolve_name(
                "." * statement.level + (statement.module or ""), package
            )
            for alias in statement.names:
                name = alias.asname or alias.name
                if statement.module is None:  # from . import sub: the submodule itself
                    declared[name] = _module(f"{module}.{alias.name}")
                else:
                    declared[name] = _attribute(module, alias.name)
    return declared


def test_every_layer_exports_lazily() -> None:
    # The packages a command reaching a daemon goes through, and those the top level
    # names: a new one that exports eagerly loads its layer with the package.
    assert {
        "workspacefs",
        "workspacefs.archive",
        "workspacefs.daemon",
        "workspacefs.fs",
        "workspacefs.fuse",
        "workspacefs.git",
        "workspacefs.host",
        "workspacefs.posix",
        "workspacefs.store",
        "workspacefs.tree",
    } <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checkers_and_the_run_time_see_the_same_names(package: str) -> None:
    module = importlib.import_module(package)
    declared = _declared(package)
    exports = vars(module)["_EXPORTS"]
    assert sorted(exports) == sorted(declared)
    for name, expected in declared.items():
        assert getattr(module, name) is expected(), name
    assert set(declared) <= set(dir(module))
    if hasattr(module, "__all__"):
        assert sorted(module.__all__) == sorted(declared)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_loads_none_of_its_modules_until_a_name_is_used(package: str) -> None:
    out = python(
        "import json, sys\n"
        f"import {package} as package\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('workspacefs.'))\n"
        "print(json.dumps(loaded))\n"
        # Each name from a fresh start too: one whose module imports the package back
        # (a cycle the eager imports hid) would fail here.
        "for name in vars(package)['_EXPORTS']:\n"
        "    getattr(package, name)\n"
        "print('resolved')\n"
    )
    loaded, resolved = out.splitlines()
    own = {package} if package != "workspacefs" else set()
    assert set(json.loads(loaded)) == {"workspacefs._errors", "workspacefs._lazy", *own}
    assert resolved == "resolved"


def test_import_loads_no_heavy_dependency() -> None:
    out = python(f"import sys, workspacefs; print(sorted(m for m in {HEAVY} if m in sys.modules))")
    assert out == "[]"


def test_the_version_is_looked_up_on_first_use() -> None:
    out = python(
        "import sys, workspacefs\n"
        "print('importlib.metadata' in sys.modules, workspacefs.__version__)\n"
        "from importlib.metadata import version\n"
        "print(workspacefs.__version__ == version('workspacefs'))"
    )
    assert out.splitlines()[0].split()[0] == "False"
    assert out.splitlines()[1] == "True"


def test_unknown_name_is_an_attribute_error() -> None:
    missing = "no_such_name"
    assert not hasattr(workspacefs, missing)
    with pytest.raises(AttributeError, match=r"'workspacefs\.fs' has no attribute"):
        getattr(importlib.import_module("workspacefs.fs"), missing)
    out = python(
        "try:\n"
        "    from workspacefs import no_such_name\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.name)\n"
    )
    assert out == "ImportError workspacefs"


def test_the_archive_verbs_load_with_their_first_use(tmp_path: Path) -> None:
    # The in-memory backends' archive methods are the archive package's (a layer above
    # them, which registers its verbs when loaded): a program that never imported it
    # exports and imports all the same.
    archive = tmp_path / "ws.zip"
    out = python(
        "from workspacefs.fs import InMemoryFilesystem\n"
        "fs = InMemoryFilesystem()\n"
        "fs.write('a.txt', 'one\\n')\n"
        f"print(fs.export_archive({str(archive)!r}))\n"
        "copy = InMemoryFilesystem()\n"
        f"print(copy.import_archive({str(archive)!r}), copy.read('a.txt').content.strip())\n"
    )
    assert out.splitlines() == ["1", "1 one"]
