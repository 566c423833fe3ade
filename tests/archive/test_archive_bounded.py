"""Archives in bounded memory and time: sizes known before any byte moves are checked
before any byte moves.

Export refuses a file the archive could not hold (a 64 GiB sparse file: ZIP holds no
holes) before it compresses anything; import refuses an archive whose declared sizes
do not fit where it goes (a zip bomb: 3 GiB of zeros in 3 MB) before it writes
anything, into the workspace's memory budget or onto the host's disk.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.zipbomb import zero_bomb
from workspacefs import HostFilesystem, InMemoryFilesystem, LimitExceededError, NoSpaceError
from workspacefs.archive import (
    ArchiveLimits,
    export_archive,
    import_archive,
    write_archive,
)
from workspacefs.archive._memory import TreeArchiveSource

MIB = 1 << 20
GIB = 1 << 30
BOMB = 3 * GIB


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3 MB archive declaring 3 GiB of zeros in ``zeros.bin``."""
    return zero_bomb(tmp_path_factory.mktemp("bomb") / "bomb.zip", BOMB)


def test_a_zip_bomb_is_refused_before_anything_is_written(bomb: Path) -> None:
    assert bomb.stat().st_size < 4 * MIB
    fs = InMemoryFilesystem(memory_budget=256 * MIB)
    fs.write_bytes("kept.txt", b"kept\n")
    fs.tree.budget.take_peak()
    held = fs.memory_usage().held
    with pytest.raises(NoSpaceError) as caught:
        import_archive(fs, bomb)
    assert caught.value.errno == errno.ENOSPC
    assert "3,221,225,472" in str(caught.value.strerror)  # what the archive declares
    assert fs.tree.budget.take_peak() == held  # not one chunk was written meanwhile
    assert [entry.name for entry in fs.list()] == ["kept.txt"]
    assert fs.read_bytes("kept.txt").content == b"kept\n"


def test_the_archive_limit_refuses_it_too(bomb: Path) -> None:
    fs = InMemoryFilesystem(memory_budget=8 * GIB)  # room enough: the limit decides
    fs.tree.budget.take_peak()
    with pytest.raises(LimitExceededError, match="2,147,483,648"):
        import_archive(fs, bomb, limits=ArchiveLimits(max_total_bytes=2 * GIB))
    assert fs.tree.budget.take_peak() == 0


@contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the block."""
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def test_a_host_import_that_cannot_fit_on_the_disk_is_refused_up_front(
    bomb: Path, tmp_path: Path
) -> None:
    with small_filesystem(tmp_path / "small", "64m") as root:
        (root / "kept.txt").write_text("kept\n")
        with pytest.raises(NoSpaceError) as caught:
            import_archive(HostFilesystem(root), bomb)
        assert "3,221,225,472" in str(caught.value.strerror)
        assert sorted(os.listdir(root)) == ["kept.txt"]  # no staging directory left
        assert (root / "kept.txt").read_text() == "kept\n"


class _Watched(TreeArchiveSource):
    """The tree's own archive source, noting which files export opens."""

    opened: list[str]

    def open(self, path: str) -> io.BufferedReader:
        self.opened.append(path)
        return super().open(path)


def _plant_sparse(fs: InMemoryFilesystem, name: str, size: int) -> None:
    with fs.transaction() as tree:
        tree.truncate(tree.create(tree.make_dirs("data"), name), size)  # truncate -s


def test_export_refuses_a_sparse_file_before_compressing_anything(tmp_path: Path) -> None:
    fs = InMemoryFilesystem(memory_budget=64 * MIB)
    fs.write_bytes("a.txt", b"a\n")
    _plant_sparse(fs, "sparse.img", 64 * GIB)
    source = _Watched(fs)
    source.opened = []
    target = tmp_path / "out.zip"
    with pytest.raises(LimitExceededError) as caught:
        write_archive(source, target)
    assert caught.value.errno == errno.EFBIG
    assert caught.value.filename == "data/sparse.img"
    assert "68,719,476,736" in str(caught.value.strerror)  # the file's size
    assert "17,179,869,184" in str(caught.value.strerror)  # the archive limit
    assert source.opened == []  # no file was read, so nothing compressed
    assert os.listdir(tmp_path) == []  # no archive, no partial one
    with pytest.raises(LimitExceededError, match="68,719,476,736"):
        export_archive(fs, target)  # the verb, the same way


def test_host_export_refuses_a_sparse_file_up_front(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    with open(root / "sparse.img", "wb") as handle:
        handle.truncate(64 * GIB)
    with pytest.raises(LimitExceededError, match="68,719,476,736") as caught:
        export_archive(HostFilesystem(root), tmp_path / "out.zip")
    assert caught.value.filename == "sparse.img"
    assert sorted(os.listdir(tmp_path)) == ["root"]


def test_export_of_a_normal_file_streams_and_round_trips(tmp_path: Path) -> None:
    fs = InMemoryFilesystem(memory_budget=64 * MIB)
    content = os.urandom(5 * MIB + 3)
    fs.write_bytes("big.bin", content)
    _plant_sparse(fs, "small-sparse.img", 2 * MIB)  # under every limit: holes as zeros
    assert export_archive(fs, tmp_path / "out.zip") == 2
    back = InMemoryFilesystem(memory_budget=64 * MIB)
    assert import_archive(back, tmp_path / "out.zip") == 2
    got = b"".join(
        back.read_bytes("big.bin", offset=o, limit=MIB).content for o in range(0, len(content), MIB)
    )
    assert got == content
    assert back.read_bytes("data/small-sparse.img", limit=2 * MIB).content == bytes(2 * MIB)
