"""The compliance suite on the in-memory backend: live tree and snapshot views."""

from __future__ import annotations

import tempfile
from pathlib import Path

from workspacefs import Filesystem, HostMount, InMemoryFilesystem
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.testing._compliance import Files


def populated(files: Files, **options: object) -> InMemoryFilesystem:
    fs = InMemoryFilesystem(**options)  # type: ignore[arg-type]
    for path, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        fs.write_bytes(path, data)
    return fs


class TestLiveTree(FilesystemProtocolTests):
    def create_filesystem(self, files: Files) -> Filesystem:
        return populated(files)


class TestLiveTreeWithMountPoint(FilesystemProtocolTests):
    def create_filesystem(self, files: Files) -> Filesystem:
        return populated(files, mount_point="/workspace")


class TestSnapshotView(FilesystemProtocolTests):
    read_only = True

    def create_filesystem(self, files: Files) -> Filesystem:
        fs = populated(files, mount_point="/workspace")
        snapshot = fs.snapshot()
        # Change everything afterwards: the view must still show the snapshot.
        for path in files:
            fs.write_bytes(path, b"changed after the snapshot")
        fs.write("added-after.txt", "x")
        return fs.at(snapshot)


class TestReadOnlyFilesystem(FilesystemProtocolTests):
    """A read-only workspace hydrated from a host directory."""

    read_only = True

    def create_filesystem(self, files: Files) -> Filesystem:
        with tempfile.TemporaryDirectory() as host:
            for path, content in files.items():
                target = Path(host, path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode() if isinstance(content, str) else content)
            fs = InMemoryFilesystem(read_only=True)
            fs.hydrate_from_host(HostMount(host, mount_path="."), allowed_roots=[host])
        return fs
