"""After ``kill -9`` of a daemon, status and list name the dead daemon and its stale mount."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from support.daemon import cli, cli_json, cli_ok, demo_source, scratch_dir
from workspacefs.daemon import MountRecord
from workspacefs.fuse import is_stale

EXIT_NO_WORKSPACE = 3


def test_status_and_list_name_a_dead_daemon_and_its_stale_mount() -> None:
    with scratch_dir() as scratch:  # the mount is left stale on purpose
        _dead_daemon_reported(scratch)


def _dead_daemon_reported(scratch: Path) -> None:
    mountpoint = scratch / "ws"
    mountpoint.mkdir()
    record = MountRecord.from_dict(
        cli_json("mount", str(mountpoint), "--from", str(demo_source(scratch)))  # type: ignore[arg-type]
    )
    os.kill(record.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not is_stale(record.mountpoint) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        for where in (str(mountpoint), str(mountpoint / "src")):  # the mount point or inside
            status = cli("status", where)
            assert status.returncode == EXIT_NO_WORKSPACE, status.stderr
            assert status.stderr.strip() == (
                f"workspacefs: error: no daemon serves this workspace: its daemon (pid "
                f"{record.pid}) is dead; workspacefs doctor --fix detaches its stale mount and "
                f"removes its files: {record.mountpoint}"
            )
        # Taken as the mount point though a command could read it as something else.
        for command in (["diff", str(mountpoint), "start"], ["snapshot", str(mountpoint)]):
            other = cli(*command)
            assert other.returncode == EXIT_NO_WORKSPACE, other.stderr
            assert f"its daemon (pid {record.pid}) is dead" in other.stderr
        human = cli_ok("list")
        line = next(line for line in human.splitlines() if record.mountpoint in line)
        assert str(record.pid) in line
        assert "dead, mount stale" in line
        assert "workspacefs doctor --fix" in human
        listed = json.loads(cli_ok("list", "--json"))
        entry = next(e for e in listed if e["mountpoint"] == record.mountpoint)
        assert (entry["pid"], entry["alive"], entry["stale"]) == (record.pid, False, True)
    finally:
        assert cli("doctor", "--fix").returncode == 0
    assert not is_stale(record.mountpoint)
    after = cli("status", str(mountpoint))
    assert after.returncode == EXIT_NO_WORKSPACE
    assert "no workspace is mounted here or above" in after.stderr
    assert record.mountpoint not in cli_ok("list")
