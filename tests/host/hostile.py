"""Tools of the host tests: a sentinel tree outside the root, a racing swapper, the state of
a directory tree, and an environment for the git command line.

The sentinel is checksummed before and after an attack: any write, create,
chmod or delete outside the root changes the checksum. The swapper is a
second process that exchanges two names atomically (``renameat2`` with
``RENAME_EXCHANGE``) in a loop, the way an agent's process would race a
restore or an import: one moment a name is a real directory, the next a
symlink to the sentinel.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SECRET = b"SECRET-OUTSIDE-THE-ROOT"
"""Content of every sentinel file: finding it inside a workspace means it was read from outside."""

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "User",
    "GIT_AUTHOR_EMAIL": "user@example.invalid",
    "GIT_COMMITTER_NAME": "User",
    "GIT_COMMITTER_EMAIL": "user@example.invalid",
}
"""For ``git`` commands in tests: no user or system configuration, a fixed identity."""

RACE_SECONDS = float(os.environ.get("WSFS_RACE_SECONDS", "1.5"))
SLOW_RACE_SECONDS = float(os.environ.get("WSFS_SLOW_RACE_SECONDS", "8"))


def make_sentinel(base: Path) -> Path:
    """A tree outside the root that attacks aim at: files, a directory, a nested one."""
    outside = base / "outside"
    (outside / "victim").mkdir(parents=True)
    (outside / "victim" / ".bashrc").write_bytes(SECRET + b" bashrc\n")
    (outside / "dir" / "lib").mkdir(parents=True)
    (outside / "dir" / "app.py").write_bytes(SECRET + b" app\n")
    (outside / "dir" / "lib" / "util.py").write_bytes(SECRET + b" util\n")
    (outside / "dir" / "notes.txt").write_bytes(SECRET + b" notes\n")
    (outside / "etc").mkdir()
    (outside / "etc" / "passwd").write_bytes(SECRET + b" passwd\n")
    return outside


def checksum(top: Path) -> str:
    """Names, kinds, modes, owners, link targets and contents of everything below ``top``."""
    digest = hashlib.sha256()
    for current, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(current, name)
            info = os.lstat(path)
            digest.update(f"{os.path.relpath(path, top)}\0{info.st_mode:o}\0".encode())
            digest.update(f"{info.st_uid}:{info.st_gid}\0{info.st_mtime_ns}\0".encode())
            if stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
            elif stat.S_ISREG(info.st_mode):
                digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def holds_secret(top: Path) -> list[str]:
    """Regular files below ``top`` (links not followed) holding sentinel content."""
    found = []
    for current, _, files in os.walk(top):
        for name in files:
            path = os.path.join(current, name)
            regular = os.path.isfile(path) and not os.path.islink(path)
            if regular and SECRET in Path(path).read_bytes():
                found.append(os.path.relpath(path, top))
    return found


_SWAPPER = textwrap.dedent(
    """
    import ctypes, glob, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                               ctypes.c_uint]
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    pattern, other, seconds = sys.argv[1], sys.argv[2].encode(), float(sys.argv[3])
    swaps = 0
    print("ready", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name in glob.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]:
            if libc.renameat2(AT_FDCWD, name.encode(), AT_FDCWD, other, RENAME_EXCHANGE) == 0:
                swaps += 1
    print(swaps, flush=True)
    """
)


@dataclass
class Swapper:
    """How many exchanges the racing process made (set when it ends)."""

    swaps: int = 0
    process: subprocess.Popen[str] | None = field(default=None, repr=False)


@contextmanager
def swapping(pattern: str | Path, other: str | Path, seconds: float) -> Iterator[Swapper]:
    """Exchange ``pattern`` (a path, or a glob re-expanded every round) with ``other``
    in a loop for ``seconds`` in a second process; the block runs meanwhile."""
    process = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(pattern), str(other), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    result = Swapper(process=process)
    try:
        yield result
    finally:
        out, _ = process.communicate(timeout=seconds + 30)
        result.swaps = int(out.strip() or 0)


def state(root: Path, exec_bits: int = 0o111) -> dict[str, tuple[object, ...]]:
    """What a restore must bring back exactly: kinds, bytes, exec bits (whether any of
    ``exec_bits`` is set), link targets, empty directories."""
    found: dict[str, tuple[object, ...]] = {}
    for current, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(current) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir",)
            else:
                found[rel] = ("file", path.read_bytes(), os.stat(path).st_mode & exec_bits != 0)
    return found
