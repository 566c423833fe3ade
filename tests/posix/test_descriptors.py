"""The descriptor primitives every host operation goes through, with openat2 and without."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs.posix import (
    DIRECTORY_FLAGS,
    TEMPORARY_PREFIX,
    OpenDirectories,
    clear_directory,
    make_directories,
    open_beneath,
    open_regular,
    openat2_available,
    remove_entry,
    replace_file,
    replace_symlink,
    walk_directory,
)
from workspacefs.posix import _descriptors as descriptors


@pytest.fixture(params=["openat2", "component walk"])
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "component walk":
        monkeypatch.setattr(descriptors._openat2, "usable", False)
    elif not openat2_available():
        pytest.skip("this kernel has no openat2")
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[tuple[Path, Path, int]]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "dir" / "sub" / "file.txt").write_text("inside")
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, root / "out")
    os.symlink("dir", root / "in")
    fd = os.open(root, DIRECTORY_FLAGS)
    yield root, outside, fd
    os.close(fd)


def test_openat2_is_there_on_this_kernel() -> None:
    """The CI kernels are 5.6+: the fast path must be the one tested."""
    release = tuple(int(p) for p in os.uname().release.split(".")[:2])
    if release >= (5, 6):
        assert openat2_available()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("out/secret.txt", (errno.ELOOP, errno.ENOTDIR)),
        ("in/sub/file.txt", (errno.ELOOP, errno.ENOTDIR)),
        ("out", (errno.ELOOP,)),
        ("../outside/secret.txt", (errno.EXDEV,)),
        ("dir/../../outside/secret.txt", (errno.EXDEV,)),
        ("/etc/passwd", (errno.EXDEV,)),
    ],
)
def test_open_beneath_follows_no_link(
    tree: tuple[Path, Path, int], path: str, code: tuple[int, ...], resolution: str
) -> None:
    with pytest.raises(OSError) as refused:
        os.close(open_beneath(tree[2], path, os.O_RDONLY))
    assert refused.value.errno in code


def test_open_beneath_opens_what_is_inside(tree: tuple[Path, Path, int], resolution: str) -> None:
    fd = open_beneath(tree[2], "dir/sub/file.txt", os.O_RDONLY)
    try:
        assert os.read(fd, 100) == b"inside"
    finally:
        os.close(fd)


def test_make_directories_replaces_links_only_when_asked(
    tree: tuple[Path, Path, int], resolution: str
) -> None:
    root, outside, fd = tree
    with pytest.raises(OSError):
        make_directories(fd, "out/new")
    made = make_directories(fd, "out/new", replace=True)
    os.close(made)
    assert (root / "out").is_dir()
    assert not (root / "out").is_symlink()
    assert (root / "out" / "new").is_dir()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_replace_file_replaces_a_planted_link(tree: tuple[Path, Path, int]) -> None:
    root, outside, fd = tree
    os.symlink(outside / "secret.txt", root / "victim")
    info = replace_file(fd, "victim", b"restored", mode=0o640, mtime_ns=10**18)
    assert (outside / "secret.txt").read_text() == "secret"
    assert (root / "victim").read_bytes() == b"restored"
    assert not (root / "victim").is_symlink()
    assert stat.S_IMODE(info.st_mode) == 0o640
    assert os.lstat(root / "victim").st_mtime_ns == 10**18
    replace_symlink(fd, "dir", "elsewhere")  # a whole directory in the way goes too
    assert os.readlink(root / "dir") == "elsewhere"
    assert not [p for p in root.iterdir() if p.name.startswith(TEMPORARY_PREFIX)]


def test_open_regular_refuses_fifos_links_and_directories(tree: tuple[Path, Path, int]) -> None:
    root, _, fd = tree
    os.mkfifo(root / "fifo")
    for name, code in (("fifo", errno.EINVAL), ("out", errno.ELOOP), ("dir", errno.EISDIR)):
        with pytest.raises(OSError) as refused:
            open_regular(fd, name)
        assert refused.value.errno == code


def test_removal_never_follows_links(tree: tuple[Path, Path, int]) -> None:
    root, outside, fd = tree
    os.symlink(outside, root / "dir" / "sub" / "escape")
    assert remove_entry(fd, "dir")
    assert remove_entry(fd, "out")
    assert not remove_entry(fd, "missing")
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in root.iterdir()) == ["in"]


def test_deep_trees_are_cleared_without_recursion(tmp_path: Path) -> None:
    fd = os.open(tmp_path, DIRECTORY_FLAGS)
    try:
        current = fd
        for _ in range(1500):  # deeper than Python's recursion limit
            os.mkdir("d", dir_fd=current)
            step = os.open("d", DIRECTORY_FLAGS, dir_fd=current)
            if current != fd:
                os.close(current)
            current = step
        os.close(current)
        assert sum(1 for _ in walk_directory(fd)) == 1500
        clear_directory(fd)
        assert list(tmp_path.iterdir()) == []
    finally:
        os.close(fd)


def test_walk_lists_links_and_never_enters_them(tree: tuple[Path, Path, int]) -> None:
    paths = [walked.path for walked in walk_directory(tree[2])]
    assert paths == ["dir", "dir/sub", "dir/sub/file.txt", "in", "out"]


def test_open_directories_see_nothing_behind_a_link(
    tree: tuple[Path, Path, int], resolution: str
) -> None:
    with OpenDirectories(tree[2], keep=1) as dirs:
        assert dirs.lstat("dir/sub/file.txt") is not None
        assert dirs.lstat("in/sub/file.txt") is None
        assert dirs.lstat("out/secret.txt") is None
        assert dirs.lstat("dir/sub/file.txt") is not None  # reopened after eviction
