"""What a snapshot's metadata records is checked when it loads: owners and modes the
kernel can show, times the protocol can show, and nothing privileged from a repository
unless asked (set-ID bits and devices)."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from support.forged_repos import DIR, FILE, Forge, record
from workspacefs import InMemoryFilesystem, SnapshotError
from workspacefs import git as wgit
from workspacefs.tree import Special

MAX_ID = 2**32 - 2
LAST_NS = 253402300799 * 10**9  # 9999-12-31T23:59:59Z
FIRST_NS = -62135596800 * 10**9  # 0001-01-01T00:00:00Z


def one_file(tmp_path: Path, **overrides: Any) -> tuple[Path, str]:
    forge = Forge(tmp_path / "repo.git")
    blob = forge.blob(b"hello")
    ref = forge.root(
        {"ok.txt": (record(FILE, size=5), blob), "f": (record(FILE, size=5) | overrides, blob)}
    )
    return forge.path, ref


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("uid", 2**40),
        ("uid", 2**32 - 1),
        ("gid", -1),
        ("uid", "0"),
        ("gid", True),
        ("uid", 1.5),
        ("mode", "0o644"),
        ("size", -1),
        ("size", 2**63),
        ("atime", "now"),
        ("mode", FILE | 0o1000000),
        ("mode", 0o170644),
    ],
)
def test_a_value_no_kernel_or_caller_can_take_is_refused(
    tmp_path: Path, field: str, value: object
) -> None:
    repo, ref = one_file(tmp_path, **{field: value})
    with pytest.raises(SnapshotError, match=f"/f: .*{field}"):
        wgit.load(repo, ref)


def test_owners_at_the_edges_load(tmp_path: Path) -> None:
    repo, ref = one_file(tmp_path, uid=MAX_ID, gid=0)
    fs = wgit.load(repo, ref)
    node = fs.tree.node(fs.tree.resolve_path("f") or 0)
    assert (node.uid, node.gid) == (MAX_ID, 0)


@pytest.mark.parametrize(
    ("recorded", "loaded"),
    [(2**80, LAST_NS), (-(2**80), FIRST_NS), (LAST_NS, LAST_NS), (FIRST_NS, FIRST_NS), (-1, -1)],
)
def test_times_are_clamped_to_what_the_protocol_shows(
    tmp_path: Path, recorded: int, loaded: int
) -> None:
    repo, ref = one_file(tmp_path, mtime=recorded, atime=recorded, ctime=recorded)
    fs = wgit.load(repo, ref)
    node = fs.tree.node(fs.tree.resolve_path("f") or 0)
    assert (node.atime_ns, node.mtime_ns, node.ctime_ns) == (loaded, loaded, loaded)
    shown = fs.stat("f").modified_at
    assert shown is not None
    assert (
        datetime(1, 1, 1, tzinfo=UTC)
        <= shown
        <= datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    )


def special_repo(tmp_path: Path) -> tuple[Path, str]:
    forge = Forge(tmp_path / "repo.git")
    blob = forge.blob(b"#!/bin/sh\n")
    ref = forge.root(
        {
            "suid": (record(FILE | 0o4755, size=10, uid=0, gid=0), blob),
            "sgid": (record(FILE | 0o2755, size=10), blob),
            "shared": (record(DIR | 0o3777), None),
            "fifo": (record(stat.S_IFIFO | 0o644), None),
            "sock": (record(stat.S_IFSOCK | 0o755), None),
        }
    )
    return forge.path, ref


def modes(fs: InMemoryFilesystem) -> dict[str, int]:
    return {
        entry.name: stat.S_IMODE(fs.tree.node(fs.tree.resolve_path(entry.name) or 0).mode)
        for entry in fs.list()
    }


def test_set_id_bits_are_dropped_unless_asked(tmp_path: Path) -> None:
    repo, ref = special_repo(tmp_path)
    assert modes(wgit.load(repo, ref)) == {
        "suid": 0o755,
        "sgid": 0o755,
        "shared": 0o1777,  # a directory keeps its sticky bit: it only takes rights away
        "fifo": 0o644,
        "sock": 0o755,
    }
    assert modes(wgit.load(repo, ref, special_modes=True)) == {
        "suid": 0o4755,
        "sgid": 0o2755,
        "shared": 0o3777,
        "fifo": 0o644,
        "sock": 0o755,
    }


def test_devices_are_refused_unless_asked(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    device = record(stat.S_IFCHR | 0o666, rdev=0x103)
    ref = forge.root({"null": (device, None), "ok": (record(FILE), forge.blob(b""))})
    with pytest.raises(SnapshotError, match=r"/null: .*device.*special_modes"):
        wgit.load(forge.path, ref)
    fs = wgit.load(forge.path, ref, special_modes=True)
    node = fs.tree.node(fs.tree.resolve_path("null") or 0)
    assert isinstance(node, Special)
    assert node.rdev == 0x103


@pytest.mark.parametrize(
    "entry",
    [
        record(FILE, size=5, link=1) | {"mode": DIR},  # a hard link group on a directory
        record(FILE, size=5, xattrs={"dXNlci54": "!!!"}),  # not base64
        record(FILE, size=5, xattrs={"": "eA=="}),  # an empty name
        record(FILE, size=5, xattrs={"dXNlci54": "A" * 87384}),  # a value over 64 KiB
        record(FILE, size=5, rdev=-1) | {"mode": stat.S_IFIFO | 0o644},
    ],
)
def test_malformed_records_are_refused(tmp_path: Path, entry: dict[str, Any]) -> None:
    forge = Forge(tmp_path / "repo.git")
    ref = forge.root({"f": (entry, forge.blob(b"hello"))})
    with pytest.raises(SnapshotError, match="/f: "):
        wgit.load(forge.path, ref)


@pytest.mark.parametrize(
    ("mode", "git_mode"),
    [
        (FILE, wgit.MODE_TREE),
        (FILE, wgit.MODE_LINK),
        (0o120777, wgit.MODE_FILE),
        (FILE, None),
        (DIR, wgit.MODE_FILE),
        (stat.S_IFIFO | 0o644, wgit.MODE_FILE),
    ],
)
def test_a_record_the_git_tree_contradicts_is_refused(
    tmp_path: Path, mode: int, git_mode: int | None
) -> None:
    forge = Forge(tmp_path / "repo.git")
    blob = forge.blob(b"hello")
    target = forge.tree([(b"x", wgit.MODE_FILE, blob)]) if git_mode == wgit.MODE_TREE else blob
    tree = forge.tree([] if git_mode is None else [(b"f", git_mode, target)])
    records = {".": record(DIR), "f": record(mode, size=5)}
    ref = forge.snapshot(tree, forge.meta_tree(records))
    with pytest.raises(SnapshotError, match="/f: "):
        wgit.load(forge.path, ref)


def test_a_dot_record_below_the_root_is_refused(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    sub = forge.meta_tree({".": record(DIR, uid=0)})
    root = forge.meta_tree({".": record(DIR), "sub": record(DIR)}, {"sub": sub})
    ref = forge.snapshot(forge.tree([]), root)
    with pytest.raises(SnapshotError, match="/sub: "):
        wgit.load(forge.path, ref)


def test_nothing_is_built_when_a_record_is_refused(tmp_path: Path) -> None:
    # The last directory read holds the bad record: the check comes before any node.
    forge = Forge(tmp_path / "repo.git")
    bad = forge.meta_tree({"f": record(FILE, uid=-5)})
    root = forge.meta_tree(
        {".": record(DIR), "a": record(DIR), "z": record(DIR)}, {"a": forge.meta_tree({}), "z": bad}
    )
    ref = forge.snapshot(forge.tree([]), root)
    with pytest.raises(SnapshotError, match="/z/f: uid"):
        wgit.load(forge.path, ref)
