"""Seed 001 (the ``Filesystem`` protocol with snapshot strategies, diffs and retention):
every example.

Run as seed 000's are (see its module docstring): the seed's code as written,
import lines adapted, the framework from ``framework``. The protocol text is
seed 000's word for word (``protocols_000``), and so are the handlers.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from workspacefs import (
    FilesystemSnapshot,
    HostFilesystem,
    HostMount,
    InMemoryFilesystem,
    SnapshotableFilesystem,
    SnapshotCreationError,
    SnapshotError,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
    SnapshotRestoreError,
    SnapshotRetentionPolicy,
    SnapshotStore,
)
from workspacefs.archive import FilesystemSnapshotRef
from workspacefs.fs import Filesystem, FilesystemDiff, InMemorySnapshotStore, Limits
from workspacefs.tools import ToolContext, WorkspaceSection
from workspacefs.tools import VfsWorkspace as VfsToolsSection

from . import protocols_000 as seed
from .conformance import missing
from .framework import MarkdownSection, Prompt, PromptTemplate, Session, Snapshot, append_all
from .shared import Adapter, ReadFileParams, my_handler, read_file_handler


@pytest.fixture(params=["memory", "host"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryFilesystem()
    root = tmp_path / "root"
    root.mkdir()
    return HostFilesystem(_root=str(root))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('main')\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# guide\n")
    return root


# -- Protocol, ToolContext, sections, prompt (as in seed 000) --------------------------------


def test_protocol_definition(backend: Filesystem) -> None:
    assert missing(backend, seed.Filesystem) == []
    backend.write("a.txt", "alpha\n")
    assert missing(backend.read("a.txt"), seed.ReadResult) == []
    assert missing(backend.write("b.txt", "x", mode="append"), seed.WriteResult) == []
    assert missing(backend.stat("a.txt"), seed.FileStat) == []
    assert missing(backend.list()[0], seed.FileEntry) == []
    assert missing(backend.glob("*.txt")[0], seed.GlobMatch) == []
    assert missing(backend.grep("alpha")[0], seed.GrepMatch) == []


def test_tool_context_and_handler(backend: Filesystem) -> None:
    backend.write("a.txt", "x\n")
    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=Session())
    assert read_file_handler(ReadFileParams("a.txt"), context=context).success is False
    context = dataclasses.replace(context, filesystem=backend)
    assert read_file_handler(ReadFileParams("a.txt"), context=context).message == (
        "Read 1 lines from a.txt"
    )
    assert my_handler(ReadFileParams("zz"), context=context).message == "File not found: zz"


def test_sections_and_prompt(project: Path) -> None:
    section = VfsToolsSection(
        mounts=(HostMount(host_path="src/", include_glob=("*.py",)),),
        allowed_host_roots=(str(project),),
    )
    assert isinstance(section, WorkspaceSection)
    prompt: Prompt[Any] = Prompt(
        PromptTemplate(ns="agents/coder", key="k", sections=[MarkdownSection(), section])
    )
    assert prompt.filesystem() is section.filesystem
    context = Adapter()._build_tool_context(prompt, prompt.render(), Session())
    assert context.filesystem is section.filesystem
    assert section.filesystem.exists("src/main.py")


def test_in_memory_filesystem_fields() -> None:
    fs = InMemoryFilesystem(_read_only=True, _mount_point="/workspace")
    assert (fs.root, fs.read_only, fs.mount_point) == ("/", True, "/workspace")
    with pytest.raises(PermissionError):
        fs.write("a", "b")


def test_host_filesystem_fields(tmp_path: Path) -> None:
    fs = HostFilesystem(_root=str(tmp_path), _read_only=False, _mount_point="/workspace")
    fs.write("/workspace/x.txt", "x")
    assert (tmp_path / "x.txt").read_text() == "x"
    with pytest.raises(PermissionError):
        fs.read("/workspace/../../etc/passwd")


def test_limits_and_errors(backend: Filesystem) -> None:
    with pytest.raises(ValueError):
        backend.write("f", "x" * 48_001)
    backend.write("d/f", "x")
    with pytest.raises(FileNotFoundError):
        backend.read("nope")
    with pytest.raises(IsADirectoryError):
        backend.read("d")
    with pytest.raises(NotADirectoryError):
        backend.list("d/f")
    with pytest.raises(FileExistsError):
        backend.write("d/f", "y", mode="create")


# -- Testing ---------------------------------------------------------------------------------


def test_protocol_compliance_factory() -> None:
    from workspacefs.testing import FilesystemProtocolTests

    class Suite(FilesystemProtocolTests):
        def create_filesystem(self) -> Filesystem:  # type: ignore[override]
            return InMemoryFilesystem()

    suite = Suite()
    suite.test_read_missing()
    suite.test_write_and_read_back()


def test_mock_filesystem() -> None:
    from workspacefs.testing import MockFilesystem

    fs = MockFilesystem({"a": "1"})
    fs.read("a")
    fs.write("b", "2")
    assert (fs.read_calls, fs.write_calls) == (["a"], [("b", "2")])


# -- PodmanFilesystem ------------------------------------------------------------------------


@pytest.mark.container
def test_podman_filesystem() -> None:
    """Files written through the section's filesystem are the container's ``/workspace``."""
    from workspacefs.sandbox import PodmanWorkspace as PodmanSandboxSection

    # The host root as the image (the seed names python:3.12-slim): nothing is pulled.
    with PodmanSandboxSection() as section:
        fs = section.filesystem
        fs.write("hello.txt", "from the host")
        result = section.sandbox.exec("cat /workspace/hello.txt")
        assert result.stdout == "from the host"
        section.sandbox.exec("echo made > /workspace/made.txt")
        assert fs.read("/workspace/made.txt").content == "made\n"


# -- Snapshot Protocol -----------------------------------------------------------------------


@pytest.fixture(params=["memory", "host"])
def snapshotable(request: pytest.FixtureRequest, tmp_path: Path) -> SnapshotableFilesystem:
    if request.param == "memory":
        return InMemoryFilesystem()
    root = tmp_path / "project"
    root.mkdir()
    return HostFilesystem(_root=str(root))


def test_snapshot_protocol(snapshotable: SnapshotableFilesystem) -> None:
    """``snapshot_id``, ``created_at``, ``parent_id``, ``file_count``, ``total_bytes``;
    ``diff`` against a snapshot or the live state; ``current_snapshot_id``."""
    fs = snapshotable
    assert fs.current_snapshot_id is None
    fs.write("a.txt", "12345")
    fs.write("d/b.txt", "123")
    first = fs.snapshot(tag="first")
    assert isinstance(first.snapshot_id, uuid.UUID)
    assert isinstance(first.created_at, datetime)
    assert (first.parent_id, first.file_count, first.total_bytes) == (None, 2, 8)
    assert fs.current_snapshot_id == first.snapshot_id
    fs.write("a.txt", "changed")
    fs.delete("d/b.txt")
    fs.write("c.txt", "new")
    second = fs.snapshot()
    assert second.parent_id == first.snapshot_id
    diff = fs.diff(first, second)
    assert (diff.added, diff.modified, diff.deleted) == (("c.txt",), ("a.txt",), ("d/b.txt",))
    assert diff.unchanged_count == 0
    fs.write("c.txt", "newer")
    live = fs.diff(second)
    assert (live.added, live.modified, live.deleted, live.unchanged_count) == (
        (),
        ("c.txt",),
        (),
        1,
    )
    fs.restore(first)
    assert fs.current_snapshot_id == first.snapshot_id
    assert isinstance(diff, FilesystemDiff)


def test_copy_on_write_in_action() -> None:
    """The seed's example writes 1,000,000 characters at once, past its own limit table's
    48,000 a write: the workspace is made with that limit raised (docs/seeds.md)."""
    fs = InMemoryFilesystem(limits=Limits(max_write_chars=1_000_000))
    fs.write("large_file.txt", "x" * 1_000_000)  # 1MB file

    snap1 = fs.snapshot()  # O(1), shares reference to large_file

    fs.write("small_file.txt", "hello")  # Only new entry allocated
    # large_file.txt still shared between fs and snap1

    snap2 = fs.snapshot()  # O(1), both files shared
    fs.write("large_file.txt", "y" * 1_000_000)  # New allocation for modified file
    # snap1 and snap2 still reference original large_file content

    assert fs.at(snap1).read("large_file.txt").content == "x" * 1_000_000
    assert fs.at(snap2).read("large_file.txt").content == "x" * 1_000_000
    assert not fs.at(snap1).exists("small_file.txt")
    space = fs.space_usage()
    # The 1 MB the two snapshots share is counted once, and neither holds it alone.
    assert space.held < 2_100_000
    assert all(item.exclusive < 1_000_000 for item in space.snapshots)


def test_host_filesystem_config(tmp_path: Path) -> None:
    """``SnapshotStrategy`` lists the strategies by preference; ``HostFilesystemConfig``
    picks one (None: detect), a directory and how many snapshots to keep."""
    from workspacefs.host import HostFilesystemConfig, SnapshotStrategy

    assert [s.value for s in SnapshotStrategy] == ["reflink", "git", "overlay", "archive", "copy"]
    config = HostFilesystemConfig()
    assert (config.snapshot_strategy, config.snapshot_dir, config.max_snapshots) == (
        None,
        None,
        10,
    )
    root = tmp_path / "root"
    root.mkdir()
    for strategy, kind in (
        (SnapshotStrategy.GIT, "git"),
        (SnapshotStrategy.ARCHIVE, "archive"),
        (SnapshotStrategy.COPY, "copy"),
    ):
        chosen = HostFilesystemConfig(
            snapshot_strategy=strategy, snapshot_dir=str(tmp_path / strategy.value)
        )
        fs = HostFilesystem(_root=str(root), config=chosen)
        fs.write("a.txt", strategy.value)
        snapshot = fs.snapshot()
        assert snapshot.ref.kind == kind
        fs.write("a.txt", "changed")
        fs.restore(snapshot)
        assert fs.read("a.txt").content == strategy.value
    reflinked = HostFilesystem(
        _root=str(root),
        config=HostFilesystemConfig(
            snapshot_strategy=SnapshotStrategy.REFLINK, snapshot_dir=str(tmp_path / "reflink")
        ),
    )
    try:
        outcome: str = reflinked.snapshot().ref.kind  # true COW: a reflinked copy
    except SnapshotCreationError as refused:  # this filesystem shares no blocks
        outcome = str(refused)
    assert outcome == "copy" or "reflink" in outcome
    kept = HostFilesystem(_root=str(root), config=HostFilesystemConfig(max_snapshots=2))
    for _ in range(4):
        kept.snapshot()
    assert len(kept.snapshots()) == 2
    with pytest.raises(SnapshotCreationError):
        HostFilesystem(
            _root=str(root), config=HostFilesystemConfig(snapshot_strategy=SnapshotStrategy.OVERLAY)
        ).snapshot()


def test_git_strategy(tmp_path: Path) -> None:
    """A git snapshot's reference is the commit hash (kept outside the root, unlike the
    seed's sketch: docs/seeds.md)."""
    from workspacefs.host import HostFilesystemConfig, SnapshotStrategy

    root = tmp_path / "root"
    root.mkdir()
    fs = HostFilesystem(
        _root=str(root), config=HostFilesystemConfig(snapshot_strategy=SnapshotStrategy.GIT)
    )
    fs.write("a.txt", "x")
    snapshot = fs.snapshot(tag="label")
    assert len(snapshot.commit_ref) == 40
    assert snapshot.ref.kind == "git"


@pytest.mark.container
def test_podman_snapshot_strategies() -> None:
    """The Podman workspace's snapshots (the overlay's own: its in-memory tree)."""
    from workspacefs.sandbox import PodmanWorkspace as PodmanSandboxSection

    # The host root as the image (the seed names python:3.12-slim): nothing is pulled.
    with PodmanSandboxSection() as section:
        section.sandbox.exec("echo v1 > /workspace/state.txt")
        snapshot = section.snapshots.snapshot("v1")
        section.sandbox.exec("echo v2 > /workspace/state.txt")
        section.snapshots.restore(snapshot)
        assert section.sandbox.exec("cat /workspace/state.txt").stdout == "v1\n"


# -- Session Integration ---------------------------------------------------------------------


def create_unified_snapshot(
    session: Session,
    filesystem: SnapshotableFilesystem,
    filesystem_key: str,
) -> tuple[Snapshot, FilesystemSnapshot]:
    """Create coordinated session and filesystem snapshots."""

    # Capture filesystem state first
    fs_snapshot = filesystem.snapshot()

    # Record reference in session
    ref = FilesystemSnapshotRef(
        filesystem_key=filesystem_key,
        snapshot_id=fs_snapshot.snapshot_id,  # type: ignore[arg-type]
        backend_type=type(filesystem).__name__,
    )
    session[FilesystemSnapshotRef].append(ref)

    # Create session snapshot (includes the reference)
    session_snapshot = session.snapshot()

    return session_snapshot, fs_snapshot


def restore_unified_snapshot(
    session: Session,
    filesystem: SnapshotableFilesystem,
    session_snapshot: Snapshot,
    fs_snapshot: FilesystemSnapshot,
) -> None:
    """Restore both session and filesystem from snapshots."""

    # Restore filesystem first (may fail)
    filesystem.restore(fs_snapshot)

    # Then restore session state
    session.rollback(session_snapshot)


def test_coordinated_snapshots(snapshotable: SnapshotableFilesystem) -> None:
    session = Session()
    session[FilesystemSnapshotRef].register(FilesystemSnapshotRef, append_all)
    snapshotable.write("a.txt", "v1")
    session_snapshot, fs_snapshot = create_unified_snapshot(session, snapshotable, "vfs.tools")
    (ref,) = session[FilesystemSnapshotRef].all()
    # The seed stores the UUID itself; the project's field is typed str (archive ids).
    assert (ref.filesystem_key, str(ref.snapshot_id)) == ("vfs.tools", str(fs_snapshot.snapshot_id))
    assert ref.backend_type == type(snapshotable).__name__
    snapshotable.write("a.txt", "v2")
    create_unified_snapshot(session, snapshotable, "vfs.tools")
    restore_unified_snapshot(session, snapshotable, session_snapshot, fs_snapshot)
    assert snapshotable.read("a.txt").content == "v1"
    assert len(session[FilesystemSnapshotRef].all()) == 1


# -- Snapshot Storage and Retention ----------------------------------------------------------


def test_retention_policy_defaults() -> None:
    policy = SnapshotRetentionPolicy()
    assert (policy.max_count, policy.max_age_hours, policy.keep_tagged) == (10, None, True)
    fs = InMemoryFilesystem(retention=policy)
    tagged = fs.snapshot(tag="keep")
    for _ in range(12):
        fs.snapshot()
    kept = fs.snapshots()
    assert len(kept) == 10
    assert tagged in kept


def _record(hours_ago: float, tag: str | None = None) -> FilesystemSnapshot:
    return dataclasses.replace(
        InMemoryFilesystem().snapshot(tag=tag),
        created_at=datetime.now(UTC) - timedelta(hours=hours_ago),
    )


def test_snapshot_store() -> None:
    """``save``/``load``/``list``/``delete``/``prune`` as the seed's protocol has them."""
    store: SnapshotStore[Any] = InMemorySnapshotStore()
    old, newer, tagged = _record(5), _record(1), _record(9, tag="t")
    for snapshot in (tagged, old, newer):
        store.save(snapshot)
    assert store.load(old.snapshot_id) == old
    listed: Sequence[FilesystemSnapshot] = store.list()
    assert list(listed) == [tagged, old, newer]
    pruned: int = store.prune(SnapshotRetentionPolicy(max_count=10, max_age_hours=2))
    assert pruned == 1
    assert list(store.list()) == [tagged, newer]
    store.delete(newer.snapshot_id)
    with pytest.raises(SnapshotNotFoundError):
        store.load(newer.snapshot_id)


def test_error_handling() -> None:
    for error in (
        SnapshotCreationError,
        SnapshotRestoreError,
        SnapshotNotFoundError,
        SnapshotIncompatibleError,
    ):
        assert issubclass(error, SnapshotError)
        assert issubclass(error, RuntimeError)
    with pytest.raises(SnapshotIncompatibleError):
        InMemoryFilesystem().restore(InMemoryFilesystem().snapshot())
    with pytest.raises(RuntimeError):
        InMemoryFilesystem().diff(InMemoryFilesystem().snapshot())


def test_usage_example(capsys: pytest.CaptureFixture[str]) -> None:
    # Create filesystem with snapshot support
    fs = InMemoryFilesystem()

    # Initial state
    fs.write("config.py", "DEBUG = True")
    fs.write("app.py", "from config import DEBUG")

    # Capture initial state
    snapshot_v1 = fs.snapshot(tag="initial")

    # Make changes
    fs.write("config.py", "DEBUG = False")
    fs.write("tests.py", "import pytest")

    # Capture modified state
    snapshot_v2 = fs.snapshot(tag="with-tests")

    # Compare snapshots
    diff = fs.diff(snapshot_v1, snapshot_v2)
    print(f"Added: {diff.added}")  # ("tests.py",)
    print(f"Modified: {diff.modified}")  # ("config.py",)
    print(f"Deleted: {diff.deleted}")  # ()

    # Rollback to initial state
    fs.restore(snapshot_v1)
    assert fs.read("config.py").content == "DEBUG = True"
    assert not fs.exists("tests.py")

    # Restore to modified state
    fs.restore(snapshot_v2)
    assert fs.read("config.py").content == "DEBUG = False"
    assert fs.exists("tests.py")

    assert capsys.readouterr().out.splitlines() == [
        "Added: ('tests.py',)",
        "Modified: ('config.py',)",
        "Deleted: ()",
    ]


def test_host_usage_example(tmp_path: Path) -> None:
    """The same on a host directory."""
    fs = HostFilesystem(_root=str(tmp_path))
    fs.write("config.py", "DEBUG = True")
    snapshot_v1 = fs.snapshot(tag="initial")
    fs.write("config.py", "DEBUG = False")
    fs.write("tests.py", "import pytest")
    snapshot_v2 = fs.snapshot(tag="with-tests")
    diff = fs.diff(snapshot_v1, snapshot_v2)
    assert (diff.added, diff.modified, diff.deleted) == (("tests.py",), ("config.py",), ())
    fs.restore(snapshot_v1)
    assert not fs.exists("tests.py")
