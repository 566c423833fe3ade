"""A FUSE loop that dies under its owner: told at once, and the path never goes back.

Before, the loop's death unmounted the path while the owner went on, and
writes to it landed in the host directory underneath.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from pathlib import Path

import pyfuse3
import pytest
from pyfuse3 import InodeT

from workspacefs import InMemoryFilesystem, MountLostError, mount
from workspacefs.fuse import WorkspaceOperations
from workspacefs.fuse._features import OPEN_FREE

# Every test here loses its mount on purpose; the owner logs the loss.
pytestmark = pytest.mark.logs_errors("the FUSE loop serving .* died")


def abort_connection(mountpoint: Path) -> None:
    """Abort the FUSE connection from outside, as the kernel does when things go wrong."""
    minor = os.minor(os.stat(mountpoint).st_dev)
    with open(f"/sys/fs/fuse/connections/{minor}/abort", "w") as control:
        control.write("1")


def errno_of(action: object) -> int | None:
    assert callable(action)
    with pytest.raises(OSError) as excinfo:
        action()
    return excinfo.value.errno


@pytest.mark.skipif(
    not os.path.ismount("/sys/fs/fuse/connections"), reason="fusectl is not mounted"
)
@pytest.mark.parametrize(
    "open_free",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(not OPEN_FREE, reason="needs the patched pyfuse3"),
        ),
    ],
)
def test_a_dead_loop_is_reported_and_the_path_never_reverts(
    tmp_path: Path, open_free: bool
) -> None:
    point = tmp_path / "mnt"
    point.mkdir()
    (point / "underneath.txt").write_text("host")
    fs = InMemoryFilesystem()
    fs.write("inside.txt", "workspace")
    told = threading.Event()
    errors: list[BaseException] = []

    def on_lost(error: BaseException) -> None:
        errors.append(error)
        told.set()

    def while_mounted() -> None:
        with mount(fs, point, on_lost=on_lost, open_free=open_free) as handle:
            assert os.listdir(point) == ["inside.txt"]
            abort_connection(point)
            assert told.wait(10), "on_lost was not called"
            assert not handle.running
            assert handle.error is errors[0]
            with pytest.raises(MountLostError, match="stopped serving"):
                fs.read("inside.txt")
            with pytest.raises(MountLostError):
                fs.write("new.txt", "lost?")
            with pytest.raises(MountLostError):
                fs.snapshot()
            # The path is still the dead mount, not the directory below it.
            if open_free:
                # The kernel lists the directory from its own cache, which the
                # dead server can no longer invalidate: the workspace's last
                # listing, still never what lies below.
                assert os.listdir(point) == ["inside.txt"]
            else:
                assert errno_of(lambda: os.listdir(point)) == errno.ENOTCONN
            assert errno_of(lambda: (point / "new.txt").write_text("lost?")) == errno.ENOTCONN

    with pytest.raises(MountLostError):  # leaving the block says it too
        while_mounted()
    assert not os.path.ismount(point)
    assert sorted(os.listdir(point)) == ["underneath.txt"]
    assert fs.read("inside.txt").content == "workspace"  # intact, usable again
    with mount(fs, point):
        assert (point / "inside.txt").read_text() == "workspace"


def test_an_unmount_from_outside_is_reported(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    told = threading.Event()

    def while_mounted() -> None:
        with mount(fs, tmp_path, on_lost=lambda _: told.set()):
            subprocess.run(["fusermount3", "-u", str(tmp_path)], check=True)
            assert told.wait(10)
            with pytest.raises(MountLostError):
                fs.list()

    with pytest.raises(MountLostError):
        while_mounted()
    assert fs.list() == []


class LoopKiller(BaseException):
    """Not an Exception: it escapes the handlers' error adapter, as a bug in pyfuse3
    itself would (e.g. its MemoryError allocating a request buffer)."""


def test_an_exception_that_kills_the_loop_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve = WorkspaceOperations.getxattr

    async def getxattr(
        self: WorkspaceOperations, inode: InodeT, name: bytes, ctx: pyfuse3.RequestContext
    ) -> bytes:
        if name == b"user.kill-the-loop":
            raise LoopKiller
        return await serve(self, inode, name, ctx)

    monkeypatch.setattr(WorkspaceOperations, "getxattr", getxattr)
    point = tmp_path / "mnt"
    point.mkdir()
    (point / "underneath.txt").write_text("host")
    fs = InMemoryFilesystem()
    fs.write("f.txt", "kept")
    lost: list[BaseException] = []
    told = threading.Event()

    def on_lost(error: BaseException) -> None:
        lost.append(error)
        told.set()

    def while_mounted() -> None:
        with mount(fs, point, on_lost=on_lost):
            assert errno_of(lambda: os.getxattr(point / "f.txt", "user.colour")) == errno.ENODATA
            assert errno_of(lambda: os.getxattr(point / "f.txt", "user.kill-the-loop")) in (
                errno.ENOTCONN,
                errno.ECONNABORTED,
            )
            assert told.wait(10)
            assert [type(error) for error in lost] == [LoopKiller]
            with pytest.raises(MountLostError):
                fs.read("f.txt")
            assert errno_of(lambda: os.listdir(point)) == errno.ENOTCONN

    with pytest.raises(MountLostError, match="LoopKiller"):
        while_mounted()
    assert os.listdir(point) == ["underneath.txt"]
    assert fs.read("f.txt").content == "kept"
