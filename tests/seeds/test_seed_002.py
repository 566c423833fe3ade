"""Seed 002 (the ``Filesystem`` protocol with binary reads and writes): every example.

Run as seed 000's are (see its module docstring): the seed's code as written,
import lines adapted, the framework from ``framework``.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from workspacefs import (
    FilesystemSnapshot,
    HostFilesystem,
    HostMount,
    InMemoryFilesystem,
    SnapshotableFilesystem,
    SnapshotError,
    SnapshotRestoreError,
)
from workspacefs.fs import Filesystem
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.tools import ToolContext, WorkspaceSection
from workspacefs.tools import VfsWorkspace as VfsToolsSection

from . import protocols_002 as seed
from .conformance import missing
from .framework import MarkdownSection, Prompt, PromptTemplate, Session, append_all
from .shared import (
    Adapter,
    ReadFileParams,
    ReadFileResult,
    my_handler,
    read_file_handler,
    rollback_to,
)


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


# -- Protocol Definition ---------------------------------------------------------------------


def test_result_types_and_protocol(backend: Filesystem) -> None:
    assert missing(backend, seed.Filesystem) == []
    backend.write_bytes("dir/blob.bin", b"\x00\x01binary\xff")
    backend.write("dir/a.txt", "alpha\nbeta\n")
    assert missing(backend.read("dir/a.txt"), seed.ReadResult) == []
    assert missing(backend.read_bytes("dir/blob.bin"), seed.ReadBytesResult) == []
    assert missing(backend.write("dir/b.txt", "x"), seed.WriteResult) == []
    assert missing(backend.stat("dir/a.txt"), seed.FileStat) == []
    assert missing(backend.list("dir")[0], seed.FileEntry) == []
    assert missing(backend.glob("**/*.txt")[0], seed.GlobMatch) == []
    assert missing(backend.grep("beta")[0], seed.GrepMatch) == []


def test_read_bytes_none_reads_entire_file(backend: Filesystem) -> None:
    """``limit: None means read entire file`` (bounded by the memory the workspace has)."""
    data = bytes(range(256)) * (80 * 1024 + 1)  # 20 MiB + 256: past the text read cap
    written = 0
    for start in range(0, len(data), 4 << 20):
        block = data[start : start + (4 << 20)]
        backend.write_bytes("big.bin", block, mode="append" if start else "overwrite")
        written += len(block)
    whole = backend.read_bytes("big.bin")
    assert (whole.size_bytes, whole.truncated, len(whole.content)) == (written, False, written)
    assert whole.content == data
    tail = backend.read_bytes("big.bin", offset=written - 10)
    assert (tail.content, tail.offset, tail.truncated) == (data[-10:], written - 10, False)
    page = backend.read_bytes("big.bin", offset=1, limit=3)
    assert (page.content, page.limit, page.truncated) == (data[1:4], 3, True)


# -- ToolContext Integration -----------------------------------------------------------------


def test_updated_tool_context() -> None:
    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=Session())
    assert (context.deadline, context.budget_tracker, context.filesystem) == (None, None, None)


def test_handler_usage_pattern(backend: Filesystem) -> None:
    backend.write("a.txt", "one\ntwo\n")
    context = ToolContext(
        prompt=None, rendered_prompt=None, adapter=None, session=None, filesystem=backend
    )
    result = read_file_handler(ReadFileParams("a.txt"), context=context)
    assert result.message == "Read 2 lines from a.txt"
    assert result.value == ReadFileResult(content="one\ntwo\n", path="a.txt", truncated=False)
    empty = dataclasses.replace(context, filesystem=None)
    assert read_file_handler(ReadFileParams("a.txt"), context=empty).success is False


# -- Section Ownership and Prompt Integration ------------------------------------------------


def test_workspace_section(project: Path) -> None:
    section = VfsToolsSection(
        mounts=(HostMount(host_path="src/"),), allowed_host_roots=(str(project),)
    )
    assert isinstance(section, WorkspaceSection)
    assert section.filesystem.exists("src/main.py")
    assert section.filesystem is section.filesystem


def test_prompt_and_adapter(project: Path) -> None:
    section = VfsToolsSection(mounts=(), allowed_host_roots=(str(project),))
    prompt: Prompt[Any] = Prompt(PromptTemplate(ns="n", key="k", sections=[section]))
    assert prompt.filesystem() is section.filesystem
    context = Adapter()._build_tool_context(prompt, prompt.render(), Session())
    assert context.filesystem is section.filesystem


# -- Backend Implementations -----------------------------------------------------------------


def test_backend_table(project: Path, tmp_path: Path) -> None:
    """In memory: hydrated from host mounts, structural sharing for snapshots. Host:
    sandboxed, git snapshots outside the root."""
    memory = InMemoryFilesystem()
    memory.hydrate_from_host(HostMount(host_path="src/"), allowed_roots=(str(project),))
    assert memory.read("src/main.py").content == "print('main')\n"
    host = HostFilesystem(_root=str(project))
    with pytest.raises(PermissionError):
        host.read("../outside")
    snapshot = host.snapshot()
    assert snapshot.git_dir is not None
    assert not Path(snapshot.git_dir).is_relative_to(project)


def test_design_characteristics(backend: Filesystem, tmp_path: Path) -> None:
    """Exceptions mapped, paths normalised, limits enforced, a read-only flag."""
    backend.write("./a/../b.txt", "x")
    assert backend.exists("b.txt")
    with pytest.raises(ValueError):
        backend.write("big.txt", "x" * 48_001)
    frozen = InMemoryFilesystem(_read_only=True)
    root = tmp_path / "frozen"
    root.mkdir()
    for read_only in (frozen, HostFilesystem(_root=str(root), _read_only=True)):
        assert read_only.read_only
        with pytest.raises(PermissionError):
            read_only.write_bytes("x.bin", b"x")


# -- Limits and Error Handling ---------------------------------------------------------------


def test_limits(backend: Filesystem) -> None:
    with pytest.raises(ValueError):
        backend.write("x", "y" * 48_001)
    with pytest.raises(ValueError):
        backend.write("/".join(["d"] * 17), "deep")
    with pytest.raises(ValueError):
        backend.write("n" * 81, "long")
    backend.write("lines.txt", "a\n" * 2_001)
    assert backend.read("lines.txt").limit == 2_000
    assert len(backend.grep("a", max_matches=5_000)) == 1_000


def test_exception_mapping(backend: Filesystem) -> None:
    backend.write("d/f.txt", "x")
    for call, error in (
        (lambda: backend.read_bytes("nope"), FileNotFoundError),
        (lambda: backend.read_bytes("d"), IsADirectoryError),
        (lambda: backend.list("d/f.txt"), NotADirectoryError),
        (lambda: backend.read("../out"), PermissionError),
        (lambda: backend.write_bytes("d/f.txt", b"", mode="create"), FileExistsError),
        (lambda: backend.write("f", "\ud800"), ValueError),
    ):
        with pytest.raises(error):
            call()


def test_tool_handler_pattern(backend: Filesystem) -> None:
    backend.write("a.txt", "alpha")
    context = ToolContext(
        prompt=None, rendered_prompt=None, adapter=None, session=None, filesystem=backend
    )
    assert my_handler(ReadFileParams("a.txt"), context=context).message == "Success"
    assert my_handler(ReadFileParams("b"), context=context).message == "File not found: b"
    assert my_handler(ReadFileParams("../x"), context=context).success is False


# -- Filesystem Snapshots --------------------------------------------------------------------


@pytest.fixture(params=["memory", "host"])
def snapshotable(request: pytest.FixtureRequest, tmp_path: Path) -> SnapshotableFilesystem:
    if request.param == "memory":
        return InMemoryFilesystem()
    root = tmp_path / "project"
    root.mkdir()
    return HostFilesystem(_root=str(root))


def test_filesystem_snapshot_dataclass(snapshotable: SnapshotableFilesystem) -> None:
    snapshot = snapshotable.snapshot(tag="label")
    assert isinstance(snapshot.snapshot_id, uuid.UUID)
    assert (snapshot.root_path, snapshot.tag) == (snapshotable.root, "label")
    assert snapshot.commit_ref
    assert snapshot.git_dir == getattr(snapshotable, "git_dir", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.root_path = "x"  # type: ignore[misc]


def test_snapshotable_filesystem(snapshotable: SnapshotableFilesystem) -> None:
    snapshotable.write_bytes("a.bin", b"\x00v1")
    first = snapshotable.snapshot()
    snapshotable.write_bytes("a.bin", b"\x00v2")
    snapshotable.restore(first)
    assert snapshotable.read_bytes("a.bin").content == b"\x00v1"
    forged = dataclasses.replace(
        first, snapshot_id=uuid.uuid4(), ref=dataclasses.replace(first.ref, location="f" * 40)
    )
    with pytest.raises(SnapshotRestoreError):
        snapshotable.restore(forged)


def test_in_memory_strategy() -> None:
    """``commit_ref`` is an internal version number: ``mem-1``, ``mem-2``, ..."""
    fs = InMemoryFilesystem()
    refs = [fs.snapshot().commit_ref for _ in range(3)]
    numbers = [int(re.fullmatch(r"mem-(\d+)", ref)[1]) for ref in refs]  # type: ignore[index]
    assert numbers == sorted(set(numbers))


def test_host_strategy(tmp_path: Path) -> None:
    """External git directory; restore is ``reset --hard`` plus ``clean -xfd``: ignored
    and untracked files that came later go too."""
    root = tmp_path / "project"
    root.mkdir()
    fs = HostFilesystem(_root=str(root))
    fs.write(".gitignore", "*.log\n")
    snapshot = fs.snapshot()
    assert snapshot.git_dir is not None
    assert not Path(snapshot.git_dir).is_relative_to(root)
    fs.write("debug.log", "ignored")
    fs.write("new/file.txt", "untracked")
    fs.restore(snapshot)
    assert sorted(entry.path for entry in fs.list(".")) == [".gitignore"]


def test_session_integration(snapshotable: SnapshotableFilesystem) -> None:
    filesystem = snapshotable
    session = Session()
    filesystem.write("a.txt", "v1")
    session[FilesystemSnapshot].register(FilesystemSnapshot, append_all)
    fs_snapshot = filesystem.snapshot(tag="before-refactor")
    session[FilesystemSnapshot].append(fs_snapshot)
    filesystem.write("a.txt", "v2")
    snapshots = session[FilesystemSnapshot].all()
    filesystem.restore(snapshots[-1])
    assert filesystem.read("a.txt").content == "v1"
    checkpoint = session.snapshot()
    filesystem.write("a.txt", "v3")
    session[FilesystemSnapshot].append(filesystem.snapshot())
    rollback_to(session, checkpoint, filesystem)
    assert filesystem.read("a.txt").content == "v1"


def test_error_handling() -> None:
    assert issubclass(SnapshotError, RuntimeError)
    assert issubclass(SnapshotRestoreError, SnapshotError)
    with pytest.raises(RuntimeError):
        InMemoryFilesystem().restore(InMemoryFilesystem().snapshot())


def test_usage_example(tmp_path: Path) -> None:
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


# -- Testing ---------------------------------------------------------------------------------


class TestProtocolCompliance(FilesystemProtocolTests):
    """Abstract factory methods, so concrete backends run the same contract."""

    def create_filesystem(self) -> Filesystem:  # type: ignore[override]
        return InMemoryFilesystem()


def test_mock_filesystem() -> None:
    """Records method calls and allows pre-configured responses."""
    from workspacefs.testing import MockFilesystem

    fs = MockFilesystem({"a.txt": "configured"})
    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=None)
    context = dataclasses.replace(context, filesystem=fs)
    assert read_file_handler(ReadFileParams("a.txt"), context=context).success
    assert fs.read_calls == ["a.txt"]
    frozen = MockFilesystem({"a.txt": b"\x00bytes"}, _read_only=True)
    assert frozen.read_bytes("a.txt").content == b"\x00bytes"
    with pytest.raises(PermissionError):
        frozen.write("b.txt", "x")
    assert frozen.write_calls == [("b.txt", "x")]  # recorded, then refused


# -- Binary File Support ---------------------------------------------------------------------


def test_binary_file_support(backend: Filesystem) -> None:
    """``read_bytes``/``write_bytes`` copy any content exactly; ``read``/``write`` are UTF-8."""
    image = bytes(range(256)) * 4
    backend.write_bytes("logo.png", image)
    copied = backend.read_bytes("logo.png").content
    backend.write_bytes("copy.png", copied)
    assert backend.read_bytes("copy.png").content == image
    with pytest.raises(ValueError):
        backend.read("logo.png")
    backend.write("text.txt", "héllo")
    assert backend.read_bytes("text.txt").content == "héllo".encode()


# -- Usage Example ---------------------------------------------------------------------------


def test_prompt_usage_example(project: Path) -> None:
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
