"""A new workspace is on disk once ``workspacefs mount`` returns: SIGKILLed or
unmounted before anything changed, it resumes as it started (not empty)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from support.daemon import cli, demo_source, scratch_dir
from workspacefs.daemon import RuntimePaths, canonical_mountpoint

from .harness import Workspace, read_files


@pytest.mark.parametrize("policy", ["interval", "always"])
def test_a_workspace_killed_before_any_change_resumes_as_it_started(
    tmp_path: Path, policy: str
) -> None:
    source = demo_source(tmp_path)
    expected = read_files(source)
    with scratch_dir() as scratch:
        name = f"new-{uuid.uuid4().hex[:8]}"
        workspace = Workspace(scratch / "ws", name, "--from", str(source), "--durability", policy)
        workspace.mount()
        workspace.kill()
        workspace.detach()
        resumed = Workspace(scratch / "ws", name, "--durability", policy)
        resumed.mount()
        try:
            assert read_files(resumed.mountpoint) == expected
        finally:
            resumed.stop()


def test_a_workspace_unmounted_before_any_change_resumes_as_it_started(tmp_path: Path) -> None:
    source = demo_source(tmp_path)
    name = f"new-{uuid.uuid4().hex[:8]}"
    workspace = Workspace(tmp_path / "ws", name, "--from", str(source))
    workspace.mount()
    workspace.stop()
    resumed = Workspace(tmp_path / "ws", name)
    resumed.mount()
    try:
        assert read_files(resumed.mountpoint) == read_files(source)
    finally:
        resumed.stop()


def test_a_new_workspace_whose_start_failed_can_be_started_again(tmp_path: Path) -> None:
    # The start fails after the store was opened (its socket cannot be made): the store
    # must be left as it was found, holding no workspace, so the same command works
    # once the cause is gone.
    source = demo_source(tmp_path)
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    blocker = RuntimePaths.of(canonical_mountpoint(str(mountpoint))).socket
    blocker.mkdir()
    name = f"new-{uuid.uuid4().hex[:8]}"
    failed = cli("mount", str(mountpoint), "--name", name, "--from", str(source))
    assert failed.returncode != 0
    assert "Is a directory" in failed.stderr
    blocker.rmdir()
    workspace = Workspace(mountpoint, name, "--from", str(source))
    workspace.mount()
    try:
        assert read_files(mountpoint) == read_files(source)
    finally:
        workspace.stop()
