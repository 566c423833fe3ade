"""The mount behaves as a local filesystem where the API changes the tree under it.

Each test reproduces a way the workspace lost data or broke: entries created
in a directory the API removed (they vanished), open files dropped by a
restore (ENOENT on their descriptors), deep trees (a RecursionError and EIO),
and API writes right after ``mount()`` (an ENOSYS warning before INIT).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from support.polling import eventually
from workspacefs import InMemoryFilesystem, mount

from .conftest import Mounted

DEPTH = 1200  # deeper than Python's default recursion limit


def outcome(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode[exc.errno or 0]
    return "ok"


def attempts_in_removed_directory(root: Path, fd: int) -> dict[str, str]:
    """What creating, moving and linking into the removed directory ``fd`` gives."""
    return {
        "mkdir": outcome(lambda: os.mkdir("sub", dir_fd=fd)),
        "create": outcome(lambda: os.close(os.open("new", os.O_CREAT | os.O_WRONLY, dir_fd=fd))),
        "mv": outcome(lambda: os.rename(root / "keep.txt", "moved", dst_dir_fd=fd)),
        "mv dir": outcome(lambda: os.rename(root / "other", "moved-dir", dst_dir_fd=fd)),
        "link": outcome(lambda: os.link(root / "keep.txt", "linked", dst_dir_fd=fd)),
        "symlink": outcome(lambda: os.symlink("target", "link", dir_fd=fd)),
        "mkfifo": outcome(lambda: os.mkfifo("fifo", dir_fd=fd)),
    }


def test_nothing_lands_in_a_directory_the_api_removed(
    mounted: Mounted, plain_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    results = {}
    removals: list[tuple[Path, Callable[[], object]]] = [
        (plain_dir, lambda: os.rmdir(plain_dir / "work")),
        (mounted.root, lambda: mounted.fs.delete("work", recursive=True)),
    ]
    for root, remove in removals:
        (root / "work").mkdir()
        (root / "other").mkdir()
        (root / "keep.txt").write_text("kept")
        fd = os.open(root / "work", os.O_RDONLY | os.O_DIRECTORY)  # a shell's cwd
        try:
            remove()
            results[root] = attempts_in_removed_directory(root, fd)
        finally:
            os.close(fd)
    assert results[mounted.root] == results[plain_dir]
    assert set(results[plain_dir].values()) == {"ENOENT"}
    assert (mounted.root / "keep.txt").read_text() == "kept"
    assert sorted(os.listdir(mounted.root)) == ["keep.txt", "other"]
    assert mounted.fs.tree.file_count == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_open_file_survives_a_restore_that_drops_it(mounted: Mounted) -> None:
    fs = mounted.fs
    before = fs.snapshot()
    fd = os.open(mounted.path("new.txt"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, b"written after the snapshot")
        fs.restore(before)
        assert not os.path.exists(mounted.path("new.txt"))
        assert os.pread(fd, 100, 0) == b"written after the snapshot"
        assert os.pwrite(fd, b"W", 0) == 1
        assert os.pread(fd, 3, 0) == b"Wri"
        info = os.fstat(fd)
        assert (info.st_nlink, info.st_size) == (0, 26)
        assert fs.tree.file_count == 0
    finally:
        os.close(fd)
    # Closed, the kernel forgets it, and the orphan goes.
    eventually(lambda: not fs.tree.orphans, 10, "the orphan goes")


def test_a_shell_in_a_directory_a_restore_drops(mounted: Mounted) -> None:
    before = mounted.fs.snapshot()
    os.mkdir(mounted.path("made-later"))
    fd = os.open(mounted.path("made-later"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        mounted.fs.restore(before)
        assert os.listdir(fd) == []
        assert outcome(lambda: os.mkdir("x", dir_fd=fd)) == "ENOENT"
        assert os.listdir(mounted.root) == []
    finally:
        os.close(fd)


def make_deep(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    leaf = os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
    os.write(leaf, b"bottom")
    os.close(leaf)
    os.close(fd)


def test_deep_trees(mounted: Mounted, caplog: pytest.LogCaptureFixture) -> None:
    fs = mounted.fs
    make_deep(mounted.root, DEPTH)
    before = fs.snapshot()
    assert outcome(lambda: os.rmdir(mounted.path("d"))) == "ENOTEMPTY"
    os.rename(mounted.path("d"), mounted.path("moved"))
    diff = fs.diff(before)
    assert diff.added == ("moved/" + "d/" * (DEPTH - 1) + "leaf",)
    fs.restore(before)
    assert os.listdir(mounted.root) == ["d"]
    fs.delete("d", recursive=True)
    assert os.listdir(mounted.root) == []
    assert fs.tree.file_count == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_api_writes_right_after_mount_invalidate_cleanly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for round_ in range(5):
        fs = InMemoryFilesystem()
        with caplog.at_level(logging.DEBUG, logger="workspacefs"), mount(fs, tmp_path):
            fs.write(f"a{round_}.txt", "x")  # invalidates the root's entry at once
            assert (tmp_path / f"a{round_}.txt").read_text() == "x"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
