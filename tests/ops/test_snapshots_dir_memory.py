"""``/.snapshots`` keeps no deleted snapshot alive: deleting one frees what space
accounting said, even right after the directory was listed."""

from __future__ import annotations

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations

from .conftest import Kernel
from .test_snapshots_dir import snapshots_dir

pytestmark = pytest.mark.trio


async def test_a_listed_snapshot_is_freed_when_deleted(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    fs.write_bytes("data.bin", b"1" * 5000)
    snapshot = fs.snapshot(tag="old")
    fs.write_bytes("data.bin", b"2" * 100)
    await kernel.listdir(ops, await snapshots_dir(ops))  # the directory has seen it
    (space,) = fs.space_usage().snapshots
    assert space.exclusive == 5000
    held = fs.memory_usage().held
    fs.delete_snapshot(snapshot)
    assert held - fs.memory_usage().held == space.exclusive
