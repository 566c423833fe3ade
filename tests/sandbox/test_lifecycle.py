"""Teardown on every exit path: nothing left running, mounted or on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from support.polling import eventually
from workspacefs import BusyError, InMemoryFilesystem, mount
from workspacefs.sandbox import PodmanError, PodmanSandbox, cleanup_stale

from .conftest import (
    assert_left_nothing,
    closed_cleanly,
    container_names,
    mounted_paths,
    podman,
    state_dir,
)

pytestmark = pytest.mark.container

CHILD = """
import sys, time
from workspacefs.sandbox import PodmanSandbox
box = PodmanSandbox()
assert box.exec("echo hi > /workspace/x").ok
print(box.name, box.mountpoint, flush=True)
sys.stdin.readline()  # until the test has seen the container
if sys.argv[1] == "raise":
    raise RuntimeError("the agent crashed")
if sys.argv[1] == "wait":
    time.sleep(300)
if sys.argv[1] == "exec":
    box.exec("sleep 300", timeout=600)
"""


def child(mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def started(proc: subprocess.Popen[str]) -> tuple[str, str]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    name, mountpoint = line.split()
    assert name in container_names()
    assert proc.stdin is not None
    proc.stdin.write("go on\n")
    proc.stdin.flush()
    return name, os.path.dirname(mountpoint)


def agent_that_fails() -> PodmanSandbox:
    with PodmanSandbox() as box:
        box.exec("setsid sleep 300 > /dev/null 2>&1 < /dev/null &")
        assert box.name in container_names()
        raise RuntimeError(f"agent failed in {box.name} {state_dir(box)}")


def test_teardown_after_an_exception() -> None:
    with pytest.raises(RuntimeError, match="agent failed") as caught:
        agent_that_fails()
    name, state = str(caught.value).split()[-2:]
    assert_left_nothing(name, state)


@pytest.mark.parametrize("mode", ["exit", "raise"])
def test_interpreter_exit_without_close(mode: str) -> None:
    proc = child(mode)
    name, state = started(proc)
    _, errors = proc.communicate(timeout=60)
    assert proc.returncode == (0 if mode == "exit" else 1), errors
    assert_left_nothing(name, state)


@pytest.mark.parametrize("mode", ["wait", "exec"])
def test_sigterm(mode: str) -> None:
    """SIGTERM, while idle or in the middle of a command, cleans up (and does not wait)."""
    proc = child(mode)
    name, state = started(proc)
    time.sleep(0.5)
    terminated = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert time.monotonic() - terminated < 30
    assert_left_nothing(name, state)


def test_sigkill_leaves_what_cleanup_stale_removes() -> None:
    proc = child("wait")
    name, state = started(proc)
    proc.kill()
    proc.communicate(timeout=60)
    # The lifeline closed with the process: the container goes by itself.
    eventually(lambda: name not in container_names(), 30, "the container goes", interval=0.2)
    assert [p for p in mounted_paths() if p.startswith(state)]  # a dead mount stays ...
    removed = cleanup_stale()
    assert state in removed  # ... until cleaned up
    assert_left_nothing(name, state)


def test_one_sandbox_per_process() -> None:
    with PodmanSandbox() as box:
        with pytest.raises(BusyError, match="one FUSE mount per process"):
            PodmanSandbox()
        assert box.exec("true").ok
    with PodmanSandbox() as again:  # the first one's close frees the process's mount
        assert again.exec("true").ok


def test_another_mount_in_the_process_is_refused_clearly(tmp_path: Path) -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    with mount(fs, tmp_path):
        before = set(os.listdir(tempfile.gettempdir()))
        with pytest.raises(BusyError, match="one FUSE mount per process"):
            PodmanSandbox(fs)
        assert set(os.listdir(tempfile.gettempdir())) == before


def test_a_start_that_fails_leaves_nothing_and_says_why() -> None:
    before = container_names()
    with pytest.raises(PodmanError) as caught:
        PodmanSandbox(image="localhost/workspacefs-no-such-image:latest")
    message = str(caught.value)
    assert "the container did not start" in message
    assert "no local image 'localhost/workspacefs-no-such-image:latest'" in message
    assert container_names() == before
    assert not [p for p in mounted_paths() if "workspacefs-sandbox-" in p]


def test_a_container_that_died_is_reported_and_still_cleaned_up() -> None:
    # closed_cleanly: a failure here must not leave the process's one mount to the
    # tests after it.
    with closed_cleanly(PodmanSandbox()) as box:
        podman("rm", "--force", "--time=0", box.name)
        eventually(lambda: box.name not in container_names(), 30, "the container removed")
        with pytest.raises(OSError, match="container has stopped"):
            box.exec("true")
