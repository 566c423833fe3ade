"""A workspace mounted inside another: stopping the outer one never takes the inner one.

A lazy unmount (what a daemon does on its way out, and ``fusermount3 -uz``)
detaches the whole subtree under the mount point; the inner workspace's FUSE
connection then ends and its daemon exits with everything it held.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import alive, cli, cli_json, demo_source, scratch_dir, stop
from support.interpreter import child_env
from support.polling import eventually
from workspacefs import MountedInsideError
from workspacefs.daemon import MountRecord, connect, running_mounts
from workspacefs.fuse import is_stale, recover

EXIT_MOUNTED_INSIDE = 5


@pytest.fixture
def scratch() -> Iterator[Path]:
    with scratch_dir() as base:  # the tests leave mounts stale on purpose
        yield base


@pytest.fixture
def nested(scratch: Path) -> Iterator[tuple[MountRecord, MountRecord]]:
    """``outer`` (the demo source) mounted with the CLI, and ``outer/inner`` mounted
    inside it, holding ``data.txt`` ("kept")."""
    source = demo_source(scratch)
    outer = scratch / "outer"
    outer.mkdir()
    outer_record = MountRecord.from_dict(cli_json("mount", str(outer), "--from", str(source)))  # type: ignore[arg-type]
    records = [outer_record]
    try:
        (outer / "inner").mkdir()
        inner_record = MountRecord.from_dict(cli_json("mount", str(outer / "inner")))  # type: ignore[arg-type]
        records.append(inner_record)
        (outer / "inner" / "data.txt").write_text("kept\n")
        yield outer_record, inner_record
    finally:
        for record in reversed(records):  # innermost first
            if alive(record.pid):
                stop(record)
            else:
                recover(record.mountpoint)  # killed by the test: its mount is stale


def assert_both_serve(outer: MountRecord, inner: MountRecord) -> None:
    assert Path(inner.mountpoint, "data.txt").read_text() == "kept\n"
    assert Path(outer.mountpoint, "README.md").read_text() == "# demo\n"
    assert alive(outer.pid)
    assert alive(inner.pid)
    with connect(inner.mountpoint) as fs:
        assert fs.read("data.txt").content == "kept\n"
    assert {r.mountpoint for r in running_mounts()} >= {outer.mountpoint, inner.mountpoint}


def test_unmount_refuses_while_a_workspace_is_mounted_inside(
    nested: tuple[MountRecord, MountRecord],
) -> None:
    outer, inner = nested
    refused = cli("unmount", outer.mountpoint)
    assert refused.returncode == EXIT_MOUNTED_INSIDE, (refused.stdout, refused.stderr)
    assert refused.stderr.strip().splitlines() == [
        f"workspacefs: error: not unmounted: {inner.mountpoint} is mounted inside; unmount "
        f"that first; --recursive unmounts the workspaces among them first: {outer.mountpoint}"
    ]
    assert_both_serve(outer, inner)
    with connect(outer.mountpoint) as fs, pytest.raises(MountedInsideError) as api:
        fs.unmount()  # the daemon's own API refuses too
    assert api.value.errno == errno.EBUSY
    assert inner.mountpoint in str(api.value)
    assert_both_serve(outer, inner)


def test_unmount_recursive_unmounts_the_inner_workspace_first(
    nested: tuple[MountRecord, MountRecord],
) -> None:
    outer, inner = nested
    done = cli("unmount", "--recursive", outer.mountpoint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"Unmounted {inner.mountpoint}",
        f"Unmounted {outer.mountpoint}",
        f"Kept {outer.name}: workspacefs mount DIR --name {outer.name} resumes it",
    ]
    eventually(lambda: not alive(outer.pid) and not alive(inner.pid), 10, "both daemons exit")
    assert not os.path.ismount(outer.mountpoint)
    assert not running_mounts()


def test_recursive_refuses_a_mount_inside_that_is_no_workspace(
    nested: tuple[MountRecord, MountRecord],
) -> None:
    outer, inner = nested
    os.kill(inner.pid, signal.SIGKILL)  # the inner mount is stale now: no daemon to ask
    eventually(lambda: is_stale(inner.mountpoint), 10, "the inner mount is stale")
    refused = cli("unmount", "--recursive", outer.mountpoint)
    assert refused.returncode == EXIT_MOUNTED_INSIDE, refused.stderr
    assert f"{inner.mountpoint} mounted inside is no running workspace" in refused.stderr
    assert "doctor --fix" in refused.stderr
    assert alive(outer.pid)
    assert Path(outer.mountpoint, "README.md").read_text() == "# demo\n"


def test_sigterm_does_not_take_the_inner_workspace_along(
    nested: tuple[MountRecord, MountRecord],
) -> None:
    outer, inner = nested
    os.kill(outer.pid, signal.SIGTERM)
    log = Path(outer.log)
    eventually(lambda: f"{inner.mountpoint} is mounted inside" in log.read_text(), 10, "refusal")
    assert_both_serve(outer, inner)
    assert cli("unmount", inner.mountpoint).returncode == 0
    os.kill(outer.pid, signal.SIGTERM)  # nothing inside now: it goes
    eventually(lambda: not alive(outer.pid), 10, "the outer daemon exits")
    assert not os.path.ismount(outer.mountpoint)


def test_doctor_fix_leaves_a_stale_mount_holding_a_live_workspace(
    nested: tuple[MountRecord, MountRecord],
) -> None:
    outer, inner = nested
    os.kill(outer.pid, signal.SIGKILL)
    eventually(lambda: is_stale(outer.mountpoint), 10, "the outer mount is stale")
    fixed = cli("doctor", "--fix", "--json")
    assert fixed.returncode == 4, fixed.stdout
    import json

    problems = [c for c in json.loads(fixed.stdout) if c["status"] == "problem"]
    assert any(
        c["name"] == "stale mount"
        and outer.mountpoint in c["detail"]
        and inner.mountpoint in c["detail"]
        for c in problems
    ), problems
    assert alive(inner.pid)
    with connect(inner.socket) as fs:
        assert fs.read("data.txt").content == "kept\n"
    assert (Path(inner.mountpoint) / "data.txt").read_text() == "kept\n"
    # Once the inner workspace is unmounted, the stale outer one is fixed.
    assert cli("unmount", inner.mountpoint).returncode == 0
    eventually(lambda: not alive(inner.pid), 10, "the inner daemon exits")
    again = cli("doctor", "--fix")
    assert again.returncode == 0, again.stdout
    assert not is_stale(outer.mountpoint)


EMBEDDED = """
import sys
import workspacefs
from workspacefs.fuse import mount

fs = workspacefs.InMemoryFilesystem()
fs.mkdir("inner")
with mount(fs, sys.argv[1]):
    print("mounted", flush=True)
    sys.stdin.readline()
print("left", flush=True)
"""


@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "through-link"])
def test_an_embedded_mount_left_with_a_workspace_inside_stays_stale(
    scratch: Path, through_link: bool
) -> None:
    """A process leaving its mount block cannot be refused: its mount is left stale
    (ENOTCONN), not detached, so the workspace inside keeps serving -- also when the
    mount point was named through a symlinked parent, which the mount table shows
    resolved."""
    (scratch / "real").mkdir()
    (scratch / "link").symlink_to("real")
    outer = scratch / ("link" if through_link else "real") / "outer"
    outer.mkdir()
    owner = subprocess.Popen(
        [sys.executable, "-c", EMBEDDED, str(outer)],
        env=child_env(),
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    inner: MountRecord | None = None
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == "mounted"
        inner = MountRecord.from_dict(cli_json("mount", str(outer / "inner")))  # type: ignore[arg-type]
        Path(inner.mountpoint, "data.txt").write_text("kept\n")
        out, err = owner.communicate("\n", timeout=60)
        assert owner.returncode == 0, err
        assert out.strip().splitlines()[-1] == "left"
        assert f"{inner.mountpoint}" in err  # the error logged says why it is left stale
        assert alive(inner.pid)
        with connect(inner.socket) as fs:
            assert fs.read("data.txt").content == "kept\n"
        assert Path(inner.mountpoint, "data.txt").read_text() == "kept\n"
        assert is_stale(str(outer))
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.communicate()
        if inner is not None and alive(inner.pid):
            stop(inner)
        recover(str(outer))
    assert not os.path.ismount(outer)
