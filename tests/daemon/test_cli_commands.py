"""Every ``workspacefs`` command in a subprocess against real daemons: output, --json, exits."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.daemon import (
    SOURCE_ROOT,
    cli,
    cli_json,
    cli_mounted,
    cli_ok,
    demo_source,
    serve_debug,
    stop_debug,
)
from support.own_tree import escape_attempts, probe
from support.polling import eventually
from workspacefs.fuse._features import KILLPRIV_V2, OPEN_FREE, libfuse_version

COMMANDS = [
    "mount",
    "unmount",
    "list",
    "status",
    "snapshot",
    "restore",
    "diff",
    "log",
    "persist",
    "push",
    "fetch",
    "export",
    "import",
    "run",
    "doctor",
    "discard",
    "mcp",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """A workspace mounted with ``workspacefs mount`` from a small source tree."""
    source = demo_source(tmp_path)
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source, "--persist", str(tmp_path / "snapshots.git")):
        yield mountpoint


def test_status_shows_the_kernel_requests_of_the_mount(workspace: Path) -> None:
    def requests() -> dict[str, Any]:
        status = cli_json("status", str(workspace))
        assert isinstance(status, dict)
        result: dict[str, Any] = status["requests"]
        return result

    before = requests()
    os.mkdir(workspace / "new")
    assert (workspace / "src" / "app.py").read_text() == "print('hello')\n"
    after = requests()
    assert after["counts"]["mkdir"] == before["counts"].get("mkdir", 0) + 1
    assert after["total"] == sum(after["counts"].values()) > before["total"]
    assert after["seconds"].keys() == after["counts"].keys()
    assert after["handler_seconds"] >= before["handler_seconds"]
    line = next(
        line
        for line in cli_ok("status", str(workspace)).splitlines()
        if line.startswith("requests ")
    )
    shown = int(line.split()[1].replace(",", ""))
    assert shown >= after["total"]  # the status calls themselves may add some
    assert "s in handlers" in line
    # The daemon (root here) keeps idle CPUs quick to wake while its mount serves.
    assert after["latency_hint"] == os.access("/dev/cpu_dma_latency", os.W_OK)
    assert ("CPU latency hint" in line) == after["latency_hint"]


@pytest.mark.skipif(not OPEN_FREE, reason="a stock pyfuse3 never shows the connection")
def test_status_and_doctor_name_the_libfuse_and_the_capabilities(workspace: Path) -> None:
    status = cli_json("status", str(workspace))
    assert isinstance(status, dict)
    fuse = status["fuse"]
    assert fuse["libfuse"] == libfuse_version()  # the daemon's pyfuse3 is this one's
    assert "libfuse3.so" in fuse["library"]
    assert fuse["protocol"].startswith("7.")
    # Taken wherever libfuse passes the kernel's requests on (scripts/setup.sh's 3.18.3).
    assert ("HANDLE_KILLPRIV_V2" in fuse["capabilities"]) == KILLPRIV_V2
    line = next(
        line for line in cli_ok("status", str(workspace)).splitlines() if line.startswith("fuse ")
    )
    assert f"libfuse {fuse['libfuse']} ({fuse['library']}), protocol {fuse['protocol']}: " in line
    assert line.endswith(", ".join(fuse["capabilities"]))
    # doctor mounts a workspace of its own for a moment to see what the kernel agrees to.
    report = cli("doctor", "--json")
    checks = {check["name"]: check for check in json.loads(report.stdout)}
    assert checks["libfuse"] == {
        "name": "libfuse",
        "status": "ok",
        "detail": f"{fuse['libfuse']} ({fuse['library']})",
    }
    capabilities = checks["fuse capabilities"]
    assert capabilities["status"] == ("ok" if KILLPRIV_V2 else "warning")
    assert capabilities["detail"].startswith(
        f"protocol {fuse['protocol']}: {', '.join(fuse['capabilities'])}"
    )


def test_mount_without_the_latency_hint(tmp_path: Path) -> None:
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, demo_source(tmp_path), "--no-latency-hint"):
        assert (mountpoint / "README.md").read_text() == "# demo\n"
        status = cli_json("status", str(mountpoint))
        assert isinstance(status, dict)
        assert status["requests"]["latency_hint"] is False


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_an_example(command: str) -> None:
    out = cli_ok(command, "--help")
    assert "Example" in out
    assert "Usage: workspacefs " + command in " ".join(out.split())


def test_mount_status_list_unmount(workspace: Path) -> None:
    status = cli_json("status", str(workspace))
    assert isinstance(status, dict)
    assert (status["mountpoint"], status["files"], status["bytes"]) == (str(workspace), 2, 22)
    human = cli_ok("status", cwd=workspace / "src")  # found from a directory inside it
    assert f"mountpoint  {workspace}" in human
    assert "files       2" in human
    listed = cli_json("list")
    assert isinstance(listed, list)
    assert str(workspace) in [r["mountpoint"] for r in listed]
    assert str(workspace) in cli_ok("list")
    gone = cli_json("unmount", str(workspace))
    assert gone == {
        "mountpoint": str(workspace),
        "pid": status["pid"],
        "unmounted": True,
        "inner": [],  # the workspaces --recursive unmounted first
        "name": status["name"],  # kept, stopped: mounting the name resumes it
        "store": status["store"],
    }
    assert not os.path.ismount(workspace)
    after = cli("status", str(workspace))
    assert after.returncode == 3
    assert (
        after.stderr == f"workspacefs: error: no workspace is mounted here or above: {workspace}\n"
    )
    assert "No workspace is mounted." in cli_ok("list") or str(workspace) not in cli_ok("list")


def test_snapshot_diff_restore_log(workspace: Path) -> None:
    first = cli_json("snapshot", str(workspace), "--tag", "start")
    assert isinstance(first, dict)
    assert (first["tag"], first["file_count"]) == ("start", 2)
    (workspace / "new.txt").write_text("new\n")
    (workspace / "src" / "app.py").write_text("print('changed')\n")
    assert cli_ok("diff", str(workspace), "start").splitlines() == ["A\tnew.txt", "M\tsrc/app.py"]
    patch = cli_ok("diff", "start", "--patch", cwd=workspace)
    assert "-print('hello')\n+print('changed')\n" in patch
    assert "+++ b/new.txt" in patch
    changes = cli_json("diff", str(workspace), "start")
    assert changes == {
        "base": first["snapshot_id"],
        "target": None,
        "added": ["new.txt"],
        "modified": ["src/app.py"],
        "deleted": [],
        "unchanged_count": 1,
    }
    second = cli_json("snapshot", "--tag", "second", cwd=workspace)
    assert isinstance(second, dict)
    between = cli_json("diff", str(workspace), "start", "second")
    assert isinstance(between, dict)
    assert between["target"] == second["snapshot_id"]
    assert (
        cli_ok("restore", str(workspace), "start")
        == f"Restored {first['snapshot_id'][:8]} (start)\n"
    )
    assert (workspace / "src" / "app.py").read_text() == "print('hello')\n"
    assert not (workspace / "new.txt").exists()
    log = cli_json("log", str(workspace))
    assert isinstance(log, list)
    # `from`: what the workspace was loaded with, the state `workspacefs apply` hands back
    # the changes since.
    assert [(e["tag"], e["current"]) for e in log] == [
        ("from", False),
        ("start", True),
        ("second", False),
    ]
    lines = cli_ok("log", str(workspace)).splitlines()
    assert lines[0].split() == ["ID", "TAG", "PARENT", "TIME", "FILES", "BYTES"]
    assert lines[2].split()[:3] == ["*", first["snapshot_id"][:8], "start"]
    by_prefix = cli_ok("restore", second["snapshot_id"][:6], cwd=workspace)
    assert by_prefix.startswith(f"Restored {second['snapshot_id'][:8]}")


def test_errors_are_one_line_with_exit_codes(workspace: Path, tmp_path: Path) -> None:
    missing = cli("restore", str(workspace), "no-such-tag")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "workspacefs: error: no snapshot has this tag or id: no-such-tag\n"
    debug = cli("--debug", "restore", str(workspace), "no-such-tag")
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.endswith(
        "workspacefs: error: no snapshot has this tag or id: no-such-tag\n"
    )
    usage = cli("snapshot", "--no-such-option")
    assert usage.returncode == 2
    nowhere = cli("mount", str(tmp_path / "absent"))
    assert nowhere.returncode == 1
    assert nowhere.stderr.splitlines() == [
        f"workspacefs: error: mount point does not exist: {tmp_path / 'absent'}"
    ]
    bad_source = cli("mount", str(tmp_path), "--from", str(tmp_path / "nothing"))
    assert bad_source.returncode == 1
    assert "--from: no such file or directory" in bad_source.stderr
    outside = cli("snapshot", cwd=tmp_path)
    assert outside.returncode == 3
    for command in ("diff", "restore"):  # the mount point, and the snapshot forgotten
        short = cli(command, str(workspace), cwd=tmp_path)
        assert short.returncode == 2
        assert f"after the mount point {workspace}, got 0" in short.stderr


def test_persist_then_load_back_and_move(workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.md").write_text("persisted\n")
    persisted = cli_json("persist", str(workspace), "--tag", "saved")
    assert isinstance(persisted, dict)
    repository = str(tmp_path / "snapshots.git")
    assert persisted["repository"] == repository
    assert persisted["ref"].endswith("/snapshots/1")
    human = cli_ok("persist", str(workspace), "--snapshot", "saved")
    assert human.startswith(f"Persisted {persisted['snapshot']['snapshot_id'][:8]} (saved) as ")
    backup = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", str(backup)], check=True)
    pushed = cli_json("push", str(workspace), str(backup))
    assert isinstance(pushed, dict)
    assert (pushed["repository"], pushed["url"], pushed["refused"]) == (repository, str(backup), [])
    assert sorted(w["name"].split("/", 3)[3] for w in pushed["written"]) == [
        "meta/1",
        "meta/2",
        "snapshots/1",
        "snapshots/2",
        "tags/saved",
    ]
    fetched = cli_ok("fetch", str(workspace), str(backup))
    assert fetched.startswith(f"Fetched {repository} from {backup}\n")
    assert "0 refs written, 5 already there, 0 refused" in fetched
    again = tmp_path / "again"
    again.mkdir()
    cli_ok("mount", str(again), "--from", f"{backup}#saved")
    try:
        assert (again / "notes.md").read_text() == "persisted\n"
        assert (again / "src" / "app.py").read_text() == "print('hello')\n"
    finally:
        cli_ok("unmount", str(again))


def test_export_and_import(workspace: Path, tmp_path: Path) -> None:
    archive = tmp_path / "ws.zip"
    assert cli_json("export", str(workspace), str(archive)) == {"path": str(archive), "files": 2}
    (workspace / "extra.txt").write_text("x")
    assert cli_ok("import", str(archive), cwd=workspace) == f"Imported 2 files from {archive}\n"
    assert not (workspace / "extra.txt").exists()
    other = tmp_path / "other"
    other.mkdir()
    cli_ok("mount", str(other), "--from", str(archive), "--read-only")
    try:
        assert (other / "README.md").read_text() == "# demo\n"
        refused = cli("import", str(other), str(archive))
        assert refused.returncode == 1
        assert refused.stderr.startswith("workspacefs: error: read-only workspace")
    finally:
        cli_ok("unmount", str(other))


def test_foreground_mount_serves_until_sigterm(tmp_path: Path) -> None:
    mountpoint = tmp_path / "fg"
    mountpoint.mkdir()
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workspacefs.cli",
            "mount",
            str(mountpoint),
            "--foreground",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        record = json.loads(server.stdout.readline())
        assert record["pid"] == server.pid
        (mountpoint / "x.txt").write_text("fg\n")
        assert cli_ok("status", str(mountpoint), "--json")
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
        assert not os.path.ismount(mountpoint)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close() if server.stdout else None
        server.stderr.close() if server.stderr else None


def test_mcp_serves_the_tools_on_a_running_workspace(workspace: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    messages: list[dict[str, object]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "write_file",
                "arguments": {"path": "from-mcp.txt", "content": "mcp\n"},
            },
        },
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "workspacefs.cli", "mcp", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    answers = []
    try:
        for message in messages:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            if "id" in message:
                answers.append(json.loads(server.stdout.readline()))
    finally:
        server.stdin.close()
        server.wait(30)
        server.stdout.close()
        assert server.stderr is not None
        server.stderr.close()
    assert answers[1]["result"]["isError"] is False
    assert (workspace / "from-mcp.txt").read_text() == "mcp\n"


@pytest.mark.container
@pytest.mark.slow
def test_run_a_container_on_the_workspace(workspace: Path) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    result = cli(
        "run",
        "--mountpoint",
        str(workspace),
        "--",
        "/bin/sh",
        "-c",
        "cat src/app.py && echo built > out.txt && exit 3",
    )
    assert result.returncode == 3, result.stderr
    assert result.stdout == "print('hello')\n"
    assert "1 added, 0 modified, 0 deleted" in result.stderr
    assert (workspace / "out.txt").read_text() == "built\n"  # still mounted, inspectable


@pytest.mark.container
@pytest.mark.slow
def test_run_hides_the_host_and_limits_memory(workspace: Path, tmp_path: Path) -> None:
    # The sandbox's defaults hold for `workspacefs run` too: one podman run builder.
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    private = tmp_path / "private.txt"
    private.write_text("host secret\n")
    private.chmod(0o600)
    result = cli(
        "run",
        "--mountpoint",
        str(workspace),
        "--memory",
        "300m",
        "--",
        "/bin/sh",
        "-c",
        f"test -e /etc/shadow || echo no-shadow; test -e {private} || echo no-private; "
        "ls -A /root | wc -l; cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
        "2>/dev/null || cat /sys/fs/cgroup/memory.max",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["no-shadow", "no-private", "0", str(300 << 20)]


@pytest.mark.container
def test_run_reaches_no_snapshot_and_no_fork(workspace: Path) -> None:
    # `workspacefs run` binds the daemon's own mount, which serves the workspace's
    # history and every fork to its owner: the container gets neither.
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    (workspace / "secret.env").write_text("API_KEY=hunter2\n")
    cli_json("snapshot", "--tag", "old", cwd=workspace)
    (workspace / "secret.env").unlink()
    cli_ok("fork", "--name", "other", cwd=workspace)
    (workspace / ".forks" / "other" / "theirs.txt").write_text("another agent's\n")
    fork_before = sorted(os.listdir(workspace / ".forks" / "other"))
    attempts = escape_attempts("/workspace", "old", "other", "theirs.txt")
    result = cli("run", "--mountpoint", str(workspace), "--", "/bin/sh", "-c", probe(attempts))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == []
    assert sorted(os.listdir(workspace / ".forks" / "other")) == fork_before
    assert "to-fork" in os.listdir(workspace)  # the container did write, in its own tree


def _conmon_directories() -> set[str]:
    """The working directories of the running conmon processes (Podman's container monitors)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as comm:
                if comm.read().strip() == "conmon":
                    found.add(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:  # gone meanwhile
            continue
    return found


@pytest.mark.container
@pytest.mark.slow
def test_run_leaves_the_callers_directory_alone(workspace: Path, tmp_path: Path) -> None:
    # conmon writes into its working directory (an empty ``oom`` file when the
    # OOM killer ends the command): it must not be the one the user ran from.
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    caller = tmp_path / "caller"
    caller.mkdir()
    others = _conmon_directories()
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workspacefs.cli",
            "run",
            "--mountpoint",
            str(workspace),
            "--",
            "/bin/sh",
            "-c",
            "touch started && sleep 5",
        ],
        cwd=caller,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        eventually((workspace / "started").exists, 60, "the command runs")
        monitors = _conmon_directories() - others
        assert monitors, "no conmon watches the container"
        assert str(caller) not in monitors
    finally:
        assert run.wait(60) == 0
    assert list(caller.iterdir()) == []


def test_debug_serves_a_running_workspace_and_an_archive(workspace: Path, tmp_path: Path) -> None:

    assert cli("snapshot", str(workspace), "--tag", "first").returncode == 0
    server = serve_debug(str(workspace))
    try:
        snapshots = server.get("/api/snapshots", timeout=30).json()
        tree = server.get("/api/filesystem/tree", timeout=30)
    finally:
        stop_debug(server)
    assert "first" in json.dumps(snapshots)
    assert "src/app.py" in tree.text
    archive = tmp_path / "ws.fs.zip"
    assert cli("export", str(workspace), str(archive)).returncode == 0
    server = serve_debug(str(archive))
    try:
        file = server.get("/api/filesystem/file", params={"path": "README.md"}, timeout=30)
        escape = server.get("/api/filesystem/file", params={"path": "../x"}, timeout=30)
    finally:
        stop_debug(server)
    assert "# demo" in file.text
    assert escape.status_code in (400, 403, 404)
    assert "error" in escape.json()


def test_debug_refuses_a_missing_target_in_one_line(tmp_path: Path) -> None:
    result = cli("debug", str(tmp_path / "nothing-here"))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1
