"""Random syscall sequences on the mount and on a kernel filesystem give identical results."""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Mounted
from .posix import RENAME_EXCHANGE, RENAME_NOREPLACE, cached_mode, renameat2
from .treestate import tree_state

NAMES = ["a", "b", "c", "a/x", "a/y", "b/x", "a/x/deep"]


def random_op(rng: random.Random) -> tuple[str, Callable[[Path], object]]:
    """One random operation, described, as a function of the root it runs under."""
    path, other = rng.choice(NAMES), rng.choice(NAMES)
    data = rng.randbytes(rng.choice([0, 3, 100, 70_000]))
    offset = rng.choice([0, 1, 5000, 65_536, 200_000])
    size = rng.choice([0, 2, 4096, 100_000])
    mode = rng.choice([0o600, 0o644, 0o755, 0o4750])
    flags = rng.choice([0, RENAME_NOREPLACE, RENAME_EXCHANGE])

    def write(root: Path) -> object:
        fd = os.open(root / path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            return os.pwrite(fd, data, offset)
        finally:
            os.close(fd)

    def append(root: Path) -> object:
        fd = os.open(root / path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            return os.write(fd, data)
        finally:
            os.close(fd)

    def read(root: Path) -> object:
        fd = os.open(root / path, os.O_RDONLY)
        try:
            return os.pread(fd, 70_000, offset)
        finally:
            os.close(fd)

    ops: list[tuple[str, Callable[[Path], object]]] = [
        (f"write {path} {len(data)}@{offset}", write),
        (f"append {path} {len(data)}", append),
        (f"read {path} @{offset}", read),
        (f"truncate {path} {size}", lambda root: os.truncate(root / path, size)),
        (f"rename {path} {other} {flags}", lambda root: renameat2(
            str(root / path), str(root / other), flags)),
        (f"link {path} {other}", lambda root: os.link(root / path, root / other)),
        (f"unlink {path}", lambda root: os.unlink(root / path)),
        (f"mkdir {path}", lambda root: os.mkdir(root / path)),
        (f"rmdir {path}", lambda root: os.rmdir(root / path)),
        (f"chmod {path} {mode:o}", lambda root: os.chmod(root / path, mode)),
        (f"utime {path}", lambda root: os.utime(root / path, ns=(offset, size))),
        (f"symlink {path} -> {other}", lambda root: os.symlink(other, root / path)),
        (f"stat {path}", lambda root: _stat_view(os.lstat(root / path))),
        (f"listdir {path}", lambda root: sorted(os.listdir(root / path))),
    ]  # fmt: skip
    return rng.choice(ops)


def _stat_view(info: os.stat_result) -> tuple[int, ...]:
    """What stat shows that must agree (directory sizes differ between filesystems)."""
    size = 0 if stat.S_ISDIR(info.st_mode) else info.st_size
    return (info.st_mode, info.st_nlink, size)


def outcome(action: Callable[[Path], object], root: Path) -> object:
    try:
        return ("ok", action(root))
    except OSError as exc:
        return ("error", exc.errno)


@pytest.mark.parametrize("seed", range(12))
def test_random_syscalls_match_kernel(seed: int, mounted: Mounted, plain_dir: Path) -> None:
    rng = random.Random(seed)
    log = []
    for _ in range(150):
        description, action = random_op(rng)
        log.append(description)
        expected = outcome(action, plain_dir)
        got = outcome(action, mounted.root)
        assert got == expected, f"after {log}"
        assert tree_state(mounted.root) == tree_state(plain_dir), f"after {log}"


# -- set-user-ID and set-group-ID bits -------------------------------------------
# A write or truncate by a process without CAP_FSETID clears them (set-group-ID
# only with group execution, or for a writer outside the group). The kernel
# does it for page-cache writes; for direct_io writes and atomic O_TRUNC opens
# the mount must, and must tell the kernel, whose cached mode would otherwise
# keep the bits (exec trusts that cached mode).

USER, GROUP, OTHER_GROUP = 1000, 1000, 2000
_SYSTEM_PYTHON = "/usr/bin/python3"  # USER may not reach a virtualenv's interpreter

SET_ID_ACTIONS = {
    "write": "fd = os.open(p, os.O_WRONLY); os.write(fd, b'zz'); os.close(fd)",
    "write-rdwr": "fd = os.open(p, os.O_RDWR); os.write(fd, b'zz'); os.close(fd)",
    "append": "fd = os.open(p, os.O_WRONLY | os.O_APPEND); os.write(fd, b'zz'); os.close(fd)",
    "truncate": "os.truncate(p, 1)",
    "ftruncate": "fd = os.open(p, os.O_WRONLY); os.ftruncate(fd, 1); os.close(fd)",
    "open-trunc": "os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))",
    "open-trunc-rdwr": "os.close(os.open(p, os.O_RDWR | os.O_TRUNC))",
    "open-trunc-empty": "os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))",
}
SET_ID_MODES = [0o4755, 0o2775, 0o2765, 0o6777, 0o4744]


# FUSE's setattr, which clears the bits for every write the kernel sees, keeps
# set-group-ID without group execution even for a writer outside the group
# (fs/fuse/dir.c), unlike the VFS rule tmpfs follows; the mount follows FUSE's
# rule everywhere, so that one case is left out.
def _set_id_files(root: Path) -> list[str]:
    """One file per (action, mode, group), owned by USER, with its set-ID bits on."""
    names = []
    for action in SET_ID_ACTIONS:
        for mode in SET_ID_MODES:
            for group in (GROUP, OTHER_GROUP):
                if group == OTHER_GROUP and not mode & 0o010:
                    continue
                name = f"{action}-{mode:o}-{group}"
                (root / name).write_bytes(b"" if action.endswith("-empty") else b"hello")
                os.chown(root / name, USER, group)
                os.chmod(root / name, mode)  # after chown, which clears the bits
                os.stat(root / name)  # the kernel caches the attributes
                names.append(name)
    return names


def _run_set_id_actions(root: Path, names: list[str], *, as_user: bool) -> None:
    """Each file's action, in a child process (USER, or root), through a directory fd
    (the test's parent directories are closed to USER)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        plan = [(f"/proc/self/fd/{fd}/{name}", SET_ID_ACTIONS[name.rsplit("-", 2)[0]])
                for name in names]  # fmt: skip
        code = "import json, os, sys\nfor p, action in json.load(sys.stdin):\n    exec(action)\n"
        identity = {"user": USER, "group": GROUP, "extra_groups": []} if as_user else {}
        subprocess.run(
            [_SYSTEM_PYTHON if as_user else sys.executable, "-c", code],
            input=json.dumps(plan),
            text=True,
            pass_fds=(fd,),
            check=True,
            **identity,
        )  # type: ignore[call-overload]
    finally:
        os.close(fd)


def _modes(root: Path, names: list[str]) -> dict[str, tuple[str, str, int]]:
    """Per file: the mode the kernel has cached, its mode, its size (asked in that
    order: stat refetches what a write made stale)."""
    found = {}
    for name in names:
        cached = oct(cached_mode(str(root / name)))
        info = os.stat(root / name)
        found[name] = (cached, oct(info.st_mode), info.st_size)
    return found


@pytest.mark.parametrize("as_user", [True, False], ids=["unprivileged", "root"])
def test_writes_and_truncates_clear_set_id_bits_like_the_kernel(
    as_user: bool, mounted: Mounted, plain_dir: Path
) -> None:
    if not os.access(_SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{_SYSTEM_PYTHON} is missing (apt-get install python3)")
    before, after = {}, {}
    for root in (plain_dir, mounted.root):
        names = _set_id_files(root)
        before[root] = _modes(root, names)
        _run_set_id_actions(root, names, as_user=as_user)
        after[root] = _modes(root, names)
    assert after[mounted.root] == after[plain_dir]
    # Not vacuous: unprivileged, most cases clear bits; as root, none does.
    changed = {
        name for name, modes in after[plain_dir].items() if modes[1] != before[plain_dir][name][1]
    }
    assert bool(changed) == as_user
