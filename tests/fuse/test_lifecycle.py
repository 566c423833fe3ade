"""Mount lifecycle: clean unmount on every exit path, stale mounts recovered."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs import BusyError, InMemoryFilesystem, mount
from workspacefs.fuse import is_stale, recover

SERVER = textwrap.dedent(
    """
    import sys, time
    from workspacefs import InMemoryFilesystem, mount
    fs = InMemoryFilesystem()
    fs.write("alive.txt", "yes")
    with mount(fs, sys.argv[1]):
        print("mounted", flush=True)
        time.sleep(600)
    """
)


@contextlib.contextmanager
def server(mountpoint: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process serving a mount at ``mountpoint``."""
    with subprocess.Popen(
        [sys.executable, "-c", SERVER, str(mountpoint)], stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "mounted"
            assert (mountpoint / "alive.txt").read_text() == "yes"
            yield process
        finally:
            process.kill()
            process.wait()
            recover(str(mountpoint))


def test_unmounts_after_exception(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    seen = []

    def fail_while_mounted() -> None:
        with mount(fs, tmp_path):
            seen.append(os.path.ismount(tmp_path))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_while_mounted()
    assert seen == [True]
    assert not os.path.ismount(tmp_path)


def test_one_mount_per_process(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    second = mount(InMemoryFilesystem(), tmp_path / "b")
    with mount(InMemoryFilesystem(), tmp_path / "a"), pytest.raises(BusyError), second:
        pass
    with mount(InMemoryFilesystem(), tmp_path / "b"):  # free again afterwards
        assert os.path.ismount(tmp_path / "b")


def test_bad_mountpoints(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), mount(InMemoryFilesystem(), tmp_path / "missing"):
        pass
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError), mount(InMemoryFilesystem(), tmp_path / "file"):
        pass


def test_no_mount_lets_others_past_every_check(tmp_path: Path) -> None:
    # Without default_permissions the kernel checks no mode: others must stay out.
    with (
        pytest.raises(ValueError, match="every local user"),
        mount(InMemoryFilesystem(), tmp_path, default_permissions=False),
    ):
        pass
    assert not os.path.ismount(tmp_path)


def test_sigterm_unmounts(tmp_path: Path) -> None:
    with server(tmp_path) as process:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 128 + signal.SIGTERM
        assert not os.path.ismount(tmp_path)


def test_sigint_unmounts(tmp_path: Path) -> None:
    with server(tmp_path) as process:
        process.send_signal(signal.SIGINT)
        process.wait(30)
        assert not os.path.ismount(tmp_path)


def test_kill_9_leaves_a_recoverable_mount(tmp_path: Path) -> None:
    with server(tmp_path) as process:
        process.kill()
        process.wait(30)
        assert is_stale(str(tmp_path))  # ENOTCONN, not a hang
        assert recover(str(tmp_path))
        assert not os.path.ismount(tmp_path)
        assert not recover(str(tmp_path))


def test_mount_recovers_a_stale_mount_itself(tmp_path: Path) -> None:
    with server(tmp_path) as process:
        process.kill()
        process.wait(30)
    fs = InMemoryFilesystem()
    fs.write("fresh.txt", "new")
    with mount(fs, tmp_path):
        assert (tmp_path / "fresh.txt").read_text() == "new"
    assert not os.path.ismount(tmp_path)


def test_busy_mount_still_unmounts(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("f.txt", "x")
    holder = None
    with mount(fs, tmp_path):
        holder = subprocess.Popen(["sleep", "30"], cwd=tmp_path)  # keeps the mount busy
        time.sleep(0.1)
    try:
        assert not os.path.ismount(tmp_path)
    finally:
        holder.kill()
        holder.wait()
