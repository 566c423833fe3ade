"""``cleanup_stale`` detaches what a dead sandbox left mounted before it removes its directory,
also when the temporary directory is reached through a symlink (the mount table shows
resolved paths): removing files through a live mount would delete what it serves."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support.interpreter import python

DEAD_OWNER = "1:0"
"""pid 1 never started at tick 0: the identity of a process that no longer exists."""


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting tmpfs needs root")
@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "through-link"])
def test_a_mount_left_in_a_dead_sandbox_is_detached_not_emptied(
    tmp_path: Path, through_link: bool
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    state = tmp_path / "real" / "workspacefs-sandbox-1-deadbeef"
    (state / "mnt").mkdir(parents=True)
    (state / "owner").write_text(DEAD_OWNER)
    subprocess.run(["mount", "-t", "tmpfs", "wsfs-test", state / "mnt"], check=True)
    served = os.open(state / "mnt", os.O_RDONLY | os.O_DIRECTORY)  # sees it once detached
    try:
        (state / "mnt" / "kept.txt").write_text("what the mount serves\n")
        temporary = tmp_path / ("link" if through_link else "real")
        code = (
            "import tempfile; from workspacefs.sandbox import cleanup_stale; "
            f"tempfile.tempdir = {str(temporary)!r}; print(cleanup_stale(containers=False))"
        )
        assert python(code) == str([str(temporary / state.name)])
        assert not state.exists()
        assert os.listdir(served) == ["kept.txt"]  # detached whole, nothing deleted in it
    finally:
        os.close(served)
        if os.path.ismount(state / "mnt"):
            subprocess.run(["umount", "-l", state / "mnt"], check=True)
