"""The mount table, parsed once (``workspacefs.posix.mount_table``): real mounts with names
the kernel escapes, reached through links, and the kernel's format with every field it may
hold."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs.posix import MountEntry, canonical_mountpoint, mount_table, mounts_under

AWKWARD = "a b\tc\nd\\e" + os.fsdecode(b"\xe9")
"""A directory name holding every character the kernel escapes, and a byte that is no UTF-8."""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting tmpfs needs root")


@contextlib.contextmanager
def tmpfs(point: Path, source: str = "wsfs test") -> Iterator[None]:
    subprocess.run(["mount", "-t", "tmpfs", source, os.fsencode(point)], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", os.fsencode(point)], check=True)


@needs_root
def test_a_mount_with_escaped_names_reads_back_exactly(tmp_path: Path) -> None:
    point = tmp_path / AWKWARD
    point.mkdir()
    with tmpfs(point, source="my source"):
        entries = [e for e in mount_table() if e.point == str(point)]
        assert len(entries) == 1, [e.point for e in mount_table() if str(tmp_path) in e.point]
        entry = entries[0]
        assert (entry.fs_type, entry.source, entry.root) == ("tmpfs", "my source", "/")
        device = os.stat(point).st_dev
        assert entry.device == f"{os.major(device)}:{os.minor(device)}"
        assert "rw" in entry.options.split(",")
        assert any(e.mount_id == entry.parent_id for e in mount_table())
        assert mounts_under(point) == [str(point)]
    assert all(e.point != str(point) for e in mount_table())


@needs_root
def test_mounts_under_a_path_reached_through_a_link(tmp_path: Path) -> None:
    """The table shows resolved paths; a path through a symlinked parent finds them too."""
    real = tmp_path / "real"
    (real / "outer" / "inner").mkdir(parents=True)
    (tmp_path / "link").symlink_to("real")
    outer, inner = real / "outer", real / "outer" / "inner"
    with tmpfs(outer):
        (outer / "inner").mkdir()
        with tmpfs(inner):
            through_link = tmp_path / "link" / "outer"
            assert canonical_mountpoint(through_link) == str(outer)
            assert mounts_under(through_link) == [str(inner), str(outer)]
            assert mounts_under(tmp_path / "link" / "outer" / "inner") == [str(inner)]


def test_canonical_mountpoint_resolves_a_last_component_only_if_it_is_a_link(
    tmp_path: Path,
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    (tmp_path / "real" / "last").symlink_to(tmp_path / "real" / "target")
    (tmp_path / "real" / "target").mkdir()
    # A link is the directory it names, as mount(2) takes it.
    assert canonical_mountpoint(tmp_path / "link" / "last") == str(tmp_path / "real" / "target")
    # Anything else is left as it is: it may be a stale mount, which cannot be looked into.
    assert canonical_mountpoint(tmp_path / "link" / "target") == str(tmp_path / "real" / "target")
    assert canonical_mountpoint(tmp_path / "link" / "missing") == str(tmp_path / "real" / "missing")
    assert canonical_mountpoint("/") == "/"


def test_the_kernel_format_is_read_field_by_field(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_bytes(
        b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
        # No optional fields; escapes in every path field, any octal code.
        b"40 22 0:40 /sub\\134dir /mnt/a\\040b\\011c\\012d\\043\\351 ro - fuse.work\\040space "
        b"src\\040x rw,user_id=0\n"
        # Several optional fields, and none of the file system's own options.
        b"41 22 0:41 / /x rw shared:2 master:1 propagate_from:1 unbindable - cgroup2 cgroup2\n"
        b"not a mount record\n"
        b"\n"
    )
    assert mount_table(table) == [
        MountEntry(
            22, 1, "8:1", "/", "/", "rw,relatime", "ext4", "/dev/sda1", "rw,errors=remount-ro"
        ),
        MountEntry(
            40,
            22,
            "0:40",
            "/sub\\dir",
            "/mnt/a b\tc\nd#" + os.fsdecode(b"\xe9"),
            "ro",
            "fuse.work space",
            "src x",
            "rw,user_id=0",
        ),
        MountEntry(41, 22, "0:41", "/", "/x", "rw", "cgroup2", "cgroup2", ""),
    ]


def test_an_unreadable_table_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        mount_table(tmp_path / "missing")
