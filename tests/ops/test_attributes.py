"""Attribute replies: one stat record per node, whichever way pyfuse3 lets it be built."""

from __future__ import annotations

import os
import stat

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import CachePolicy, WorkspaceOperations, _attributes
from workspacefs.fuse._attributes import entry_attributes
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel

pytestmark = pytest.mark.trio

NS = 1_000_000_000


def nodes_of_every_kind(fs: InMemoryFilesystem) -> list[int]:
    """A file with data, a directory, a symlink, a fifo and a device (with rdev), with
    times before 1970, at a whole second, with nanoseconds, and thousands of years
    away."""
    tree = fs.tree
    with tree.lock:
        file = tree.create(ROOT_INO, "f", 0o4755, uid=1000, gid=100)
        tree.write(file, 0, b"x" * 70_000)
        directory = tree.mkdir(ROOT_INO, "d", 0o2775)
        link = tree.symlink(ROOT_INO, "l", "f")
        fifo = tree.mknod(ROOT_INO, "p", stat.S_IFIFO | 0o600)
        device = tree.mknod(ROOT_INO, "c", stat.S_IFCHR | 0o660, os.makedev(4, 64))
        tree.setattr(file, atime_ns=-1, mtime_ns=-NS - 1, ctime_ns=5 * NS)
        tree.setattr(device, atime_ns=-NS, mtime_ns=NS + 999_999_999, ctime_ns=0)
        # Past what 64 bits of nanoseconds hold (touch -d takes such years).
        tree.setattr(directory, atime_ns=2**40 * NS + 1, mtime_ns=-(2**40) * NS - 1)
    return [file, directory, link, fifo, device, ROOT_INO]


@pytest.mark.skipif(
    _attributes._set_stat is None, reason="needs the patched pyfuse3 (scripts/setup.sh)"
)
async def test_set_stat_builds_the_record_field_by_field_assignment_does(
    fs: InMemoryFilesystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    inodes = nodes_of_every_kind(fs)
    policy = CachePolicy(entry_timeout=7.5, attr_timeout=2)
    fast = [entry_attributes(ino, fs.tree.node(ino), policy).__getstate__() for ino in inodes]
    monkeypatch.setattr(_attributes, "_set_stat", None)
    slow = [entry_attributes(ino, fs.tree.node(ino), policy).__getstate__() for ino in inodes]
    assert fast == slow
    file = fast[0]
    assert (file["st_atime_ns"], file["st_mtime_ns"], file["st_ctime_ns"]) == (-1, -NS - 1, 5 * NS)
    assert (fast[4]["st_rdev"], fast[4]["st_mtime_ns"]) == (os.makedev(4, 64), 2 * NS - 1)
    assert fast[1]["st_mtime_ns"] == -(2**40) * NS - 1


@pytest.mark.parametrize(
    "policy", [CachePolicy(), CachePolicy(entry_timeout=0, attr_timeout=1.5)], ids=str
)
async def test_replies_carry_the_policys_timeouts(
    fs: InMemoryFilesystem, kernel: Kernel, policy: CachePolicy
) -> None:
    ops = WorkspaceOperations(fs.tree, cache=policy)
    kernel.watch(ops)
    _, created = await ops.create(ROOT_INO, b"f", stat.S_IFREG | 0o644, os.O_WRONLY, CTX)
    replies = [
        created,
        await ops.lookup(ROOT_INO, b"f", CTX),
        await ops.getattr(created.st_ino, CTX),
        await ops.mkdir(ROOT_INO, b"d", 0o755, CTX),
    ]
    for reply in replies:
        assert (reply.entry_timeout, reply.attr_timeout) == (
            policy.entry_timeout,
            policy.attr_timeout,
        )
    assert isinstance(replies[0], pyfuse3.EntryAttributes)
