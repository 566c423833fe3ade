"""Every tool test runs on three backends: the in-memory tree, a host directory, and a
host directory that is a live FUSE mount of an in-memory tree (one mount per module,
since pyfuse3 serves one mount per process; each test gets a fresh directory in it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from workspacefs import HostFilesystem, InMemoryFilesystem, SnapshotableFilesystem, mount
from workspacefs.fs import Filesystem
from workspacefs.fuse import unavailable_reason
from workspacefs.tools import ToolContext, ToolResult, filesystem_tools

BACKENDS = ["memory", "host", "fuse"]
Files = Mapping[str, str | bytes]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = unavailable_reason()
    for item in items:
        if "tests/tools/" not in str(item.fspath):
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "fuse":
            item.add_marker(pytest.mark.fuse)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


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


_fresh = itertools.count()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeWorkspace]:
    """``make(files, read_only=False)``: a workspace holding ``files`` on this backend."""
    made: list[HostFilesystem] = []

    def build(files: Files | None = None, *, read_only: bool = False) -> Workspace:
        files = files or {}
        if backend == "memory":
            fs = InMemoryFilesystem()
            for path, content in files.items():
                fs.write_bytes(path, content.encode() if isinstance(content, str) else content)
            if read_only:
                return Workspace(fs.at(fs.snapshot()))
            return Workspace(fs)
        if backend == "host":
            root = tmp_path / f"ws{next(_fresh)}"
            root.mkdir()
            for path, content in files.items():
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                data = content.encode() if isinstance(content, str) else content
                target.write_bytes(data)
        else:
            api, mounted = request.getfixturevalue("fuse_root")
            name = f"ws{next(_fresh)}"
            api.mkdir(name)
            for path, content in files.items():
                data = content.encode() if isinstance(content, str) else content
                api.write_bytes(f"{name}/{path}", data)
            root = mounted / name
        git_dir = tmp_path / f"git{next(_fresh)}"
        host = HostFilesystem(root, read_only=read_only, snapshot_strategy="git", git_dir=git_dir)
        made.append(host)
        return Workspace(host)

    yield build
    for host in made:
        host.cleanup()
