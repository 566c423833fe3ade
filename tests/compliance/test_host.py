"""The compliance suite on HostFilesystem: the same behaviour over a real directory."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from workspacefs import Filesystem, HostFilesystem
from workspacefs.testing import FilesystemProtocolTests
from workspacefs.testing._compliance import Files


def write_tree(root: Path, files: Files) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)


class _HostTests(FilesystemProtocolTests):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path: Path) -> None:
        self._base = tmp_path

    def _root(self, files: Files) -> Path:
        root = Path(tempfile.mkdtemp(dir=self._base))
        write_tree(root, files)
        return root


class TestHostFilesystem(_HostTests):
    def create_filesystem(self, files: Files) -> Filesystem:
        return HostFilesystem(self._root(files))


class TestHostFilesystemWithMountPoint(_HostTests):
    def create_filesystem(self, files: Files) -> Filesystem:
        return HostFilesystem(self._root(files), mount_point="/workspace")


class TestReadOnlyHostFilesystem(_HostTests):
    read_only = True

    def create_filesystem(self, files: Files) -> Filesystem:
        return HostFilesystem(self._root(files), read_only=True, mount_point="/workspace")
