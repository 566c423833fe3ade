"""A repository workspacefs creates is its owner's alone (0700), whatever the umask: it
holds every file of the workspace, 0600 ones included, and blame's command lines."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from support.other_user import needs_root, open_directory, refused, umask
from workspacefs import InMemoryFilesystem
from workspacefs import git as wgit


def private_workspace() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("key", "secret\n")
    fs.tree.setattr(fs.tree.resolve_path("key") or 0, mode=0o600)
    return fs


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o000])
def test_a_new_repository_is_private_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    fs = private_workspace()
    with umask(mask):
        wgit.persist(fs, fs.snapshot(), tmp_path / "deep" / "repo.git")
        wgit.persist(fs, fs.snapshot())  # the default repository, under XDG_DATA_HOME
    assert mode_of(tmp_path / "deep" / "repo.git") == 0o700
    assert mode_of(Path(wgit.default_repository(fs.workspace_id))) == 0o700
    assert wgit.open_repository(tmp_path / "deep" / "repo.git").is_bare


def test_an_existing_repository_keeps_its_mode(tmp_path: Path) -> None:
    wgit.open_repository(tmp_path / "shared.git", create=True)
    (tmp_path / "shared.git").chmod(0o750)  # its owner opened it to a group
    fs = private_workspace()
    wgit.persist(fs, fs.snapshot(), tmp_path / "shared.git")
    assert mode_of(tmp_path / "shared.git") == 0o750


@needs_root
def test_another_user_reads_nothing_of_a_persisted_workspace() -> None:
    fs = private_workspace()
    with open_directory() as base, umask(0o000):
        wgit.persist(fs, fs.snapshot(), base / "repo.git")
        objects = [p for p in (base / "repo.git" / "objects").rglob("*") if p.is_file()]
        assert objects
        assert all(refused("cat", path) for path in objects)
        assert refused("ls", base / "repo.git")
