"""Seed 003 (the 8-method protocol, ZIP archives, the snapshot manager, sections, the debug
routes): every example and every test.

Seed 003's names that clash with the other seeds' (its ``Filesystem`` with
``write -> int``, its ``FilesystemSnapshot`` manager, its ``WorkspaceSection``
class) come from ``workspacefs.minimal``, an 8-method view over any backend;
the rest from the main packages. Only import lines are adapted. The seed's own
backend classes (``SeedMemoryBackend``, ``SeedHostBackend`` below) are kept
as written, as the reference that archives must interoperate with. The
framework (``Session``, ``InProcessEventBus``) comes from ``framework``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from workspacefs import HostMount, InMemoryFilesystem
from workspacefs.debug import create_app, open_target
from workspacefs.minimal import (
    FILESYSTEM_TOOLS,
    FileContent,
    FileEntry,
    FilesystemSection,
    GrepMatch,
    SnapshotInfo,
)
from workspacefs.minimal import Filesystem as Filesystem
from workspacefs.minimal import FilesystemSnapshot as FilesystemSnapshot
from workspacefs.minimal import HostBackend as HostBackend
from workspacefs.minimal import InMemoryBackend as InMemoryBackend
from workspacefs.minimal import VfsSection as VfsSection
from workspacefs.minimal import WorkspaceSection as WorkspaceSection
from workspacefs.tools import ToolContext, ToolResult

from .conformance import missing
from .framework import InProcessEventBus, Session

# -- Data Types ------------------------------------------------------------------------------


def test_data_types() -> None:
    entry = FileEntry(path="src", kind="directory")
    assert (entry.path, entry.kind, entry.size_bytes) == ("src", "directory", None)
    content = FileContent(path="a", content="x", total_lines=1, offset=0, limit=1)
    match = GrepMatch(path="a", line_number=1, line_content="x")
    for value in (entry, content, match):
        assert dataclasses.is_dataclass(value)
        assert not hasattr(value, "__dict__")  # slots
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.path = "b"  # type: ignore[misc]


# -- Filesystem Protocol ---------------------------------------------------------------------


@pytest.fixture
def memory_fs() -> Filesystem:
    return InMemoryBackend()


@pytest.fixture
def host_fs(tmp_path: Path) -> Filesystem:
    root = tmp_path / "host"
    root.mkdir()
    return HostBackend(root)


@pytest.fixture(params=["memory", "host"])
def fs(request: pytest.FixtureRequest, memory_fs: Filesystem, host_fs: Filesystem) -> Filesystem:
    return {"memory": memory_fs, "host": host_fs}[request.param]


def test_eight_methods(fs: Filesystem) -> None:
    assert missing(fs, Filesystem) == []
    assert isinstance(fs, Filesystem)


def test_read_paginates(fs: Filesystem) -> None:
    fs.write("a.txt", "one\ntwo\nthree\n")
    page = fs.read("a.txt", offset=1, limit=1)
    assert page == FileContent(path="a.txt", content="two\n", total_lines=3, offset=1, limit=1)
    with pytest.raises(FileNotFoundError):
        fs.read("missing.txt")


def test_write_returns_bytes_and_creates_parents(fs: Filesystem) -> None:
    assert fs.write("deep/er/é.txt", "héllo") == len("héllo".encode())
    assert fs.read("deep/er/é.txt").content == "héllo"
    assert fs.write("deep/er/é.txt", "") == 0


def test_delete_is_recursive_and_counts(fs: Filesystem) -> None:
    fs.write("tests/a.py", "a")
    fs.write("tests/sub/b.py", "b")
    fs.write("keep.txt", "k")
    assert fs.delete("missing") == 0
    assert fs.delete("keep.txt") == 1
    assert fs.delete("tests/") == 2
    assert [e.path for e in fs.list()] == []


def test_list_entries(fs: Filesystem) -> None:
    fs.write("src/main.py", "print()")
    fs.write("README.md", "# r")
    assert fs.list("") == fs.list()
    assert fs.list() == (
        FileEntry(path="README.md", kind="file", size_bytes=3),
        FileEntry(path="src", kind="directory", size_bytes=None),
    )
    assert fs.list("src") == (FileEntry(path="src/main.py", kind="file", size_bytes=7),)


def test_glob_matches_whole_paths(fs: Filesystem) -> None:
    fs.write("src/main.py", "x")
    fs.write("src/pkg/util.py", "yy")
    fs.write("top.py", "z")
    fs.write("notes.md", "n")
    assert [e.path for e in fs.glob("*.py")] == ["src/main.py", "src/pkg/util.py", "top.py"]
    assert fs.glob("src/*/util.py") == (FileEntry("src/pkg/util.py", "file", 2),)
    assert fs.glob("*.rs") == ()


def test_grep_with_file_glob(fs: Filesystem) -> None:
    fs.write("src/a.py", "import os\nx = 1\nimport re\n")
    fs.write("b.md", "import nothing\n")
    assert fs.grep(r"^import") == (
        GrepMatch("b.md", 1, "import nothing"),
        GrepMatch("src/a.py", 1, "import os"),
        GrepMatch("src/a.py", 3, "import re"),
    )
    assert [m.path for m in fs.grep("import", file_glob="*.py")] == ["src/a.py", "src/a.py"]


# -- FilesystemSnapshot ----------------------------------------------------------------------


def test_snapshot_manager(tmp_path: Path) -> None:
    fs = InMemoryBackend()
    snapshots = FilesystemSnapshot(fs, tmp_path / "snaps")
    assert snapshots.filesystem is fs
    fs.write("a.txt", "v1")
    info = snapshots.snapshot("first")
    assert isinstance(info, SnapshotInfo)
    assert info.archive_path == tmp_path / "snaps" / "first.fs.zip"
    assert info.total_bytes == info.archive_path.stat().st_size
    assert (info.snapshot_id, info.file_count) == ("first", 1)
    assert info.created_at.tzinfo is not None
    fs.write("a.txt", "v2")
    fs.write("b.txt", "new")
    again = snapshots.snapshot("first")  # the same id again: replaced
    assert again.file_count == 2
    assert snapshots.get("first") == again
    assert snapshots.get("unknown") is None
    assert snapshots.list_snapshots() == (again,)
    with pytest.raises(KeyError):
        snapshots.rollback("unknown")
    assert snapshots.rollback("first") == 2
    assert snapshots.delete("first") is True
    assert snapshots.delete("first") is False
    assert not again.archive_path.exists()
    default = FilesystemSnapshot(fs)
    default.snapshot(f"default-{uuid.uuid4().hex}")
    (only,) = default.list_snapshots()
    assert only.archive_path.is_relative_to(tempfile.gettempdir())
    default.delete(only.snapshot_id)


def test_usage_pattern() -> None:
    # Create filesystem and snapshot manager
    fs = InMemoryBackend()
    snapshots = FilesystemSnapshot(fs)

    # Work with filesystem
    fs.write("src/main.py", "print('hello')")

    # Create snapshot before risky operation
    snapshots.snapshot("before-refactor")

    # Make changes
    fs.write("src/main.py", "print('broken')")
    fs.delete("tests/")

    # Rollback if needed
    snapshots.rollback("before-refactor")
    assert fs.read("src/main.py").content == "print('hello')"


def test_coordinating_with_session_snapshots(tmp_path: Path) -> None:
    fs = InMemoryBackend()
    fs_snapshots = FilesystemSnapshot(fs, tmp_path)
    session = Session()
    fs.write("a.txt", "turn 5")

    # Snapshot both with same ID
    snapshot_id = "turn-5"
    fs_info = fs_snapshots.snapshot(snapshot_id)
    session.snapshot(snapshot_id)

    fs.write("a.txt", "turn 6")
    # Rollback both
    session.rollback(snapshot_id)
    fs_snapshots.rollback(snapshot_id)
    assert fs_info.snapshot_id == snapshot_id
    assert fs.read("a.txt").content == "turn 5"


# -- ZIP Archive Format and the seed's own backends ------------------------------------------


def _normalize(path: str) -> str:
    return "/".join(part for part in path.split("/") if part not in ("", "."))


def _paginate(content: str, offset: int, limit: int | None) -> FileContent:
    lines = content.splitlines(keepends=True)
    end = len(lines) if limit is None else offset + limit
    return FileContent("", "".join(lines[offset:end]), len(lines), offset, limit or len(lines))


class SeedMemoryBackend:
    """Seed 003's ``InMemoryBackend``, as written (its archive methods verbatim)."""

    def __init__(self, mounts: Sequence[HostMount] = ()) -> None:
        self._files: dict[str, str] = {}

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileContent:
        normalized = _normalize(path)
        if normalized not in self._files:
            raise FileNotFoundError(path)
        return _paginate(self._files[normalized], offset, limit)

    def write(self, path: str, content: str) -> int:
        self._files[_normalize(path)] = content
        return len(content.encode())

    def export_archive(self, path: Path) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        total_bytes = 0
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for fpath, content in sorted(self._files.items()):
                data = content.encode()
                zf.writestr(f"files/{fpath}", data)
                total_bytes += len(data)
            manifest = {
                "version": "1",
                "created_at": datetime.now(UTC).isoformat(),
                "file_count": len(self._files),
                "total_bytes": total_bytes,
            }
            zf.writestr("manifest.json", json.dumps(manifest, indent=2))
        return len(self._files)

    def import_archive(self, path: Path) -> int:
        self._files.clear()
        with zipfile.ZipFile(path, "r") as zf:
            for name in zf.namelist():
                if name.startswith("files/") and not name.endswith("/"):
                    rel_path = name[6:]
                    self._files[rel_path] = zf.read(name).decode("utf-8")
        return len(self._files)


class SeedHostBackend:
    """Seed 003's ``HostBackend``'s archive methods, as written."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    def export_archive(self, path: Path) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        file_count, total_bytes = 0, 0
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for fpath in self._root.rglob("*"):
                if fpath.is_file():
                    rel = fpath.relative_to(self._root)
                    content = fpath.read_bytes()
                    zf.writestr(f"files/{rel}", content)
                    file_count += 1
                    total_bytes += len(content)
            manifest = {
                "version": "1",
                "created_at": datetime.now(UTC).isoformat(),
                "file_count": file_count,
                "total_bytes": total_bytes,
            }
            zf.writestr("manifest.json", json.dumps(manifest, indent=2))
        return file_count

    def import_archive(self, path: Path) -> int:
        shutil.rmtree(self._root, ignore_errors=True)
        self._root.mkdir(parents=True, exist_ok=True)
        count = 0
        with zipfile.ZipFile(path, "r") as zf:
            for name in zf.namelist():
                if name.startswith("files/") and not name.endswith("/"):
                    target = self._root / name[6:]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(name))
                    count += 1
        return count


def test_archive_format(fs: Filesystem, tmp_path: Path) -> None:
    """``manifest.json`` (version, created_at, file_count, total_bytes) and ``files/...``."""
    fs.write("src/main.py", "print('hello')")
    fs.write("README.md", "# Project")
    archive = tmp_path / "out" / "abc123.fs.zip"
    assert fs.export_archive(archive) == 2
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        files = sorted(n for n in zf.namelist() if n.startswith("files/") and n[-1] != "/")
    assert files == ["files/README.md", "files/src/main.py"]
    assert int(manifest["version"]) == 1
    assert (manifest["file_count"], manifest["total_bytes"]) == (2, 23)
    assert datetime.fromisoformat(manifest["created_at"]).tzinfo is not None
    assert not {"backend", "backend_type"} & set(manifest)


def test_seed_archives_import(fs: Filesystem, tmp_path: Path) -> None:
    """An archive exactly as the seed's backends write it (version "1", no format
    marker, no modes or times) imports into every backend, and the other way round."""
    seed_memory = SeedMemoryBackend()
    seed_memory.write("src/main.py", "print('hello')")
    seed_memory.write("docs/a b/ü.md", "# ü")
    archive = tmp_path / "seed.fs.zip"
    assert seed_memory.export_archive(archive) == 2
    fs.write("stale.txt", "gone after import")
    assert fs.import_archive(archive) == 2
    assert fs.read("docs/a b/ü.md").content == "# ü"
    assert not list(fs.glob("stale.txt"))

    seed_root = tmp_path / "seed-host"
    seed_root.mkdir()
    (seed_root / "x" / "y").mkdir(parents=True)
    (seed_root / "x" / "y" / "z.txt").write_text("deep")
    assert SeedHostBackend(seed_root).export_archive(tmp_path / "host.zip") == 1
    assert fs.import_archive(tmp_path / "host.zip") == 1
    assert fs.read("x/y/z.txt").content == "deep"

    ours = tmp_path / "ours.zip"
    fs.write("back.txt", "to the seed")
    assert fs.export_archive(ours) == 2
    reader = SeedMemoryBackend()
    assert reader.import_archive(ours) == 2
    assert reader.read("back.txt").content == "to the seed"


# -- Backend Implementations -----------------------------------------------------------------


def test_in_memory_backend_mounts(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x = 1\n")
    fs = InMemoryBackend((HostMount(host_path=str(tmp_path / "src"), mount_path="src"),))
    assert fs.read("src/main.py").content == "x = 1\n"


def test_host_backend_stays_in_its_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").write_text("s")
    fs = HostBackend(root)
    with pytest.raises(PermissionError):
        fs.read("../secret")
    assert fs.write("a/b.txt", "x") == 1
    assert (root / "a" / "b.txt").read_text() == "x"


# -- ToolContext Integration -----------------------------------------------------------------


@dataclass(frozen=True)
class ReadParams:
    path: str
    offset: int = 0
    limit: int | None = None


def _format(content: FileContent) -> str:
    return f"{content.path}: {content.total_lines} lines"


def read_file_handler(params: ReadParams, *, context: ToolContext) -> ToolResult[FileContent]:
    if context.filesystem is None:
        return ToolResult(message="No filesystem available", value=None, success=False)
    content = context.filesystem.read(params.path, offset=params.offset, limit=params.limit)
    return ToolResult(message=_format(content), value=content)  # type: ignore[arg-type]


def test_tool_context_integration() -> None:
    fs = InMemoryBackend()
    fs.write("a.txt", "1\n2\n")
    context = ToolContext(prompt=None, rendered_prompt=None, adapter=None, session=None)
    assert read_file_handler(ReadParams("a.txt"), context=context).message == (
        "No filesystem available"
    )
    context = dataclasses.replace(context, filesystem=fs)  # type: ignore[arg-type]
    result = read_file_handler(ReadParams("a.txt"), context=context)
    assert result.message == "a.txt: 2 lines"
    assert [tool.name for tool in FILESYSTEM_TOOLS] == [
        "ls",
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "rm",
    ]
    # The project's tools work on a context holding the 8-method view too.
    ls = FILESYSTEM_TOOLS[0].invoke({"path": "."}, context=context)
    assert ls.success
    assert "a.txt" in ls.message


# -- FilesystemSection -----------------------------------------------------------------------


def test_filesystem_section(tmp_path: Path) -> None:
    with pytest.raises(NotImplementedError):
        _ = FilesystemSection(snapshot_dir=tmp_path, title="t").filesystem
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("m")
    vfs = VfsSection(
        mounts=(HostMount(host_path=str(tmp_path / "src"), mount_path="src"),),
        snapshot_dir=tmp_path / "snaps",
    )
    assert vfs.filesystem is vfs.filesystem  # created once, lazily
    assert vfs.snapshots is vfs.snapshots
    assert vfs.snapshots.filesystem is vfs.filesystem
    assert vfs.filesystem.read("src/m.py").content == "m"
    assert (vfs.title, vfs.key) == ("Virtual Filesystem", "vfs")
    assert [t.name for t in vfs.tools] == [t.name for t in FILESYSTEM_TOOLS]
    info = vfs.snapshots.snapshot("s")
    assert info.archive_path.parent == tmp_path / "snaps"

    workspace = WorkspaceSection(root=tmp_path / "ws", snapshot_dir=tmp_path / "snaps2")
    (tmp_path / "ws").mkdir()
    workspace.filesystem.write("w.txt", "on disk")
    assert (tmp_path / "ws" / "w.txt").read_text() == "on disk"
    scratch = WorkspaceSection()
    scratch.filesystem.write("t.txt", "temp")
    assert scratch.key == "workspace"


@pytest.mark.container
def test_podman_section(tmp_path: Path) -> None:
    from workspacefs.minimal import PodmanSection
    from workspacefs.sandbox import SandboxConfig as PodmanConfig

    section = PodmanSection(
        config=PodmanConfig.build(),  # the host root as the image: nothing is pulled
        snapshot_dir=tmp_path,
    )
    try:
        assert section.filesystem.write("hello.txt", "hi") == 2
        assert [t.name for t in section.tools][: len(FILESYSTEM_TOOLS)] == [
            t.name for t in FILESYSTEM_TOOLS
        ]
        assert "shell" in [t.name for t in section.tools]
        section.snapshots.snapshot("one")
        section.filesystem.write("hello.txt", "changed")
        section.snapshots.rollback("one")
        assert section.filesystem.read("hello.txt").content == "hi"
    finally:
        section.close()


# -- Coordinated Snapshot Workflow -----------------------------------------------------------


def test_coordinated_workflow(tmp_path: Path) -> None:
    section = VfsSection(snapshot_dir=tmp_path)
    session = Session()
    turn_number = 3
    snapshot_id = f"turn-{turn_number}"
    section.filesystem.write("a.txt", "turn 3")

    # Snapshot filesystem first
    fs_info = section.snapshots.snapshot(snapshot_id)

    # Then snapshot session
    session.snapshot(snapshot_id)

    section.filesystem.write("a.txt", "turn 4")

    # Rollback session first (restores conversation state)
    session.rollback(snapshot_id)

    # Then rollback filesystem
    section.snapshots.rollback(snapshot_id)

    assert fs_info.file_count == 1
    assert section.filesystem.read("a.txt").content == "turn 3"


def _dump_session_to_jsonl(session: Session, path: Path) -> Path:
    """The framework's JSONL writer (the seed leaves its format to the framework): here the
    header line of workspacefs's own session dumps, which the debug UI reads."""
    header = {"kind": "header", "id": path.stem, "created_at": datetime.now(UTC).isoformat()}
    path.write_text(json.dumps(header) + "\n")
    return path


def dump_session_tree(
    session: Session,
    target: Path,
    *,
    filesystem_section: FilesystemSection | None = None,
) -> Path | None:
    """Persist session tree to JSONL with optional filesystem snapshot."""
    target_dir = target if target.is_dir() else target.parent
    session_id = session.tags.get("session_id", str(uuid.uuid4()))

    # Export filesystem if section provided
    if filesystem_section is not None:
        archive_path = target_dir / f"{session_id}.fs.zip"
        filesystem_section.filesystem.export_archive(archive_path)

    return _dump_session_to_jsonl(session, target_dir / f"{session_id}.jsonl")


def test_resuming_with_different_backend(tmp_path: Path) -> None:
    old = VfsSection(snapshot_dir=tmp_path / "snaps")
    old.filesystem.write("src/main.py", "print('resumed')")
    session = Session(tags={"session_id": "abc123"})
    jsonl_path = dump_session_tree(session, tmp_path, filesystem_section=old)
    assert jsonl_path == tmp_path / "abc123.jsonl"
    assert (tmp_path / "abc123.fs.zip").is_file()

    # Find the filesystem archive from adjacent file
    archive_path = jsonl_path.with_suffix(".fs.zip")

    # Create section with any backend type
    for section in (
        VfsSection(),
        WorkspaceSection(root=tmp_path / "ws", snapshot_dir=tmp_path / "s2"),
    ):
        # Restore from archive (works with any backend)
        section.snapshots.restore(archive_path)
        assert section.filesystem.read("src/main.py").content == "print('resumed')"
    with pytest.raises(KeyError):
        VfsSection().snapshots.rollback("abc123")


def test_snapshots_restore_accepts_paths(tmp_path: Path) -> None:
    """``restore(Path)`` on the project's own sections (a ``PosixPath`` once crashed)."""
    from workspacefs.archive import export_archive
    from workspacefs.tools import VfsWorkspace

    source = InMemoryFilesystem()
    source.write("a.txt", "from the archive")
    export_archive(source, tmp_path / "x.zip")
    workspace = VfsWorkspace()
    with pytest.raises(ValueError, match="import_archive"):
        workspace.snapshots.restore(Path(tmp_path / "x.zip"))  # type: ignore[arg-type]
    assert not workspace.filesystem.exists("a.txt")


# -- Integration with wink debug -------------------------------------------------------------


_TOKEN = "the-debug-ui-token-of-these-tests"


def _debug(path: Path) -> TestClient:
    """The debug app over ``path``, with its per-run token sent (the seed's routes
    predate it; they are the same behind it)."""
    return TestClient(
        create_app(open_target(path), token=_TOKEN),
        base_url="http://127.0.0.1",
        headers={"authorization": f"Bearer {_TOKEN}"},
    )


def test_debug_routes(tmp_path: Path) -> None:
    section = VfsSection(snapshot_dir=tmp_path / "snaps")
    section.filesystem.write("src/main.py", "print('hi')\n")
    section.filesystem.write("README.md", "# r\n")
    session = Session(tags={"session_id": "abc123"})
    jsonl = dump_session_tree(session, tmp_path, filesystem_section=section)
    assert jsonl is not None
    with _debug(jsonl) as client:
        meta = client.get("/api/filesystem/meta").json()
        with zipfile.ZipFile(tmp_path / "abc123.fs.zip") as zf:
            manifest = json.loads(zf.read("manifest.json"))
        for key in ("version", "created_at", "file_count", "total_bytes"):
            assert meta[key] == manifest[key]
        tree = client.get("/api/filesystem/tree").json()
        assert [(e["path"], e["size_bytes"]) for e in tree] == [
            ("README.md", 4),
            ("src/main.py", 12),
        ]
        file = client.get("/api/filesystem/file", params={"path": "src/main.py"}).json()
        assert file["content"] == "print('hi')\n"
        absent = client.get("/api/filesystem/file", params={"path": "nope.py"})
        assert absent.status_code == 404


def test_debug_session_without_archive(tmp_path: Path) -> None:
    """A session dump with no ``.fs.zip`` beside it: no manifest, an empty tree."""
    jsonl = dump_session_tree(Session(tags={"session_id": "lonely"}), tmp_path)
    assert jsonl is not None
    assert not (tmp_path / "lonely.fs.zip").exists()
    with _debug(jsonl) as client:
        assert client.get("/api/filesystem/meta").json() is None
        assert client.get("/api/filesystem/tree").json() == []
        assert client.get("/api/filesystem/file", params={"path": "a"}).status_code == 404


# -- Adapter Integration ---------------------------------------------------------------------


def test_adapter_integration(tmp_path: Path) -> None:
    section = VfsSection(snapshot_dir=tmp_path)
    tool = FILESYSTEM_TOOLS[2]  # write_file

    def _find_section_for_tool(sections: Sequence[Any], tool: Any) -> Any:
        return next(s for s in sections if tool in getattr(s, "tools", ()))

    found = _find_section_for_tool([object(), section], tool)
    filesystem = None
    if isinstance(found, FilesystemSection):
        filesystem = found.filesystem
    context = ToolContext(
        prompt=None,
        rendered_prompt=None,
        adapter=None,
        session=Session(),
        filesystem=filesystem,  # type: ignore[arg-type]
    )
    result = tool.invoke({"path": "made.txt", "content": "by a tool"}, context=context)
    assert result.success, result.message
    assert section.filesystem.read("made.txt").content == "by a tool"


# -- Testing ---------------------------------------------------------------------------------


def test_write_read(fs: Filesystem) -> None:
    fs.write("test.txt", "hello")
    assert fs.read("test.txt").content == "hello"


def test_export_import(fs: Filesystem, tmp_path: Path) -> None:
    fs.write("file.txt", "original")
    archive = tmp_path / "snapshot.zip"
    count = fs.export_archive(archive)
    assert count == 1
    fs.write("file.txt", "modified")
    fs.import_archive(archive)
    assert fs.read("file.txt").content == "original"


def test_cross_backend_restore(tmp_path: Path) -> None:
    """Export from one backend, import to another."""
    memory = InMemoryBackend()
    memory.write("src/main.py", "print('hello')")
    memory.write("README.md", "# Project")

    archive = tmp_path / "snapshot.zip"
    memory.export_archive(archive)

    host_root = tmp_path / "workspace"
    host_root.mkdir()
    host = HostBackend(host_root)
    host.import_archive(archive)

    assert host.read("src/main.py").content == "print('hello')"
    assert host.read("README.md").content == "# Project"


def test_filesystem_snapshot(tmp_path: Path) -> None:
    """Test FilesystemSnapshot rollback."""
    fs = InMemoryBackend()
    snapshots = FilesystemSnapshot(fs, tmp_path)

    fs.write("file.txt", "v1")
    snapshots.snapshot("s1")

    fs.write("file.txt", "v2")
    snapshots.snapshot("s2")

    fs.write("file.txt", "v3")

    # Rollback to s1
    snapshots.rollback("s1")
    assert fs.read("file.txt").content == "v1"

    # Rollback to s2
    snapshots.rollback("s2")
    assert fs.read("file.txt").content == "v2"


@dataclass(frozen=True)
class SomeSlice:
    events: tuple[str, ...] = ()


@dataclass(frozen=True)
class SomeEvent:
    name: str = "some"


@dataclass(frozen=True)
class AnotherEvent:
    name: str = "another"


def test_coordinated_snapshots(tmp_path: Path) -> None:
    """Test filesystem and session snapshots together."""
    session = Session(bus=InProcessEventBus())
    section = VfsSection(snapshot_dir=tmp_path)

    # Work
    section.filesystem.write("code.py", "v1")
    session.mutate(SomeSlice).dispatch(SomeEvent())

    # Coordinated snapshot
    snapshot_id = "checkpoint"
    section.snapshots.snapshot(snapshot_id)
    session.snapshot(snapshot_id)

    # More work
    section.filesystem.write("code.py", "v2")
    session.mutate(SomeSlice).dispatch(AnotherEvent())

    # Coordinated rollback
    session.rollback(snapshot_id)
    section.snapshots.rollback(snapshot_id)

    assert section.filesystem.read("code.py").content == "v1"
    assert session.mutate(SomeSlice).all() == (SomeEvent(),)


def test_glob_is_fnmatch_of_the_whole_path(fs: Filesystem) -> None:
    """The seed's glob is ``fnmatch`` over whole paths: checked against fnmatch itself."""
    paths = ["a.py", "src/b.py", "src/c/d.txt", ".hidden.py", "x[1].py"]
    for path in paths:
        fs.write(path, "x")
    for pattern in ("*.py", "src/*", "*/d.txt", "?.py", "[ab].py", "*[[]1]*", "*"):
        expected = sorted(p for p in paths if fnmatch.fnmatch(p, pattern))
        assert [e.path for e in fs.glob(pattern)] == expected, pattern
