"""Another local user, to show what the workspace's owner keeps to themselves.

The tests run as root; ``nobody`` (65534) stands for any other user, and
``created_user()`` makes a real one (``useradd``) for the trust tier. pytest's
temporary directories are closed to others (``/tmp/pytest-of-root`` is 0700),
so a test that asks what another user can reach works in ``open_directory()``,
where only the modes under test stand in the way. Root passes every mode and
socket check, so the other user is never root.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from workspacefs.fuse import mounts_inside

NOBODY = 65534

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv (util-linux) to run a command as another user",
)


def run_as(
    uid: int, gid: int, *command: str | os.PathLike[str]
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as ``uid:gid`` (no supplementary groups), from ``/``."""
    setpriv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    return subprocess.run(
        [*setpriv, *map(str, command)],
        capture_output=True,
        encoding="utf-8",
        errors="replace",  # what a command reads may be binary
        check=False,
        timeout=60,
        cwd="/",
    )


def as_nobody(*command: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as nobody (no supplementary groups), from ``/``."""
    return run_as(NOBODY, NOBODY, *command)


@dataclass(frozen=True)
class OtherUser:
    """A local user that is not root: its name, uid and gid."""

    name: str
    uid: int
    gid: int

    def run(self, *command: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
        """Run ``command`` as this user (no supplementary groups), from ``/``."""
        return run_as(self.uid, self.gid, *command)

    def refused(self, *command: str | os.PathLike[str]) -> bool:
        """Whether ``command``, run as this user, fails with "Permission denied"."""
        done = self.run(*command)
        return done.returncode != 0 and "Permission denied" in done.stderr


needs_useradd = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("useradd") and shutil.which("setpriv")),
    reason="needs root, useradd and setpriv to make another user and run commands as it",
)

_LOCKED = 10
"""useradd's and userdel's exit status when another process holds /etc/passwd's lock."""


def _account(*command: str) -> None:
    """Run ``useradd``/``userdel``, again while another process holds the lock."""
    for _ in range(50):
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
        if done.returncode != _LOCKED:
            break
        time.sleep(0.1)
    assert done.returncode == 0, (command, done.stderr)


@contextlib.contextmanager
def created_user() -> Iterator[OtherUser]:
    """A new local user with a group of its own, no home and no login shell; removed,
    group and all, when the block ends."""
    name = f"wsfs-trust-{secrets.token_hex(4)}"
    _account("useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name)
    try:
        entry = pwd.getpwnam(name)
        assert entry.pw_uid != 0
        assert entry.pw_gid != 0
        yield OtherUser(name, entry.pw_uid, entry.pw_gid)
    finally:
        _account("userdel", name)


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
