"""Every tool test runs on four backends: the in-memory tree, a host directory, a
host directory that is a live FUSE mount of an in-memory tree (one mount per module,
since pyfuse3 serves one mount per process; each test gets a fresh directory in it),
and a workspace daemon through its client, ``RemoteFilesystem``.

The daemon is started once per module and emptied for each test (its files and its
snapshots), so a test sees a fresh workspace as on the other backends. A read-only
workspace on "remote" is a daemon of its own, started read-only from the files.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.daemon import private_runtime, stop
from workspacefs import HostFilesystem, InMemoryFilesystem, SnapshotableFilesystem, mount
from workspacefs.daemon import MountRecord, RemoteFilesystem, connect, start
from workspacefs.fs import Filesystem
from workspacefs.fuse import unavailable_reason
from workspacefs.tools import ToolContext, ToolResult, filesystem_tools

BACKENDS = ["memory", "host", "fuse", "remote"]
Files = Mapping[str, str | bytes]


@dataclass
class Workspace:
    """A filesystem under test and a way to call the tools on it."""

    fs: Filesystem

    def call(self, name: str, **arguments: object) -> ToolResult[object]:
        return filesystem_tools(self.fs).call(
            name, arguments, context=ToolContext(filesystem=self.fs)
        )

    def ok(self, name: str, **arguments: object) -> str:
        result = self.call(name, **arguments)
        assert result.success, result.message
        return result.message

    def fail(self, name: str, **arguments: object) -> str:
        result = self.call(name, **arguments)
        assert not result.success, result.message
        assert result.value is None
        return result.message

    def text(self, path: str) -> str:
        return self.fs.read_bytes(path).content.decode()

    def snapshotable(self) -> SnapshotableFilesystem:
        assert isinstance(self.fs, SnapshotableFilesystem)
        return self.fs


MakeWorkspace = Callable[..., Workspace]


def _data(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content


@pytest.fixture(scope="module")
def fuse_root(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InMemoryFilesystem, Path]]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    api = InMemoryFilesystem()
    root = tmp_path_factory.mktemp("tools-mnt")
    with mount(api, root):
        yield api, root


@dataclass
class RemoteDaemons:
    """The daemons of one module, in a runtime directory of their own, so that they
    neither see nor disturb the user's workspaces; ``shared`` serves every test."""

    base: Path
    shared: MountRecord

    def start(self, files: Files, *, read_only: bool) -> MountRecord:
        """Another daemon, started from ``files`` (stop it with ``stop_daemon``; the
        module's end stops any still running)."""
        name = f"ws{next(_fresh)}"
        source = self.base / f"{name}-source"
        for path, content in files.items():
            target = source / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_data(content))
        source.mkdir(exist_ok=True)
        mountpoint = self.base / name
        mountpoint.mkdir()
        return start(mountpoint, source=str(source), read_only=read_only)

    def fresh(self) -> RemoteFilesystem:
        """A new client of the shared daemon, whose workspace is now empty and keeps
        no snapshot: what a new ``InMemoryFilesystem`` holds.

        A new client each time, since the snapshot tools remember what they took
        per filesystem object (``WorkspaceSnapshots.of``)."""
        fs = connect(self.shared.socket)
        for entry in fs.list("."):
            fs.delete(entry.path, recursive=True)
        for record in fs.snapshots():
            fs.delete_snapshot(record)
        assert not fs.list(".")
        assert not fs.snapshots()
        return fs


@pytest.fixture(scope="module")
def remote_daemons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteDaemons]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with private_runtime():
        base = tmp_path_factory.mktemp("tools-remote")
        (base / "shared").mkdir()
        yield RemoteDaemons(base, start(base / "shared"))


_fresh = itertools.count()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeWorkspace]:
    """``make(files, read_only=False)``: a workspace holding ``files`` on this backend."""
    made: list[HostFilesystem] = []
    clients: list[RemoteFilesystem] = []
    daemons: list[MountRecord] = []

    def build(files: Files | None = None, *, read_only: bool = False) -> Workspace:
        files = files or {}
        if backend == "memory":
            fs = InMemoryFilesystem()
            for path, content in files.items():
                fs.write_bytes(path, _data(content))
            if read_only:
                return Workspace(fs.at(fs.snapshot()))
            return Workspace(fs)
        if backend == "remote":
            return Workspace(remote(files, read_only=read_only))
        if backend == "host":
            root = tmp_path / f"ws{next(_fresh)}"
            root.mkdir()
            for path, content in files.items():
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(_data(content))
        else:
            api, mounted = request.getfixturevalue("fuse_root")
            name = f"ws{next(_fresh)}"
            api.mkdir(name)
            for path, content in files.items():
                api.write_bytes(f"{name}/{path}", _data(content))
            root = mounted / name
        git_dir = tmp_path / f"git{next(_fresh)}"
        host = HostFilesystem(root, read_only=read_only, snapshot_strategy="git", git_dir=git_dir)
        made.append(host)
        return Workspace(host)

    def remote(files: Files, *, read_only: bool) -> RemoteFilesystem:
        manager: RemoteDaemons = request.getfixturevalue("remote_daemons")
        if read_only:
            record = manager.start(files, read_only=True)
            daemons.append(record)
            fs = connect(record.socket)
        else:
            # One test, one writable workspace: a second would empty the first.
            assert not any(not c.read_only for c in clients), "one writable remote workspace"
            fs = manager.fresh()
            for path, content in files.items():
                fs.write_bytes(path, _data(content))
        clients.append(fs)
        return fs

    yield build
    for host in made:
        host.cleanup()
    for client in clients:
        client.close()
    for record in daemons:
        stop(record)
