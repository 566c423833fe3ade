"""Daemon lifecycles: two at once, busy mount points, SIGKILL and recovery, socket access."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from support.daemon import Daemons, alive, cli
from support.polling import eventually
from workspacefs import BusyError, NotPermittedError
from workspacefs.daemon import RuntimePaths, connect, running_mounts
from workspacefs.fuse import is_stale

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
"""An interpreter any user may run (this one may sit in root's home); it needs only the stdlib."""


def wait_dead(pid: int) -> None:
    eventually(lambda: not alive(pid), 10, f"pid {pid} exits")


def test_two_daemons_each_with_its_own_socket(daemons: Daemons) -> None:
    one, two = daemons.start("one"), daemons.start("two")
    assert one.socket != two.socket
    assert one.pid != two.pid
    assert {r.mountpoint for r in running_mounts()} >= {one.mountpoint, two.mountpoint}
    with connect(one.mountpoint) as first, connect(two.mountpoint) as second:
        first.write("which.txt", "one")
        second.write("which.txt", "two")
    assert Path(one.mountpoint, "which.txt").read_text() == "one"
    assert Path(two.mountpoint, "which.txt").read_text() == "two"
    for record in (one, two):
        mode = os.stat(record.socket).st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600
        assert stat.S_IMODE(os.stat(Path(record.socket).parent).st_mode) == 0o700


def test_second_mount_on_a_busy_mountpoint_fails_clearly(daemons: Daemons) -> None:
    record = daemons.start()
    with pytest.raises(BusyError) as busy:
        daemons.start()
    assert busy.value.errno == errno.EBUSY
    assert f"daemon pid {record.pid}" in str(busy.value)
    result = cli("mount", record.mountpoint)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"workspacefs: error: a workspace is already mounted here (daemon pid {record.pid}): "
        f"{record.mountpoint}"
    ]
    with connect(record.mountpoint) as fs:  # the first one still serves
        assert fs.exists(".")


def test_a_path_mounted_by_something_else_is_refused(daemons: Daemons, tmp_path: Path) -> None:
    outer = daemons.start("outer")
    Path(outer.mountpoint, "inner").mkdir()
    inner = daemons.start("outer/inner")  # a workspace inside a workspace is fine...
    with pytest.raises(BusyError):  # ...but not on top of one that is mounted
        daemons.start("outer/inner")
    assert inner.mountpoint != outer.mountpoint


def test_doctor_reports_a_daemon_that_does_not_answer_and_goes_on(daemons: Daemons) -> None:
    record = daemons.start()
    os.kill(record.pid, signal.SIGSTOP)  # alive, its mount unanswered
    try:
        report = cli("doctor", "--json", timeout=60)
    finally:
        os.kill(record.pid, signal.SIGCONT)
    assert report.returncode == 4, report.stderr
    checks = _json(report.stdout)
    stuck = [c["detail"] for c in checks if c["name"] == "mount not answering"]
    assert any(record.mountpoint in detail for detail in stuck)
    assert {"libfuse", "runtime dir"} <= {c["name"] for c in checks}  # the rest still said
    assert Path(record.mountpoint).is_dir()  # and the daemon serves on once continued


def test_sigkill_leaves_a_mount_doctor_reports_and_fixes(daemons: Daemons) -> None:
    record = daemons.start()
    Path(record.mountpoint, "file.txt").write_text("x")
    os.kill(record.pid, signal.SIGKILL)
    wait_dead(record.pid)
    # The kernel aborts the connection as the process goes.
    eventually(lambda: is_stale(record.mountpoint), 5, "the mount is stale")
    report = cli("doctor", "--json")
    assert report.returncode == 4, report.stderr
    problems = [(c["name"], c["detail"]) for c in _json(report.stdout) if c["status"] == "problem"]
    # (Other workspaces of this machine may have problems of their own.)
    assert any(n == "stale mount" and record.mountpoint in d for n, d in problems)
    assert any(n == "dead daemon" and record.mountpoint in d for n, d in problems)
    human = cli("doctor")
    assert human.returncode == 4
    assert any(line.startswith("problem  stale mount") for line in human.stdout.splitlines())
    fixed = cli("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout
    assert "fixed    dead daemon" in fixed.stdout
    assert not is_stale(record.mountpoint)
    assert not os.path.exists(record.socket)
    after = cli("doctor", "--json")
    statuses = {c["name"]: c["status"] for c in _json(after.stdout)}
    assert "stale mount" not in statuses
    assert "dead daemon" not in statuses
    again = daemons.start()  # the same path mounts again
    assert again.mountpoint == record.mountpoint
    with connect(again.mountpoint) as fs:
        assert not fs.exists("file.txt")


def _json(text: str) -> list[dict[str, str]]:
    import json

    value = json.loads(text)
    assert isinstance(value, list)
    return value


def _connect_as_nobody(socket_path: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({socket_path!r})\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
        "    sys.exit(0)\n"
        "print('connected')\n"
    )
    return subprocess.run(
        [SYSTEM_PYTHON, "-c", code],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another user")
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="no /usr/bin/python3")
def test_another_user_cannot_connect(daemons: Daemons) -> None:
    record = daemons.start()
    directory = Path(record.socket).parent
    base = directory.parent  # the test's XDG_RUNTIME_DIR (0700 too): let others through it
    os.chmod(base, 0o711)
    try:
        refused = _connect_as_nobody(record.socket)
        assert refused.returncode == 0, refused.stderr
        assert refused.stdout.strip() == str(errno.EACCES)  # the 0700 directory stops it
        os.chmod(directory, 0o711)  # through the directory: the 0600 socket stops it too
        assert _connect_as_nobody(record.socket).stdout.strip() == str(errno.EACCES)
        os.chmod(record.socket, 0o666)  # the test can fail: opened up, nobody gets in
        assert _connect_as_nobody(record.socket).stdout.strip() == "connected"
    finally:
        os.chmod(record.socket, 0o600)
        os.chmod(directory, 0o700)
        os.chmod(base, 0o700)


def test_a_client_without_access_gets_a_clear_error(daemons: Daemons, tmp_path: Path) -> None:
    record = daemons.start()
    os.chmod(record.socket, 0o000)
    try:
        if os.geteuid() == 0:
            pytest.skip("root connects whatever the mode")
        with pytest.raises(NotPermittedError):
            connect(record.socket)
    finally:
        os.chmod(record.socket, 0o600)


def test_runtime_files_go_with_the_daemon(daemons: Daemons) -> None:
    record = daemons.start()
    paths = RuntimePaths.of(record.mountpoint)
    assert paths.record.exists()
    assert paths.socket.exists()
    with connect(record.mountpoint) as fs:
        fs.unmount()
    assert not paths.record.exists()
    assert not paths.socket.exists()
    assert not os.path.ismount(record.mountpoint)
    wait_dead(record.pid)


@pytest.mark.logs_errors(  # the daemon reports the mount it lost, then stops (not a crash)
    "the FUSE loop serving .* died", "the FUSE loop stopped; shutting down"
)
def test_external_unmount_stops_the_daemon(daemons: Daemons) -> None:
    record = daemons.start()
    subprocess.run(["fusermount3", "-u", record.mountpoint], check=True)
    wait_dead(record.pid)
    assert not os.path.exists(record.socket)
