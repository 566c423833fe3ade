"""A fork mounts like any workspace; writes through its mount stay in the fork."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from workspacefs import InMemoryFilesystem, mount
from workspacefs.git import merge


def test_a_mounted_fork_is_written_by_the_kernel_and_merged_back(tmp_path: Path) -> None:
    origin = InMemoryFilesystem(mount_point="/workspace")
    origin.write("src/app.py", "print('a')\n")
    fork = origin.fork()
    root = tmp_path / "mnt"
    root.mkdir()
    with mount(fork, root, allow_other=True):
        subprocess.run(
            ["sh", "-c", "echo new > src/new.txt && rm src/app.py && mkdir -p build"],
            cwd=root,
            check=True,
        )
        assert sorted(os.listdir(root / "src")) == ["new.txt"]
    assert not os.path.ismount(root)
    assert origin.read("src/app.py").content == "print('a')\n"
    assert not origin.exists("src/new.txt")
    result = merge(origin, fork)
    assert result.applied
    assert result.changed == ("src/app.py", "src/new.txt")
    assert origin.read("src/new.txt").content == "new\n"
    assert not origin.exists("src/app.py")
