"""POSIX behaviour through the kernel: data, metadata, links, errno for each failure."""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

import pytest

from support.polling import eventually

from .conftest import Mounted
from .posix import (
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    RENAME_WHITEOUT,
    UTIME_NOW,
    UTIME_OMIT,
    renameat2,
    utimensat,
)


def raises_errno(code: int, action: object) -> None:
    assert callable(action)
    with pytest.raises(OSError) as excinfo:
        action()
    assert excinfo.value.errno == code, f"{excinfo.value!r}: expected {errno.errorcode[code]}"


def test_open_with_o_trunc(mounted: Mounted) -> None:
    path = mounted.path("t.txt")
    Path(path).write_text("a longer original")
    Path(path).write_text("short")
    assert Path(path).read_text() == "short"
    assert mounted.fs.read("t.txt").content == "short"


def test_write_read_append_truncate(mounted: Mounted) -> None:
    path = mounted.path("f.txt")
    with open(path, "w") as handle:
        handle.write("hello")
    with open(path, "a") as handle:
        handle.write(" world")
    assert Path(path).read_text() == "hello world"
    os.truncate(path, 5)
    assert Path(path).read_text() == "hello"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"!")
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b"?")  # O_APPEND: still at the end
    os.close(fd)
    assert Path(path).read_bytes() == b"hello!?"
    with open(path, "r+b") as handle:
        handle.seek(1)
        handle.write(b"EY")
    assert Path(path).read_bytes() == b"hEYlo!?"


def test_large_sparse_file(mounted: Mounted) -> None:
    path = mounted.path("sparse.img")
    size = 5 << 30
    with open(path, "wb") as handle:
        handle.truncate(size)
        handle.seek(size - 4)
        handle.write(b"tail")
        handle.seek(1 << 30)
        handle.write(b"middle")
    info = os.stat(path)
    assert info.st_size == size
    assert info.st_blocks * 512 < 1 << 20  # holes take no space
    with open(path, "rb") as handle:
        assert handle.read(16) == bytes(16)
        handle.seek((1 << 30) - 2)
        assert handle.read(10) == b"\0\0middle\0\0"
        handle.seek(size - 8)
        assert handle.read() == b"\0\0\0\0tail"


def test_big_sequential_io_round_trips(mounted: Mounted) -> None:
    data = os.urandom(3 << 20) + b"end"
    Path(mounted.path("big.bin")).write_bytes(data)
    assert Path(mounted.path("big.bin")).read_bytes() == data
    assert mounted.fs.read_bytes("big.bin").content == data


def test_directories(mounted: Mounted) -> None:
    os.makedirs(mounted.path("a/b/c"))
    Path(mounted.path("a/b/c/f")).write_text("x")
    assert sorted(os.listdir(mounted.path("a"))) == ["b"]
    assert os.stat(mounted.path("a")).st_nlink == 3
    raises_errno(errno.ENOTEMPTY, lambda: os.rmdir(mounted.path("a/b")))
    raises_errno(errno.EEXIST, lambda: os.mkdir(mounted.path("a/b")))
    raises_errno(errno.ENOTDIR, lambda: os.listdir(mounted.path("a/b/c/f")))
    raises_errno(errno.ENOTDIR, lambda: os.rmdir(mounted.path("a/b/c/f")))
    raises_errno(errno.EISDIR, lambda: os.unlink(mounted.path("a/b")))
    raises_errno(errno.EISDIR, lambda: os.open(mounted.path("a/b"), os.O_WRONLY))
    raises_errno(errno.ENOENT, lambda: os.stat(mounted.path("a/missing")))
    raises_errno(errno.ENAMETOOLONG, lambda: os.open(mounted.path("n" * 256), os.O_CREAT))
    Path(mounted.path("n" * 255)).write_text("max")
    os.unlink(mounted.path("a/b/c/f"))
    os.rmdir(mounted.path("a/b/c"))
    assert os.listdir(mounted.path("a/b")) == []


def test_ls_shows_dot_entries(mounted: Mounted) -> None:
    os.mkdir(mounted.path("d"))
    with os.scandir(mounted.path("d")) as entries:
        assert list(entries) == []
    import subprocess

    out = subprocess.run(["ls", "-a", mounted.path("d")], capture_output=True, text=True)
    assert out.stdout.split() == [".", ".."]


def test_rename_semantics(mounted: Mounted) -> None:
    a, b = mounted.path("a"), mounted.path("b")
    Path(a).write_text("A")
    Path(b).write_text("B")
    raises_errno(errno.EEXIST, lambda: renameat2(a, b, RENAME_NOREPLACE))
    renameat2(a, b, RENAME_EXCHANGE)
    assert (Path(a).read_text(), Path(b).read_text()) == ("B", "A")
    os.rename(a, b)
    assert not os.path.exists(a)
    assert Path(b).read_text() == "B"
    os.mkdir(mounted.path("d"))
    os.mkdir(mounted.path("d/sub"))
    raises_errno(errno.EINVAL, lambda: os.rename(mounted.path("d"), mounted.path("d/sub/x")))
    raises_errno(errno.EISDIR, lambda: os.rename(b, mounted.path("d")))
    raises_errno(errno.ENOTDIR, lambda: os.rename(mounted.path("d"), b))
    Path(mounted.path("d/sub/f")).write_text("f")
    os.mkdir(mounted.path("e"))
    raises_errno(errno.ENOTEMPTY, lambda: os.rename(mounted.path("e"), mounted.path("d/sub")))
    os.rename(mounted.path("d/sub"), mounted.path("e"))
    assert Path(mounted.path("e/f")).read_text() == "f"


def test_rename_whiteout_is_refused(mounted: Mounted) -> None:
    """A whiteout is a 0:0 character device left at the old name; the mount cannot make
    one, so it refuses the flag instead of renaming without it."""
    a, b = mounted.path("a"), mounted.path("b")
    Path(a).write_text("A")
    for flags in (RENAME_WHITEOUT, RENAME_WHITEOUT | RENAME_NOREPLACE):
        raises_errno(errno.EINVAL, lambda flags=flags: renameat2(a, b, flags))
        assert Path(a).read_text() == "A"
        assert not os.path.lexists(b)


def test_hard_links_and_symlinks(mounted: Mounted) -> None:
    Path(mounted.path("file")).write_text("data")
    os.link(mounted.path("file"), mounted.path("hard"))
    assert os.stat(mounted.path("file")).st_nlink == 2
    assert os.stat(mounted.path("file")).st_ino == os.stat(mounted.path("hard")).st_ino
    os.symlink("file", mounted.path("soft"))
    assert os.readlink(mounted.path("soft")) == "file"
    assert Path(mounted.path("soft")).read_text() == "data"
    assert stat.S_ISLNK(os.lstat(mounted.path("soft")).st_mode)
    os.unlink(mounted.path("file"))
    assert Path(mounted.path("hard")).read_text() == "data"
    assert not os.path.exists(mounted.path("soft"))  # dangling now
    os.mkdir(mounted.path("dir"))
    raises_errno(errno.EPERM, lambda: os.link(mounted.path("dir"), mounted.path("dirlink")))


def test_fifo(mounted: Mounted) -> None:
    os.mkfifo(mounted.path("pipe"), 0o600)
    assert stat.S_ISFIFO(os.stat(mounted.path("pipe")).st_mode)


def test_modes_owners_and_setgid_inheritance(mounted: Mounted) -> None:
    path = mounted.path("f")
    Path(path).write_text("x")
    os.chmod(path, 0o4755)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o4755
    os.chown(path, 1234, 5678)
    info = os.stat(path)
    assert (info.st_uid, info.st_gid) == (1234, 5678)
    os.mkdir(mounted.path("shared"))
    os.chown(mounted.path("shared"), 0, 4242)
    os.chmod(mounted.path("shared"), 0o2775)
    Path(mounted.path("shared/new")).write_text("x")
    os.mkdir(mounted.path("shared/sub"))
    assert os.stat(mounted.path("shared/new")).st_gid == 4242
    assert os.stat(mounted.path("shared/sub")).st_mode & stat.S_ISGID


def test_umask_applies(mounted: Mounted) -> None:
    old = os.umask(0o027)
    try:
        Path(mounted.path("masked")).write_text("x")
        os.mkdir(mounted.path("masked-dir"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(mounted.path("masked")).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(mounted.path("masked-dir")).st_mode) == 0o750


def test_timestamps_with_utimensat(mounted: Mounted) -> None:
    path = mounted.path("t")
    Path(path).write_text("x")
    os.utime(path, ns=(1_000_000_123, 2_000_000_456))
    info = os.stat(path)
    assert (info.st_atime_ns, info.st_mtime_ns) == (1_000_000_123, 2_000_000_456)
    utimensat(path, (0, UTIME_OMIT), (5, 7))
    info = os.stat(path)
    assert (info.st_atime_ns, info.st_mtime_ns) == (1_000_000_123, 5_000_000_007)
    before = time.time_ns()
    utimensat(path, (0, UTIME_NOW), (0, UTIME_OMIT))
    info = os.stat(path)
    assert info.st_atime_ns >= before - 10_000_000
    assert info.st_mtime_ns == 5_000_000_007
    ctime = info.st_ctime_ns
    time.sleep(0.01)
    Path(path).write_text("y")
    assert os.stat(path).st_mtime_ns > 5_000_000_007
    assert os.stat(path).st_ctime_ns > ctime


def test_xattrs(mounted: Mounted) -> None:
    path = mounted.path("x")
    Path(path).write_text("x")
    os.setxattr(path, "user.color", b"blue")
    assert os.getxattr(path, "user.color") == b"blue"
    assert "user.color" in os.listxattr(path)
    os.removexattr(path, "user.color")
    raises_errno(errno.ENODATA, lambda: os.getxattr(path, "user.color"))
    raises_errno(errno.ENODATA, lambda: os.removexattr(path, "user.color"))


def test_statfs(mounted: Mounted) -> None:
    Path(mounted.path("f")).write_bytes(b"x" * 100_000)
    info = os.statvfs(mounted.root)
    assert info.f_namemax == 255
    assert info.f_bsize == 4096
    assert info.f_blocks > info.f_bfree > 0
    assert info.f_files > info.f_ffree > 0


def test_unlinked_open_file_keeps_working(mounted: Mounted) -> None:
    """pyfuse3's "gotchas": an unlinked file lives while it is open."""
    path = mounted.path("tmpfile")
    with open(path, "w+b") as handle:
        handle.write(b"before")
        handle.flush()
        os.unlink(path)
        assert not os.path.exists(path)
        handle.write(b" after")
        handle.flush()
        handle.seek(0)
        assert handle.read() == b"before after"
        assert os.fstat(handle.fileno()).st_nlink == 0
        os.fchmod(handle.fileno(), 0o600)
        assert stat.S_IMODE(os.fstat(handle.fileno()).st_mode) == 0o600
        assert mounted.fs.tree.orphans, "the open file is an orphan in the tree"
        snapshot = mounted.fs.snapshot()
        assert not mounted.fs.at(snapshot).exists("tmpfile")
    # The kernel's forget arrives asynchronously.
    eventually(lambda: not mounted.fs.tree.orphans, 5, "the orphan goes")


def test_readdir_while_directory_changes(mounted: Mounted) -> None:
    os.mkdir(mounted.path("d"))
    names = {f"f{i:04d}" for i in range(1500)}
    for name in names:
        Path(mounted.path(f"d/{name}")).touch()
    seen = []
    with os.scandir(mounted.path("d")) as entries:
        for index, entry in enumerate(entries):
            seen.append(entry.name)
            if index == 10:  # churn the directory mid-listing
                for i in range(200):
                    Path(mounted.path(f"d/new{i}")).touch()
                os.unlink(mounted.path("d/f1499"))
    assert len(seen) == len(set(seen)), "an entry was reported twice"
    assert names - {"f1499"} <= set(seen), "an entry was skipped"


def test_read_only_mount_refuses_writes(tmp_path: Path) -> None:
    from workspacefs import InMemoryFilesystem, mount

    fs = InMemoryFilesystem()
    fs.write("existing.txt", "x")
    root = tmp_path / "ro"
    root.mkdir()
    with mount(fs, root, read_only=True):
        assert (root / "existing.txt").read_text() == "x"
        for action in [
            lambda: (root / "new.txt").write_text("x"),
            lambda: os.open(root / "existing.txt", os.O_WRONLY | os.O_APPEND),
            lambda: os.mkdir(root / "d"),
            lambda: os.unlink(root / "existing.txt"),
            lambda: os.chmod(root / "existing.txt", 0o777),
            lambda: os.setxattr(root / "existing.txt", "user.x", b"1"),
        ]:
            raises_errno(errno.EROFS, action)
    assert fs.read("existing.txt").content == "x"


def test_snapshot_mounted_read_only(tmp_path: Path) -> None:
    from workspacefs import InMemoryFilesystem, mount

    fs = InMemoryFilesystem()
    fs.write("a.txt", "old")
    snapshot = fs.snapshot()
    fs.write("a.txt", "new")
    root = tmp_path / "snap"
    root.mkdir()
    with mount(fs.at(snapshot), root) as handle:
        assert handle.read_only
        assert (root / "a.txt").read_text() == "old"
        raises_errno(errno.EROFS, lambda: (root / "a.txt").write_text("x"))
