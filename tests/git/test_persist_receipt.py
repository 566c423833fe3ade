"""``persist`` answers a receipt (commit, tree digest, the snapshot's file count and
bytes) that ``git.verify_persisted`` checks later against the repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2
import pytest

from workspacefs import InMemoryFilesystem, SnapshotError, git


def test_a_receipt_verifies_and_a_changed_or_damaged_repository_fails_it(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "one\n")
    fs.write("dir/b.txt", "two\n")
    repo = tmp_path / "r.git"
    receipt = git.persist(fs, fs.snapshot(tag="t"), repo)
    assert receipt.snapshot.file_count == 2
    repository = pygit2.Repository(str(repo))
    assert str(repository.get(receipt.commit).tree_id) == receipt.tree  # type: ignore[union-attr]
    git.verify_persisted(repo, receipt)

    fs.write("a.txt", "changed\n")
    later = git.persist(fs, fs.snapshot(), repo)
    repository.references[receipt.ref].set_target(later.commit)  # history rewritten
    with pytest.raises(SnapshotError, match="no longer names"):
        git.verify_persisted(repo, receipt)
    repository.references[receipt.ref].set_target(receipt.commit)
    git.verify_persisted(repo, receipt)

    for kept in (repo / "objects").iterdir():  # every object gone
        if kept.name != "info":
            shutil.rmtree(kept)
    with pytest.raises(SnapshotError):
        git.verify_persisted(repo, receipt)
