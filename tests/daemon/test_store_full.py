"""A store whose disk fills up: the writer gets ENOSPC (at its fsync, and for every
change after), the daemon stays up and serves reads, and resuming finds everything
that was on disk before, intact."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from support.daemon import cli, cli_json, cli_ok, stop
from workspacefs import NoSpaceError, connect
from workspacefs.daemon import MountRecord


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for the store needs root")
@pytest.mark.logs_errors("journalling the workspace failed", "the journal of .* stops at")
def test_a_full_store_refuses_changes_and_keeps_what_it_promised(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m,mode=0700", "tmpfs", str(disk)], check=True
    )
    try:
        _fill(tmp_path, disk / "store")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(tmp_path: Path, store: Path) -> None:
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    record = MountRecord.from_dict(
        cli_json("mount", str(mountpoint), "--store", str(store), "--interval", "0.1")  # type: ignore[arg-type]
    )
    promised: dict[str, bytes] = {}
    try:
        with pytest.raises(OSError) as full:  # noqa: PT012 (the loop runs until the disk is full)
            for n in range(100):
                data = os.urandom(256 << 10)
                path = mountpoint / f"f{n}.bin"
                with open(path, "wb") as written:
                    written.write(data)
                    os.fsync(written.fileno())
                promised[path.name] = data
        assert full.value.errno == errno.ENOSPC
        assert len(promised) >= 5
        # Every change now is refused, unchanged, through both doors; reads go on.
        with pytest.raises(OSError) as refused:
            (mountpoint / "more.txt").write_text("x")
        assert refused.value.errno == errno.ENOSPC
        assert not (mountpoint / "more.txt").exists()
        with connect(mountpoint) as fs:
            with pytest.raises(NoSpaceError):
                fs.write("api.txt", "x")
            assert not fs.exists("api.txt")
            assert fs.read_bytes("f0.bin").content == promised["f0.bin"]
        assert "store" in cli_ok("status", str(mountpoint))  # the daemon serves
    finally:
        stop(record)
    again = MountRecord.from_dict(
        cli_json("mount", str(mountpoint), "--store", str(store), "--durability", "always")  # type: ignore[arg-type]
    )
    try:
        for name, data in promised.items():
            assert (mountpoint / name).read_bytes() == data, name
    finally:
        stop(again)
    assert cli("status", str(mountpoint)).returncode != 0
