"""The protocol-compliance suite through the kernel: files made by the API, used via syscalls."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs import Filesystem, InMemoryFilesystem, mount
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.testing._compliance import Files

from .kernel_view import KernelView


class TestThroughMount(FilesystemProtocolTests):
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
        self._stack.enter_context(mount(fs, root))
        self.api = fs
        return KernelView(root)

    def test_kernel_writes_reach_the_api(self) -> None:
        fs = self.fs()
        fs.write("new/file.txt", "through the kernel")
        fs.delete("README.md")
        assert self.api.read("new/file.txt").content == "through the kernel"
        assert not self.api.exists("README.md")
