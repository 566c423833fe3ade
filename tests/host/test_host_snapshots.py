"""HostFilesystem snapshots: commits in an external git dir, exact restore, diff, cross-process."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.other_user import umask
from workspacefs import (
    ArchiveSnapshots,
    HostFilesystem,
    InMemoryFilesystem,
    SnapshotableFilesystem,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
)

from .hostile import state


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('v1')\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "debug.log").write_text("ignored but captured\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\x00\x01")
    os.symlink("src/app.py", root / "app-link")
    return root


def test_snapshot_restore_is_exact(project: Path, tmp_path: Path) -> None:
    fs = HostFilesystem(project, git_dir=tmp_path / "snapshots.git")
    assert isinstance(fs, SnapshotableFilesystem)
    before = state(project)
    snapshot = fs.snapshot(tag="start")
    assert snapshot.ref.repository == str(tmp_path / "snapshots.git")
    assert snapshot.file_count == 6
    fs.write("src/app.py", "print('v2')\n")
    fs.write("new/deep/file.txt", "created later")
    fs.delete("debug.log")
    (project / "run.sh").chmod(0o644)
    (project / "empty-new-dir").mkdir()
    fs.restore(snapshot)
    assert state(project) == before
    assert fs.current_snapshot_id == snapshot.snapshot_id


def test_git_dir_stays_outside_the_root(project: Path) -> None:
    fs = HostFilesystem(project)
    fs.snapshot()
    assert fs.git_dir is not None
    assert not os.path.realpath(fs.git_dir).startswith(str(project))
    with pytest.raises(ValueError, match="outside"):
        HostFilesystem(project, git_dir=project / ".snapshots").snapshot()
    fs.cleanup()
    assert not os.path.exists(fs.git_dir)


def test_diff(project: Path, tmp_path: Path) -> None:
    fs = HostFilesystem(project, git_dir=tmp_path / "g.git")
    base = fs.snapshot()
    fs.write("src/app.py", "changed")
    fs.write("added.txt", "new")
    fs.delete("run.sh")
    live = fs.diff(base)
    assert (live.added, live.modified, live.deleted) == (
        ("added.txt",),
        ("src/app.py",),
        ("run.sh",),
    )
    assert live.unchanged_count == 4
    later = fs.snapshot()
    assert fs.diff(base, later) == live


def test_restore_in_another_process(project: Path, tmp_path: Path) -> None:
    fs = HostFilesystem(project, git_dir=tmp_path / "g.git")
    snapshot = fs.snapshot()
    fs.write("src/app.py", "changed")
    script = textwrap.dedent(
        f"""
        import json, sys
        from workspacefs import FilesystemSnapshot, HostFilesystem
        record = FilesystemSnapshot.from_dict(json.loads(sys.stdin.read()))
        HostFilesystem({str(project)!r}).restore(record)
        """
    )
    import json

    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(snapshot.to_dict()),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert (project / "src" / "app.py").read_text() == "print('v1')\n"


def test_restore_errors(project: Path, tmp_path: Path) -> None:
    fs = HostFilesystem(project, git_dir=tmp_path / "g.git")
    snapshot = fs.snapshot()
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(SnapshotIncompatibleError):
        HostFilesystem(other).restore(snapshot)
    from dataclasses import replace

    with pytest.raises(SnapshotNotFoundError):
        fs.restore(replace(snapshot, ref=replace(snapshot.ref, location="0" * 40)))
    with pytest.raises(PermissionError):
        HostFilesystem(project, read_only=True, git_dir=tmp_path / "g.git").restore(snapshot)


def test_incremental_snapshot_uses_the_stat_cache(tmp_path: Path) -> None:
    root = tmp_path / "big"
    for i in range(300):
        (root / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 10}" / f"f{i}.txt").write_text(f"{i}\n")
    fs = HostFilesystem(root, git_dir=tmp_path / "g.git")
    fs.snapshot()
    objects = tmp_path / "g.git" / "objects"
    before = sum(len(files) for _, _, files in os.walk(objects))
    (root / "d3" / "f3.txt").write_text("changed\n")
    fs.snapshot()
    written = sum(len(files) for _, _, files in os.walk(objects)) - before
    assert written <= 4  # one blob, two trees, one commit


@pytest.mark.parametrize("strategy", ["git", "copy", "archive"])
def test_every_strategy_restores_exactly(strategy: str, project: Path, tmp_path: Path) -> None:
    fs = HostFilesystem(
        project,
        git_dir=tmp_path / "g.git",
        snapshot_dir=tmp_path / "kept",
        snapshot_strategy=strategy,  # type: ignore[arg-type]
    )
    before = state(project)
    snapshot = fs.snapshot(tag=strategy)
    assert snapshot.ref.kind == strategy
    fs.write("src/app.py", "changed")
    fs.write("new.txt", "new")
    fs.delete("run.sh")
    diff = fs.diff(snapshot)
    assert (diff.added, diff.modified, diff.deleted) == (("new.txt",), ("src/app.py",), ("run.sh",))
    fresh = HostFilesystem(project)  # another process: the record says how to restore
    fresh.restore(snapshot)
    assert state(project) == before
    fs.cleanup()


@pytest.mark.parametrize("strategy", ["copy", "archive"])
def test_a_store_whose_marker_is_nested_junk_is_not_this_directorys(
    strategy: str, project: Path, tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    fs = HostFilesystem(project, snapshot_dir=kept, snapshot_strategy=strategy)  # type: ignore[arg-type]
    snapshot = fs.snapshot()
    (kept / ".workspacefs-store.json").write_bytes(b"[" * 30_000 + b"]" * 30_000)
    before = state(project)
    with pytest.raises(SnapshotNotFoundError, match="not a snapshot store of this directory"):
        HostFilesystem(project).restore(snapshot)
    assert state(project) == before


def test_archive_snapshots_are_archive_snapshots(project: Path, tmp_path: Path) -> None:
    """The ``archive`` strategy keeps what ``ArchiveSnapshots`` on its store lists and
    rolls back into any backend."""
    fs = HostFilesystem(project, snapshot_dir=tmp_path / "kept", snapshot_strategy="archive")
    snapshot = fs.snapshot(tag="kept")
    (listed,) = ArchiveSnapshots(InMemoryFilesystem(), tmp_path / "kept").list_snapshots()
    assert listed.archive_path == snapshot.ref.location
    assert (listed.snapshot_id, listed.file_count) == (snapshot.snapshot_id.hex, 6)
    memory = InMemoryFilesystem()
    ArchiveSnapshots(memory, tmp_path / "kept").rollback(listed.snapshot_id)
    assert memory.read("src/app.py").content == "print('v1')\n"
    assert memory.readlink("app-link") == "src/app.py"
    fs.cleanup()


def test_auto_strategy_is_recorded(project: Path, tmp_path: Path) -> None:
    fs = HostFilesystem(project, snapshot_dir=tmp_path / "kept")
    snapshot = fs.snapshot()
    assert snapshot.ref.kind in ("git", "copy")  # copy only where reflinks share blocks
    fs.cleanup()


def test_unknown_strategy(project: Path) -> None:
    with pytest.raises(ValueError, match="strategy"):
        HostFilesystem(project, snapshot_strategy="tape").snapshot()  # type: ignore[arg-type]


def test_a_new_git_dir_is_private_whatever_the_umask(project: Path, tmp_path: Path) -> None:
    # It holds every file of the root, 0600 ones included.
    (project / "key").write_text("secret\n")
    (project / "key").chmod(0o600)
    with umask(0o000):
        HostFilesystem(project, git_dir=tmp_path / "deep" / "snapshots.git").snapshot()
        default = HostFilesystem(project)
        default.snapshot()
    assert stat.S_IMODE((tmp_path / "deep" / "snapshots.git").stat().st_mode) == 0o700
    assert default.git_dir is not None
    assert stat.S_IMODE(os.stat(default.git_dir).st_mode) == 0o700
