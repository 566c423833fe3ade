"""``RemoteFilesystem`` against a real daemon: the compliance suite, snapshots, errors, tools."""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import workspacefs
from support.daemon import Daemons
from workspacefs import (
    Filesystem,
    InMemoryFilesystem,
    NotFoundError,
    ReadOnlyError,
    ReadOnlyRestoreError,
    SnapshotableFilesystem,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
    SnapshotRestoreError,
)
from workspacefs.archive import import_archive
from workspacefs.daemon import MountRecord, RemoteFilesystem, connect
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.testing._compliance import Files
from workspacefs.tools import ToolContext, filesystem_tools


def reset(fs: RemoteFilesystem, files: Files) -> RemoteFilesystem:
    """Make the shared daemon's workspace hold exactly ``files``."""
    for entry in fs.list("."):
        fs.delete(entry.path, recursive=True)
    for path, content in files.items():
        fs.write_bytes(path, content.encode() if isinstance(content, str) else content)
    return fs


@pytest.fixture
def remote(shared_daemon: MountRecord) -> Iterator[RemoteFilesystem]:
    with connect(shared_daemon.socket) as fs:
        yield reset(fs, {})


class TestRemoteFilesystem(FilesystemProtocolTests):
    @pytest.fixture(autouse=True)
    def _connect(self, remote: RemoteFilesystem) -> None:
        self.remote = remote

    def create_filesystem(self, files: Files) -> Filesystem:
        return reset(self.remote, files)


class TestRemoteSnapshotView(FilesystemProtocolTests):
    read_only = True

    @pytest.fixture(autouse=True)
    def _connect(self, remote: RemoteFilesystem) -> None:
        self.remote = remote

    def create_filesystem(self, files: Files) -> Filesystem:
        fs = reset(self.remote, files)
        snapshot = fs.snapshot()
        for path in files:  # the view must still show the snapshot
            fs.write_bytes(path, b"changed after the snapshot")
        fs.write("added-after.txt", "x")
        return fs.at(snapshot)


def test_connect_is_a_lazy_top_level_name(shared_daemon: MountRecord) -> None:
    with workspacefs.connect(shared_daemon.mountpoint) as fs:
        assert isinstance(fs, workspacefs.RemoteFilesystem)
        assert isinstance(fs, SnapshotableFilesystem)
        assert fs.mountpoint == shared_daemon.mountpoint
        assert fs.pid == shared_daemon.pid


def test_connect_finds_the_mount_from_a_directory_inside(
    remote: RemoteFilesystem, shared_daemon: MountRecord
) -> None:
    remote.mkdir("deep/er")
    with connect(Path(shared_daemon.mountpoint, "deep", "er")) as fs:
        assert fs.socket == shared_daemon.socket


def test_connect_outside_any_workspace(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as missing:
        connect(tmp_path)
    assert missing.value.errno == errno.ENOENT
    assert missing.value.filename == str(tmp_path)


ERROR_CASES = {
    "missing": lambda fs: fs.read("missing.txt"),
    "directory": lambda fs: fs.read("dir"),
    "exists": lambda fs: fs.write("dir/file.txt", "y", mode="create"),
    "too large": lambda fs: fs.write("big.txt", "x" * 48_001),
    "bad regex": lambda fs: fs.grep(r"(a)\1"),
    "escape": lambda fs: fs.read("../../etc/passwd"),
    "not empty": lambda fs: fs.delete("dir"),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_are_the_in_process_ones(remote: RemoteFilesystem, case: str) -> None:
    local = InMemoryFilesystem(mount_point=remote.mount_point)
    outcomes = []
    for fs in (local, remote):
        fs.write("dir/file.txt", "x")
        with pytest.raises(OSError) as raised:
            ERROR_CASES[case](fs)
        error = raised.value
        outcomes.append((type(error), error.errno, error.strerror, error.filename))
    assert outcomes[0] == outcomes[1]


def test_builtin_errors_come_back_as_builtins(remote: RemoteFilesystem, tmp_path: Path) -> None:
    (tmp_path / "taken.zip").mkdir()  # missing parents are made; a directory is in the way
    with pytest.raises(IsADirectoryError) as builtin:
        remote.export_archive(tmp_path / "taken.zip")
    assert builtin.value.errno == errno.EISDIR


def test_snapshots_restore_diff_and_views(remote: RemoteFilesystem) -> None:
    remote.write("src/a.py", "a = 1\n")
    remote.write("README.md", "hi\n")
    base = remote.snapshot(tag="base")
    assert remote.current_snapshot_id == base.snapshot_id
    assert (base.tag, base.file_count, base.total_bytes) == ("base", 2, 9)
    remote.write("src/a.py", "a = 2\n")
    remote.delete("README.md")
    remote.write("new.txt", "n")
    live = remote.diff(base)
    assert (live.added, live.modified, live.deleted) == (
        ("new.txt",),
        ("src/a.py",),
        ("README.md",),
    )
    after = remote.snapshot()
    assert after.parent_id == base.snapshot_id
    assert remote.diff(base, after) == live
    view = remote.at(base)
    assert view.read_only
    assert view.read("src/a.py").content == "a = 1\n"
    with pytest.raises(ReadOnlyError):
        view.write("x", "y")
    local = InMemoryFilesystem()
    # A view must not change the workspace: like the in-process view, it has
    # no snapshot verbs at all, and refuses an import.
    assert not isinstance(view, SnapshotableFilesystem)
    assert not isinstance(local.at(local.snapshot()), SnapshotableFilesystem)
    assert not hasattr(view, "restore")
    outcomes = []
    for fs in (local.at(local.snapshot()), view):  # the in-process view refuses alike
        with pytest.raises(ReadOnlyError) as imported:
            import_archive(fs, "/nonexistent.zip")
        error = imported.value
        outcomes.append((type(error), error.errno, error.strerror, error.filename))
    assert outcomes[0] == outcomes[1]
    assert remote.read("src/a.py").content == "a = 2\n"
    remote.restore(base)
    assert remote.read("src/a.py").content == "a = 1\n"
    assert not remote.exists("new.txt")
    assert not remote.diff(base).changed
    assert [s.snapshot_id for s in remote.snapshots()][-2:] == [base.snapshot_id, after.snapshot_id]


def test_restore_errors_change_nothing(remote: RemoteFilesystem) -> None:
    remote.write("a.txt", "kept")
    snapshot = remote.snapshot()
    with pytest.raises(SnapshotNotFoundError):
        remote.restore(replace(snapshot, snapshot_id=uuid.uuid4()))
    with pytest.raises(SnapshotNotFoundError):
        remote.at(replace(snapshot, snapshot_id=uuid.uuid4()))
    with pytest.raises(SnapshotIncompatibleError):
        remote.restore(InMemoryFilesystem().snapshot())
    assert remote.read("a.txt").content == "kept"


def test_api_and_mount_see_each_other_at_once(
    remote: RemoteFilesystem, shared_daemon: MountRecord
) -> None:
    root = Path(shared_daemon.mountpoint)
    remote.write("from-api.txt", "api\n")
    assert (root / "from-api.txt").read_text() == "api\n"
    (root / "from-mount.txt").write_text("mount\n")
    assert remote.read("from-mount.txt").content == "mount\n"
    before = remote.snapshot()
    (root / "from-api.txt").write_text("changed\n")
    remote.restore(before)  # the kernel's cached pages must go too
    assert (root / "from-api.txt").read_text() == "api\n"
    assert remote.read(f"{root}/from-api.txt").content == "api\n"  # the mount point maps to /


def test_archive_round_trip(remote: RemoteFilesystem, tmp_path: Path) -> None:
    remote.write("src/a.py", "a\n")
    remote.write_bytes("bin/blob", bytes(range(256)))
    archive = tmp_path / "ws.zip"
    assert remote.export_archive(archive) == 2
    remote.delete("src", recursive=True)
    remote.write("other.txt", "o")
    assert remote.import_archive(archive) == 2
    assert sorted(e.name for e in remote.list(".")) == ["bin", "src"]
    assert remote.read_bytes("bin/blob").content == bytes(range(256))


def test_the_tools_work_on_it(remote: RemoteFilesystem) -> None:
    tools = filesystem_tools(remote)
    assert "snapshot" in tools.names
    context = ToolContext(filesystem=remote)

    def call(name: str, **arguments: object) -> str:
        result = tools.call(name, arguments, context=context)
        assert result.success, result.message
        return result.message

    call("write_file", path="src/app.py", content="def main():\n    return 1\n")
    call("snapshot", tag="before-edit")
    call("edit_file", path="src/app.py", old_string="return 1", new_string="return 2")
    assert "return 2" in call("read_file", path="src/app.py")
    assert "src/app.py" in call("grep", pattern="return 2")
    assert "src/app.py" in call("diff", **{"from": "before-edit"})
    call("restore", id_or_tag="before-edit")
    assert remote.read("src/app.py").content == "def main():\n    return 1\n"
    refused = tools.call("read_file", {"path": "missing.py"}, context=context)
    assert not refused.success


def test_read_only_daemon_refuses_writes_everywhere(daemons: Daemons, tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "kept.txt").write_text("kept\n")
    record = daemons.start(source=str(source), read_only=True)
    with connect(record.mountpoint) as fs:
        assert fs.read_only
        assert fs.read("kept.txt").content == "kept\n"
        with pytest.raises(ReadOnlyError) as api:
            fs.write("new.txt", "x")
        assert api.value.errno == errno.EROFS
        with pytest.raises(OSError) as kernel:
            Path(record.mountpoint, "new.txt").write_text("x")
        assert kernel.value.errno == errno.EROFS
        assert not os.path.exists(Path(record.mountpoint, "new.txt"))
        # A refused restore is a failed restore (what the seeds catch) and still EROFS.
        with pytest.raises(ReadOnlyRestoreError) as restore:
            fs.restore(fs.snapshots()[-1])
        assert restore.value.errno == errno.EROFS
        assert isinstance(restore.value, SnapshotRestoreError)
        assert isinstance(restore.value, PermissionError)
