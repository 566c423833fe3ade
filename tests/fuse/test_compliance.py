"""The protocol-compliance suite through the kernel.

The files are made by the API; the suite then runs ``HostFilesystem`` on the
mount point, so every protocol operation is a syscall on the mount, checked
against what the API itself would answer.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs import Filesystem, HostFilesystem, InMemoryFilesystem, mount
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.testing._compliance import Files


class _ThroughMount(FilesystemProtocolTests):
    @pytest.fixture(autouse=True)
    def _mounts(self, tmp_path: Path) -> Iterator[None]:
        self._stack = contextlib.ExitStack()
        self._tmp = tmp_path
        with self._stack:
            yield

    def create_filesystem(self, files: Files) -> Filesystem:
        self._stack.close()  # one mount per process: drop the previous one
        fs = InMemoryFilesystem()
        for path, content in files.items():
            fs.write_bytes(path, content.encode() if isinstance(content, str) else content)
        root = self._tmp / f"mnt{id(fs)}"
        root.mkdir()
        self._stack.enter_context(mount(fs, root, read_only=self.read_only))
        self.api = fs
        return HostFilesystem(root, snapshot_strategy="git")


class TestThroughMount(_ThroughMount):
    def test_kernel_writes_reach_the_api(self) -> None:
        fs = self.fs()
        fs.write("new/file.txt", "through the kernel")
        fs.delete("README.md")
        assert self.api.read("new/file.txt").content == "through the kernel"
        assert not self.api.exists("README.md")


class TestThroughReadOnlyMount(_ThroughMount):
    """Writes reach the kernel, which refuses them with EROFS."""

    read_only = True

    def test_refusal_comes_from_the_kernel(self) -> None:
        fs = self.fs()
        assert isinstance(fs, HostFilesystem)
        with pytest.raises(PermissionError) as refused:
            fs.write("new.txt", "x")
        assert refused.value.errno == errno.EROFS
