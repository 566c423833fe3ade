"""Workspace archives: exact round trips, cross-backend, hostile archives, bounded memory."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from workspacefs import (
    ArchiveSnapshots,
    InMemoryFilesystem,
    JsonSession,
    ReadOnlyError,
    SessionCheckpoints,
    SnapshotNotFoundError,
    dump_session,
    load_session,
)
from workspacefs import git as wgit
from workspacefs.archive import ArchiveError, Entry, export_archive, import_archive, write_archive
from workspacefs.fs import TreeFilesystem
from workspacefs.tree import ROOT_INO, Directory, File, Symlink


def picture(fs: TreeFilesystem) -> dict[str, tuple[object, ...]]:
    """What an archive preserves: kinds, bytes, modes, mtimes, symlink targets, empty dirs."""
    result: dict[str, tuple[object, ...]] = {}
    for path, _, node in fs.view.walk():
        if isinstance(node, File):
            result[path] = ("file", node.mode, node.mtime_ns, node.read(0, node.size))
        elif isinstance(node, Symlink):
            result[path] = ("link", node.target)
        elif isinstance(node, Directory):
            result[path] = ("dir", node.mode, node.mtime_ns)
    return result


def sample() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("README.md", "# hello\n")
    fs.write_bytes("bin/blob.bin", os.urandom(300_000))
    fs.write("src/pkg/run.sh", "#!/bin/sh\necho hi\n")
    fs.mkdir("empty/nested")
    tree = fs.tree
    with tree.lock:
        run = tree.resolve_path("src/pkg/run.sh")
        assert run is not None
        tree.setattr(run, mode=0o755)
        tree.symlink(ROOT_INO, "readme", "README.md")
        tree.symlink(tree.resolve_path("src") or ROOT_INO, "up", "../README.md")
    return fs


def test_round_trip_is_exact(tmp_path: Path) -> None:
    fs = sample()
    assert export_archive(fs, tmp_path / "ws.zip") == 5
    other = InMemoryFilesystem()
    other.write("stale.txt", "removed by the import")
    assert import_archive(other, tmp_path / "ws.zip") == 5
    assert picture(other) == picture(fs)


def test_unzip_restores_modes_and_symlinks(tmp_path: Path) -> None:
    export_archive(sample(), tmp_path / "ws.zip")
    subprocess.run(
        ["unzip", "-q", str(tmp_path / "ws.zip"), "-d", str(tmp_path / "out")], check=True
    )
    files = tmp_path / "out" / "files"
    assert os.stat(files / "src/pkg/run.sh").st_mode & 0o111
    assert os.readlink(files / "readme") == "README.md"
    assert (files / "empty/nested").is_dir()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert (manifest["version"], manifest["file_count"]) == (1, 5)
    assert manifest["total_bytes"] == len("# hello\n") + 300_000 + len("#!/bin/sh\necho hi\n")


def test_snapshot_view_exports_the_snapshot(tmp_path: Path) -> None:
    fs = sample()
    snapshot = fs.snapshot()
    fs.write("README.md", "changed later")
    export_archive(fs.at(snapshot), tmp_path / "snap.zip")
    restored = InMemoryFilesystem()
    import_archive(restored, tmp_path / "snap.zip")
    assert restored.read("README.md").content == "# hello\n"


def test_cross_backend_git_loaded_workspace(tmp_path: Path) -> None:
    fs = sample()
    wgit.persist(fs, fs.snapshot(), tmp_path / "repo.git")
    lazy = wgit.load(tmp_path / "repo.git", "1", workspace=fs.workspace_id)
    export_archive(lazy, tmp_path / "from-git.zip")
    fresh = InMemoryFilesystem()
    import_archive(fresh, tmp_path / "from-git.zip")
    assert picture(fresh) == picture(fs)


def test_read_only_workspace_refuses_import(tmp_path: Path) -> None:
    export_archive(sample(), tmp_path / "ws.zip")
    with pytest.raises(PermissionError):
        import_archive(InMemoryFilesystem(read_only=True), tmp_path / "ws.zip")


def test_snapshot_view_refuses_import(tmp_path: Path) -> None:
    fs = sample()
    export_archive(fs, tmp_path / "ws.zip")
    with pytest.raises(ReadOnlyError):
        import_archive(fs.at(fs.snapshot()), tmp_path / "ws.zip")


def test_backend_without_archive_support_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no archive support"):
        export_archive(object(), tmp_path / "ws.zip")  # type: ignore[arg-type]
    assert not (tmp_path / "ws.zip").exists()


class LinkWithoutTarget:
    """A backend adapter with a bug: a symlink entry that names no target."""

    def entries(self) -> Iterator[Entry]:
        yield Entry("link", stat.S_IFLNK | 0o777, 0)

    def open(self, path: str) -> contextlib.AbstractContextManager[io.BytesIO]:
        return contextlib.nullcontext(io.BytesIO())


def test_symlink_entry_without_target_is_refused_on_export(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="without a target"):
        write_archive(LinkWithoutTarget(), tmp_path / "ws.zip")
    assert list(tmp_path.iterdir()) == []


def make_archive(
    path: Path,
    entries: list[tuple[str, bytes, int]],
    *,
    manifest: object = "auto",
) -> Path:
    """A hand-made archive: (name, data, unix mode) entries plus a manifest."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point of some cases
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
        if manifest == "auto":
            files = sum(1 for n, _, m in entries if not stat.S_ISDIR(m))
            manifest = {
                "format": "workspacefs-archive",
                "version": 1,
                "created_at": "2026-01-01T00:00:00+00:00",
                "file_count": files,
                "total_bytes": 0,
            }
        if manifest is not None:
            data = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
            archive.writestr("manifest.json", data)
    return path


FILE = stat.S_IFREG | 0o644
LINK = stat.S_IFLNK | 0o777
DIR = stat.S_IFDIR | 0o755

HOSTILE: dict[str, Callable[[Path], Path]] = {
    "dot-dot": lambda p: make_archive(p, [("files/../evil.txt", b"x", FILE)]),
    "nested dot-dot": lambda p: make_archive(p, [("files/a/../../evil.txt", b"x", FILE)]),
    "absolute": lambda p: make_archive(p, [("files//etc/passwd", b"x", FILE)]),
    "outside files/": lambda p: make_archive(p, [("evil.txt", b"x", FILE)]),
    "symlink absolute": lambda p: make_archive(p, [("files/l", b"/etc/passwd", LINK)]),
    "symlink escaping": lambda p: make_archive(p, [("files/a/l", b"../../x", LINK)]),
    "dot segment": lambda p: make_archive(p, [("files/./a", b"2", FILE)]),
    "duplicate": lambda p: make_archive(p, [("files/a", b"1", FILE), ("files/a", b"2", FILE)]),
    "file where a dir is needed": lambda p: make_archive(
        p, [("files/a", b"1", FILE), ("files/a/b", b"2", FILE)]
    ),
    "fifo": lambda p: make_archive(p, [("files/f", b"", stat.S_IFIFO | 0o644)]),
    "missing manifest": lambda p: make_archive(p, [("files/a", b"1", FILE)], manifest=None),
    "malformed manifest": lambda p: make_archive(p, [("files/a", b"1", FILE)], manifest=b"{nope"),
    "deeply nested manifest": lambda p: make_archive(
        p, [("files/a", b"1", FILE)], manifest=b"[" * 100_000 + b"]" * 100_000
    ),
    "wrong format": lambda p: make_archive(p, [("files/a", b"1", FILE)], manifest={"format": "x"}),
    "count mismatch": lambda p: make_archive(
        p,
        [("files/a", b"1", FILE)],
        manifest={"format": "workspacefs-archive", "version": 1, "file_count": 7},
    ),
    "non-UTF-8 name": lambda p: _non_utf8(p),
    "zip bomb ratio": lambda p: make_archive(p, [("files/bomb", bytes(50 << 20), FILE)]),
    "size lie": lambda p: _size_lie(p),
    "corrupt zip": lambda p: _corrupt(p),
    "not a zip": lambda p: (p.write_bytes(b"plain text, not an archive"), p)[1],
}


def _non_utf8(path: Path) -> Path:
    make_archive(path, [("files/ok", b"1", FILE)])
    data = path.read_bytes().replace(b"files/ok", b"files/\xe9k")
    # Clear the UTF-8 flag (bit 11) in both headers so the name reads as cp437.
    data = data.replace(b"PK\x03\x04\x14\x00\x00\x08", b"PK\x03\x04\x14\x00\x00\x00")
    data = data.replace(b"\x14\x03\x14\x00\x00\x08", b"\x14\x03\x14\x00\x00\x00")
    path.write_bytes(data)
    return path


def _size_lie(path: Path) -> Path:
    make_archive(path, [("files/a", b"A" * 5000, FILE)])
    data = bytearray(path.read_bytes())
    # Shrink the declared uncompressed size of files/a in the central directory.
    central = data.find(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def _corrupt(path: Path) -> Path:
    make_archive(path, [("files/a", os.urandom(100_000), FILE)])
    data = bytearray(path.read_bytes())
    data[2000:2100] = bytes(100)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_refused_and_nothing_changes(case: str, tmp_path: Path) -> None:
    archive = HOSTILE[case](tmp_path / "hostile.zip")
    fs = sample()
    before = picture(fs)
    with pytest.raises((ValueError, PermissionError)):
        import_archive(fs, archive)
    assert picture(fs) == before
    assert not (tmp_path / "evil.txt").exists()


def test_archive_snapshots_manager(tmp_path: Path) -> None:
    fs = sample()
    manager = ArchiveSnapshots(fs, tmp_path / "snaps")
    first = manager.snapshot("before-edit")
    assert (first.file_count, Path(first.archive_path).name) == (5, "before-edit.zip")
    fs.write("README.md", "edited")
    manager.snapshot("after-edit")
    with pytest.raises(FileExistsError):
        manager.snapshot("after-edit")
    with pytest.raises(ValueError):
        manager.snapshot("../escape")
    assert [s.snapshot_id for s in manager.list_snapshots()] == ["before-edit", "after-edit"]
    assert manager.rollback("before-edit") == 5
    assert fs.read("README.md").content == "# hello\n"
    assert manager.restore(manager.get("after-edit").archive_path) == 5
    assert fs.read("README.md").content == "edited"
    manager.delete("after-edit")
    with pytest.raises(SnapshotNotFoundError):
        manager.get("after-edit")
    again = ArchiveSnapshots(InMemoryFilesystem(), tmp_path / "snaps")  # a new process, same dir
    assert [s.snapshot_id for s in again.list_snapshots()] == ["before-edit"]


def test_session_checkpoints_roll_back_state_and_files(tmp_path: Path) -> None:
    fs = sample()
    session = JsonSession({"messages": ["start"]})
    checkpoints = SessionCheckpoints(session, {"workspace": fs}, tmp_path / "ckpt")
    refs = checkpoints.checkpoint("turn-1")
    assert [(r.filesystem_key, r.snapshot_id, r.backend_type) for r in refs] == [
        ("workspace", "turn-1", "InMemoryFilesystem")
    ]
    session.state["messages"].append("a risky step")
    fs.delete("src", recursive=True)
    checkpoints.rollback("turn-1")
    assert session.state == {"messages": ["start"]}
    assert fs.exists("src/pkg/run.sh")
    with pytest.raises(SnapshotNotFoundError):
        checkpoints.rollback("never")


def test_dump_and_load_session_with_another_backend(tmp_path: Path) -> None:
    fs = sample()
    session = JsonSession({"messages": ["hi", {"tool": "read_file"}], "turn": 3})
    ref = dump_session(session, fs, tmp_path, "sess-1")
    lines = (tmp_path / "sess-1.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "header"
    assert {json.loads(line)["key"] for line in lines[1:]} == {"messages", "turn"}
    assert (tmp_path / "sess-1.fs.zip").exists()
    resumed, target = JsonSession(), InMemoryFilesystem()
    assert load_session(tmp_path, "sess-1", resumed, target) == ref
    assert resumed.state == session.state
    assert picture(target) == picture(fs)
    with pytest.raises(ValueError):
        dump_session(JsonSession({"bad": object()}), fs, tmp_path, "sess-2")


@pytest.mark.slow
def test_one_gigabyte_round_trip_keeps_memory_bounded(tmp_path: Path) -> None:
    """Export reads and import writes in blocks: no second copy of the workspace."""
    script = textwrap.dedent(
        f"""
        import os
        from workspacefs import InMemoryFilesystem
        from workspacefs.archive import export_archive, import_archive
        def peak_mb():
            line = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
            return int(line.split()[1]) // 1024
        def rss_mb():
            line = [l for l in open("/proc/self/status") if l.startswith("VmRSS")][0]
            return int(line.split()[1]) // 1024
        block = os.urandom(1 << 20)
        fs = InMemoryFilesystem()
        for i in range(1024):  # 1 GiB of content, sharing one buffer in memory
            fs.write_bytes(f"d{{i % 16}}/f{{i}}.bin", block)
        before = peak_mb()
        export_archive(fs, {str(tmp_path / "big.zip")!r})
        export_growth = peak_mb() - before
        del fs
        start = rss_mb()
        other = InMemoryFilesystem()
        import_archive(other, {str(tmp_path / "big.zip")!r})
        print(export_growth, start, peak_mb(), other.tree.total_bytes)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    export_growth, start, peak, total = map(int, result.stdout.split())
    assert total == 1 << 30
    assert export_growth < 200, f"export grew the peak by {export_growth} MB"
    # Importing 1 GiB must cost about 1 GiB (the tree), not two copies of it.
    assert peak - start < 1024 + 300, f"import peak {peak} MB from {start} MB"
