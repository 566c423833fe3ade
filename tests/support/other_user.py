"""Another local user, to show what the workspace's owner keeps to themselves.

The tests run as root; ``nobody`` (65534) stands for any other user. pytest's
temporary directories are closed to others (``/tmp/pytest-of-root`` is 0700),
so a test that asks what another user can reach works in ``open_directory()``,
where only the modes under test stand in the way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs.fuse import mounts_inside

NOBODY = 65534

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv (util-linux) to run a command as another user",
)


def as_nobody(*command: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as nobody (no supplementary groups), from ``/``."""
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*setpriv, *map(str, command)],
        capture_output=True,
        encoding="utf-8",
        errors="replace",  # what a command reads may be binary
        check=False,
        timeout=60,
        cwd="/",
    )


def refused(*command: str | os.PathLike[str]) -> bool:
    """Whether ``command``, run as nobody, fails with "Permission denied"."""
    done = as_nobody(*command)
    return done.returncode != 0 and "Permission denied" in done.stderr


@contextlib.contextmanager
def open_directory() -> Iterator[Path]:
    """A new directory every user may enter and list (0755, in /tmp); removed afterwards
    unless something is still mounted in it."""
    base = Path(tempfile.mkdtemp(prefix="wsfs-open-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        if not mounts_inside(str(base)):
            shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def umask(value: int) -> Iterator[None]:
    """The process's umask is ``value`` until the block ends."""
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


def modes_under(path: Path) -> set[int]:
    """The permission bits of ``path`` and of everything below it."""
    found = {stat.S_IMODE(path.lstat().st_mode)}
    for child in path.rglob("*"):
        found.add(stat.S_IMODE(child.lstat().st_mode))
    return found
