"""Path normalisation and the bad-input table of the protocol."""

from __future__ import annotations

import pytest

from workspacefs import (
    InMemoryFilesystem,
    InvalidPathError,
    LimitExceededError,
    Limits,
    PathEscapeError,
)
from workspacefs.fs import normalize_path

LIMITS = Limits()


@pytest.mark.parametrize(
    ("path", "mount_point", "expected"),
    [
        ("a/b.txt", None, "a/b.txt"),
        ("./a//b/./c", None, "a/b/c"),
        ("a/b/../c", None, "a/c"),
        ("", None, ""),
        (".", None, ""),
        ("/", None, ""),
        ("/a", None, "a"),
        ("/workspace/x.txt", "/workspace", "x.txt"),
        ("/workspace", "/workspace", ""),
        ("/workspace/", "/workspace", ""),
        ("relative/x", "/workspace", "relative/x"),
        ("a/..", None, ""),
    ],
)
def test_normalize(path: str, mount_point: str | None, expected: str) -> None:
    assert normalize_path(path, mount_point, LIMITS) == expected


@pytest.mark.parametrize(
    ("path", "mount_point", "error"),
    [
        ("..", None, PathEscapeError),
        ("../x", None, PathEscapeError),
        ("a/../../x", None, PathEscapeError),
        ("/etc/passwd", "/workspace", PathEscapeError),
        ("/workspacex/a", "/workspace", PathEscapeError),
        ("/workspace/../etc", "/workspace", PathEscapeError),
        ("a\0b", None, InvalidPathError),
        ("bad\udc00surrogate", None, InvalidPathError),
        ("/".join(["d"] * 17), None, LimitExceededError),
        ("x" * 81, None, LimitExceededError),
    ],
)
def test_normalize_refuses(path: str, mount_point: str | None, error: type[Exception]) -> None:
    with pytest.raises(error):
        normalize_path(path, mount_point, LIMITS)


def test_non_utf8_names_survive_as_surrogates() -> None:
    name = b"caf\xe9".decode("utf-8", "surrogateescape")
    fs = InMemoryFilesystem()
    fs.write(name, "x")
    assert [e.name for e in fs.list()] == [name]


def test_custom_limits() -> None:
    fs = InMemoryFilesystem(limits=Limits(max_write_chars=10, max_path_depth=2))
    fs.write("a/b", "0123456789")
    with pytest.raises(ValueError, match="limit of 10"):
        fs.write("a/c", "01234567890")
    with pytest.raises(ValueError, match="depth"):
        fs.write("a/b/c", "x")
    assert not fs.exists("a/c")


def test_errors_carry_errno_and_path() -> None:
    fs = InMemoryFilesystem()
    with pytest.raises(FileNotFoundError) as excinfo:
        fs.read("missing/file.txt")
    assert excinfo.value.errno == 2
    assert excinfo.value.filename == "missing/file.txt"


def test_bad_mount_point() -> None:
    with pytest.raises(ValueError):
        InMemoryFilesystem(mount_point="relative")


@pytest.fixture
def linked() -> InMemoryFilesystem:
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("real/file.txt", "inside")
    tree = fs.tree
    with tree.lock:
        root = tree.resolve_path("")
        assert root is not None
        tree.symlink(root, "inside-rel", "real/file.txt")
        tree.symlink(root, "inside-abs", "/workspace/real")
        tree.symlink(root, "escape-rel", "../../etc/passwd")
        tree.symlink(root, "escape-abs", "/etc")
        tree.symlink(root, "loop", "loop")
        tree.symlink(root, "dangling", "real/new.txt")
    return fs


def test_symlinks_inside_work(linked: InMemoryFilesystem) -> None:
    assert linked.read("inside-rel").content == "inside"
    assert linked.read("inside-abs/file.txt").content == "inside"
    assert linked.stat("inside-rel").is_symlink
    assert linked.stat("inside-rel").is_file
    entries = {e.name: e for e in linked.list()}
    assert entries["inside-abs"].is_directory
    assert entries["inside-abs"].is_symlink
    assert not entries["dangling"].is_file


@pytest.mark.parametrize("path", ["escape-rel", "escape-abs/passwd"])
def test_symlink_escapes_refused(linked: InMemoryFilesystem, path: str) -> None:
    with pytest.raises(PermissionError):
        linked.read(path)
    with pytest.raises(PermissionError):
        linked.write(path, "x")


def test_symlink_loop(linked: InMemoryFilesystem) -> None:
    with pytest.raises(OSError, match="symbolic links"):
        linked.read("loop")
    assert linked.exists("loop")  # the name is there: list shows it


def test_write_through_dangling_symlink_creates_target(linked: InMemoryFilesystem) -> None:
    linked.write("dangling", "made")
    assert linked.read("real/new.txt").content == "made"


def test_delete_symlink_removes_link_only(linked: InMemoryFilesystem) -> None:
    linked.delete("inside-abs")
    assert linked.read("real/file.txt").content == "inside"
