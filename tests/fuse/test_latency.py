"""The CPU latency hint: held while requests flow, withdrawn when the mount idles or goes."""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem, mount
from workspacefs.fuse._latency import DEVICE, LatencyHint

DEFAULT = 2_000_000_000  # the kernel's CPU latency target without requests

pytestmark = pytest.mark.skipif(
    not os.access(DEVICE, os.R_OK | os.W_OK), reason=f"{DEVICE} is root's"
)


def target() -> int:
    """The CPU latency the kernel currently honours (every request's minimum)."""
    fd = os.open(DEVICE, os.O_RDONLY)
    try:
        return int(struct.unpack("i", os.read(fd, 4))[0])
    finally:
        os.close(fd)


def wait_for(value: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if target() == value:
            return True
        time.sleep(0.001)
    return False


class Requests:
    """A thread sending the mount requests (getxattr of a missing name) until stopped."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):  # ENODATA, after a round trip
                os.getxattr(self._path, "user.absent")
            self.sent += 1

    def __enter__(self) -> Requests:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[InMemoryFilesystem, Path]:
    fs = InMemoryFilesystem()
    fs.write("f.txt", "x\n")
    return fs, tmp_path


def test_held_while_requests_flow_and_dropped_when_they_stop(
    workspace: tuple[InMemoryFilesystem, Path],
) -> None:
    fs, root = workspace
    assert target() == DEFAULT, "another process holds a CPU latency request"
    with mount(fs, root) as handle:
        assert handle.latency_hint
        with Requests(root / "f.txt") as requests:
            assert wait_for(0), "no hint while requests flow"
        assert requests.sent > 0
        assert wait_for(DEFAULT), "the hint outlived the requests"
        with Requests(root / "f.txt"):
            assert wait_for(0), "not held again"
    assert target() == DEFAULT  # withdrawn with the mount, even mid-flow


def test_off_when_asked(workspace: tuple[InMemoryFilesystem, Path]) -> None:
    fs, root = workspace
    with mount(fs, root, latency_hint=False) as handle, Requests(root / "f.txt") as requests:
        assert not handle.latency_hint
        while requests.sent < 2_000:
            assert target() == DEFAULT
            time.sleep(0.001)


def test_a_device_that_cannot_be_opened_is_no_hint(tmp_path: Path) -> None:
    hint = LatencyHint(str(tmp_path / "absent"))
    assert not hint.available
    hint.hold(True)
    assert not hint.held
    hint.close()


def test_a_refused_request_withdraws_the_hint() -> None:
    hint = LatencyHint("/dev/full")  # every write fails (ENOSPC)
    assert hint.available
    hint.hold(True)
    assert not hint.available
    assert not hint.held


def _switches(native_id: int) -> int:
    """How many times the thread ``native_id`` of this process has given up its CPU."""
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


def test_an_idle_mount_does_not_wake(workspace: tuple[InMemoryFilesystem, Path]) -> None:
    # The hint's loop looked for requests every 5 ms, idle or not: 200 wake-ups a
    # second, each taking the GIL from what else the process ran.
    fs, root = workspace
    with mount(fs, root) as handle:
        assert handle.latency_hint
        (root / "f.txt").read_text()
        assert wait_for(DEFAULT), "the hint outlived the requests"
        (loop,) = [t for t in threading.enumerate() if t.name.startswith("fuse:")]
        assert loop.native_id is not None
        before = _switches(loop.native_id)
        time.sleep(0.5)
        assert _switches(loop.native_id) - before < 10  # it was about 100
        with Requests(root / "f.txt"):
            assert wait_for(0), "not held when requests came again"
        assert wait_for(DEFAULT), "the hint outlived the requests"
