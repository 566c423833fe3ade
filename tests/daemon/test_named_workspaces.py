"""Named workspaces outlive their daemon: ``mount --name`` keeps the workspace in its
store; after ``unmount`` or ``kill -9``, mounting the name again (anywhere) resumes
it, snapshots included; ``list --all`` shows the stopped ones, ``discard`` deletes
one, ``doctor`` says how to resume a crashed one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.daemon import cli, cli_json, cli_ok, demo_source, scratch_dir, stop
from workspacefs import connect
from workspacefs.daemon import MountRecord, RuntimePaths, canonical_mountpoint
from workspacefs.fuse import is_stale
from workspacefs.store import store_of

EXIT_FAILED = 1


def _mount(mountpoint: Path, *options: str) -> MountRecord:
    mountpoint.mkdir(exist_ok=True)
    return MountRecord.from_dict(cli_json("mount", str(mountpoint), *options))  # type: ignore[arg-type]


def _killed(record: MountRecord) -> None:
    """SIGKILL the daemon and detach its mount, as ``doctor --fix`` would."""
    os.kill(record.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not is_stale(record.mountpoint) and time.monotonic() < deadline:
        time.sleep(0.02)
    subprocess.run(["fusermount3", "-uz", record.mountpoint], capture_output=True, check=False)


def test_unmount_keeps_a_named_workspace_and_mount_resumes_it_elsewhere(tmp_path: Path) -> None:
    record = _mount(tmp_path / "one", "--name", "kept", "--from", str(demo_source(tmp_path)))
    assert (record.name, record.durability) == ("kept", "interval")
    assert record.store == str(store_of("kept"))
    (tmp_path / "one" / "notes.txt").write_text("through the mount\n")
    with connect(tmp_path / "one") as fs:
        fs.write("api.txt", "through the API\n")
        first = fs.snapshot(tag="first")
        fs.write("api.txt", "after the snapshot\n")
    out = cli_ok("unmount", str(tmp_path / "one"))
    assert "Kept kept: workspacefs mount DIR --name kept resumes it" in out
    stopped = json.loads(cli_ok("list", "--all", "--json"))
    entry = next(e for e in stopped if e.get("name") == "kept")
    assert entry["alive"] is False
    assert entry["journal_bytes"] > 0
    assert entry["files"] == 4  # the source's two, one through the mount, one through the API
    assert entry["disk_bytes"] >= entry["journal_bytes"]
    assert "kept" in cli_ok("list", "--all")

    again = _mount(tmp_path / "two", "--name", "kept")
    try:
        assert again.workspace_id == record.workspace_id
        assert (tmp_path / "two" / "notes.txt").read_text() == "through the mount\n"
        assert (tmp_path / "two" / "src" / "app.py").read_text() == "print('hello')\n"
        with connect(tmp_path / "two") as fs:
            assert fs.read("api.txt").content == "after the snapshot\n"
            tags = {s.tag: s for s in fs.snapshots()}
            assert tags["first"].snapshot_id == first.snapshot_id
            fs.restore(tags["first"])
            assert fs.read("api.txt").content == "through the API\n"
            status = fs.status()
        assert status["name"] == "kept"
        assert status["durability"] == "interval"
        assert status["journal"]["resumed_records"] > 0
        human = cli_ok("status", str(tmp_path / "two"))
        assert "name        kept" in human
        assert f"{store_of('kept')} (interval 1 s)" in human
    finally:
        stop(again)
    gone = cli_json("discard", "kept")
    assert isinstance(gone, dict)
    assert (gone["discarded"], gone["store"]) == ("kept", str(store_of("kept")))
    assert not store_of("kept").exists()
    assert cli("discard", "kept").returncode != 0


def test_kill_9_loses_nothing_acknowledged_and_doctor_says_how_to_resume(tmp_path: Path) -> None:
    with scratch_dir() as scratch:  # the mount is left stale until detached
        record = _mount(scratch / "ws", "--name", "crashy", "--interval", "0.2")
        data = scratch / "ws" / "data.bin"
        with open(data, "wb") as written:
            written.write(os.urandom(300_000))
            written.flush()
            os.fsync(written.fileno())  # a durability point: acknowledged
        expected = data.read_bytes()
        with connect(scratch / "ws") as fs:
            fs.write("undo.txt", "before\n")
            fs.snapshot(tag="undo-point")  # returns once on disk
            fs.write("undo.txt", "after\n")
        time.sleep(1.0)  # past the interval: on disk without asking
        os.kill(record.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not is_stale(record.mountpoint) and time.monotonic() < deadline:
            time.sleep(0.02)
        doctor = cli("doctor")
        line = next(line for line in doctor.stdout.splitlines() if "crashy" in line)
        assert "crashed workspace" in line
        assert f"resume: workspacefs mount {record.mountpoint} --name crashy" in line
        assert cli("doctor", "--fix").returncode == 0
        assert not is_stale(record.mountpoint)

        again = _mount(scratch / "ws", "--name", "crashy")
        try:
            assert data.read_bytes() == expected
            with connect(scratch / "ws") as fs:
                assert fs.read("undo.txt").content == "after\n"
                fs.restore(next(s for s in fs.snapshots() if s.tag == "undo-point"))
                assert fs.read("undo.txt").content == "before\n"
        finally:
            stop(again)


def test_a_running_workspace_cannot_be_mounted_twice_or_discarded(tmp_path: Path) -> None:
    record = _mount(tmp_path / "a", "--name", "busy")
    try:
        (tmp_path / "b").mkdir()
        second = cli("mount", str(tmp_path / "b"), "--name", "busy")
        assert second.returncode != 0
        assert f"in use by process {record.pid}" in second.stderr
        assert not os.path.ismount(tmp_path / "b")
        refused = cli("discard", "busy")
        assert refused.returncode != 0
        assert "unmount it first" in refused.stderr
    finally:
        stop(record)


def test_a_resumed_workspace_persists_where_it_did(tmp_path: Path) -> None:
    repository = tmp_path / "mine.git"
    stop(_mount(tmp_path / "a", "--name", "remembers", "--persist", str(repository)))
    again = _mount(tmp_path / "a", "--name", "remembers")
    try:
        assert again.repository == str(repository)
    finally:
        stop(again)


def test_resuming_with_from_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    record = _mount(tmp_path / "a", "--name", "once")
    (tmp_path / "a" / "mine.txt").write_text("kept\n")
    stop(record)
    refused = cli(
        "mount", str(tmp_path / "a"), "--name", "once", "--from", str(demo_source(tmp_path))
    )
    assert refused.returncode != 0
    assert "holds a workspace already" in refused.stderr
    again = _mount(tmp_path / "a", "--name", "once")
    try:
        assert (tmp_path / "a" / "mine.txt").read_text() == "kept\n"
        assert not (tmp_path / "a" / "README.md").exists()
    finally:
        stop(again)


def test_a_generated_name_is_printed_and_resumes(tmp_path: Path) -> None:
    mountpoint = tmp_path / "project"
    mountpoint.mkdir()
    out = cli_ok("mount", str(mountpoint))
    name = next(line.split()[1] for line in out.splitlines() if line.strip().startswith("name"))
    assert name.startswith("project-")
    (mountpoint / "f").write_text("x")
    cli_ok("unmount", str(mountpoint))
    again = _mount(mountpoint, "--name", name)
    try:
        assert (mountpoint / "f").read_text() == "x"
    finally:
        stop(again)


def test_durability_none_keeps_nothing(tmp_path: Path) -> None:
    record = _mount(tmp_path / "a", "--durability", "none")
    assert (record.name, record.store) == (None, None)
    stop(record)
    for bad in (
        ("--durability", "none", "--name", "x"),
        ("--durability", "sometimes"),
        ("--name", "../escape"),
        ("--interval", "0"),
    ):
        refused = cli("mount", str(tmp_path / "a"), *bad)
        assert refused.returncode == EXIT_FAILED, (bad, refused.stderr)
        assert refused.stderr.startswith("workspacefs: error: "), refused.stderr
        assert not os.path.ismount(tmp_path / "a")


def test_always_puts_each_change_on_disk_before_it_returns(tmp_path: Path) -> None:
    with scratch_dir() as scratch:
        record = _mount(scratch / "ws", "--name", "strict", "--durability", "always")
        (scratch / "ws" / "plain.txt").write_text("no fsync\n")  # the close returns: on disk
        with connect(scratch / "ws") as fs:
            fs.write("api.txt", "no sync\n")
        _killed(record)
        again = _mount(scratch / "ws", "--name", "strict", "--durability", "always")
        try:
            assert (scratch / "ws" / "plain.txt").read_text() == "no fsync\n"
            assert (scratch / "ws" / "api.txt").read_text() == "no sync\n"
            assert cli_json("status", str(scratch / "ws"))["durability"] == "always"  # type: ignore[index]
        finally:
            stop(again)


@pytest.mark.parametrize("mode", [0o755, 0o700])
def test_a_store_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    store.chmod(mode)
    (tmp_path / "ws").mkdir()
    result = cli("mount", str(tmp_path / "ws"), "--store", str(store))
    if mode == 0o755:
        assert result.returncode != 0
        assert "others may reach the store" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        listed = next(
            r for r in json.loads(cli_ok("list", "--json")) if r.get("store") == str(store)
        )
        assert listed["name"] is None
        del listed["alive"], listed["stale"]
        stop(MountRecord.from_dict(listed))


def test_a_workspace_loaded_from_git_journals_blob_ids_and_resumes(tmp_path: Path) -> None:
    repository = tmp_path / "snapshots.git"
    first = _mount(
        tmp_path / "a", "--from", str(demo_source(tmp_path)), "--persist", str(repository)
    )
    (tmp_path / "a" / "big.bin").write_bytes(os.urandom(2 << 20))
    cli_ok("persist", str(tmp_path / "a"), "--tag", "base")
    expected = (tmp_path / "a" / "big.bin").read_bytes()
    stop(first)
    with scratch_dir() as scratch:
        record = _mount(scratch / "ws", "--name", "from-git", "--from", f"{repository}#base")
        (scratch / "ws" / "new.txt").write_text("after loading\n")
        with connect(scratch / "ws") as fs:
            fs.snapshot(tag="loaded")  # a durability point
        journal = sum(p.stat().st_size for p in (store_of("from-git") / "journal").iterdir())
        assert journal < len(expected)  # blob ids, not the 2 MiB file
        _killed(record)
        again = _mount(scratch / "ws", "--name", "from-git")
        try:
            assert (scratch / "ws" / "big.bin").read_bytes() == expected
            assert (scratch / "ws" / "new.txt").read_text() == "after loading\n"
            assert (scratch / "ws" / "src" / "app.py").read_text() == "print('hello')\n"
        finally:
            stop(again)


def test_a_new_workspace_is_on_disk_once_mount_returns(tmp_path: Path) -> None:
    # Made with --from and killed, or unmounted, before any change: it resumes as it
    # started, not empty (its first journal record waited for a change).
    source = demo_source(tmp_path)
    with scratch_dir() as scratch:
        record = _mount(scratch / "ws", "--name", "fresh", "--from", str(source))
        _killed(record)
        again = _mount(scratch / "ws", "--name", "fresh")
        try:
            assert (scratch / "ws" / "src" / "app.py").read_text() == "print('hello')\n"
        finally:
            stop(again)
    record = _mount(tmp_path / "ws", "--name", "calm", "--from", str(source))
    cli_ok("unmount", record.mountpoint)
    again = _mount(tmp_path / "ws", "--name", "calm")
    try:
        assert (tmp_path / "ws" / "README.md").read_text() == "# demo\n"
    finally:
        stop(again)


def test_a_new_workspace_whose_start_failed_can_be_started_again(tmp_path: Path) -> None:
    # The start fails after the store was opened (its socket cannot be made): the store
    # is left holding no workspace, so the same command works once the cause is gone.
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    blocker = RuntimePaths.of(canonical_mountpoint(str(mountpoint))).socket
    blocker.mkdir()
    source = demo_source(tmp_path)
    failed = cli("mount", str(mountpoint), "--name", "retried", "--from", str(source))
    assert failed.returncode == EXIT_FAILED
    assert "Is a directory" in failed.stderr
    blocker.rmdir()
    record = _mount(mountpoint, "--name", "retried", "--from", str(source))
    try:
        assert (mountpoint / "src" / "app.py").read_text() == "print('hello')\n"
    finally:
        stop(record)
