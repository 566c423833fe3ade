"""Real FUSE mounts for tests: one at a time (pyfuse3 keeps one session per process)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem, Mount, mount
from workspacefs.fuse._features import KILLPRIV_V2


@dataclass
class Mounted:
    """A live workspace mounted for one test."""

    fs: InMemoryFilesystem
    root: Path
    handle: Mount

    def path(self, relative: str) -> str:
        return str(self.root / relative)


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Mounted]:
    fs = InMemoryFilesystem(mount_point="/workspace")
    root = tmp_path / "mnt"
    root.mkdir()
    with mount(fs, root, allow_other=True) as handle:
        yield Mounted(fs, root, handle)
    assert not os.path.ismount(root), "the mount outlived its test"


@pytest.fixture(params=[False, True], ids=["kernel-kills", "killpriv-v2"])
def killpriv_mounted(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Mounted]:
    """``mounted``, once with the kernel clearing set-ID bits and file capabilities,
    once with the mount doing it (``handle_killpriv``: HANDLE_KILLPRIV_V2)."""
    if request.param and not KILLPRIV_V2:
        pytest.skip("HANDLE_KILLPRIV_V2 needs libfuse 3.18.3 and the patched pyfuse3 (setup.sh)")
    fs = InMemoryFilesystem(mount_point="/workspace")
    root = tmp_path / "mnt"
    root.mkdir()
    with mount(fs, root, allow_other=True, handle_killpriv=request.param) as handle:
        yield Mounted(fs, root, handle)
    assert not os.path.ismount(root), "the mount outlived its test"


@pytest.fixture
def plain_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a kernel filesystem, to compare behaviour with."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        target = shm / f"workspacefs-test-{os.getpid()}-{tmp_path.name}"
        target.mkdir()
        yield target
        shutil.rmtree(target, ignore_errors=True)
    else:
        target = tmp_path / "plain"
        target.mkdir()
        yield target
