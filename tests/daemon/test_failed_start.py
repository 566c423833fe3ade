"""A start that fails or times out leaves no daemon and no mount behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import SOURCE_ROOT, alive, cli, cli_json, stop
from workspacefs.daemon import MountRecord, running_mounts


def daemon_pids(mountpoint: Path) -> list[int]:
    """The processes running ``python -m workspacefs.daemon`` for ``mountpoint`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if b"workspacefs.daemon" in args and os.fsencode(mountpoint) in args:
            found.append(int(entry))
    return found


@pytest.fixture
def endless_source(tmp_path: Path) -> Iterator[Path]:
    """A source whose reading never ends: it holds the mount of a workspace whose
    daemon is stopped (SIGSTOP), so a new daemon's first request there waits for good."""
    source = tmp_path / "source"
    (source / "stuck").mkdir(parents=True)
    stuck = MountRecord.from_dict(cli_json("mount", str(source / "stuck")))  # type: ignore[arg-type]
    (source / "stuck" / "file.txt").write_text("never read\n")
    os.kill(stuck.pid, signal.SIGSTOP)
    try:
        yield source
    finally:
        os.kill(stuck.pid, signal.SIGCONT)
        stop(stuck)


def assert_nothing_left(target: Path) -> None:
    assert daemon_pids(target) == []
    assert not os.path.ismount(target)
    assert str(target) not in {r.mountpoint for r in running_mounts()}
    again = cli_json("mount", str(target))  # the path is free again
    assert isinstance(again, dict)
    stop(MountRecord.from_dict(again))


def test_a_start_that_times_out_stops_its_daemon(tmp_path: Path, endless_source: Path) -> None:
    target = tmp_path / "ws"
    target.mkdir()
    result = cli("mount", str(target), "--from", str(endless_source), "--timeout", "3")
    assert result.returncode == 1, (result.stdout, result.stderr)
    message = result.stderr.strip()
    assert message.startswith("workspacefs: error: the daemon did not mount in 3 s; stopped it")
    found = re.search(r"pid (\d+)", message)
    assert found is not None, message
    assert not alive(int(found[1]))  # gone by the time the command returns
    assert_nothing_left(target)


def test_ctrl_c_while_mount_waits_stops_the_daemon(tmp_path: Path, endless_source: Path) -> None:
    target = tmp_path / "ws"
    target.mkdir()
    command = [sys.executable, "-m", "workspacefs.cli", "mount", str(target)]
    starter = subprocess.Popen(
        [*command, "--from", str(endless_source)],
        env={**os.environ, "PYTHONPATH": SOURCE_ROOT},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (pids := daemon_pids(target)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids, "the daemon never started"
        starter.send_signal(signal.SIGINT)
        starter.communicate(timeout=30)
        assert starter.returncode == 130
    finally:
        if starter.poll() is None:
            starter.kill()
        starter.communicate()
    assert not any(alive(pid) for pid in pids)
    assert_nothing_left(target)


def test_mount_from_proc_fails_clearly_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    target.mkdir()
    result = cli("mount", str(target), "--from", "/proc/self", "--timeout", "20")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "did not mount" not in result.stderr  # refused, not timed out
    assert "pseudo file" in result.stderr, result.stderr
    assert_nothing_left(target)
