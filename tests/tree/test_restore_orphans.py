"""A restore unlinks what the snapshot lacks; an inode held from outside lives on as an orphan."""

from __future__ import annotations

from workspacefs.tree import ROOT_INO, Tree


def test_held_inode_missing_from_the_version_becomes_an_orphan() -> None:
    tree = Tree()
    with tree.lock:
        before = tree.snapshot()
        ino = tree.create(ROOT_INO, "data.txt", 0o644)
        tree.write(ino, 0, b"version two\n")
        tree.hold(ino)  # e.g. the kernel, for a process with the file open
        tree.restore(before)
        assert tree.find(ROOT_INO, "data.txt") is None
        assert ino in tree.orphans
        assert tree.read(ino, 0, 100) == b"version two\n"
        tree.write(ino, 0, b"VERSION")  # the open file stays writable, apart from the tree
        assert tree.read(ino, 0, 100) == b"VERSION two\n"
        tree.release(ino)
        assert ino not in tree.orphans


def test_an_orphan_linked_again_by_a_restore_is_the_tree_s_file() -> None:
    tree = Tree()
    with tree.lock:
        ino = tree.create(ROOT_INO, "data.txt", 0o644)
        tree.write(ino, 0, b"one\n")
        tree.hold(ino)
        with_file = tree.snapshot()
        tree.unlink(ROOT_INO, "data.txt")
        assert ino in tree.orphans
        tree.restore(with_file)
        assert ino not in tree.orphans
        tree.write(ino, 0, b"two\n")
        assert tree.lookup(ROOT_INO, "data.txt") == ino
        assert tree.read(ino, 0, 10) == b"two\n"
        assert ino not in tree.orphans
