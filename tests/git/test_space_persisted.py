"""Space accounting sees the version git persistence keeps (the last one persisted)."""

from __future__ import annotations

from pathlib import Path

from workspacefs import InMemoryFilesystem
from workspacefs import git as wgit


def test_the_last_persisted_version_is_held_by_git_persistence(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem()
    fs.write_bytes("a", b"1" * 1000)
    first = fs.snapshot()
    wgit.persist(fs, first, repo)
    fs.write_bytes("a", b"2" * 500)
    second = fs.snapshot()
    usage = fs.space_usage()
    assert [(s.reached, s.exclusive) for s in usage.snapshots] == [(1000, 0), (500, 0)]
    assert (usage.other.reached, usage.other.exclusive) == (1000, 0)
    held = fs.memory_usage().held
    fs.delete_snapshot(first)  # git persistence still holds its version: nothing freed
    assert fs.memory_usage().held == held
    other = fs.space_usage().other
    assert (other.reached, other.exclusive) == (1000, 1000)
    wgit.persist(fs, second, repo)  # now it holds the second one instead
    assert held - fs.memory_usage().held == other.exclusive
    assert fs.space_usage().other.exclusive == 0
