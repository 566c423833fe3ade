"""Hydrating the in-memory tree from host directories."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workspacefs import HostMount, InMemoryFilesystem, NoSpaceError, NotSupportedError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('main')\n")
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "src" / "notes.txt").write_text("notes\n")
    (root / "src" / "run.sh").write_text("#!/bin/sh\n")
    (root / "src" / "run.sh").chmod(0o755)
    (root / "src" / "link.py").symlink_to("main.py")
    (root / "src" / "escape").symlink_to("/etc/passwd")
    (tmp_path / "secret.txt").write_text("secret\n")
    return root


def test_hydrate_with_globs(project: Path) -> None:
    fs = InMemoryFilesystem()
    count = fs.hydrate_from_host(
        HostMount("src", include_glob=("*.py",), exclude_glob=("pkg/*",)),
        allowed_roots=[project],
    )
    assert count == 2
    assert fs.read("src/main.py").content == "print('main')\n"
    assert fs.stat("src/link.py").is_symlink
    assert not fs.exists("src/notes.txt")
    assert not fs.exists("src/pkg/mod.py")


def test_hydrate_keeps_modes_and_mtimes_and_skips_escaping_links(project: Path) -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.hydrate_from_host(
        HostMount(str(project / "src"), mount_path="/workspace/code"), allowed_roots=[project]
    )
    info = fs.stat("code/run.sh")
    assert info.mode & 0o111
    host_mtime = os.stat(project / "src" / "run.sh").st_mtime
    assert info.modified_at is not None
    assert abs(info.modified_at.timestamp() - host_mtime) < 1e-3
    assert not fs.exists("code/escape")
    assert fs.read("code/pkg/mod.py").content == "x = 1\n"


@pytest.mark.parametrize("host_path", ["../secret.txt", "/etc", "src/../../secret.txt"])
def test_hydrate_outside_allowed_roots_refused(project: Path, host_path: str) -> None:
    fs = InMemoryFilesystem()
    with pytest.raises(PermissionError):
        fs.hydrate_from_host(HostMount(host_path), allowed_roots=[project])
    assert fs.list() == []


def test_hydrate_through_symlinked_dir_outside_refused(project: Path, tmp_path: Path) -> None:
    (project / "sneaky").symlink_to(tmp_path)
    fs = InMemoryFilesystem()
    with pytest.raises(PermissionError):
        fs.hydrate_from_host(HostMount("sneaky"), allowed_roots=[project])


def test_hydrate_requires_allowed_roots(project: Path) -> None:
    with pytest.raises(PermissionError):
        InMemoryFilesystem().hydrate_from_host(HostMount(str(project)))


def test_hydrate_missing_path(project: Path) -> None:
    with pytest.raises(FileNotFoundError):
        InMemoryFilesystem().hydrate_from_host(HostMount("nope"), allowed_roots=[project])


def test_hydrate_size_limit_changes_nothing(project: Path) -> None:
    fs = InMemoryFilesystem()
    with pytest.raises(ValueError, match="max_bytes"):
        fs.hydrate_from_host(HostMount("src", max_bytes=10), allowed_roots=[project])
    assert fs.list() == []


def test_hydrate_keeps_sparse_files_sparse(tmp_path: Path) -> None:
    """A 2 GiB file with one data block costs the block, not 2 GiB (nor a failure halfway)."""
    root = tmp_path / "project"
    root.mkdir()
    size = 2 << 30
    with open(root / "sparse.img", "wb") as sparse:
        sparse.seek(1 << 30)
        sparse.write(b"data in the middle")
        sparse.truncate(size)
    fs = InMemoryFilesystem(memory_budget=64 << 20)
    fs.hydrate_from_host(HostMount(str(root), mount_path="p"), allowed_roots=[tmp_path])
    assert fs.stat("p/sparse.img").size_bytes == size
    assert fs.read_bytes("p/sparse.img", offset=1 << 30, limit=18).content == b"data in the middle"
    assert fs.read_bytes("p/sparse.img", offset=size - 4, limit=4).content == bytes(4)
    assert fs.memory_usage().held < 1 << 20


def test_hydrate_past_the_budget_is_refused_before_copying(tmp_path: Path) -> None:
    """Files holding more data than the budget has free: ENOSPC before the first block is
    copied (the data a file holds, not its size: a sparse one still fits)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "dense.bin").write_bytes(os.urandom(24 << 20))
    with open(root / "sparse.img", "wb") as sparse:
        sparse.truncate(64 << 30)
    fs = InMemoryFilesystem(memory_budget=16 << 20)
    fs.write_bytes("kept.txt", b"kept\n")
    fs.tree.budget.take_peak()
    held = fs.memory_usage().held
    with pytest.raises(NoSpaceError, match=r"host files hold .* of 16,777,216 bytes") as caught:
        fs.hydrate_from_host(HostMount(str(root), mount_path="p"), allowed_roots=[tmp_path])
    assert caught.value.filename == str(root)
    assert fs.tree.budget.take_peak() == held  # not one block was copied meanwhile
    assert [entry.name for entry in fs.list()] == ["kept.txt"]
    (root / "dense.bin").unlink()
    fs.hydrate_from_host(HostMount(str(root), mount_path="p"), allowed_roots=[tmp_path])
    assert fs.stat("p/sparse.img").size_bytes == 64 << 30
    assert fs.memory_usage().held == held


@pytest.mark.parametrize(
    ("root", "name"),
    [
        ("/proc/self", "status"),  # says 0 bytes, yields a page of text
        ("/proc/self", "environ"),  # says 0 bytes and seeks no data, yet yields some
        ("/sys/kernel", "uevent_seqnum"),  # says 4096 bytes, yields one line
    ],
)
def test_hydrate_refuses_pseudo_files_whose_size_says_nothing(root: str, name: str) -> None:
    """Copied by their size they would be empty or padded with NULs; read to the end,
    some never end (/proc/self/pagemap): refused, with the file named, nothing changed."""
    if not os.path.isfile(os.path.join(root, name)):
        pytest.skip(f"no {root}/{name} here")
    fs = InMemoryFilesystem()
    with pytest.raises(NotSupportedError, match="pseudo file") as refused:
        fs.hydrate_from_host(HostMount(root, include_glob=(name,)), allowed_roots=[root])
    assert refused.value.errno == errno.EOPNOTSUPP
    assert refused.value.filename == os.path.join(root, name)
    assert fs.list() == []


def test_hydrate_copies_a_file_exactly_its_size(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "empty.txt").write_bytes(b"")
    (root / "one-block.bin").write_bytes(bytes(range(256)) * 256)  # 64 KiB: one block
    (root / "odd.txt").write_bytes(b"x" * 70_001)
    fs = InMemoryFilesystem()
    assert fs.hydrate_from_host(HostMount(str(root), mount_path="p"), allowed_roots=[root]) == 3
    for name in ("empty.txt", "one-block.bin", "odd.txt"):
        assert fs.read_bytes(f"p/{name}").content == (root / name).read_bytes()


def test_an_empty_workspace_is_private() -> None:
    assert InMemoryFilesystem().stat("").mode & 0o7777 == 0o700


@pytest.mark.parametrize("mode", [0o700, 0o750, 0o1777])
@pytest.mark.parametrize("mount_path", [".", "copy"])
def test_the_copied_directory_keeps_its_own_mode(
    tmp_path: Path, mode: int, mount_path: str
) -> None:
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "file.txt").write_text("x\n")
    source.chmod(mode)
    fs = InMemoryFilesystem()
    fs.hydrate_from_host(HostMount("source", mount_path=mount_path), allowed_roots=[tmp_path])
    assert fs.stat("" if mount_path == "." else mount_path).mode & 0o7777 == mode
    assert fs.read(f"{mount_path}/sub/file.txt").content == "x\n"


def test_hydrate_keeps_the_sticky_bit_of_directories_only(tmp_path: Path) -> None:
    # /dev/shm is 1777: without its sticky bit, anyone could remove anyone's files.
    (tmp_path / "dev" / "shm").mkdir(parents=True)
    (tmp_path / "dev" / "shm" / "sticky.txt").write_text("x\n")
    (tmp_path / "dev" / "shm").chmod(0o1777)
    (tmp_path / "dev" / "shm" / "sticky.txt").chmod(0o1644)
    fs = InMemoryFilesystem()
    fs.hydrate_from_host(HostMount("dev"), allowed_roots=[tmp_path])
    assert fs.stat("dev/shm").mode & 0o7777 == 0o1777
    assert fs.stat("dev/shm/sticky.txt").mode & 0o7777 == 0o644
