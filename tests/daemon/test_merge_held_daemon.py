"""A merge held open in a daemon: its fork on the mount at ``.forks/merge-<n>``, the
verbs through ``RemoteFilesystem`` and ``workspacefs merge --hold/--continue/--abort``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import (
    Daemons,
    alive,
    cli,
    cli_json,
    cli_mounted,
    cli_ok,
    demo_source,
    stop,
)
from support.merges import directory_digest
from workspacefs import BusyError, NotFoundError, UnresolvedConflictsError
from workspacefs.daemon import MountRecord, connect
from workspacefs.tools import ToolContext, ToolRegistry, conflict_tools

LINES = "1\n2\n3\n4\n5\n6\n7\n"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """A workspace mounted with ``workspacefs mount``: src/app.py and README.md."""
    source = demo_source(tmp_path)
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source):
        yield mountpoint


def _clash(ws: Path) -> Path:
    """A fork ``exp`` whose merge conflicts: a same-line edit, a binary, a symlink
    retargeted on both sides, and a clean addition; the fork's path."""
    (ws / "notes.txt").write_text(LINES)
    (ws / "logo.bin").write_bytes(b"\0logo 1")
    os.symlink("README.md", ws / "link")
    cli_ok("fork", "--name", "exp", cwd=ws)
    fork = ws / ".forks" / "exp"
    (fork / "notes.txt").write_text(LINES.replace("4\n", "vier\n"))
    (fork / "logo.bin").write_bytes(b"\0logo 3")
    os.unlink(fork / "link")
    os.symlink("src/app.py", fork / "link")
    (fork / "added.txt").write_text("from the fork\n")
    (ws / "notes.txt").write_text(LINES.replace("4\n", "four\n"))
    (ws / "logo.bin").write_bytes(b"\0logo 2")
    os.unlink(ws / "link")
    os.symlink("notes.txt", ws / "link")
    return fork


def test_held_resolved_through_the_mount_and_continued(ws: Path) -> None:
    _clash(ws)
    before = directory_digest(ws)
    opened = cli("merge", "exp", "--hold", cwd=ws)
    assert opened.returncode == 1, opened.stderr
    lines = opened.stdout.splitlines()
    assert lines[0] == "CONFLICT (symlink): link"
    merge_dir = ws / ".forks" / "merge-1"
    assert f"held open in {merge_dir}" in lines[-1]
    assert directory_digest(ws) == before
    text = (merge_dir / "notes.txt").read_text()
    assert "<<<<<<< ours\nfour\n||||||| base\n4\n=======\nvier\n>>>>>>> theirs\n" in text
    assert (merge_dir / "added.txt").read_text() == "from the fork\n"

    refused = cli("merge", "--continue", cwd=ws)
    assert refused.returncode == 1
    assert "3 path(s) still conflict" in refused.stderr
    assert "notes.txt (conflict markers on lines 4, 6, 8, 10)" in refused.stderr
    assert directory_digest(ws) == before

    (merge_dir / "notes.txt").write_text(LINES.replace("4\n", "four-vier\n"))
    status = cli_json("merge", "--status", "--json", cwd=ws)
    assert isinstance(status, dict)
    assert [(s["path"], s["resolved"]) for s in status["states"]] == [
        ("link", False),
        ("logo.bin", False),
        ("notes.txt", True),
    ]
    assert "unresolved: edit it, or take a side" in cli_ok("merge", "--status", cwd=ws)

    done = cli("merge", "--continue", "--take", "logo.bin=theirs", "--take", "link=ours", cwd=ws)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Merged the merge held open into {ws}: 3 path(s) changed")
    assert (ws / "notes.txt").read_text() == LINES.replace("4\n", "four-vier\n")
    assert (ws / "logo.bin").read_bytes() == b"\0logo 3"
    assert os.readlink(ws / "link") == "notes.txt"
    assert (ws / "added.txt").read_text() == "from the fork\n"
    assert not merge_dir.exists()
    assert cli_ok("merge", "--status", cwd=ws).strip() == f"No merge is held open in {ws}."


def test_abort_leaves_the_mounted_workspace_bit_identical(ws: Path) -> None:
    _clash(ws)
    before = directory_digest(ws)
    assert cli("merge", "exp", "--hold", cwd=ws).returncode == 1
    merge_dir = ws / ".forks" / "merge-1"
    (merge_dir / "notes.txt").write_text("edited, then dropped\n")
    out = cli_ok("merge", "--abort", cwd=ws)
    assert out.strip() == f"Aborted the merge held open in {ws}; nothing changed."
    assert directory_digest(ws) == before
    assert not merge_dir.exists()
    again = cli("merge", "--abort", cwd=ws)
    assert again.returncode == 1
    assert "no merge is held open" in again.stderr


def test_bad_command_lines_are_refused(ws: Path) -> None:
    for args in (
        ("merge",),
        ("merge", "exp", "--continue"),
        ("merge", "--continue", "--abort"),
        ("merge", "--take", "a=ours"),
        ("merge", "--continue", "--take", "a=mine"),
    ):
        result = cli(*args, cwd=ws)
        assert result.returncode == 2, (args, result.stdout, result.stderr)


def test_through_the_client(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs:
        fs.write("a.txt", LINES)
        fs.fork("exp")
        Path(record.mountpoint, ".forks", "exp", "a.txt").write_text(LINES.replace("1\n", "x\n"))
        fs.write("a.txt", LINES.replace("1\n", "y\n"))
        report = fs.merge_fork("exp", hold=True)
        assert not report.applied
        held = report.held
        assert held is not None
        assert (held.source, held.fork, held.unresolved) == ("exp", "merge-1", ("a.txt",))
        assert held.path == os.path.join(record.mountpoint, ".forks", "merge-1")
        detail = held.conflicts[0].detail
        assert detail is not None
        assert [(h.line, h.base, h.ours, h.theirs) for h in detail.hunks] == [
            (1, "1\n", "y\n", "x\n")
        ]
        with pytest.raises(BusyError):
            fs.merge_fork("exp", hold=True)
        with pytest.raises(UnresolvedConflictsError) as refused:
            fs.continue_merge()
        assert refused.value.filename == "a.txt"
        registry = ToolRegistry(conflict_tools(fs))  # the tools take the client itself
        context = ToolContext(filesystem=fs)
        shown = registry.call("conflicts", {}, context=context)
        assert "  hunk 1 at line 1:" in shown.message
        done = registry.call("resolve", {"take": {"a.txt": "theirs"}}, context=context)
        assert done.success, done.message
        assert done.value is not None
        assert done.value.applied
        assert fs.read("a.txt").content == LINES.replace("1\n", "x\n")
        assert fs.merge_status() is None
        with pytest.raises(NotFoundError):
            fs.abort_merge()
        assert json.loads(json.dumps(fs.status()))["forks"] == 1


def _mount(mountpoint: Path, *options: str) -> MountRecord:
    mountpoint.mkdir()
    found = cli_json("mount", str(mountpoint), *options)
    assert isinstance(found, dict)
    return MountRecord.from_dict(found)


def test_a_resumed_workspace_comes_back_without_the_merge_and_unmerged(tmp_path: Path) -> None:
    """An open merge lives in the daemon with its fork, which the store does not
    journal: resumed, the durable workspace is as it was before the merge opened."""
    first = tmp_path / "one"
    record = _mount(first, "--name", "held", "--from", str(demo_source(tmp_path)))
    try:
        _clash(first)
        before = directory_digest(first)
        assert cli("merge", "exp", "--hold", cwd=first).returncode == 1
        (first / ".forks" / "merge-1" / "notes.txt").write_text("resolved, not continued\n")
        cli_ok("unmount", str(first))
        second = tmp_path / "two"
        again = _mount(second, "--name", "held")
        try:
            assert directory_digest(second) == before
            assert cli_ok("merge", "--status", cwd=second).strip() == (
                f"No merge is held open in {second}."
            )
            assert not (second / ".forks" / "merge-1").exists()
        finally:
            stop(again)
    finally:
        if alive(record.pid):
            stop(record)
        cli("discard", "held")
