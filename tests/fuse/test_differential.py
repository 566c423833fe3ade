"""Random syscall sequences on the mount and on a kernel filesystem give identical results."""

from __future__ import annotations

import errno
import json
import os
import random
import stat
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs.fuse import fuse_mounts
from workspacefs.fuse._features import FALLOCATE, OPEN_FREE

from .conftest import Mounted
from .posix import (
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,
    FALLOC_FL_ZERO_RANGE,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    RENAME_WHITEOUT,
    cached_mode,
    fallocate,
    renameat2,
)
from .treestate import tree_state

NAMES = ["a", "b", "c", "a/x", "a/y", "b/x", "a/x/deep"]


def random_op(rng: random.Random) -> tuple[str, Callable[[Path], object]]:
    """One random operation, described, as a function of the root it runs under."""
    path, other = rng.choice(NAMES), rng.choice(NAMES)
    data = rng.randbytes(rng.choice([0, 3, 100, 70_000]))
    offset = rng.choice([0, 1, 5000, 65_536, 200_000])
    size = rng.choice([0, 2, 4096, 100_000])
    mode = rng.choice([0o600, 0o644, 0o755, 0o4750])
    flags = rng.choice([0, RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT])
    falloc = rng.choice(FALLOCATE_MODES)

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

    def allocate(root: Path) -> object:
        fd = os.open(root / path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            zero_range_or(fd, falloc, offset, size, emulate=str(root) not in fuse_mounts())
            return os.fstat(fd).st_size
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
        (f"fallocate {path} {falloc:#x} {size}@{offset}", allocate),
        (
            f"rename {path} {other} {flags}",
            lambda root: renameat2(str(root / path), str(root / other), flags),
        ),
        (f"link {path} {other}", lambda root: os.link(root / path, root / other)),
        (f"unlink {path}", lambda root: os.unlink(root / path)),
        (f"mkdir {path}", lambda root: os.mkdir(root / path)),
        (f"rmdir {path}", lambda root: os.rmdir(root / path)),
        (f"chmod {path} {mode:o}", lambda root: os.chmod(root / path, mode)),
        (f"utime {path}", lambda root: os.utime(root / path, ns=(offset, size))),
        (f"symlink {path} -> {other}", lambda root: os.symlink(other, root / path)),
        (f"stat {path}", lambda root: _stat_view(os.lstat(root / path))),
        (f"listdir {path}", lambda root: sorted(os.listdir(root / path))),
    ]
    if not FALLOCATE:  # a stock pyfuse3: EOPNOTSUPP on the mount
        ops = [op for op in ops if not op[0].startswith("fallocate")]
    return rng.choice(ops)


FALLOCATE_MODES = [
    0,
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,  # refused: a hole must keep the size
    FALLOC_FL_ZERO_RANGE,
    FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
]


def zero_range_or(fd: int, mode: int, offset: int, length: int, *, emulate: bool) -> None:
    """fallocate(2); with ``emulate``, ZERO_RANGE as what it means (tmpfs lacks it):
    punch a hole, then extend the size unless KEEP_SIZE."""
    if not (emulate and mode & FALLOC_FL_ZERO_RANGE):
        fallocate(fd, mode, offset, length)
        return
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length)
    if not mode & FALLOC_FL_KEEP_SIZE and os.fstat(fd).st_size < offset + length:
        os.ftruncate(fd, offset + length)


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
        got = outcome(action, mounted.root)
        if got == ("error", errno.EINVAL) and description.endswith(f" {RENAME_WHITEOUT}"):
            # tmpfs leaves a whiteout (a 0:0 character device) the mount cannot make, so the
            # mount refuses the flag and changes nothing.
            assert tree_state(mounted.root) == tree_state(plain_dir), f"after {log}"
            continue
        expected = outcome(action, plain_dir)
        assert got == expected, f"after {log}"
        assert tree_state(mounted.root) == tree_state(plain_dir), f"after {log}"


# -- set-user-ID and set-group-ID bits, file capabilities -------------------------
# A write or truncate by a process without CAP_FSETID clears them (set-group-ID
# only with group execution, or for a writer outside the group), and so does
# every chown; every write, truncate and chown drops file capabilities. The
# kernel does it for page-cache writes and setattr; for direct_io writes and
# atomic O_TRUNC opens the mount must, and must tell the kernel, whose cached
# mode would otherwise keep the bits (exec trusts that cached mode). With
# HANDLE_KILLPRIV_V2 (``killpriv_mounted``) the mount does all of it, as the
# kernel asks.

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


def _run_set_id_actions(
    root: Path, names: list[str], *, as_user: bool, actions: dict[str, str] = SET_ID_ACTIONS
) -> None:
    """Each file's action (``actions`` by the name's first part), in a child process
    (USER, or root), through a directory fd (the test's parent directories are closed
    to USER)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        plan = [(f"/proc/self/fd/{fd}/{name}", actions[name.rsplit("-", 2)[0]]) for name in names]
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
    as_user: bool, killpriv_mounted: Mounted, plain_dir: Path
) -> None:
    if not os.access(_SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{_SYSTEM_PYTHON} is missing (apt-get install python3)")
    mounted = killpriv_mounted
    before, after = {}, {}
    for root in (plain_dir, mounted.root):
        os.chmod(root, 0o755)  # the unprivileged writer gets in, as into a fresh directory
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


CHOWN_ACTIONS = {
    "chown": f"os.chown(p, {USER}, {GROUP})",
    "fchown": f"fd = os.open(p, os.O_RDONLY); os.fchown(fd, {USER}, {GROUP}); os.close(fd)",
    "chown-unchanged": "os.chown(p, -1, -1)",
    "chgrp": f"os.chown(p, -1, {GROUP})",
}
CHOWN_MODES = [0o4755, 0o2775, 0o2765, 0o6777, 0o6755, 0o4644]


def _chown_files(root: Path) -> list[str]:
    """Per (action, mode, kind): a file or directory owned by USER with set-ID bits,
    in a group USER is not in, save where set-group-ID goes without group execution
    (FUSE's rule and the VFS's differ there, see ``_set_id_files``)."""
    names = []
    for action in CHOWN_ACTIONS:
        for mode in CHOWN_MODES:
            for kind in ("file", "dir"):
                name = f"{action}-{mode:o}-{kind}"
                if kind == "dir":
                    (root / name).mkdir()
                else:
                    (root / name).write_bytes(b"hello")
                os.chown(root / name, USER, OTHER_GROUP if mode & 0o010 else GROUP)
                os.chmod(root / name, mode)
                os.stat(root / name)  # the kernel caches the attributes
                names.append(name)
    return names


@pytest.mark.parametrize("as_user", [True, False], ids=["owner", "root"])
def test_chown_clears_set_id_bits_like_the_kernel(
    as_user: bool, killpriv_mounted: Mounted, plain_dir: Path
) -> None:
    """A chown of a file clears set-user-ID, and set-group-ID with group execution,
    whoever calls it (even with both ids -1); a directory keeps them."""
    if not os.access(_SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{_SYSTEM_PYTHON} is missing (apt-get install python3)")
    mounted = killpriv_mounted
    after = {}
    for root in (plain_dir, mounted.root):
        os.chmod(root, 0o755)
        names = _chown_files(root)
        # The owner may give a file to its own group (GROUP), nothing more.
        _run_set_id_actions(root, names, as_user=as_user, actions=CHOWN_ACTIONS)
        after[root] = {
            name: (oct(cached_mode(str(root / name))), oct(os.stat(root / name).st_mode))
            for name in names
        }
    assert after[mounted.root] == after[plain_dir]
    cleared = {name for name, (_, mode) in after[plain_dir].items() if not int(mode, 8) & 0o6000}
    assert any(name.endswith("-file") for name in cleared)  # not vacuous
    assert not any(name.endswith("-dir") for name in cleared)


FILE_CAPABILITIES = "security.capability"
# A valid capability set (VFS_CAP_REVISION_2, cap_net_raw permitted and effective).
CAPABILITY_SET = struct.pack("<5I", 0x02000001, 1 << 13, 0, 0, 0)
CAPABILITY_ACTIONS: dict[str, Callable[[Path], object]] = {
    "write": lambda p: _write_with(p, os.O_WRONLY),
    "write-rdwr": lambda p: _write_with(p, os.O_RDWR),
    "append": lambda p: _write_with(p, os.O_WRONLY | os.O_APPEND),
    "truncate": lambda p: os.truncate(p, 1),
    "ftruncate": lambda p: _ftruncate(p),
    "open-trunc": lambda p: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC)),
    "chown": lambda p: os.chown(p, USER, GROUP),
    "chown-unchanged": lambda p: os.chown(p, -1, -1),
    "read": lambda p: p.read_bytes(),
}


def _write_with(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.write(fd, b"zz")
    finally:
        os.close(fd)


def _ftruncate(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, 1)
    finally:
        os.close(fd)


def _capabilities(path: Path) -> bytes | None:
    try:
        return os.getxattr(path, FILE_CAPABILITIES)
    except OSError as exc:
        if exc.errno != errno.ENODATA:
            raise
        return None


def test_writes_truncates_and_chowns_drop_file_capabilities_like_the_kernel(
    killpriv_mounted: Mounted, plain_dir: Path
) -> None:
    """Every write, truncate and chown drops a file's capabilities (setcap(8)), root's
    too, also through a write-only descriptor of a file just created (direct_io on the
    mount) and an open that truncates; a read keeps them. (Files without set-ID bits:
    with HANDLE_KILLPRIV_V2 root's page-cache write to a set-user-ID file with
    capabilities clears the bit, see ``_kills_privileges``.)"""
    mounted, mode = killpriv_mounted, 0o755
    after: dict[Path, dict[str, tuple[bool, str]]] = {}
    for root in (plain_dir, mounted.root):
        after[root] = {}
        for name, action in CAPABILITY_ACTIONS.items():
            path = root / name
            path.write_bytes(b"hello")
            os.chmod(path, mode)
            os.setxattr(path, FILE_CAPABILITIES, CAPABILITY_SET)
            action(path)
            after[root][name] = (_capabilities(path) is not None, oct(os.stat(path).st_mode))
        # Created write-only, given capabilities, written: one descriptor throughout.
        path = root / "created"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"hello")
            os.fchmod(fd, mode)
            os.setxattr(fd, FILE_CAPABILITIES, CAPABILITY_SET)
            os.write(fd, b"zz")
        finally:
            os.close(fd)
        after[root]["created"] = (_capabilities(path) is not None, oct(os.stat(path).st_mode))
    assert after[mounted.root] == after[plain_dir]
    assert after[plain_dir]["read"][0]  # not vacuous
    assert not after[plain_dir]["created"][0]


# -- opens without requests, listings the kernel caches ---------------------------
# In open-free mode (the patched pyfuse3) the kernel opens files and directories
# on its own: O_TRUNC reaches the mount as a SETATTR, O_APPEND only as the
# flags of a write, and listings are served from the kernel's cache.


Action = Callable[..., object]


def _descriptor_ops(rng: random.Random, names: list[str]) -> list[tuple[str, Action]]:
    """Random opens (every access mode, O_TRUNC, O_APPEND) and I/O on descriptors
    that stay open across each other's writes."""
    ops: list[tuple[str, Action]] = []
    for _ in range(120):
        name = rng.choice(names)
        slot = rng.randrange(4)
        data = rng.randbytes(rng.choice([1, 10, 5000, 70_000]))
        offset = rng.choice([0, 3, 4096, 100_000])
        mode = rng.choice([os.O_RDONLY, os.O_WRONLY, os.O_RDWR])
        extra = rng.choice([0, os.O_TRUNC, os.O_APPEND, os.O_APPEND | os.O_TRUNC])
        choices: list[tuple[str, Action]] = [
            (
                f"open {slot} {name} {mode}|{extra:o}",
                lambda root, fds, n=name, s=slot, f=mode | extra: _reopen(fds, s, root / n, f),
            ),
            (f"write {slot} {len(data)}", lambda root, fds, s=slot, d=data: os.write(fds[s], d)),
            (
                f"pwrite {slot} {len(data)}@{offset}",
                lambda root, fds, s=slot, d=data, o=offset: os.pwrite(fds[s], d, o),
            ),
            (f"read {slot}", lambda root, fds, s=slot: os.read(fds[s], 70_000)),
            (
                f"pread {slot} @{offset}",
                lambda root, fds, s=slot, o=offset: os.pread(fds[s], 9000, o),
            ),
            (
                f"ftruncate {slot} {offset}",
                lambda root, fds, s=slot, o=offset: os.ftruncate(fds[s], o),
            ),
            (f"fstat {slot}", lambda root, fds, s=slot: os.fstat(fds[s]).st_size),
            (f"cat {name}", lambda root, fds, n=name: (root / n).read_bytes()),
        ]
        ops.append(rng.choice(choices))
    return ops


def _reopen(fds: dict[int, int], slot: int, path: Path, flags: int) -> int:
    if slot in fds:
        os.close(fds.pop(slot))
    fds[slot] = os.open(path, flags)
    return slot


@pytest.mark.parametrize("seed", range(6))
def test_descriptors_with_o_trunc_and_o_append_match_kernel(
    seed: int, mounted: Mounted, plain_dir: Path
) -> None:
    names = ["a", "b"]
    for name in names:  # through the API: no create (and later release) request
        (plain_dir / name).write_bytes(b"initial contents\n" * 100)
        mounted.fs.write_bytes(name, b"initial contents\n" * 100)
    before = mounted.handle.stats()
    log = []
    descriptors: dict[Path, dict[int, int]] = {plain_dir: {}, mounted.root: {}}
    try:
        for description, action in _descriptor_ops(random.Random(seed), names):
            log.append(description)
            results = []
            for root in (plain_dir, mounted.root):
                try:
                    results.append(("ok", action(root, descriptors[root])))
                except (OSError, KeyError) as exc:  # KeyError: no such descriptor yet
                    results.append(("error", getattr(exc, "errno", "no fd")))
            assert results[1] == results[0], f"after {log}"
            assert tree_state(mounted.root) == tree_state(plain_dir), f"after {log}"
    finally:
        for fds in descriptors.values():
            for fd in fds.values():
                os.close(fd)
    if OPEN_FREE:  # and no request opened or released any of those descriptors
        during = mounted.handle.stats() - before
        assert during.counts.get("open", 0) <= 1, during.summary()  # the first says ENOSYS
        assert "release" not in during.counts, during.summary()


def _churn(rng: random.Random, root: Path, tag: int) -> tuple[str, set[str]]:
    """One random change in ``root/d`` (or across its border), the same on any root:
    its description and the names in ``d`` it touched."""
    d = root / "d"
    names = sorted(os.listdir(d))
    files = [name for name in names if not (d / name).is_dir()]
    choice = rng.randrange(7)
    if choice == 0 or not files:
        (d / f"new{tag}").write_text("x")
        return f"create new{tag}", {f"new{tag}"}
    name = rng.choice(files)
    if choice == 1:
        os.unlink(d / name)
        return f"unlink {name}", {name}
    if choice == 2:
        os.rename(d / name, d / f"renamed{tag}")
        return f"rename {name}", {name, f"renamed{tag}"}
    if choice == 3:
        os.rename(d / name, root / f"out{tag}")
        return f"move out {name}", {name}
    if choice == 4:
        os.link(d / name, d / f"link{tag}")
        return f"link {name}", {f"link{tag}"}
    if choice == 5:
        os.mkdir(d / f"sub{tag}")
        return f"mkdir sub{tag}", {f"sub{tag}"}
    outside = sorted(n for n in os.listdir(root) if n.startswith("out"))
    if outside:
        os.rename(root / outside[0], d / f"back{tag}")
        return f"move in {outside[0]}", {f"back{tag}"}
    return "nothing", set()


def _populate(root: Path, count: int) -> None:
    (root / "d").mkdir()
    for i in range(count):  # long names: several getdents and readdir buffers
        (root / "d" / f"file-with-a-rather-longer-name-{i:05d}").write_text(str(i))


@pytest.mark.parametrize("seed", range(4))
def test_cached_listings_follow_every_change(seed: int, mounted: Mounted, plain_dir: Path) -> None:
    """Listings (cached by the kernel in open-free mode) show every change at once."""
    for root in (plain_dir, mounted.root):
        _populate(root, 300)
    rngs = {root: random.Random(seed) for root in (plain_dir, mounted.root)}
    log = []
    for step in range(80):
        changes = {root: _churn(rngs[root], root, step)[0] for root in rngs}
        log.append(changes[plain_dir])
        assert changes[mounted.root] == changes[plain_dir], f"after {log}"
        for sub in ("d", "."):
            mine, kernels = os.listdir(mounted.root / sub), os.listdir(plain_dir / sub)
            assert sorted(mine) == sorted(kernels), f"after {log}"


@pytest.mark.parametrize("seed", range(3))
def test_listings_spanning_changes_return_untouched_entries_once(
    seed: int, mounted: Mounted
) -> None:
    """POSIX leaves entries added or removed during a listing open; every other one
    is returned exactly once, whatever the kernel caches or asks for again."""
    d = mounted.root / "d"
    names = {f"file-with-a-rather-longer-name-{i:05d}" for i in range(3000)}
    with mounted.fs.transaction() as tree:  # fast: several getdents and readdir buffers
        directory = tree.mkdir(1, "d")
        for name in names:
            tree.create(directory, name)
    rng = random.Random(seed)
    for round_ in range(3):
        before = set(os.listdir(d))
        seen: list[str] = []
        touched: set[str] = set()
        with os.scandir(d) as entries:
            for index, entry in enumerate(entries):
                seen.append(entry.name)
                if index % 700 != 10:
                    continue
                for change in range(20):  # through the mount and through the API
                    old, new = rng.choice(sorted(names)), f"new-{round_}-{index}-{change}"
                    action = rng.randrange(4)
                    if action == 0:
                        os.rename(d / old, d / new)
                        names ^= {old, new}
                    elif action == 1:
                        os.unlink(d / old)
                        names.remove(old)
                    elif action == 2:
                        mounted.fs.delete(f"d/{old}")
                        names.remove(old)
                    else:
                        mounted.fs.write(f"d/{new}", "")
                        names.add(new)
                    touched |= {old, new} if action != 3 else {new}
        left_alone = before - touched
        assert len(seen) == len(set(seen)), "an entry was listed twice"
        assert left_alone <= set(seen), f"skipped {sorted(left_alone - set(seen))[:5]}"
        assert set(os.listdir(d)) == names
