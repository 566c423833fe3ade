"""Attribution persisted to git: a persist/load round trip keeps every change's cause."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2

from workspacefs import (
    BlameEntry,
    Cause,
    InMemoryFilesystem,
    Rule,
    SnapshotRetentionPolicy,
    attributed,
)
from workspacefs import git as wgit
from workspacefs.git._history import INLINE_HISTORY

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

A = Cause.call("write_file", "toolu_a")
B = Cause.call("shell", "toolu_b", "make build")
P = Cause(pid=77, command=("cc", "-o", "app", "app.c"), container="f" * 64, uid=1000)


def picture(entries: list[BlameEntry]) -> list[tuple[str, str | None, str, tuple[Cause, ...]]]:
    """What a blame says, by snapshot id (records differ in where the state is kept)."""
    return [
        (e.path, None if e.snapshot is None else str(e.snapshot.snapshot_id), e.kind, e.causes)
        for e in entries
    ]


def worked(fs: InMemoryFilesystem) -> None:
    """Five snapshots of three files, changed by three causes."""
    with attributed(A):
        fs.write("app.c", "int main;\n")
        fs.write("README", "hi\n")
    fs.snapshot(tag="s1")
    with attributed(P):
        fs.write_bytes("app", b"\x7fELF")
    fs.snapshot(tag="s2")
    with attributed(B):
        fs.write("app.c", "int main(void);\n")
    fs.snapshot(tag="s3")
    with attributed(A):
        fs.delete("README")
    fs.snapshot(tag="s4")
    with attributed(P):
        fs.write_bytes("app", b"\x7fELF2")
    fs.snapshot(tag="s5")


def test_blame_survives_persist_and_load(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    worked(fs)
    repo = tmp_path / "repo.git"
    tags = {s.tag: s for s in fs.snapshots()}
    for tag in ("s2", "s5"):  # not every snapshot: s1, s3, s4 travel in the commits' records
        wgit.persist(fs, tags[tag], repo)
    loaded = wgit.load(repo, "s5", workspace=fs.workspace_id)
    for path in ("app.c", "README", "app"):
        assert picture(loaded.blame(path)) == picture(fs.blame(path, snapshot=tags["s5"]))
    assert [e.causes for e in loaded.blame("app.c")] == [(B,), (A,)]
    assert [e.kind for e in loaded.blame("README")] == ["deleted", "added"]
    # What the loaded workspace does next is blamed on top of what git recorded.
    with attributed(B):
        loaded.write("app.c", "int main(int argc);\n")
    assert [e.causes for e in loaded.blame("app.c")] == [(B,), (B,), (A,)]
    assert [s.snapshot and s.snapshot.tag for s in loaded.history()] == [
        None,
        "s5",
        "s4",
        "s3",
        "s2",
        "s1",
    ]


def test_each_commit_records_only_what_the_repository_lacked(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    worked(fs)
    repo = tmp_path / "repo.git"
    tags = {s.tag: s for s in fs.snapshots()}
    wgit.persist(fs, tags["s2"], repo)
    wgit.persist(fs, tags["s5"], repo)
    head = pygit_commit(repo, fs.workspace_id, "s5")
    recorded = wgit.recorded_changes(head[0], head[1])
    assert recorded is not None
    assert [step.snapshot and step.snapshot.tag for step in recorded] == ["s5", "s4", "s3"]
    # The record is in the metadata commit's message: no object more per persist.
    message = subprocess.run(
        ["git", f"--git-dir={repo}", "log", "-1", "--format=%B", head_meta(repo, fs)],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    ).stdout
    assert '"format":1' in message
    assert "toolu_b" in message


def pygit_commit(repo: Path, workspace: str, tag: str) -> tuple[pygit2.Repository, pygit2.Commit]:
    repository = wgit.open_repository(repo)
    commit = repository.revparse_single(f"refs/workspacefs/{workspace}/tags/{tag}")
    assert isinstance(commit, pygit2.Commit)
    return repository, commit


def head_meta(repo: Path, fs: InMemoryFilesystem) -> str:
    refs = subprocess.run(
        ["git", f"--git-dir={repo}", "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    ).stdout.split()
    return max((r for r in refs if "/meta/" in r), key=lambda r: int(r.rsplit("/", 1)[1]))


def test_a_long_history_goes_in_a_blob_and_loads_back(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    with attributed(P):
        for n in range(INLINE_HISTORY // 40):
            fs.write(f"generated/file-{n:05d}.txt", str(n))
    snapshot = fs.snapshot(tag="big")
    repo = tmp_path / "repo.git"
    wgit.persist(fs, snapshot, repo)
    tree = subprocess.run(
        ["git", f"--git-dir={repo}", "ls-tree", "--name-only", head_meta(repo, fs)],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    ).stdout.split()
    assert "history" in tree
    loaded = wgit.load(repo, "big", workspace=fs.workspace_id)
    assert [e.causes for e in loaded.blame("generated/file-00007.txt")] == [(P,)]
    # And the next persist, small again, drops the blob from the metadata root.
    with attributed(A):
        loaded.write("generated/file-00007.txt", "changed")
    wgit.persist(loaded, loaded.snapshot(tag="small"), repo)
    tree = subprocess.run(
        ["git", f"--git-dir={repo}", "ls-tree", "--name-only", head_meta(repo, fs)],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    ).stdout.split()
    assert "history" not in tree
    again = wgit.load(repo, "small", workspace=fs.workspace_id)
    assert [e.causes for e in again.blame("generated/file-00007.txt")] == [(A,), (P,)]
    fsck = subprocess.run(
        ["git", f"--git-dir={repo}", "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        env=GIT_ENV,
    )
    assert fsck.returncode == 0, fsck.stderr


def test_another_repository_gets_the_whole_history(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    worked(fs)
    first = tmp_path / "first.git"
    wgit.persist(fs, fs.snapshots()[-1], first)
    loaded = wgit.load(first, "s5", workspace=fs.workspace_id)
    second = tmp_path / "second.git"
    wgit.persist(loaded, loaded.snapshots()[-1], second)
    moved = wgit.load(second, "s5", workspace=fs.workspace_id)
    for path in ("app.c", "README", "app"):
        assert picture(moved.blame(path)) == picture(fs.blame(path, snapshot=fs.snapshots()[-1]))


def test_a_pruned_persisted_snapshot_does_not_repeat_history(tmp_path: Path) -> None:
    retention = SnapshotRetentionPolicy(max_count=2, keep_tagged=False)
    fs = InMemoryFilesystem(retention=retention)
    repo = tmp_path / "repo.git"
    with attributed(A):
        fs.write("f", "1")
    wgit.persist(fs, fs.snapshot(tag="one"), repo)
    for n, cause in enumerate((B, P, B), start=2):
        with attributed(cause):
            fs.write("f", str(n))
        fs.snapshot(tag=f"s{n}")  # "one" is pruned from memory along the way
    assert "one" not in [s.tag for s in fs.snapshots()]
    wgit.persist(fs, fs.snapshots()[-1], repo)
    loaded = wgit.load(repo, "s4", workspace=fs.workspace_id)
    # s2 was pruned before it was persisted: its change is counted with s3's. "one" is in
    # the repository already, and its change is there once.
    found = [(e.snapshot and e.snapshot.tag, e.kind, e.causes) for e in loaded.blame("f")]
    assert found == [("s4", "modified", (B,)), ("s3", "modified", (B, P)), ("one", "added", (A,))]


def test_a_hidden_path_s_history_is_persisted_all_the_same(tmp_path: Path) -> None:
    # A hidden rule keeps the path from readers; git still records what changed it.
    fs = InMemoryFilesystem()
    with attributed(A):
        fs.write(".env", "TOKEN=1\n")
    fs.snapshot(tag="s1")
    with attributed(B):
        fs.write(".env", "TOKEN=2\n")
    last = fs.snapshot(tag="s2")
    fs.rules.add(Rule(".env", "hidden"))
    assert fs.blame(".env") == []
    repo = tmp_path / "repo.git"
    wgit.persist(fs, last, repo)
    loaded = wgit.load(repo, "s2", workspace=fs.workspace_id)
    assert [e.causes for e in loaded.blame(".env")] == [(B,), (A,)]
