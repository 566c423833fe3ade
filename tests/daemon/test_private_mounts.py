"""A mount reaches other users only as far as its root's mode lets them.

Mounts are ``allow_other`` (containers need it) with ``default_permissions``, so
the kernel checks modes: the root takes the mode of the directory ``--from``
names, and is 0700 when the workspace starts empty, as ``mkdtemp`` would make it.
"""

from __future__ import annotations

import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import cli, cli_json, cli_mounted, cli_ok, demo_source, stop
from support.other_user import needs_root, open_directory, refused
from workspacefs.daemon import MountRecord

pytestmark = needs_root


@pytest.fixture
def base() -> Iterator[Path]:
    with open_directory() as found:
        yield found


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_empty_workspace_is_closed_to_other_users(base: Path) -> None:
    mountpoint = base / "ws"
    mountpoint.mkdir(mode=0o755)
    record = cli_json("mount", str(mountpoint))
    assert isinstance(record, dict)
    try:
        assert mode_of(mountpoint) == 0o700
        (mountpoint / "notes.txt").write_text("mine\n")
        assert refused("ls", mountpoint)
        assert refused("cat", mountpoint / "notes.txt")
    finally:
        stop(MountRecord.from_dict(record))


@pytest.mark.parametrize("mode", [0o700, 0o750, 0o755])
def test_the_root_takes_the_mode_of_the_from_directory(base: Path, mode: int) -> None:
    source = demo_source(base)
    source.chmod(mode)
    mountpoint = base / "ws"
    mountpoint.mkdir(mode=0o755)
    with cli_mounted(mountpoint, source):
        assert mode_of(mountpoint) == mode
        # The control: where the source let others in, the mount does too.
        assert refused("cat", mountpoint / "README.md") == (mode & 0o005 != 0o005)


def test_from_a_directory_keeps_its_sticky_subdirectories(base: Path) -> None:
    source = base / "source"
    (source / "shm").mkdir(parents=True)
    (source / "shm" / "segment").write_bytes(b"x")
    (source / "shm").chmod(0o1777)
    mountpoint = base / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source):
        assert mode_of(mountpoint / "shm") == 0o1777


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_run_keeps_its_own_mount_point_private() -> None:
    done = cli("run", "--", "/bin/sh", "-c", "echo made > out.txt")
    assert done.returncode == 0, done.stderr
    found = re.search(r"the workspace stays mounted at (\S+)", done.stderr)
    assert found, done.stderr
    mountpoint = Path(found[1])
    try:
        assert (mountpoint / "out.txt").read_text() == "made\n"  # the container got in
        assert mode_of(mountpoint) == 0o700
    finally:
        cli_ok("unmount", str(mountpoint))
        mountpoint.rmdir()
