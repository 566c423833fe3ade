"""Resource limits hold against commands that try to exhaust them, and the workspace survives."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.sandbox import PodmanSandbox

from .conftest import closed_cleanly

pytestmark = pytest.mark.container

MIB = 1 << 20


@pytest.fixture(scope="module")
def caller_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The working directory of the process that starts the sandbox (module-wide)."""
    path = tmp_path_factory.mktemp("caller")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(path)
        yield path


@pytest.fixture(scope="module")
def tight(caller_dir: Path) -> Iterator[PodmanSandbox]:
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("/workspace/keep.txt", "precious\n")
    box = PodmanSandbox(
        fs, memory="256m", disk="64m", workspace_size="64m", pids_limit=64, cpus=1.0
    )
    with closed_cleanly(box):
        yield box


def survives(box: PodmanSandbox) -> None:
    assert box.filesystem.read("keep.txt").content == "precious\n"
    assert box.exec("cat keep.txt").stdout == "precious\n"


def test_memory_limit_kills_the_hog_not_the_sandbox(tight: PodmanSandbox, caller_dir: Path) -> None:
    hog = tight.exec("python3 -c 'b = bytearray(600 << 20); print(len(b))'", timeout=60)
    assert hog.exit_code == 137, hog  # the kernel's OOM killer, inside the container's cgroup
    assert hog.stdout == ""
    survives(tight)
    # Podman's conmon marks an OOM kill with a file in its working directory:
    # the sandbox's own, never the caller's.
    assert list(caller_dir.iterdir()) == []


def test_disk_outside_the_workspace_is_bounded(tight: PodmanSandbox) -> None:
    fill = tight.exec("dd if=/dev/zero of=/tmp/fill bs=1M count=200", timeout=60)
    assert fill.exit_code != 0
    assert "No space left on device" in fill.stderr
    assert not fill.changes.changed
    size = int(tight.exec("stat -c %s /tmp/fill").stdout)
    assert size <= 64 * MIB
    assert tight.exec("rm /tmp/fill && echo x > /tmp/small && cat /tmp/small").stdout == "x\n"
    survives(tight)


def test_the_workspace_is_bounded(tight: PodmanSandbox) -> None:
    fill = tight.exec("dd if=/dev/zero of=fill.bin bs=1M count=200", timeout=60)
    assert fill.exit_code != 0
    assert "No space left on device" in fill.stderr
    assert fill.changes.added == ("fill.bin",)
    assert tight.filesystem.stat("fill.bin").size_bytes <= 64 * MIB
    grow = tight.exec("truncate -s 1G sparse.bin")  # holes hold no memory, as on tmpfs
    assert grow.exit_code == 0
    assert tight.exec("dd if=/dev/zero of=sparse.bin bs=1M count=100 conv=notrunc").exit_code != 0
    tight.filesystem.delete("sparse.bin")
    tight.filesystem.delete("fill.bin")  # the API frees the room
    assert tight.exec("head -c 1000000 /dev/zero > fill.bin && stat -c %s fill.bin").stdout == (
        "1000000\n"
    )
    tight.filesystem.delete("fill.bin")
    survives(tight)


FORK_BOMB = """
import errno, os, time
forked = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError as exc:
    print("refused", errno.errorcode[exc.errno])
print(forked)
"""


def test_process_limit_holds(tight: PodmanSandbox) -> None:
    bomb = tight.exec(f"python3 -c '{FORK_BOMB}'", timeout=30)
    assert bomb.stdout.split()[:2] == ["refused", "EAGAIN"], bomb
    assert int(bomb.stdout.split()[-1]) < 64
    assert not bomb.timed_out  # and the forked ones went with the command's group
    assert tight.exec("ls /proc | grep -c '^[0-9]'").stdout.strip() in {str(n) for n in range(9)}
    survives(tight)


FILLER = """
import os, time
end = time.time() + 4
while time.time() < end:
    try:
        if os.fork() == 0:
            time.sleep(max(0, end - time.time()))
            os._exit(0)
    except OSError:
        time.sleep(0.005)
"""
"""Takes every process the limit allows, and each one freed, for 4 seconds."""


def test_a_command_with_no_room_to_start_fails_and_the_sandbox_survives(
    tight: PodmanSandbox,
) -> None:
    """A daemon holds every process the limit allows: a command cannot start, says so,
    and the container's runner (which forks to start it) lives on."""
    tight.exec(f"setsid python3 -c '{FILLER}' >/dev/null 2>&1 < /dev/null & sleep 1")
    time.sleep(0.2)  # what the command's own processes held is taken too
    refused = tight.exec("echo never")
    assert refused.exit_code == 126, refused
    assert refused.stdout == ""
    assert "process limit" in refused.stderr
    time.sleep(3)  # the daemon and its children end
    survives(tight)
