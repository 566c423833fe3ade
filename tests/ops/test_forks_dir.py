"""The hidden ``/.forks`` directory: forks served by the handlers, each a tree of its own."""

from __future__ import annotations

import errno
import os
import stat

import pyfuse3
import pytest

from support.consistency import check_consistent
from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.fuse._features import OPEN_FREE
from workspacefs.fuse._forks_dir import ForksDir
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, create_file, fuse_error, read_all
from .test_open_free import list_all

pytestmark = pytest.mark.trio


def held_in(kernel: Kernel, base: int) -> set[int]:
    """The fork's own numbers of the inodes the kernel holds in its range."""
    return {
        ino - base for ino, n in kernel.counts.items() if n > 0 and base <= ino < base + (1 << 36)
    }


@pytest.fixture
def fork(fs: InMemoryFilesystem) -> InMemoryFilesystem:
    """A fork of ``fs``, which holds ``src/app.py``."""
    fs.write("src/app.py", "origin")
    return fs.fork()


async def forks_dir(ops: WorkspaceOperations) -> int:
    entry = await ops.lookup(ROOT_INO, b".forks", CTX)
    assert entry.st_ino == ForksDir.INO
    return entry.st_ino


async def fork_root(ops: WorkspaceOperations, name: bytes) -> int:
    entry = await ops.lookup(ForksDir.INO, name, CTX)
    assert entry.st_ino, f"fork {name!r} is found by name"
    return entry.st_ino


async def test_found_by_name_never_listed(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    entry = await ops.lookup(ROOT_INO, b".forks", CTX)
    assert entry.st_mode == stat.S_IFDIR | 0o555
    assert entry.attr_timeout == 0  # its listing changes without invalidation
    assert b".forks" not in [e.name for e in await kernel.listdir(ops, ROOT_INO)]
    assert [e.name for e in await kernel.listdir(ops, ForksDir.INO)] == [b".", b".."]
    before = (await ops.getattr(ForksDir.INO, CTX)).st_mtime_ns
    ops.add_fork("try-1", fork.tree)
    assert (await ops.getattr(ForksDir.INO, CTX)).st_mtime_ns > before
    listed = await kernel.listdir(ops, ForksDir.INO)
    assert [e.name for e in listed] == [b".", b"..", b"try-1"]
    assert listed[1].attributes.st_ino == ROOT_INO
    root = listed[2].attributes.st_ino
    assert root == await fork_root(ops, b"try-1")
    assert (await ops.lookup(root, b"..", CTX)).st_ino == ForksDir.INO
    with fuse_error(pyfuse3.ENOATTR):
        await ops.getxattr(ForksDir.INO, b"user.x", CTX)
    assert await ops.listxattr(ForksDir.INO, CTX) == []
    missing = await ops.lookup(ForksDir.INO, b"later", CTX)
    assert (missing.st_ino, missing.entry_timeout) == (0, 0)  # a later fork shows at once
    check_consistent(fork.tree, held=held_in(kernel, root - ROOT_INO))


async def test_a_real_entry_named_forks_wins(
    fs: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    fs.write(".forks/mine.txt", "a real directory")
    entry = await ops.lookup(ROOT_INO, b".forks", CTX)
    assert entry.st_ino != ForksDir.INO
    assert (await ops.lookup(entry.st_ino, b"mine.txt", CTX)).st_ino


async def test_writes_in_a_fork_stay_in_the_fork(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    served = ops.add_fork("f", fork.tree)
    root = await fork_root(ops, b"f")
    src = (await ops.lookup(root, b"src", CTX)).st_ino
    app = (await ops.lookup(src, b"app.py", CTX)).st_ino
    assert served.base < app < served.base + (1 << 36)
    assert await read_all(ops, app) == b"origin"
    info = await ops.open(app, os.O_WRONLY | os.O_TRUNC, CTX)
    await ops.write(info.fh, 0, b"fork")
    await ops.release(info.fh)
    new = await create_file(ops, src, b"new.py", b"new")
    await ops.mkdir(root, b"build", 0o755, CTX)
    await ops.rename(src, b"new.py", root, b"moved.py", 0, CTX)
    assert fork.read("src/app.py").content == "fork"
    assert fork.read("moved.py").content == "new"
    assert fork.exists("build")
    assert fs.read("src/app.py").content == "origin"
    assert not fs.exists("moved.py")
    assert not fs.exists("build")
    # The origin's inodes are its own: the same file, another number.
    live_src = (await ops.lookup(ROOT_INO, b"src", CTX)).st_ino
    live_app = (await ops.lookup(live_src, b"app.py", CTX)).st_ino
    assert live_app == app - served.base
    assert await read_all(ops, live_app) == b"origin"
    await ops.unlink(root, b"moved.py", CTX)
    assert set(fork.tree.orphans) == {new - served.base}  # the kernel still holds it
    check_consistent(fork.tree, held=held_in(kernel, served.base))


async def test_renames_and_links_between_workspaces_are_exdev(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    ops.add_fork("f", fork.tree)
    root = await fork_root(ops, b"f")
    src = (await ops.lookup(root, b"src", CTX)).st_ino
    app = (await ops.lookup(src, b"app.py", CTX)).st_ino
    live_src = (await ops.lookup(ROOT_INO, b"src", CTX)).st_ino
    with fuse_error(errno.EXDEV):
        await ops.rename(src, b"app.py", ROOT_INO, b"app.py", 0, CTX)
    with fuse_error(errno.EXDEV):
        await ops.rename(live_src, b"app.py", root, b"app.py", 0, CTX)
    with fuse_error(errno.EXDEV):
        await ops.link(app, ROOT_INO, b"link", CTX)
    with fuse_error(errno.EROFS):
        await ops.mkdir(ForksDir.INO, b"new", 0o755, CTX)
    with fuse_error(errno.EROFS):
        await ops.rename(ForksDir.INO, b"f", ForksDir.INO, b"g", 0, CTX)
    assert fs.exists("src/app.py")
    assert fork.exists("src/app.py")


async def test_two_forks_are_apart(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    other = fs.fork()
    ops.add_fork("a", fork.tree)
    ops.add_fork("b", other.tree)
    a, b = await fork_root(ops, b"a"), await fork_root(ops, b"b")
    assert a != b
    await create_file(ops, a, b"only-a", b"a")
    await create_file(ops, b, b"only-b", b"b")
    assert sorted(entry.name for entry in fork.list(".")) == ["only-a", "src"]
    assert not other.exists("only-a")
    assert not fork.exists("only-b")
    assert not fs.exists("only-a")
    assert not fs.exists("only-b")
    with fuse_error(errno.EXDEV):
        await ops.rename(a, b"only-a", b, b"only-a", 0, CTX)


async def test_names_are_unique_and_valid(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    ops.add_fork("f", fork.tree)
    with pytest.raises(FileExistsError):
        ops.add_fork("f", fs.fork().tree)
    with pytest.raises(FileExistsError):
        ops.add_fork("g", fork.tree)  # one tree, one place
    with pytest.raises(FileExistsError):
        ops.add_fork("g", fs.tree)
    for bad in ("", ".", "..", "a/b", "x" * 300):
        with pytest.raises(ValueError):
            ops.add_fork(bad, fs.fork().tree)
    with pytest.raises(FileNotFoundError):
        ops.remove_fork("missing")


async def test_a_removed_fork_hides_at_once_and_goes_when_forgotten(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    served = ops.add_fork("f", fork.tree)
    released: list[str] = []
    served.on_release.append(lambda: released.append("f"))
    root = await fork_root(ops, b"f")
    info, entry = await ops.create(root, b"open", stat.S_IFREG | 0o644, os.O_RDWR, CTX)
    ops.remove_fork("f")
    assert (await ops.lookup(ForksDir.INO, b"f", CTX)).st_ino == 0
    assert [e.name for e in await kernel.listdir(ops, ForksDir.INO)] == [b".", b".."]
    # What the kernel holds keeps working (a process inside, a bind mount).
    await ops.write(info.fh, 0, b"still")
    assert fork.read("open").content == "still"
    assert released == []
    await ops.release(info.fh)
    await ops.forget([(entry.st_ino, kernel.counts[entry.st_ino])])
    assert released == []
    await ops.forget([(root, kernel.counts[root])])
    assert released == ["f"]
    assert not fork.tree.held(ROOT_INO)
    with fuse_error(errno.ESTALE):
        await ops.getattr(root, CTX)
    # The name is free again; the new fork gets another range.
    again = ops.add_fork("f", fs.fork().tree)
    assert again.base != served.base
    check_consistent(fork.tree)


async def test_an_unheld_fork_goes_with_its_removal(
    fork: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    served = ops.add_fork("f", fork.tree)
    released: list[bool] = []
    served.on_release.append(lambda: released.append(True))
    ops.remove_fork("f")
    assert released == [True]


async def test_read_only_mount_serves_read_only_forks(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, kernel: Kernel
) -> None:
    ops = WorkspaceOperations(fs.tree, read_only=True)
    kernel.watch(ops)
    ops.add_fork("f", fork.tree)
    root = await fork_root(ops, b"f")
    with fuse_error(errno.EROFS):
        await ops.mkdir(root, b"d", 0o755, CTX)
    src = (await ops.lookup(root, b"src", CTX)).st_ino
    assert await read_all(ops, (await ops.lookup(src, b"app.py", CTX)).st_ino) == b"origin"
    writable = WorkspaceOperations(fs.tree)
    writable.add_fork("ro", fs.fork().tree, read_only=True)
    ro = (await writable.lookup(ForksDir.INO, b"ro", CTX)).st_ino
    with fuse_error(errno.EROFS):
        await writable.mkdir(ro, b"d", 0o755, CTX)
    writable.forget_all()
    ops.forget_all()
    kernel.counts.clear()


async def test_forget_all_lets_every_fork_go(
    fork: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    ops.add_fork("f", fork.tree)
    root = await fork_root(ops, b"f")
    await ops.mkdir(root, b"d", 0o755, CTX)
    await ops.rmdir(root, b"d", CTX)
    assert fork.tree.orphans
    ops.forget_all()
    kernel.counts.clear()
    assert not fork.tree.orphans
    assert not fork.tree.held(ROOT_INO)


@pytest.mark.skipif(not OPEN_FREE, reason="needs the patched pyfuse3 (scripts/setup.sh)")
async def test_open_free_listings_of_forks(
    fs: InMemoryFilesystem, fork: InMemoryFilesystem, kernel: Kernel
) -> None:
    free = WorkspaceOperations(fs.tree, open_free=True)
    kernel.watch(free)
    a = free.add_fork("a", fork.tree)
    free.add_fork("b", fs.fork().tree)
    listed = await list_all(free, kernel, ForksDir.INO, room=1)
    assert sorted(e.name for e in listed) == [b".", b"..", b"a", b"b"]
    root = next(e.attributes.st_ino for e in listed if e.name == b"a")
    assert root == a.base + ROOT_INO
    inside = await list_all(free, kernel, root, room=2)
    assert {e.name: e.attributes.st_ino for e in inside}[b".."] == ForksDir.INO
    src = next(e.attributes.st_ino for e in inside if e.name == b"src")
    assert src - a.base == fork.tree.resolve_path("src")
    check_consistent(fork.tree, held=held_in(kernel, a.base))
    free.forget_all()
    kernel.counts.clear()
