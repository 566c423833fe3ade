"""Damaged repository content is a SnapshotError, whatever the interpreter's flags."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import ObjectType

from workspacefs import InMemoryFilesystem, SnapshotError
from workspacefs import git as wgit


def forge(repo: Path, meta: pygit2.Oid | None = None, meta_json: object = None) -> str:
    """A copy of snapshot 1 whose metadata trailer names ``meta``, or whose root
    metadata record is ``meta_json``; returns the forged commit's id."""
    repository = pygit2.Repository(str(repo))
    commit = repository.revparse_single("refs/workspacefs/ws/snapshots/1").peel(pygit2.Commit)
    old_meta = commit.message.rsplit("Workspacefs-Meta: ", 1)[1].strip()
    if meta is None:
        record = repository.create_blob(json.dumps(meta_json).encode())
        entries = [(b"meta", wgit.MODE_FILE, record)]
        tree = repository.odb.write(ObjectType.TREE, wgit.encode_tree(entries))
        meta = repository.create_commit(None, commit.author, commit.author, "forged\n", tree, [])
    message = commit.message.replace(old_meta, str(meta))
    forged = repository.create_commit(
        None, commit.author, commit.committer, message, commit.tree_id, []
    )
    return str(forged)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    fs = InMemoryFilesystem(workspace_id="ws")
    fs.write("a.txt", "a")
    wgit.persist(fs, fs.snapshot(), tmp_path / "repo.git")
    return tmp_path / "repo.git"


def test_metadata_that_is_not_a_commit(repo: Path) -> None:
    blob = pygit2.Repository(str(repo)).create_blob(b"not a commit")
    with pytest.raises(SnapshotError, match="not a commit"):
        wgit.load(repo, forge(repo, meta=blob))


def test_metadata_record_that_is_not_an_object(repo: Path) -> None:
    with pytest.raises(SnapshotError, match="not an object"):
        wgit.load(repo, forge(repo, meta_json=["a.txt"]))


def test_directory_entry_that_is_no_tree(tmp_path: Path) -> None:
    repository = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    blob = repository.create_blob(b"x")
    entries = [(b"d", wgit.MODE_TREE, blob)]
    root = repository[repository.odb.write(ObjectType.TREE, wgit.encode_tree(entries))]
    assert isinstance(root, pygit2.Tree)
    with pytest.raises(SnapshotError, match="no tree"):
        list(wgit.walk_tree(repository, root))
