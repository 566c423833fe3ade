"""Fifos and other special files in a host root: refused before they are opened.

Opening a fifo for reading blocks until a writer comes; every verb must
answer "not a regular file" at once instead.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs import HostFilesystem, InvalidArgumentError

VERBS: dict[str, Callable[[HostFilesystem, str], object]] = {
    "read": lambda fs, path: fs.read(path),
    "read_bytes": lambda fs, path: fs.read_bytes(path),
    "write": lambda fs, path: fs.write(path, "x"),
    "write_bytes": lambda fs, path: fs.write_bytes(path, b"x", mode="append"),
    "grep": lambda fs, path: fs.grep("x", path=path),
}


@pytest.fixture
def special(tmp_path: Path) -> HostFilesystem:
    os.mkfifo(tmp_path / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "socket"))
    os.symlink("fifo", tmp_path / "link-to-fifo")
    (tmp_path / "file.txt").write_text("x\n")
    return HostFilesystem(tmp_path)


@pytest.mark.parametrize("path", ["fifo", "socket", "link-to-fifo"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_special_files_refused_at_once(special: HostFilesystem, verb: str, path: str) -> None:
    started = time.monotonic()
    with pytest.raises(InvalidArgumentError, match="not a regular file") as refused:
        VERBS[verb](special, path)
    assert time.monotonic() - started < 1
    assert refused.value.filename == path


def test_directory_grep_skips_special_files(special: HostFilesystem) -> None:
    assert [match.path for match in special.grep("x")] == ["file.txt"]
    listed = {entry.name: entry for entry in special.list()}
    assert not listed["fifo"].is_file
    assert not listed["fifo"].is_directory
