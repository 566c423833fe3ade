"""The hidden /.snapshots directory: every snapshot, read-only, next to the live tree."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Mounted


def test_browse_snapshots_by_tag_and_id(mounted: Mounted) -> None:
    root = mounted.root
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("v1\n")
    first = mounted.fs.snapshot(tag="first")
    (root / "src" / "app.py").write_text("v2 live\n")
    (root / "new.txt").write_text("after\n")
    snapdir = root / ".snapshots"
    assert sorted(os.listdir(snapdir)) == sorted(["first", str(first.snapshot_id)])
    assert (snapdir / "first" / "src" / "app.py").read_text() == "v1\n"
    assert (snapdir / str(first.snapshot_id) / "src" / "app.py").read_text() == "v1\n"
    assert not (snapdir / "first" / "new.txt").exists()
    assert (root / "src" / "app.py").read_text() == "v2 live\n"
    # A snapshot taken now shows up at once.
    second = mounted.fs.snapshot(tag="second")
    assert (snapdir / "second" / "new.txt").read_text() == "after\n"
    assert str(second.snapshot_id) in os.listdir(snapdir)


def test_hidden_from_listings_and_tools(mounted: Mounted) -> None:
    root = mounted.root
    (root / "a.txt").write_text("a")
    mounted.fs.snapshot(tag="t")
    assert ".snapshots" not in os.listdir(root)
    found = subprocess.run(["find", str(root)], capture_output=True, text=True, check=True)
    assert ".snapshots" not in found.stdout
    assert (root / ".snapshots").is_dir()


def test_snapshots_are_read_only(mounted: Mounted) -> None:
    root = mounted.root
    (root / "f.txt").write_text("x")
    mounted.fs.snapshot(tag="ro")
    base = root / ".snapshots" / "ro"
    attempts: list[Callable[[], object]] = [
        lambda: (base / "f.txt").write_text("y"),
        lambda: (base / "new.txt").write_text("y"),
        lambda: os.mkdir(base / "d"),
        lambda: os.unlink(base / "f.txt"),
        lambda: os.rename(base / "f.txt", root / "moved.txt"),
        lambda: os.chmod(base / "f.txt", 0o600),
        lambda: os.mkdir(root / ".snapshots" / "new"),
    ]
    for action in attempts:
        with pytest.raises(OSError) as excinfo:
            action()
        assert excinfo.value.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    assert (base / "f.txt").read_text() == "x"
    assert mounted.fs.read("f.txt").content == "x"


def test_copy_back_out_of_a_snapshot(mounted: Mounted) -> None:
    root = mounted.root
    (root / "src").mkdir()
    (root / "src" / "keep.py").write_text("keep\n")
    mounted.fs.snapshot(tag="good")
    subprocess.run(["rm", "-rf", str(root / "src")], check=True)
    subprocess.run(["cp", "-a", str(root / ".snapshots/good/src"), str(root / "src")], check=True)
    assert mounted.fs.read("src/keep.py").content == "keep\n"


def test_real_entry_named_snapshots_wins(mounted: Mounted) -> None:
    mounted.fs.write(".snapshots/mine.txt", "a real file")
    mounted.fs.snapshot(tag="t")
    assert os.listdir(Path(mounted.root) / ".snapshots") == ["mine.txt"]


def test_deleted_snapshot_disappears(mounted: Mounted) -> None:
    mounted.fs.write("a.txt", "a")
    snapshot = mounted.fs.snapshot(tag="gone-soon")
    assert (Path(mounted.root) / ".snapshots" / "gone-soon" / "a.txt").exists()
    mounted.fs.delete_snapshot(snapshot)
    assert "gone-soon" not in os.listdir(Path(mounted.root) / ".snapshots")
