"""Seed 000 (the ``Filesystem`` protocol with git snapshots on the host): every example.

Each test is one code block (or table) of the specification, in its order,
run against workspacefs. Only import lines are adapted: the seed's module
paths become workspacefs's, and names workspacefs spells differently are
imported under the seed's name (``VfsWorkspace as VfsToolsSection``). The
prompt framework the seed's examples live in comes from ``framework`` (a
stand-in: workspacefs depends on no framework). Placeholder host paths
(``/workspace/project``, ``/path/to/project``) become temporary directories;
types the seed's handlers assume (``ReadFileParams``, ``ReadFileResult``)
are defined here with the fields the handlers use. docs/seeds.md maps every
name and lists the deviations kept on purpose.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import socket
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from workspacefs import (
    FilesystemSnapshot,
    HostMount,
    InMemoryFilesystem,
    SnapshotableFilesystem,
    SnapshotError,
    SnapshotRestoreError,
)
from workspacefs import HostFilesystem as HostFilesystem
from workspacefs.fs import Filesystem
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.tools import ToolContext, WorkspaceSection
from workspacefs.tools import VfsWorkspace as VfsToolsSection

from . import protocols_000 as seed
from .conformance import missing
from .framework import (
    MarkdownSection,
    Prompt,
    PromptTemplate,
    Session,
    append_all,
)
from .shared import (
    Adapter,
    ReadFileParams,
    ReadFileResult,
    my_handler,
    read_file_handler,
    rollback_to,
)

# -- Protocol Definition ---------------------------------------------------------------------


@pytest.fixture(params=["memory", "host"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Filesystem:
    if request.param == "memory":
        return InMemoryFilesystem()
    return HostFilesystem(_root=str(tmp_path))


def test_protocol_definition(backend: Filesystem) -> None:
    """Every backend has every method and property of the seed's ``Filesystem``, with the
    seed's parameters, and its results have every property of the seed's result types."""
    assert missing(backend, seed.Filesystem) == []
    backend.write("dir/a.txt", "alpha\nbeta\n")
    assert missing(backend.read("dir/a.txt"), seed.ReadResult) == []
    assert missing(backend.write("dir/b.txt", "x"), seed.WriteResult) == []
    assert missing(backend.stat("dir/a.txt"), seed.FileStat) == []
    assert missing(backend.list("dir")[0], seed.FileEntry) == []
    assert missing(backend.glob("**/*.txt")[0], seed.GlobMatch) == []
    assert missing(backend.grep("beta")[0], seed.GrepMatch) == []
    write = backend.write("dir/c.txt", "tail", mode="create")
    assert (write.path, write.bytes_written, write.mode) == ("dir/c.txt", 4, "create")


# -- ToolContext Integration -----------------------------------------------------------------


def test_updated_tool_context() -> None:
    """``ToolContext`` takes the framework's four fields; the rest default to None."""
    session = Session()
    context = ToolContext(prompt="prompt", rendered_prompt=None, adapter="adapter", session=session)
    assert context.filesystem is None
    assert context.deadline is None
    assert context.budget_tracker is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.filesystem = InMemoryFilesystem()  # type: ignore[misc]


def test_handler_usage(backend: Filesystem) -> None:
    backend.write("notes.txt", "one\ntwo\nthree\n")
    context = ToolContext(
        prompt=None, rendered_prompt=None, adapter=None, session=None, filesystem=backend
    )
    result = read_file_handler(ReadFileParams("notes.txt", offset=1, limit=1), context=context)
    assert result.success
    assert result.message == "Read 3 lines from notes.txt"
    assert result.value == ReadFileResult(content="two\n", path="notes.txt", truncated=True)
    missing_file = read_file_handler(ReadFileParams("nope.txt"), context=context)
    assert (missing_file.success, missing_file.message) == (False, "File not found: nope.txt")
    bare = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=None)
    refused = read_file_handler(ReadFileParams("notes.txt"), context=bare)
    assert (refused.success, refused.value) == (False, None)
    assert refused.message == "No filesystem available in this context."


def test_project_tools_without_a_filesystem() -> None:
    """The project's own tools answer a context without a filesystem as the seed's
    handlers do: a failed result, not a crash."""
    from workspacefs.tools import filesystem_tools

    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=None)
    arguments: dict[str, dict[str, Any]] = {
        "ls": {},
        "stat": {"path": "x"},
        "read_file": {"path": "x"},
        "read_files": {"paths": ["x"]},
        "read_bytes": {"path": "x"},
        "multi_edit": {"path": "x", "edits": [{"old_string": "a", "new_string": "b"}]},
        "mkdir": {"path": "x"},
        "mv": {"source": "x", "destination": "y"},
        "write_file": {"path": "x", "content": "y"},
        "edit_file": {"path": "x", "old_string": "a", "new_string": "b"},
        "glob": {"pattern": "*"},
        "grep": {"pattern": "x"},
        "rm": {"path": "x"},
        "snapshot": {},
        "restore": {"id_or_tag": "t"},
        "diff": {"from": "t"},
    }
    for tool in filesystem_tools():
        result = tool.invoke(arguments[tool.name], context=context)
        assert result.success is False
        assert result.message == "No filesystem available in this context.", tool.name


# -- Section Ownership -----------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The host project the usage example hydrates from (``/path/to/project``)."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('main')\n")
    (root / "src" / "data.json").write_text("{}\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# guide\n")
    return root


def test_workspace_section_protocol(project: Path) -> None:
    """A section exposing ``filesystem`` is a ``WorkspaceSection``; others are not."""
    section = VfsToolsSection(mounts=(HostMount(host_path="src/"),), allowed_host_roots=(project,))
    assert isinstance(section, WorkspaceSection)
    assert not isinstance(MarkdownSection(title="t", key="k"), WorkspaceSection)
    assert isinstance(section.filesystem, Filesystem)


def test_section_implementation(project: Path) -> None:
    """``VfsToolsSection(mounts=, allowed_host_roots=)`` owns an in-memory filesystem
    hydrated from the mounts, and builds its tools bound to it."""
    section = VfsToolsSection(
        mounts=(HostMount(host_path="src/", include_glob=("*.py",)),),
        allowed_host_roots=(str(project),),
    )
    assert isinstance(section.filesystem, InMemoryFilesystem)
    assert section.filesystem is section.filesystem
    assert section.filesystem.read("src/main.py").content == "print('main')\n"
    assert not section.filesystem.exists("src/data.json")
    assert "read_file" in section.tools.names


# -- Prompt Integration ----------------------------------------------------------------------


def test_prompt_filesystem(project: Path) -> None:
    """``Prompt.filesystem()`` (the seed's code) finds the workspace section, nested too."""
    section = VfsToolsSection(mounts=(), allowed_host_roots=(project,))
    flat: Prompt[Any] = Prompt(
        PromptTemplate(ns="n", key="k", sections=[MarkdownSection(), section])
    )
    assert flat.filesystem() is section.filesystem
    nested: Prompt[Any] = Prompt(
        PromptTemplate(ns="n", key="k", sections=[MarkdownSection(children=[section])])
    )
    assert nested.filesystem() is section.filesystem
    assert (
        Prompt(PromptTemplate(ns="n", key="k", sections=[MarkdownSection()])).filesystem() is None
    )


def test_adapter_propagation(project: Path) -> None:
    section = VfsToolsSection(mounts=(), allowed_host_roots=(project,))
    prompt: Prompt[Any] = Prompt(PromptTemplate(ns="n", key="k", sections=[section]))
    adapter = Adapter()
    context = adapter._build_tool_context(prompt, prompt.render(), Session())
    assert context.filesystem is section.filesystem
    assert context.adapter is adapter
    result = section.tools.call("write_file", {"path": "a.txt", "content": "hi"}, context=context)
    assert result.success
    assert section.filesystem.read("a.txt").content == "hi"


# -- Backend Implementations -----------------------------------------------------------------


def test_in_memory_filesystem() -> None:
    """The seed's fields as constructor keywords; ``root`` is "/"; a read-only one refuses."""
    fs = InMemoryFilesystem(_read_only=False, _mount_point="/workspace")
    assert (fs.root, fs.read_only, fs.mount_point) == ("/", False, "/workspace")
    fs.write("/workspace/a.txt", "text")
    assert fs.read("a.txt").content == "text"
    with pytest.raises(FileNotFoundError):
        fs.read("missing.txt")
    frozen = InMemoryFilesystem(_read_only=True)
    assert frozen.read_only
    with pytest.raises(PermissionError):
        frozen.write("a.txt", "x")


def test_podman_overlay_filesystem(tmp_path: Path) -> None:
    """What ``PodmanSandboxSection`` builds on its overlay: a ``HostFilesystem`` with the
    ``/workspace`` mount point, so ``/workspace/file.txt`` is ``file.txt``."""
    overlay = tmp_path / "overlay" / str(uuid.uuid4())
    overlay.mkdir(parents=True, exist_ok=True)
    filesystem = HostFilesystem(
        _root=str(overlay),
        _mount_point="/workspace",
    )
    filesystem.write("/workspace/file.txt", "from the tool")
    assert (overlay / "file.txt").read_text() == "from the tool"
    assert filesystem.read("file.txt").content == "from the tool"
    assert filesystem.mount_point == "/workspace"


def test_host_filesystem(tmp_path: Path) -> None:
    """``root``/``read_only``/``mount_point``, and a path that escapes is PermissionError."""
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    fs = HostFilesystem(_root=str(root))
    assert (fs.root, fs.read_only, fs.mount_point) == (str(root), False, None)
    for escape in ("../outside.txt", "a/../../outside.txt"):
        with pytest.raises(PermissionError):
            fs.read(escape)
    # An absolute path is the root's (the seed joins it to the root and refuses it):
    # either way the host's /etc/passwd is never read (docs/seeds.md).
    with pytest.raises((PermissionError, FileNotFoundError)):
        fs.read("/etc/passwd")
    os.symlink(tmp_path / "outside.txt", root / "link")
    with pytest.raises(PermissionError):
        fs.read("link")
    assert HostFilesystem(_root=str(root), _read_only=True).read_only


# -- Limits ----------------------------------------------------------------------------------


def test_limits(backend: Filesystem) -> None:
    """The recommended defaults: 48,000 chars a write, 16 segments, 80 chars a segment,
    2,000 lines a read, 1,000 grep matches."""
    backend.write("max.txt", "x" * 48_000)
    with pytest.raises(ValueError):
        backend.write("big.txt", "x" * 48_001)
    backend.write("/".join(["d"] * 15 + ["f.txt"]), "ok")
    with pytest.raises(ValueError):
        backend.write("/".join(["d"] * 16 + ["f.txt"]), "too deep")
    backend.write("s" * 80, "ok")
    with pytest.raises(ValueError):
        backend.write("s" * 81, "too long")
    backend.write("lines.txt", "line\n" * 2_500)
    page = backend.read("lines.txt")
    assert (page.limit, page.total_lines, page.truncated) == (2_000, 2_500, True)
    assert page.content.count("\n") == 2_000
    assert len(backend.grep("line", path="lines.txt")) == 1_000


# -- Error Handling --------------------------------------------------------------------------


def test_exception_mapping(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("dir/file.txt", "x")
    with pytest.raises(FileNotFoundError):
        fs.read("absent.txt")
    with pytest.raises(IsADirectoryError):
        fs.read("dir")
    with pytest.raises(NotADirectoryError):
        fs.list("dir/file.txt")
    with pytest.raises(PermissionError):
        InMemoryFilesystem(read_only=True).write("a.txt", "x")
    with pytest.raises(FileExistsError):
        fs.write("dir/file.txt", "y", mode="create")
    with pytest.raises(ValueError):
        fs.write("big.txt", "x" * 48_001)
    # Backend unavailable: a workspace whose daemon no longer answers on its socket.
    from workspacefs import connect

    path = str(tmp_path / "gone.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
    with pytest.raises(RuntimeError):
        connect(path).read("a.txt")


def test_tool_handler_pattern(tmp_path: Path) -> None:
    fs = HostFilesystem(_root=str(tmp_path))
    fs.write("a.txt", "alpha")
    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=None)
    assert my_handler(ReadFileParams("a.txt"), context=context).message == (
        "No filesystem available"
    )
    context = dataclasses.replace(context, filesystem=fs)
    ok = my_handler(ReadFileParams("a.txt"), context=context)
    assert ok.success
    assert ok.value is not None
    assert ok.value.content == "alpha"
    assert my_handler(ReadFileParams("b.txt"), context=context).message == "File not found: b.txt"
    denied = my_handler(ReadFileParams("../escape.txt"), context=context)
    assert denied.success is False
    assert "escape" in denied.message


# -- Testing ---------------------------------------------------------------------------------


class TestInMemoryProtocolCompliance(FilesystemProtocolTests):
    """The seed's suite shape: ``create_filesystem`` takes no argument."""

    def create_filesystem(self) -> Filesystem:  # type: ignore[override]
        """Factory method for the filesystem under test."""
        return InMemoryFilesystem()

    def test_read_nonexistent_raises(self) -> None:
        fs = self.create_filesystem()
        with pytest.raises(FileNotFoundError):
            fs.read("does_not_exist.txt")

    def test_write_and_read_roundtrip(self) -> None:
        fs = self.create_filesystem()
        fs.write("test.txt", "hello world")
        result = fs.read("test.txt")
        assert result.content == "hello world"


class TestHostProtocolCompliance(TestInMemoryProtocolCompliance):
    @pytest.fixture(autouse=True)
    def _root(self, tmp_path: Path) -> None:
        self.root = tmp_path / "root"

    def create_filesystem(self) -> Filesystem:  # type: ignore[override]
        self.root.mkdir(exist_ok=True)
        for child in self.root.iterdir():  # one test may build several
            import shutil

            shutil.rmtree(child) if child.is_dir() else child.unlink()
        return HostFilesystem(_root=str(self.root))


def test_mock_filesystem() -> None:
    """A test double with files given up front that records reads and writes."""
    from workspacefs.testing import MockFilesystem

    fs = MockFilesystem({"config.py": "DEBUG = True"})
    assert fs.read("config.py").content == "DEBUG = True"
    with pytest.raises(FileNotFoundError):
        fs.read("missing.py")
    fs.write("new.py", "x = 1")
    assert fs.read_calls == ["config.py", "missing.py"]
    assert fs.write_calls == [("new.py", "x = 1")]
    assert MockFilesystem().read_calls == []
    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=None)
    context = dataclasses.replace(context, filesystem=fs)
    assert read_file_handler(ReadFileParams("config.py"), context=context).success
    assert fs.read_calls[-1] == "config.py"


# -- Usage Example ---------------------------------------------------------------------------


def test_usage_example(project: Path) -> None:
    vfs_section = VfsToolsSection(
        mounts=(
            HostMount(host_path="src/", include_glob=("*.py",)),
            HostMount(host_path="docs/", include_glob=("*.md",)),
        ),
        allowed_host_roots=(str(project),),
    )

    template = PromptTemplate(
        ns="agents/coder",
        key="edit-files",
        sections=[
            MarkdownSection(
                title="Instructions",
                key="instructions",
                template="Edit files as requested.",
            ),
            vfs_section,
        ],
    )

    prompt: Prompt[Any] = Prompt(template)

    # Access filesystem via prompt (delegates to workspace section)
    fs = prompt.filesystem()
    assert fs is vfs_section.filesystem  # Same instance

    # Pre-populate or inspect before evaluation
    fs.write("scratch/notes.txt", "Working notes...")
    assert fs.exists("src/main.py")  # Hydrated from host mount
    assert fs.exists("docs/guide.md")


# -- Filesystem Snapshots --------------------------------------------------------------------


@pytest.fixture(params=["memory", "host"])
def snapshotable(request: pytest.FixtureRequest, tmp_path: Path) -> SnapshotableFilesystem:
    if request.param == "memory":
        return InMemoryFilesystem()
    root = tmp_path / "project"
    root.mkdir()
    return HostFilesystem(_root=str(root))


def test_filesystem_snapshot_dataclass(snapshotable: SnapshotableFilesystem) -> None:
    """A frozen record with the seed's fields, storable in session state and serialised."""
    snapshot = snapshotable.snapshot(tag="t")
    assert dataclasses.is_dataclass(snapshot)
    assert isinstance(snapshot.snapshot_id, uuid.UUID)
    assert isinstance(snapshot.created_at, datetime)
    assert isinstance(snapshot.commit_ref, str)
    assert snapshot.commit_ref
    assert snapshot.root_path == snapshotable.root
    assert snapshot.tag == "t"
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.tag = "other"  # type: ignore[misc]
    assert FilesystemSnapshot.from_dict(json.loads(json.dumps(snapshot.to_dict()))) == snapshot
    assert hash(snapshot) == hash(dataclasses.replace(snapshot))


def test_snapshotable_filesystem_protocol(snapshotable: SnapshotableFilesystem) -> None:
    assert isinstance(snapshotable, SnapshotableFilesystem)
    snapshotable.write("a.txt", "v1")
    first = snapshotable.snapshot(tag="first")
    snapshotable.write("a.txt", "v2")
    snapshotable.restore(first)
    assert snapshotable.read("a.txt").content == "v1"
    forged = dataclasses.replace(
        first,
        snapshot_id=uuid.uuid4(),
        ref=dataclasses.replace(first.ref, location="f" * 40),
    )
    other = InMemoryFilesystem().snapshot()
    for unknown in (forged, other):
        with pytest.raises(SnapshotRestoreError):
            snapshotable.restore(unknown)


def test_in_memory_snapshots() -> None:
    """``commit_ref`` is ``mem-<n>``, the root "/", no git directory; restore shares data."""
    fs = InMemoryFilesystem()
    fs.write("a.txt", "one")
    first = fs.snapshot()
    second = fs.snapshot(tag="second")
    assert re.fullmatch(r"mem-\d+", first.commit_ref)
    assert first.commit_ref != second.commit_ref
    assert (first.root_path, first.git_dir, second.tag) == ("/", None, "second")
    fs.write("a.txt", "two")
    fs.restore(first)
    assert fs.read("a.txt").content == "one"
    with pytest.raises(SnapshotRestoreError, match=r"nknown|no snapshot"):
        fs.restore(dataclasses.replace(first, snapshot_id=uuid.uuid4()))


def test_host_git_snapshots(tmp_path: Path) -> None:
    """Commits in an external bare repository (a temporary one by default) named by the
    record, which a new instance restores from; ``cleanup`` removes it, twice safely."""
    root = tmp_path / "project"
    root.mkdir()
    fs = HostFilesystem(_root=str(root))
    assert fs.git_dir is None
    fs.write("config.py", "DEBUG = True")
    snapshot = fs.snapshot(tag="initial")
    assert re.fullmatch(r"[0-9a-f]{40}", snapshot.commit_ref)
    assert snapshot.git_dir is not None
    assert snapshot.git_dir == fs.git_dir
    git_dir = Path(snapshot.git_dir)
    assert not git_dir.is_relative_to(root)
    assert (git_dir / "HEAD").is_file()
    assert not (git_dir / ".git").exists()
    assert not (root / ".git").exists()
    fs.write("config.py", "DEBUG = False")
    fs.write("extra.txt", "untracked")

    again = HostFilesystem(_root=str(root))  # another session: git_dir from the record
    again.restore(snapshot)
    assert again.read("config.py").content == "DEBUG = True"
    assert not again.exists("extra.txt")
    fs.cleanup()
    fs.cleanup()
    assert not git_dir.exists()


def test_session_integration(snapshotable: SnapshotableFilesystem) -> None:
    filesystem = snapshotable
    session = Session()
    filesystem.write("a.txt", "before")
    # Register reducer for filesystem snapshots
    session[FilesystemSnapshot].register(FilesystemSnapshot, append_all)

    # Create and store snapshot
    fs_snapshot = filesystem.snapshot(tag="before-refactor")
    session[FilesystemSnapshot].append(fs_snapshot)
    filesystem.write("a.txt", "after")

    # Later: retrieve and restore
    snapshots = session[FilesystemSnapshot].all()
    filesystem.restore(snapshots[-1])
    assert filesystem.read("a.txt").content == "before"


def test_coordinated_restore(snapshotable: SnapshotableFilesystem) -> None:
    session = Session()
    snapshotable.write("a.txt", "v1")
    session[FilesystemSnapshot].append(snapshotable.snapshot())
    checkpoint = session.snapshot()
    snapshotable.write("a.txt", "v2")
    session[FilesystemSnapshot].append(snapshotable.snapshot())
    rollback_to(session, checkpoint, snapshotable)
    assert snapshotable.read("a.txt").content == "v1"
    assert len(session[FilesystemSnapshot].all()) == 1


def test_snapshot_errors(tmp_path: Path) -> None:
    """``SnapshotError`` is a ``RuntimeError``; ``SnapshotRestoreError`` one of them, and a
    failed restore (read-only, unknown, foreign) raises it."""
    assert issubclass(SnapshotError, RuntimeError)
    assert issubclass(SnapshotRestoreError, SnapshotError)
    fs = InMemoryFilesystem()
    snapshot = fs.snapshot()
    frozen = InMemoryFilesystem(_read_only=True)
    with pytest.raises(SnapshotRestoreError) as raised:
        frozen.restore(frozen.snapshot())
    assert isinstance(raised.value, PermissionError)  # and still what it was before
    assert raised.value.errno == errno.EROFS
    with pytest.raises(RuntimeError) as caught:  # the seeds' except clause
        InMemoryFilesystem().restore(snapshot)
    assert isinstance(caught.value, SnapshotRestoreError)
    root = tmp_path / "ro"
    root.mkdir()
    host = HostFilesystem(_root=str(root))
    record = host.snapshot()
    with pytest.raises(SnapshotRestoreError):
        HostFilesystem(_root=str(root), _read_only=True).restore(record)


def test_snapshot_usage_example(tmp_path: Path) -> None:
    project = tmp_path / "workspace" / "project"
    project.mkdir(parents=True)

    # Create filesystem with snapshot support
    fs = HostFilesystem(_root=str(project))

    # Initial state
    fs.write("config.py", "DEBUG = True")
    snapshot_v1 = fs.snapshot(tag="initial")

    # Make changes
    fs.write("config.py", "DEBUG = False")
    fs.write("tests.py", "import pytest")
    snapshot_v2 = fs.snapshot(tag="with-tests")

    # Rollback to initial state
    fs.restore(snapshot_v1)
    assert fs.read("config.py").content == "DEBUG = True"
    assert not fs.exists("tests.py")

    # Restore to modified state
    fs.restore(snapshot_v2)
    assert fs.read("config.py").content == "DEBUG = False"
    assert fs.exists("tests.py")


# -- PodmanSandboxSection ------------------------------------------------------------------


@pytest.mark.container
def test_podman_sandbox_section() -> None:
    """The section's filesystem is the container's ``/workspace`` before and after the
    container changes it; ``snapshot``/``restore`` cover what the container wrote.
    ``PodmanSandboxConfig()`` is ``SandboxConfig.build()`` (options checked once)."""
    from workspacefs.sandbox import PodmanWorkspace as PodmanSandboxSection
    from workspacefs.sandbox import SandboxConfig as PodmanSandboxConfig

    session = Session()
    section = PodmanSandboxSection(session=session, config=PodmanSandboxConfig.build())
    try:
        assert section.session is session
        filesystem = section.filesystem
        assert filesystem.mount_point == "/workspace"
        filesystem.write("/workspace/file.txt", "from a tool")
        assert section.sandbox.exec("cat /workspace/file.txt").stdout == "from a tool"
        before = section.snapshot(tag="before")
        section.sandbox.exec("echo changed > /workspace/file.txt; touch /workspace/new")
        assert filesystem.read("file.txt").content == "changed\n"
        section.restore(before)
        assert section.sandbox.exec("cat /workspace/file.txt; ls /workspace").stdout == (
            "from a toolfile.txt\n"
        )
    finally:
        section.close()
