"""A large snapshot loaded from git (``git.load(background=True)``) through a real mount,
before anything lists it in the background: ``ls``, ``cat`` and ``ls -R`` of what is
not listed yet list it as they reach it, and a write through the mount lists the rest
first."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.large_repos import WORKSPACE, content, large_repo, os_walk_files
from workspacefs import InMemoryFilesystem, mount
from workspacefs import git as wgit


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return large_repo(tmp_path_factory.mktemp("large") / "repo.git")


@pytest.fixture
def unlisted(repo: Path, tmp_path: Path) -> Iterator[tuple[InMemoryFilesystem, Path]]:
    """The snapshot loaded in the background, mounted; its hydration never started."""
    fs = wgit.load(repo, "v1", workspace=WORKSPACE, background=True, mount_point="/workspace")
    root = tmp_path / "mnt"
    root.mkdir()
    with mount(fs, root, allow_other=True):
        yield fs, root


def test_ls_and_cat_of_what_is_not_listed_yet(unlisted: tuple[InMemoryFilesystem, Path]) -> None:
    fs, root = unlisted
    assert fs.tree.unlisted
    assert {"src", "data", "package.json", "readme-link"} <= set(os.listdir(root))
    assert (root / "data/d33/f7.bin").read_bytes() == content("data/d33/f7.bin")
    assert len(os.listdir(root / "src/p4")) == 101  # m0.py to m99.py, and sub
    assert os.readlink(root / "readme-link") == "README.md"
    assert os.stat(root / "bin/run.sh").st_mode & 0o777 == 0o755
    assert os.getxattr(root / "bin/run.sh", "user.kind") == b"script"
    assert fs.tree.unlisted  # only what those paths reached was listed
    assert fs.snapshots() == []


def test_ls_r_lists_everything_and_the_snapshot_is_adopted(
    unlisted: tuple[InMemoryFilesystem, Path],
) -> None:
    fs, root = unlisted
    found = os_walk_files(root)
    assert fs.tree.unlisted == 0
    assert len(found) == fs.tree.file_count  # every file and link, a hard link's two names
    assert "src/p19/sub/deep.py" in found
    [loaded] = fs.snapshots()
    assert loaded.tag == "v1"
    assert os.stat(root / "src/p0").st_nlink == 3  # itself, its entry, sub


def test_a_write_through_the_mount_lists_the_rest_first(
    unlisted: tuple[InMemoryFilesystem, Path],
) -> None:
    fs, root = unlisted
    (root / "data/d2/new.txt").write_text("new\n")
    assert fs.tree.unlisted == 0
    [loaded] = fs.snapshots()
    assert fs.diff(loaded).added == ("data/d2/new.txt",)
    assert (root / "data/d89/f99.bin").read_bytes() == content("data/d89/f99.bin")
