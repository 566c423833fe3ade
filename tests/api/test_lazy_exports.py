"""``import workspacefs`` stays light: the FUSE, git and host layers load on first use.

Each check runs in a fresh interpreter, since this process has imported every layer already.
"""

from __future__ import annotations

import workspacefs
from support.interpreter import python

HEAVY = ("pyfuse3", "trio", "pygit2")
# What the top level exports without importing it: the layers that load HEAVY, and the
# version (importlib.metadata costs more than the package's own import).
LAZY = [
    "CachePolicy",
    "HostFilesystem",
    "Mount",
    "RemoteFilesystem",
    "__version__",
    "connect",
    "daemon",
    "fuse",
    "git",
    "host",
    "mount",
]


def test_import_loads_no_heavy_dependency() -> None:
    out = python(f"import sys, workspacefs; print(sorted(m for m in {HEAVY} if m in sys.modules))")
    assert out == "[]"


def test_every_lazy_name_resolves_to_its_home() -> None:
    out = python(
        "import sys, workspacefs\n"
        "lazy = sorted(set(dir(workspacefs)) - set(vars(workspacefs)))\n"
        "print(' '.join(lazy))\n"
        "for name in lazy:\n"
        "    getattr(workspacefs, name)\n"
        "from workspacefs import CachePolicy, HostFilesystem, Mount, git, mount\n"
        "import workspacefs.fuse, workspacefs.host\n"
        "print(mount is workspacefs.fuse.mount, Mount is workspacefs.fuse.Mount,\n"
        "      CachePolicy is workspacefs.fuse.CachePolicy,\n"
        "      HostFilesystem is workspacefs.host.HostFilesystem,\n"
        "      git is sys.modules['workspacefs.git'])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    lazy, identities, loaded = out.splitlines()
    assert lazy.split() == LAZY
    assert identities == "True True True True True"
    assert loaded == str(sorted(HEAVY))


def test_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(workspacefs, "no_such_name")
    out = python(
        "try:\n"
        "    from workspacefs import no_such_name\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.name)\n"
    )
    assert out == "ImportError workspacefs"
