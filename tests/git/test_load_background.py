"""``git.load(background=True)``: a large snapshot serves once its root is listed; every
other directory is listed when first reached, the hydration lists the rest and reads
files in an agent's order, and the state once listed is exactly a whole load's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.large_repos import (
    DATA_DIRS,
    MANIFESTS,
    WORKSPACE,
    content,
    damaged_repo,
    large_repo,
    resident,
)
from support.polling import eventually
from workspacefs import (
    AccessDeniedError,
    InMemoryFilesystem,
    QuotaExceededError,
    Rule,
    SnapshotError,
)
from workspacefs import git as wgit
from workspacefs.tree import Directory, File, Node, Symlink, TreeView


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return large_repo(tmp_path_factory.mktemp("large") / "repo.git")


def background(repo: Path, **options: object) -> InMemoryFilesystem:
    fs = wgit.load(repo, "v1", workspace=WORKSPACE, background=True, **options)  # type: ignore[arg-type]
    assert wgit.hydration(fs) is not None, "a snapshot this large is listed in the background"
    return fs


def described(view: TreeView) -> dict[str, tuple[object, ...]]:
    """Everything a whole load shows of each path, contents included."""

    def of(node: Node) -> tuple[object, ...]:
        common = (node.mode, node.uid, node.gid, node.nlink, node.mtime_ns, node.atime_ns)
        xattrs = tuple(sorted((node.xattrs or {}).items()))
        if isinstance(node, File):
            return (*common, xattrs, node.size, node.read(0, node.size))
        if isinstance(node, Symlink):
            return (*common, xattrs, node.target)
        assert isinstance(node, Directory)
        return (*common, xattrs, sorted(node.entries))

    found = {"": of(view.node(1))}
    found.update((path, of(node)) for path, _, node in view.walk())
    return found


def test_a_large_snapshot_returns_with_its_root_listed_and_the_rest_unlisted(repo: Path) -> None:
    fs = background(repo)
    assert fs.tree.unlisted == 4  # src, data, bin and empty wait to be reached
    names = {entry.name for entry in fs.list("")}
    assert {*MANIFESTS, "README.md", "src", "data", "bin", "empty", "readme-link"} <= names
    assert fs.snapshots() == []  # the state as loaded is adopted once it is all listed


def test_any_path_is_read_and_listed_before_the_rest_is(repo: Path) -> None:
    fs = background(repo)
    assert fs.read_bytes("data/d77/f42.bin").content == content("data/d77/f42.bin")
    assert fs.read_bytes("src/p3/sub/deep.py").content == content("src/p3/sub/deep.py")
    assert sorted(e.name for e in fs.list("data/d5"))[:3] == ["f0.bin", "f1.bin", "f10.bin"]
    assert fs.stat("bin/run.sh").mode & 0o777 == 0o755
    hydration = wgit.hydration(fs)
    assert hydration is not None
    # The directories on those paths were listed, and only those (of 11,000 entries).
    assert fs.tree.unlisted > 0
    listed = hydration.facts()["listed_entries"]
    assert isinstance(listed, int)
    assert listed < 1_000
    assert fs.snapshots() == []


def test_once_all_is_listed_it_is_what_a_whole_load_makes(repo: Path) -> None:
    fs = background(repo)
    hydration = wgit.hydration(fs)
    assert hydration is not None
    hydration.start()
    try:
        eventually(lambda: hydration.state not in ("listing", "hydrating"), 60, "hydrated")
    finally:
        hydration.stop()
    assert hydration.state == "done", hydration.facts()
    assert fs.tree.unlisted == 0
    whole = wgit.load(repo, "v1", workspace=WORKSPACE)
    [loaded] = fs.snapshots()
    assert loaded == whole.snapshots()[0]  # the same record: the commit's snapshot
    assert fs.current_snapshot_id == loaded.snapshot_id
    assert described(fs.version(loaded)) == described(whole.version(whole.snapshots()[0]))
    with fs.tree.lock:  # the hard link across directories: one file
        assert fs.tree.resolve_path("src/p0/alias.bin") == fs.tree.resolve_path("data/d0/f0.bin")


def test_a_write_lists_the_rest_first_and_the_loaded_state_stays_the_commit(
    repo: Path, tmp_path: Path
) -> None:
    ours_repo, whole_repo = tmp_path / "a.git", tmp_path / "b.git"
    for copy in (ours_repo, whole_repo):
        shutil.copytree(repo, copy)
    fs = background(ours_repo)
    assert fs.tree.unlisted
    fs.write("data/d1/new.txt", "written while listing\n")
    assert fs.tree.unlisted == 0  # the write listed everything before it changed anything
    [loaded] = fs.snapshots()
    changes = fs.diff(loaded)
    assert (changes.added, changes.modified, changes.deleted) == (("data/d1/new.txt",), (), ())
    # The adopted state is the commit's, so persisting back writes only the change, as
    # after a whole load.
    whole = wgit.load(whole_repo, "v1", workspace=WORKSPACE)
    whole.write("data/d1/new.txt", "written while listing\n")
    ours = wgit.persist(fs, fs.snapshot(tag="v2"), ours_repo)
    theirs = wgit.persist(whole, whole.snapshot(tag="v2"), whole_repo)
    assert ours.objects_written == theirs.objects_written < 20
    assert ours.tree == theirs.tree
    fs.restore(loaded)
    assert not fs.exists("data/d1/new.txt")


def test_the_hydration_reads_manifests_then_sources_then_the_rest_within_half_the_budget(
    repo: Path,
) -> None:
    manifests_and_sources = sum(len(content(name)) for name in MANIFESTS) + sum(
        len(content(f"src/p{d}/m{i}.py")) for d in range(20) for i in range(100)
    )
    # Half the budget holds the manifests and sources, not the data files after them.
    fs = background(repo, memory_budget=2 * manifests_and_sources + (16 << 10))
    hydration = wgit.hydration(fs)
    assert hydration is not None
    hydration.start()
    try:
        eventually(lambda: hydration.state not in ("listing", "hydrating"), 60, "hydrated")
    finally:
        hydration.stop()
    assert hydration.state == "done", hydration.facts()
    assert all(resident(fs, name) for name in MANIFESTS)
    assert all(resident(fs, f"src/p{d}/m{i}.py") for d in (0, 7, 19) for i in (0, 50, 99))
    assert not resident(fs, f"data/d{DATA_DIRS - 1}/f99.bin")
    assert fs.memory_usage().held <= fs.memory_budget // 2
    # What was not read is read when used, as any file of a lazy load.
    assert fs.read_bytes("data/d60/f3.bin").content == content("data/d60/f3.bin")


def test_a_damaged_directory_fails_its_listing_and_every_write_with_the_same_error(
    tmp_path: Path,
) -> None:
    forged = tmp_path / "damaged.git"
    ref = damaged_repo(forged)
    fs = wgit.load(forged, ref, background=True)
    assert fs.read_bytes("d005/f5-007").content == b""  # the rest serves
    for _ in range(2):  # tried again on each access, failing the same way
        with pytest.raises(SnapshotError, match=r"a-bad/f: uid 1099511627776"):
            fs.list("a-bad")
    with pytest.raises(SnapshotError, match="uid 1099511627776"):
        fs.write("new.txt", "x")
    assert not fs.exists("new.txt")
    hydration = wgit.hydration(fs)
    assert hydration is not None
    hydration.start()
    try:
        eventually(lambda: hydration.state != "listing", 60, "listing stopped")
    finally:
        hydration.stop()
    assert hydration.state == "failed"
    assert "uid 1099511627776" in (hydration.error or "")


def test_access_rules_bind_what_is_listed_and_count_it(repo: Path) -> None:
    # Listing is no change of anyone's: a read-only rule does not refuse it, and a
    # quota counts the files the snapshot holds once they are listed.
    fs = background(repo)
    data = sum(len(content(f"data/d{d}/f{i}.bin")) for d in range(DATA_DIRS) for i in range(100))
    fs.rules.set(
        [
            Rule("src/**", "read-only"),
            Rule("data/**", "quota", quota=data + len(content("data/d0/f0.bin")) + 10),
        ]
    )
    assert fs.read_bytes("src/p2/m3.py").content == content("src/p2/m3.py")
    assert fs.tree.unlisted
    with pytest.raises(AccessDeniedError):
        fs.write("src/p2/m3.py", "changed\n")
    assert fs.read_bytes("src/p2/m3.py").content == content("src/p2/m3.py")
    with pytest.raises(QuotaExceededError):
        fs.write("data/d1/big.bin", "x" * 100)
    fs.write("data/d1/small.bin", "x" * 10)
    assert fs.tree.unlisted == 0


def test_a_snapshot_of_a_few_thousand_entries_serves_while_it_is_listed(tmp_path: Path) -> None:
    """Telling a large snapshot from a small one reads records until it knows, before
    the workspace serves: that stops at 2,000 entries (about 15 ms), and a snapshot past
    them is listed as it is reached, like a large one."""
    fs = InMemoryFilesystem(workspace_id=WORKSPACE)
    with fs.transaction() as tree:
        for d in range(30):
            directory = tree.make_dirs(f"d{d}")
            for i in range(100):
                tree.write(tree.create(directory, f"f{i}"), 0, content(f"d{d}/f{i}"))
    wgit.persist(fs, fs.snapshot(tag="v1"), tmp_path / "repo.git")
    loaded = background(tmp_path / "repo.git")
    assert loaded.tree.unlisted == 30
    assert loaded.read_bytes("d29/f99").content == content("d29/f99")
