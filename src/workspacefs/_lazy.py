"""Lazy re-exports (PEP 562): a package's public names load their modules on first use.

A package's ``__init__`` names what it exports and where each is defined, and
imports nothing: ``import workspacefs`` and a command that needs one verb do not
pay for the tree, pygit2, trio or pyfuse3 until something uses them. The same
names are imported under ``TYPE_CHECKING`` for type checkers (and readers);
tests/api/test_lazy_exports.py checks that both lists agree, in every package.

Standard library only, like ``_errors``: every layer may use it.
"""

from __future__ import annotations

import sys
from importlib import import_module

TYPE_CHECKING = False  # not ``typing``'s: importing typing costs more than this package
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` that give ``package`` the names of
    ``exports``, each imported the first time it is looked up.

    Args:
        package: The package's ``__name__``.
        exports: Each public name -> the module defining it, relative to ``package``
            (``"._memory"``, ``"..tree"``); ``"module:name"`` where the name
            differs there; a name whose module is ``"." + name`` is that
            subpackage or module itself.

    Returns:
        ``(__getattr__, __dir__)``, to assign at the package's top level (hidden
        from type checkers, which read the ``TYPE_CHECKING`` imports instead: a
        module ``__getattr__`` would make them accept any name).
    """
    namespace = vars(sys.modules[package])

    def lookup(name: str) -> object:
        try:
            where = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module_name, _, attribute = where.partition(":")
        module = import_module(module_name, package)
        if module_name == f".{name}":
            value: object = module
        else:
            value = getattr(module, attribute or name)
        namespace[name] = value  # the next lookup is an ordinary attribute
        return value

    def names() -> list[str]:
        return sorted({*namespace, *exports})

    return lookup, names
