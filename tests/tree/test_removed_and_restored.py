"""Local-filesystem semantics around removal and restore.

A directory that has been removed takes no new entries (ENOENT), however it
is still reached (a shell's working directory, an open descriptor); an inode
the kernel holds survives a restore that drops it, as an orphan, until it is
released.
"""

from __future__ import annotations

import errno

import pytest

from support.consistency import check_consistent
from workspacefs.tree import ROOT_INO, Tree


@pytest.fixture
def tree() -> Tree:
    return Tree()


@pytest.fixture
def removed(tree: Tree) -> int:
    """A directory held from outside (a shell's cwd), then removed."""
    directory = tree.mkdir(ROOT_INO, "gone")
    tree.hold(directory)
    tree.rmdir(ROOT_INO, "gone")
    return directory


def _errno(call: object, *args: object) -> int | None:
    assert callable(call)
    with pytest.raises(OSError) as excinfo:
        call(*args)
    return excinfo.value.errno


def test_nothing_is_created_in_a_removed_directory(tree: Tree, removed: int) -> None:
    assert _errno(tree.create, removed, "f") == errno.ENOENT
    assert _errno(tree.mkdir, removed, "d") == errno.ENOENT
    assert _errno(tree.symlink, removed, "l", "target") == errno.ENOENT
    assert _errno(tree.mknod, removed, "fifo", 0o10644) == errno.ENOENT
    assert _errno(tree.create_deferred, removed, "lazy", None, 0) == errno.ENOENT
    check_consistent(tree, held={removed})


def test_nothing_is_moved_or_linked_into_a_removed_directory(tree: Tree, removed: int) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"data")
    tree.mkdir(ROOT_INO, "d")
    assert _errno(tree.rename, ROOT_INO, "f", removed, "f") == errno.ENOENT
    assert _errno(tree.rename, ROOT_INO, "d", removed, "d") == errno.ENOENT
    assert _errno(tree.link, ino, removed, "f2") == errno.ENOENT
    assert tree.read(tree.lookup(ROOT_INO, "f"), 0, 10) == b"data"
    assert tree.file_count == 1
    check_consistent(tree, held={removed})


def test_restore_keeps_a_held_new_file_as_an_orphan(tree: Tree) -> None:
    before = tree.snapshot()
    ino = tree.create(ROOT_INO, "new")
    tree.hold(ino)
    tree.write(ino, 0, b"written after the snapshot")
    tree.restore(before)
    assert tree.find(ROOT_INO, "new") is None
    assert set(tree.orphans) == {ino}
    assert tree.read(ino, 0, 100) == b"written after the snapshot"
    tree.write(ino, 0, b"W")
    assert tree.node(ino).nlink == 0
    assert tree.read(ino, 0, 2) == b"Wr"
    assert tree.file_count == 0
    check_consistent(tree, held={ino})
    tree.release(ino)
    assert tree.get(ino) is None
    check_consistent(tree)


def test_restore_keeps_a_held_new_directory_as_an_empty_orphan(tree: Tree) -> None:
    before = tree.snapshot()
    directory = tree.mkdir(ROOT_INO, "d")
    child = tree.create(directory, "f")
    tree.hold(directory)
    tree.restore(before)
    assert set(tree.orphans) == {directory}
    assert tree.readdir(directory) == []  # its entries went with the restore
    assert _errno(tree.create, directory, "g") == errno.ENOENT
    assert tree.get(child) is None
    check_consistent(tree, held={directory})


def test_restore_links_an_open_orphan_again_when_the_target_holds_it(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"old")
    before = tree.snapshot()
    tree.hold(ino)
    tree.unlink(ROOT_INO, "f")
    assert set(tree.orphans) == {ino}
    tree.restore(before)
    assert not tree.orphans
    assert tree.lookup(ROOT_INO, "f") == ino
    tree.write(ino, 0, b"new")  # through the descriptor still open on it
    assert tree.read(tree.lookup(ROOT_INO, "f"), 0, 3) == b"new"
    assert before.read(ino, 0, 3) == b"old"
    check_consistent(tree, held={ino})
