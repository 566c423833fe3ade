"""Snapshots persisted to real git repositories: exact, incremental, movable."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import hypothesis.strategies as st
import pygit2
import pytest
from hypothesis import HealthCheck, given, settings

from workspacefs import (
    InMemoryFilesystem,
    SnapshotCreationError,
    SnapshotNotFoundError,
    SnapshotRetentionPolicy,
)
from workspacefs import git as wgit
from workspacefs.fs import TreeFilesystem
from workspacefs.tree import ROOT_INO, Directory, File, Special, Symlink

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(git_dir: Path, *args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def picture(fs: TreeFilesystem) -> dict[str, tuple[object, ...]]:
    """Everything observable about a tree: kinds, bytes, modes, owners, times, xattrs, links."""
    view = fs.view
    seen: dict[int, str] = {}
    result: dict[str, tuple[object, ...]] = {}
    root = view.node(ROOT_INO)
    result["."] = (root.mode, root.uid, root.gid, root.mtime_ns)
    for path, ino, node in sorted(view.walk(), key=lambda item: item[0]):
        content: object = None
        if isinstance(node, File):
            content = node.read(0, node.size)
        elif isinstance(node, Symlink):
            content = node.target
        elif isinstance(node, Special):
            content = node.rdev
        link = seen.setdefault(ino, path)
        xattrs = tuple(sorted((node.xattrs or {}).items()))
        times = (
            (node.atime_ns, node.mtime_ns, node.ctime_ns)
            if not isinstance(node, Directory)
            else (node.mtime_ns,)
        )
        result[path] = (node.mode, node.uid, node.gid, times, content, xattrs, link, node.nlink)
    return result


def sample_workspace() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("README.md", "# sample\n")
    fs.write_bytes("bin/data.bin", bytes(range(256)) * 1000)
    fs.write("src/pkg/app.py", "print('app')\n")
    fs.mkdir("empty/nested")
    tree = fs.tree
    with tree.lock:
        app = tree.resolve_path("src/pkg/app.py")
        assert app is not None
        tree.setattr(app, mode=0o4755, uid=1000, gid=100)
        tree.setxattr(app, b"user.origin", b"\x00binary\xff")
        tree.link(app, ROOT_INO, "app-link.py")
        tree.symlink(ROOT_INO, "readme-link", "README.md")
        tree.mknod(ROOT_INO, "pipe", stat.S_IFIFO | 0o600)
        name = b"caf\xe9-\xff".decode("utf-8", "surrogateescape")
        tree.write(tree.create(ROOT_INO, name), 0, b"non-UTF-8 name")
    return fs


def test_round_trip_is_exact(tmp_path: Path) -> None:
    fs = sample_workspace()
    snapshot = fs.snapshot(tag="sample")
    persisted = wgit.persist(fs, snapshot, tmp_path / "repo.git")
    # Exact when asked to keep what a repository may not bring in unasked (setuid here).
    loaded = wgit.load(
        tmp_path / "repo.git", "sample", workspace=fs.workspace_id, special_modes=True
    )
    assert picture(loaded) == picture(fs.at(snapshot))
    unasked = wgit.load(tmp_path / "repo.git", "sample", workspace=fs.workspace_id)
    assert unasked.tree.node(unasked.tree.resolve_path("src/pkg/app.py") or 0).mode == 0o100755
    assert loaded.current_snapshot_id == snapshot.snapshot_id
    assert persisted.ref.startswith(f"refs/workspacefs/{fs.workspace_id}/snapshots/")


def test_git_sees_exactly_the_workspace(tmp_path: Path) -> None:
    fs = sample_workspace()
    persisted = wgit.persist(fs, fs.snapshot(), tmp_path / "repo.git")
    repo = tmp_path / "repo.git"
    listing = git(repo, "ls-tree", "-r", "--full-tree", persisted.commit)
    modes = {line.split("\t")[1]: line.split()[0] for line in listing.splitlines()}
    assert modes["src/pkg/app.py"] == "100755"
    assert modes["README.md"] == "100644"
    assert modes["readme-link"] == "120000"
    assert "pipe" not in modes  # fifos live in the metadata only
    git(repo, "fsck", "--strict")
    work = tmp_path / "checkout"
    git(repo, "worktree", "add", "--detach", str(work), persisted.commit)
    assert (work / "src/pkg/app.py").read_text() == "print('app')\n"
    assert os.readlink(work / "readme-link") == "README.md"
    assert (work / "bin/data.bin").read_bytes() == bytes(range(256)) * 1000
    assert git(repo, "for-each-ref", "--format=%(refname)").startswith("refs/workspacefs/")


def test_user_refs_and_head_untouched(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    pygit2.init_repository(str(repo), bare=True)
    before = git(repo, "symbolic-ref", "HEAD")
    fs = sample_workspace()
    wgit.persist(fs, fs.snapshot(tag="t"), repo)
    assert git(repo, "symbolic-ref", "HEAD") == before
    refs = git(repo, "for-each-ref", "--format=%(refname)").split()
    assert all(ref.startswith("refs/workspacefs/") for ref in refs)


def count_objects(repo: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(repo / "objects"))


def test_incremental_persist_writes_only_the_changed_path(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    for i in range(2000):
        fs.write(f"d{i % 20}/sub{i % 5}/f{i}.txt", f"file {i}\n")
    repo = tmp_path / "repo.git"
    first = wgit.persist(fs, fs.snapshot(), repo)
    before = count_objects(repo)
    fs.write("d7/sub2/f1007.txt", "changed\n")
    second = wgit.persist(fs, fs.snapshot(), repo)
    written = count_objects(repo) - before
    # 1 blob + 3 trees (root, d7, d7/sub2) + 3 metadata trees + 3 metadata blobs + 2 commits.
    assert written <= 12
    assert second.objects_written <= 12
    assert git(repo, "rev-parse", f"{second.commit}^").strip() == first.commit
    diff = git(repo, "diff", "--name-only", first.commit, second.commit)
    assert diff.split() == ["d7/sub2/f1007.txt"]


def test_unchanged_content_is_never_reread(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a")
    fs.write("b.txt", "b")
    repo = tmp_path / "repo.git"
    wgit.persist(fs, fs.snapshot(), repo)
    loaded = wgit.load(repo, "1", workspace=fs.workspace_id)
    loaded.write("c.txt", "c")
    wgit.persist(loaded, loaded.snapshot(), repo)
    with loaded.tree.lock:
        for name in ("a.txt", "b.txt"):
            ino = loaded.tree.resolve_path(name)
            assert ino is not None
            node = loaded.tree.node(ino)
            assert isinstance(node, File)
            assert node.lazy is not None, f"{name} was loaded just to persist it"


def test_cross_process_load(tmp_path: Path) -> None:
    fs = sample_workspace()
    repo = tmp_path / "repo.git"
    wgit.persist(fs, fs.snapshot(tag="shared"), repo)
    script = textwrap.dedent(
        f"""
        from workspacefs import git
        fs = git.load({str(repo)!r}, "shared", workspace={fs.workspace_id!r})
        print(fs.read("src/pkg/app.py").content, end="")
        print(sorted(m.path for m in fs.glob("**")))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    expected = sorted(m.path for m in fs.glob("**"))
    assert out.stdout == f"print('app')\n{expected}\n"


def test_push_fetch_and_load_elsewhere(tmp_path: Path) -> None:
    fs = sample_workspace()
    local, remote, other = tmp_path / "local.git", tmp_path / "remote.git", tmp_path / "other.git"
    wgit.persist(fs, fs.snapshot(tag="v1"), local)
    pygit2.init_repository(str(remote), bare=True)
    wgit.push(local, str(remote))
    wgit.fetch(other, f"file://{remote}")
    moved = wgit.load(other, "v1", workspace=fs.workspace_id, special_modes=True)
    assert picture(moved) == picture(fs.at(fs.snapshots()[0]))


def test_prune_makes_objects_collectable(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    repo = tmp_path / "repo.git"
    for i in range(4):
        fs.write(f"f{i}.txt", f"unique content {i}\n")
        record = fs.snapshot(tag="keep" if i == 0 else None)
        wgit.persist(fs, record, repo)
    # The tagged first snapshot is kept and counts toward the two.
    pruned = wgit.prune(repo, fs.workspace_id, SnapshotRetentionPolicy(max_count=2))
    assert [p.number for p in pruned] == [2, 3]
    assert [s.number for s in wgit.list_snapshots(repo, fs.workspace_id)] == [1, 4]
    objects_before = git(repo, "count-objects", "-v")
    git(repo, "fsck", "--strict")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "--prune=now", "-q")
    git(repo, "fsck", "--strict")
    assert git(repo, "count-objects", "-v") != objects_before
    assert wgit.load(repo, "4", workspace=fs.workspace_id).read("f1.txt").content == (
        "unique content 1\n"
    )


def test_bad_input(tmp_path: Path) -> None:
    fs = sample_workspace()
    snapshot = fs.snapshot()
    with pytest.raises(FileNotFoundError):
        wgit.load(tmp_path / "missing.git", "1")
    repo = tmp_path / "repo.git"
    wgit.persist(fs, snapshot, repo)
    with pytest.raises(SnapshotNotFoundError):
        wgit.load(repo, "no-such-tag", workspace=fs.workspace_id)
    with pytest.raises(SnapshotNotFoundError):
        wgit.load(repo, "0" * 40)
    work = tmp_path / "work"
    pygit2.init_repository(str(work))  # not bare
    with pytest.raises(ValueError, match="bare"):
        wgit.persist(fs, snapshot, work)
    with pytest.raises(ValueError, match="tag 'bad tag with spaces' holds ' '"):
        fs.snapshot(tag="bad tag with spaces")


def test_corrupt_object_is_a_clear_error(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "content")
    repo = tmp_path / "repo.git"
    wgit.persist(fs, fs.snapshot(), repo)  # a first persist writes a pack
    fs.write("a.txt", "changed content")
    persisted = wgit.persist(fs, fs.snapshot(), repo)  # later ones, loose objects
    blob = git(repo, "rev-parse", f"{persisted.commit}:a.txt").strip()
    path = repo / "objects" / blob[:2] / blob[2:]
    path.chmod(0o644)
    path.write_bytes(b"garbage")
    loaded = wgit.load(repo, "2", workspace=fs.workspace_id)  # lazy: fine until read
    with pytest.raises(OSError):
        loaded.read("a.txt")


def test_persist_failure_leaves_no_ref(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "x")
    repo = tmp_path / "repo.git"
    wgit.persist(fs, fs.snapshot(), repo)
    fs.write("dir/b.txt", "new content")
    from workspacefs.git._objects import encode_tree as real

    calls = []

    def failing_encode_tree(entries: list[object]) -> bytes:
        calls.append(1)
        if len(calls) == 2:  # the disk fills up half way through
            raise OSError(28, "No space left on device")
        return real(entries)  # type: ignore[arg-type]

    monkeypatch.setattr("workspacefs.git._persist.encode_tree", failing_encode_tree)
    with pytest.raises(SnapshotCreationError):
        wgit.persist(fs, fs.snapshot(), repo)
    monkeypatch.setattr("workspacefs.git._persist.encode_tree", real)
    assert [s.number for s in wgit.list_snapshots(repo, fs.workspace_id)] == [1]
    retry = wgit.persist(fs, fs.snapshot(), repo)  # the state was not advanced
    assert git(repo, "show", f"{retry.commit}:dir/b.txt") == "new content"


NAMES = st.sampled_from(["a", "b", "c.txt", "dir", "é", "x y"])


@st.composite
def workspaces(draw: st.DrawFn) -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    tree = fs.tree
    dirs = [ROOT_INO]
    files: list[int] = []
    with tree.lock:
        for _ in range(draw(st.integers(0, 25))):
            parent = draw(st.sampled_from(dirs))
            name = draw(NAMES)
            if name in tree.directory(parent).entries:
                continue
            kind = draw(st.sampled_from(["file", "dir", "link", "hard", "exec", "xattr"]))
            if kind == "dir":
                dirs.append(tree.mkdir(parent, name, draw(st.sampled_from([0o755, 0o700, 0o1777]))))
            elif kind == "link":
                tree.symlink(parent, name, draw(st.sampled_from(["a", "../b", "/abs"])))
            elif kind == "hard" and files:
                tree.link(draw(st.sampled_from(files)), parent, name)
            else:
                ino = tree.create(parent, name, 0o755 if kind == "exec" else 0o644)
                tree.write(ino, 0, draw(st.binary(max_size=300)))
                if kind == "xattr":
                    tree.setxattr(ino, b"user.k", draw(st.binary(max_size=10)))
                files.append(ino)
    return fs


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(workspace=workspaces())
def test_random_trees_round_trip(
    workspace: InMemoryFilesystem, tmp_path_factory: pytest.TempPathFactory
) -> None:
    repo = tmp_path_factory.mktemp("prop") / "repo.git"
    snapshot = workspace.snapshot()
    wgit.persist(workspace, snapshot, repo)
    loaded = wgit.load(repo, "1", workspace=workspace.workspace_id, special_modes=True)
    assert picture(loaded) == picture(workspace.at(snapshot))


def test_progress_is_reported(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    for i in range(600):
        fs.write(f"d{i}/f.txt", "x")
    events: list[wgit.Progress] = []
    wgit.persist(fs, fs.snapshot(), tmp_path / "repo.git", progress=events.append)
    phases = [e.phase for e in events]
    assert "trees" in phases
    assert phases[-1] == "done"
    assert all(e.done <= e.total for e in events)
    loaded_events: list[wgit.Progress] = []
    wgit.load(tmp_path / "repo.git", "1", workspace=fs.workspace_id, progress=loaded_events.append)
    assert loaded_events
    assert loaded_events[-1].phase == "directories"


def test_default_repository_is_under_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    fs = InMemoryFilesystem()
    fs.write("a.txt", "x")
    persisted = wgit.persist(fs, fs.snapshot())
    repo = tmp_path / "data" / "workspacefs" / "repositories" / f"{fs.workspace_id}.git"
    assert wgit.default_repository(fs.workspace_id) == str(repo)
    assert wgit.load(repo, "1", workspace=fs.workspace_id).read("a.txt").content == "x"
    assert persisted.number == 1
