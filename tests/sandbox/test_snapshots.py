"""Snapshots while the container runs: the workspace's (O(1)) and the container's own files."""

from __future__ import annotations

import os

import pytest

from workspacefs import InMemoryFilesystem, InvalidArgumentError, NotPermittedError
from workspacefs.sandbox import PodmanSandbox

from .conftest import assert_left_nothing, podman, state_dir

pytestmark = pytest.mark.container

INSTALL = (
    "mkdir -p /opt/tool /usr/local/share/wsfs && echo 'v1' > /opt/tool/VERSION && "
    "echo pkg > /usr/local/share/wsfs/data && echo built > /workspace/out.txt"
)


def test_workspace_snapshot_leaves_the_container_alone(sandbox: PodmanSandbox) -> None:
    sandbox.exec("echo one > a.txt && echo outside > /tmp/outside")
    snap = sandbox.snapshot(tag="one")
    assert (snap.strategy, snap.container_state, snap.tag) == ("workspace", None, "one")
    sandbox.exec("echo two > a.txt && rm /tmp/outside")
    sandbox.restore(snap)
    assert sandbox.exec("cat a.txt").stdout == "one\n"
    assert not sandbox.exec("test -e /tmp/outside").ok  # only the workspace went back


def test_container_commit_round_trip(sandbox: PodmanSandbox) -> None:
    assert sandbox.exec(INSTALL).ok
    snap = sandbox.snapshot(tag="installed", strategy="container_commit")
    assert snap.strategy == "container_commit"
    assert snap.container_state is not None
    removed = sandbox.exec(
        "rm -r /opt/tool /usr/local/share/wsfs /workspace/out.txt && echo later > /etc/later"
    )
    assert removed.ok
    assert removed.changes.deleted == ("out.txt",)
    sandbox.restore(snap)
    back = sandbox.exec(
        "cat /opt/tool/VERSION /usr/local/share/wsfs/data /workspace/out.txt; "
        "test -e /etc/later && echo later-still-there"
    )
    assert back.stdout == "v1\npkg\nbuilt\n"
    assert not os.path.exists("/opt/tool/VERSION")  # the host never saw any of it
    # The commit stays: restoring it twice gives the same state.
    sandbox.exec("rm /opt/tool/VERSION")
    sandbox.restore(snap)
    assert sandbox.exec("cat /opt/tool/VERSION").stdout == "v1\n"


def test_a_commit_restores_only_in_its_sandbox() -> None:
    with PodmanSandbox() as first:
        snap = first.snapshot(strategy="container_commit")
    fs = InMemoryFilesystem(mount_point="/workspace")
    with (
        PodmanSandbox(fs) as second,
        pytest.raises(InvalidArgumentError, match="only in its sandbox"),
    ):
        second.restore(snap)


def test_image_by_name_and_its_commits(tiny_image: str) -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("/workspace/in.txt", "from the API\n")
    box = PodmanSandbox(fs, image=tiny_image)
    name, state = box.name, state_dir(box)
    try:
        assert box.root_description == f"image {tiny_image}"
        result = box.exec("cat in.txt; ls /; mkdir -p /opt/pkg && echo 1 > /opt/pkg/v")
        assert result.stdout.startswith("from the API\n")
        assert "usr" not in result.stdout.split()  # the image's root, not the host's
        snap = box.snapshot(strategy="container_commit", tag="with-pkg")
        committed = snap.container_state
        assert committed is not None
        assert podman("image", "exists", committed).returncode == 0
        box.exec("rm -r /opt/pkg; echo x > /workspace/in.txt")
        box.restore(snap)
        assert box.exec("cat /opt/pkg/v in.txt").stdout == "1\nfrom the API\n"
    finally:
        box.close()
    assert_left_nothing(name, state)
    assert podman("image", "exists", committed).returncode != 0  # commits go with the sandbox


def test_podman_managed_overlay() -> None:
    """``rootfs="/:O"``, what users other than root get: Podman's overlay, no commits."""
    with PodmanSandbox(rootfs="/:O") as box:
        assert box.root_description == "Podman's overlay of /"
        result = box.exec(
            "echo hi > /opt/hi && cat /opt/hi && find /root /home -mindepth 1 | wc -l"
        )
        assert result.stdout == "hi\n0\n"  # the host's home directories are hidden too
        assert not os.path.exists("/opt/hi")
        with pytest.raises(NotPermittedError, match="container_commit"):
            box.snapshot(strategy="container_commit", tag="refused")
        assert "refused" not in [s.tag for s in box.filesystem.snapshots()]  # nothing taken
