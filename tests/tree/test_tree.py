"""The inode-level tree: POSIX semantics, copy-on-write sharing, orphans."""

from __future__ import annotations

import errno
import stat

import pytest

from workspacefs.tree import (
    CHUNK_SIZE,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    ROOT_INO,
    XATTR_CREATE,
    XATTR_REPLACE,
    Journal,
    Tree,
)


def errno_of(excinfo: pytest.ExceptionInfo[OSError]) -> int | None:
    return excinfo.value.errno


@pytest.fixture
def tree() -> Tree:
    return Tree()


def test_create_lookup_getattr(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "a.txt", 0o640, uid=7, gid=8)
    assert tree.lookup(ROOT_INO, "a.txt") == ino
    attrs = tree.node(ino)
    assert stat.S_ISREG(attrs.mode)
    assert stat.S_IMODE(attrs.mode) == 0o640
    assert (attrs.uid, attrs.gid, attrs.nlink, attrs.size) == (7, 8, 1, 0)
    assert tree.file_count == 1


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("", errno.EINVAL),
        (".", errno.EINVAL),
        ("..", errno.EINVAL),
        ("a/b", errno.EINVAL),
        ("a\0b", errno.EINVAL),
        ("x" * 256, errno.ENAMETOOLONG),
        ("é" * 128, errno.ENAMETOOLONG),
    ],
)
def test_bad_names(tree: Tree, name: str, code: int) -> None:
    with pytest.raises(OSError) as excinfo:
        tree.create(ROOT_INO, name)
    assert errno_of(excinfo) == code
    assert tree.readdir(ROOT_INO) == []


def test_name_limit_is_bytes(tree: Tree) -> None:
    tree.create(ROOT_INO, "x" * 255)
    tree.create(ROOT_INO, "é" * 127)  # 254 bytes


def test_non_utf8_names_round_trip(tree: Tree) -> None:
    raw = b"caf\xe9-\xff.txt"
    name = raw.decode("utf-8", "surrogateescape")
    ino = tree.create(ROOT_INO, name)
    (listed,) = [n for n, _ in tree.readdir(ROOT_INO)]
    assert listed.encode("utf-8", "surrogateescape") == raw
    assert tree.lookup(ROOT_INO, listed) == ino


def test_errors(tree: Tree) -> None:
    file = tree.create(ROOT_INO, "f")
    with pytest.raises(FileExistsError):
        tree.create(ROOT_INO, "f")
    with pytest.raises(FileNotFoundError):
        tree.lookup(ROOT_INO, "missing")
    with pytest.raises(NotADirectoryError):
        tree.create(file, "child")
    tree.mkdir(ROOT_INO, "d")
    with pytest.raises(IsADirectoryError):
        tree.unlink(ROOT_INO, "d")
    with pytest.raises(NotADirectoryError):
        tree.rmdir(ROOT_INO, "f")
    with pytest.raises(IsADirectoryError):
        tree.read(ROOT_INO, 0, 10)


def test_directory_nlink(tree: Tree) -> None:
    assert tree.node(ROOT_INO).nlink == 2
    a = tree.mkdir(ROOT_INO, "a")
    tree.mkdir(a, "b")
    assert tree.node(ROOT_INO).nlink == 3
    assert tree.node(a).nlink == 3
    tree.rename(a, "b", ROOT_INO, "b")
    assert (tree.node(ROOT_INO).nlink, tree.node(a).nlink) == (4, 2)
    tree.rmdir(ROOT_INO, "b")
    assert tree.node(ROOT_INO).nlink == 3


def test_rmdir_not_empty(tree: Tree) -> None:
    d = tree.mkdir(ROOT_INO, "d")
    tree.create(d, "f")
    with pytest.raises(OSError) as excinfo:
        tree.rmdir(ROOT_INO, "d")
    assert errno_of(excinfo) == errno.ENOTEMPTY


def test_read_write_sparse_and_truncate(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 10, b"hello")
    assert tree.read(ino, 0, 100) == b"\0" * 10 + b"hello"
    far = 3 * CHUNK_SIZE + 5
    tree.write(ino, far, b"X")
    assert tree.node(ino).size == far + 1
    assert tree.read(ino, far - 2, 10) == b"\0\0X"
    assert tree.node(ino).allocated < 2 * CHUNK_SIZE  # holes hold nothing
    tree.truncate(ino, 12)
    assert tree.read(ino, 0, 100) == b"\0" * 10 + b"he"
    tree.truncate(ino, 20)
    assert tree.read(ino, 0, 100) == b"\0" * 10 + b"he" + b"\0" * 8
    assert tree.total_bytes == 20


def test_huge_sparse_file_costs_nothing(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "huge")
    tree.truncate(ino, 8 << 30)
    tree.write(ino, (8 << 30) - 3, b"end")
    assert tree.node(ino).size == 8 << 30
    assert tree.read(ino, (8 << 30) - 4, 10) == b"\0end"
    assert len(tree.node(ino).chunks) == 1  # type: ignore[attr-defined]


def test_writes_across_chunks(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    data = bytes(range(256)) * (CHUNK_SIZE // 64)
    tree.write(ino, 100, data)
    tree.write(ino, CHUNK_SIZE - 1, b"abc")
    expected = bytearray(b"\0" * 100 + data)
    expected[CHUNK_SIZE - 1 : CHUNK_SIZE + 2] = b"abc"
    assert tree.read(ino, 0, len(expected) + 10) == bytes(expected)


def test_hard_links(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "a")
    tree.write(ino, 0, b"data")
    d = tree.mkdir(ROOT_INO, "d")
    tree.link(ino, d, "b")
    assert tree.node(ino).nlink == 2
    assert sorted(tree.paths(ino)) == ["a", "d/b"]
    assert (tree.file_count, tree.total_bytes) == (2, 8)
    tree.unlink(ROOT_INO, "a")
    assert tree.read(tree.lookup(d, "b"), 0, 10) == b"data"
    assert tree.node(ino).nlink == 1
    with pytest.raises(PermissionError):
        tree.link(d, ROOT_INO, "dirlink")


def test_symlink(tree: Tree) -> None:
    ino = tree.symlink(ROOT_INO, "l", "some/target")
    assert tree.readlink(ino) == "some/target"
    assert stat.S_ISLNK(tree.node(ino).mode)
    assert tree.node(ino).size == len("some/target")
    with pytest.raises(OSError) as excinfo:
        tree.symlink(ROOT_INO, "long", "x" * 4096)
    assert errno_of(excinfo) == errno.ENAMETOOLONG


def test_mknod_fifo(tree: Tree) -> None:
    ino = tree.mknod(ROOT_INO, "pipe", stat.S_IFIFO | 0o600)
    assert stat.S_ISFIFO(tree.node(ino).mode)
    with pytest.raises(OSError) as excinfo:
        tree.read(ino, 0, 1)
    assert errno_of(excinfo) == errno.EINVAL


def test_rename_replaces_and_noreplace(tree: Tree) -> None:
    a = tree.create(ROOT_INO, "a")
    b = tree.create(ROOT_INO, "b")
    with pytest.raises(FileExistsError):
        tree.rename(ROOT_INO, "a", ROOT_INO, "b", RENAME_NOREPLACE)
    tree.rename(ROOT_INO, "a", ROOT_INO, "b")
    assert tree.lookup(ROOT_INO, "b") == a
    assert tree.get(b) is None
    assert tree.file_count == 1


def test_rename_exchange(tree: Tree) -> None:
    f = tree.create(ROOT_INO, "f")
    d = tree.mkdir(ROOT_INO, "d")
    sub = tree.mkdir(d, "sub")
    tree.rename(ROOT_INO, "f", d, "sub", RENAME_EXCHANGE)
    assert tree.lookup(ROOT_INO, "f") == sub
    assert tree.lookup(d, "sub") == f
    assert tree.paths(sub) == ["f"]
    assert (tree.node(ROOT_INO).nlink, tree.node(d).nlink) == (4, 2)
    with pytest.raises(FileNotFoundError):
        tree.rename(ROOT_INO, "f", ROOT_INO, "missing", RENAME_EXCHANGE)


def test_rename_refuses_flags_it_cannot_honour(tree: Tree) -> None:
    a = tree.create(ROOT_INO, "a")
    for flags in (4, 4 | RENAME_NOREPLACE, 8):  # RENAME_WHITEOUT, and a flag with no meaning
        with pytest.raises(OSError) as refused:
            tree.rename(ROOT_INO, "a", ROOT_INO, "b", flags)
        assert refused.value.errno == errno.EINVAL
    assert tree.lookup(ROOT_INO, "a") == a
    assert "b" not in tree.directory(ROOT_INO).entries


def test_rename_directory_rules(tree: Tree) -> None:
    a = tree.mkdir(ROOT_INO, "a")
    b = tree.mkdir(a, "b")
    tree.create(ROOT_INO, "file")
    full = tree.mkdir(ROOT_INO, "full")
    tree.create(full, "x")
    with pytest.raises(OSError) as excinfo:
        tree.rename(ROOT_INO, "a", b, "inside")
    assert errno_of(excinfo) == errno.EINVAL
    with pytest.raises(NotADirectoryError):
        tree.rename(ROOT_INO, "a", ROOT_INO, "file")
    with pytest.raises(IsADirectoryError):
        tree.rename(ROOT_INO, "file", ROOT_INO, "a")
    with pytest.raises(OSError) as excinfo:
        tree.rename(ROOT_INO, "a", ROOT_INO, "full")
    assert errno_of(excinfo) == errno.ENOTEMPTY
    tree.rename(ROOT_INO, "a", ROOT_INO, "renamed")
    assert tree.paths(b) == ["renamed/b"]


def test_rename_onto_own_hard_link_is_a_no_op(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "a")
    tree.link(ino, ROOT_INO, "b")
    tree.rename(ROOT_INO, "a", ROOT_INO, "b")
    assert sorted(name for name, _ in tree.readdir(ROOT_INO)) == ["a", "b"]


def test_setattr(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.setattr(ino, mode=0o4755, uid=5, gid=6, atime_ns=1, mtime_ns=2)
    attrs = tree.node(ino)
    assert attrs.mode == stat.S_IFREG | 0o4755
    assert (attrs.uid, attrs.gid, attrs.atime_ns, attrs.mtime_ns) == (5, 6, 1, 2)
    tree.setattr(ino, size=100)
    assert tree.node(ino).size == 100


def test_xattrs(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    with pytest.raises(OSError) as excinfo:
        tree.getxattr(ino, b"user.x")
    assert errno_of(excinfo) == errno.ENODATA
    with pytest.raises(OSError):
        tree.setxattr(ino, b"user.x", b"1", XATTR_REPLACE)
    tree.setxattr(ino, b"user.x", b"1", XATTR_CREATE)
    with pytest.raises(FileExistsError):
        tree.setxattr(ino, b"user.x", b"2", XATTR_CREATE)
    assert tree.getxattr(ino, b"user.x") == b"1"
    assert tree.listxattr(ino) == [b"user.x"]
    tree.removexattr(ino, b"user.x")
    assert tree.listxattr(ino) == []


def test_orphan_lives_until_forgotten(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "open-file")
    tree.write(ino, 0, b"still here")
    tree.hold(ino)
    tree.unlink(ROOT_INO, "open-file")
    assert ino in tree.orphans
    assert tree.read(ino, 0, 100) == b"still here"
    tree.write(ino, 0, b"STILL")
    version = tree.snapshot()
    assert version.get(ino) is None  # snapshots never contain orphans
    assert version.resolve_path("open-file") is None
    assert tree.read(ino, 0, 100) == b"STILL here"
    tree.release(ino)
    assert tree.get(ino) is None
    assert not tree.orphans


def test_unpinned_unlink_frees_at_once(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.unlink(ROOT_INO, "f")
    assert tree.get(ino) is None


def test_inode_numbers_never_reused_across_restore(tree: Tree) -> None:
    empty = tree.snapshot()
    first = tree.create(ROOT_INO, "a")
    tree.restore(empty)
    second = tree.create(ROOT_INO, "b")
    assert second != first


# -- copy-on-write -------------------------------------------------------------


def test_snapshot_is_frozen(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"v1")
    version = tree.snapshot()
    tree.write(ino, 0, b"v2")
    tree.setattr(ino, mode=0o600)
    tree.create(ROOT_INO, "g")
    tree.rename(ROOT_INO, "f", ROOT_INO, "h")
    assert version.read(ino, 0, 10) == b"v1"
    assert stat.S_IMODE(version.node(ino).mode) == 0o644
    assert sorted(name for name, _ in version.readdir(ROOT_INO)) == ["f"]
    assert tree.read(ino, 0, 10) == b"v2"


def test_first_write_after_snapshot_copies_one_page(tree: Tree) -> None:
    inos = [tree.create(ROOT_INO, f"f{i}") for i in range(5000)]
    version = tree.snapshot()
    tree.write(inos[-1], 0, b"x")
    live_pages, frozen_pages = tree._table.pages, version._table.pages
    shared = sum(a is b for a, b in zip(live_pages, frozen_pages, strict=True))
    assert shared == len(frozen_pages) - 1
    # Untouched nodes are the very same objects in both.
    assert tree.node(inos[0]) is version.node(inos[0])
    assert tree.node(inos[-1]) is not version.node(inos[-1])


def test_first_write_into_big_file_copies_one_chunk(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "big")
    tree.write(ino, 0, b"a" * (CHUNK_SIZE * 20))
    version = tree.snapshot()
    tree.write(ino, CHUNK_SIZE * 5 + 7, b"Z")
    live = tree.node(ino).chunks  # type: ignore[attr-defined]
    frozen = version.node(ino).chunks  # type: ignore[attr-defined]
    assert sum(live[i] is not frozen[i] for i in range(20)) == 1
    assert version.read(ino, CHUNK_SIZE * 5 + 7, 1) == b"a"
    assert tree.read(ino, CHUNK_SIZE * 5 + 7, 1) == b"Z"


def test_chmod_after_snapshot_does_not_copy_data(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"x" * 1000)
    version = tree.snapshot()
    tree.setattr(ino, mode=0o755)
    assert tree.node(ino).chunks is version.node(ino).chunks  # type: ignore[attr-defined]


def test_in_place_writes_within_an_epoch(tree: Tree) -> None:
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"x" * 100)
    tree.snapshot()
    tree.write(ino, 1, b"y")
    node = tree.node(ino)
    tree.write(ino, 2, b"z")
    assert tree.node(ino) is node  # same epoch: no further copies
    assert tree.read(ino, 0, 4) == b"xyzx"


def test_restore_returns_changed_inodes(tree: Tree) -> None:
    a = tree.create(ROOT_INO, "a")
    version = tree.snapshot()
    b = tree.create(ROOT_INO, "b")
    tree.write(a, 0, b"x")
    changes = tree.restore(version)
    assert changes.inodes == {ROOT_INO, a, b}
    assert changes.entries == {(ROOT_INO, "b")}
    assert tree.get(b) is None
    assert tree.read(a, 0, 1) == b""
    assert not tree.restore(version)


def test_journal_records_touched_inodes_and_entries(tree: Tree) -> None:
    d = tree.mkdir(ROOT_INO, "d")
    f = tree.create(d, "f")
    tree.snapshot()
    tree.write(f, 0, b"x")  # clones f
    published: list[Journal] = []
    tree.lock.subscribe(published.append)
    with tree.lock:
        pass  # publishes, and so drops, what came before
    published.clear()
    with tree.lock:
        tree.write(f, 1, b"y")  # in place: still recorded
        tree.rename(d, "f", ROOT_INO, "g")
    (journal,) = published
    with tree.lock.unpublished:
        tree.create(ROOT_INO, "unrecorded")
    assert len(published) == 1
    assert journal.inodes == {f, d, ROOT_INO}
    assert journal.entries == {(d, "f"), (ROOT_INO, "g")}


def test_restore_of_foreign_version_refused(tree: Tree) -> None:
    other = Tree().snapshot()
    with pytest.raises(ValueError):
        tree.restore(other)


def test_observers_see_every_change_under_the_lock_subscribers_only_published(
    tree: Tree,
) -> None:
    # The change feed needs the kernel's own changes (unpublished holds) too, and in
    # the order the lock took them: observers are told before the lock is let go.
    observed: list[tuple[set[int], bool]] = []
    published: list[Journal] = []
    stop = tree.lock.observe(
        lambda journal: observed.append((set(journal.inodes), tree.lock._lock._is_owned()))  # type: ignore[attr-defined]
    )
    tree.lock.subscribe(published.append)
    with tree.lock.unpublished:
        f = tree.create(ROOT_INO, "by-the-kernel")
    with tree.lock:
        tree.write(f, 0, b"x")
    with tree.lock:
        pass  # nothing changed: nobody is told
    assert observed == [({ROOT_INO, f}, True), ({f}, True)]
    assert [journal.inodes for journal in published] == [{f}]
    stop()
    with tree.lock:
        tree.write(f, 1, b"y")
    assert len(observed) == 2


def test_freeze_keeps_its_view_while_the_tree_changes(tree: Tree) -> None:
    with tree.lock:
        f = tree.create(ROOT_INO, "f")
        tree.write(f, 0, b"before")
        frozen = tree.freeze()
        tree.write(f, 0, b"AFTER!")
        tree.create(ROOT_INO, "g")
    assert frozen.read(f, 0, 10) == b"before"
    assert frozen.find(ROOT_INO, "g") is None
    assert tree.read(f, 0, 10) == b"AFTER!"
    assert tree.versions() == []  # no snapshot: no step of history
