"""Forks in a daemon: through ``RemoteFilesystem`` and the ``fork``/``forks``/``merge`` commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import SOURCE_ROOT, Daemons, cli, cli_json, cli_mounted, cli_ok, demo_source
from workspacefs import AlreadyExistsError, InvalidArgumentError, NotFoundError
from workspacefs.daemon import connect

NOBODY = 65534


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """A workspace mounted with ``workspacefs mount``: src/app.py and README.md."""
    source = demo_source(tmp_path)
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source):
        yield mountpoint


@pytest.mark.parametrize("command", ["fork", "forks", "merge"])
def test_help_has_an_example(command: str) -> None:
    out = cli_ok(command, "--help")
    assert "Example" in out


def test_forks_through_the_client(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs:
        fs.write("src/app.py", "one\n")
        before = fs.snapshot(tag="before")
        fs.write("src/app.py", "two\n")
        first = fs.fork()
        assert first.name == "fork-1"
        assert first.path == os.path.join(record.mountpoint, ".forks", "fork-1")
        assert first.changed == 0
        old = fs.fork("old", snapshot=before)
        assert Path(old.path, "src/app.py").read_text() == "one\n"
        with pytest.raises(AlreadyExistsError):
            fs.fork("old")
        Path(first.path, "new.txt").write_text("from the fork\n")
        assert [(i.name, i.changed) for i in fs.forks()] == [("fork-1", 1), ("old", 0)]
        assert not fs.exists("new.txt")
        dry = fs.merge_fork("fork-1", dry_run=True)
        assert (dry.applied, dry.changed, dry.conflicts) == (False, ("new.txt",), ())
        assert not fs.exists("new.txt")
        merged = fs.merge_fork("fork-1")
        assert merged.applied
        assert merged.snapshot is not None
        assert fs.read("new.txt").content == "from the fork\n"
        unchanged = fs.merge_fork("old")  # old changed nothing since its snapshot
        assert (unchanged.changed, unchanged.conflicts) == ((), ())
        Path(old.path, "src/app.py").write_text("three\n")
        clash = fs.merge_fork("old", markers=True)
        assert [(c.path, c.kind) for c in clash.conflicts] == [("src/app.py", "content")]
        markers = clash.conflicts[0].markers
        assert markers is not None
        assert b"<<<<<<<" in markers
        assert fs.read("src/app.py").content == "two\n"
        fs.drop_fork("old")
        assert not os.path.exists(old.path)
        with pytest.raises(NotFoundError):
            fs.drop_fork("old")
        assert fs.status()["forks"] == 1


BAD_FORK_NAMES = {
    "two\nlines": "'\\n'",
    "tab\there": "'\\t'",
    "-rf": "start with a letter or digit",
    ".snapshots": "start with a letter or digit",
    ".forks": "start with a letter or digit",
    "a:b": "':'",
    "héllo": "'é'",
}


def test_a_fork_name_a_table_cannot_show_is_refused(ws: Path) -> None:
    """Names with a newline, a tab, a leading '-' or '.', ... are refused where they are
    given, with the reason; no fork is made, and the ``forks`` table stays one line a
    fork."""
    with connect(str(ws)) as fs:
        for name, reason in BAD_FORK_NAMES.items():
            with pytest.raises(InvalidArgumentError, match=re.escape(reason)):
                fs.fork(name)
        assert fs.forks() == []
    refused = cli("fork", "--name", "two\nlines", cwd=ws)
    assert refused.returncode == 1
    assert "fork name 'two\\nlines' holds '\\n'" in refused.stderr
    assert sorted(os.listdir(ws / ".forks")) == []
    cli_ok("fork", "--name", "good-1", cwd=ws)
    table = cli_ok("forks", cwd=ws).splitlines()
    assert len(table) == 2  # the header and good-1
    assert table[1].split()[0] == "good-1"


def test_fork_merge_and_drop_from_the_command_line(ws: Path) -> None:
    out = cli_ok("fork", "--name", "exp", cwd=ws)
    path = ws / ".forks" / "exp"
    assert out == f"{path}\n"
    (path / "src" / "app.py").write_text("print('changed in exp')\n")
    (path / "notes.txt").write_text("exp\n")
    listed = cli_json("forks", cwd=ws)
    assert isinstance(listed, list)
    assert [(f["name"], f["changed"]) for f in listed] == [("exp", 2)]
    assert "exp" in cli_ok("forks", cwd=ws)
    assert "forks       1 (workspacefs forks)" in cli_ok("status", cwd=ws).splitlines()
    dry = cli_ok("merge", "exp", "--dry-run", cwd=ws)
    assert dry.splitlines()[:3] == [
        f"Would merge fork exp into {ws}: 2 path(s) changed",
        "\tnotes.txt",
        "\tsrc/app.py",
    ]
    assert not (ws / "notes.txt").exists()
    done = cli_ok("merge", str(path), cwd="/")  # a fork's path names its workspace too
    assert done.startswith(f"Merged fork exp into {ws}: 2 path(s) changed")
    assert "Snapshot before the merge" in done
    assert (ws / "notes.txt").read_text() == "exp\n"
    dropped = cli_json("fork", "--drop", "exp", cwd=ws)
    assert dropped == {"dropped": "exp", "unbound": []}
    assert not path.exists()
    assert cli_ok("forks", cwd=ws).strip() == f"No forks of {ws}."
    assert "forks       0 (workspacefs forks)" in cli_ok("status", cwd=ws).splitlines()


def test_conflicts_are_printed_and_exit_non_zero(ws: Path) -> None:
    info = cli_json("fork", "--name", "clash", cwd=ws)
    assert isinstance(info, dict)
    Path(info["path"], "src", "app.py").write_text("print('fork')\n")
    (ws / "src" / "app.py").write_text("print('origin')\n")
    result = cli("merge", "clash", "--markers", cwd=ws)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "CONFLICT (content): src/app.py"
    assert "<<<<<<< ours" in lines[1] or lines[1].startswith("<<<<<<<")
    assert lines[-1] == "1 conflict(s): nothing merged from fork clash"
    assert (ws / "src" / "app.py").read_text() == "print('origin')\n"
    report = json.loads(cli("merge", "clash", "--json", cwd=ws).stdout)
    assert [c["kind"] for c in report["conflicts"]] == ["content"]
    assert report["applied"] is False


def test_a_fork_merged_in_steps(ws: Path) -> None:
    """Merged, edited more, merged again: the second merge starts where the first
    left the two, so what was merged before does not clash with itself."""
    cli_ok("fork", "--name", "steps", cwd=ws)
    fork = ws / ".forks" / "steps"
    (fork / "notes.md").write_text("one\n")
    first = cli("merge", "steps", cwd=ws)
    assert first.returncode == 0, first.stdout
    (fork / "notes.md").write_text("one\ntwo\n")
    (fork / "src" / "new.py").write_text("print('new')\n")
    (ws / "README.md").write_text("# the workspace's own edit\n")
    second = cli("merge", "steps", cwd=ws)
    assert second.returncode == 0, second.stdout
    assert second.stdout.startswith(f"Merged fork steps into {ws}: 2 path(s) changed")
    assert (ws / "notes.md").read_text() == "one\ntwo\n"
    assert (ws / "src" / "new.py").read_text() == "print('new')\n"
    assert (ws / "README.md").read_text() == "# the workspace's own edit\n"
    assert (ws / "src" / "app.py").read_text() == "print('hello')\n"
    # Both change the same line of what they merged: still a conflict, nothing applied.
    (fork / "notes.md").write_text("one\ntheirs\n")
    (ws / "notes.md").write_text("one\nmine\n")
    clash = cli("merge", "steps", cwd=ws)
    assert clash.returncode == 1
    assert clash.stdout.splitlines()[0] == "CONFLICT (content): notes.md"
    assert (ws / "notes.md").read_text() == "one\nmine\n"


def test_fork_of_a_snapshot_and_the_only_workspace(ws: Path, tmp_path: Path) -> None:
    cli_ok("snapshot", "--tag", "start", cwd=ws)
    (ws / "README.md").write_text("# changed\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    info = cli_json("fork", "--from", "start", cwd=outside)  # the only workspace running
    assert isinstance(info, dict)
    assert Path(info["path"], "README.md").read_text() == "# demo\n"
    assert info["name"] == "fork-1"
    again = cli_json("fork", "--of", str(ws / "src"), cwd=outside)
    assert isinstance(again, dict)
    assert again["name"] == "fork-2"


@pytest.mark.skipif(os.geteuid() != 0, reason="binding a fork needs root")
def test_a_fork_bound_to_a_directory_and_unmounted(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "experiment"
    target.mkdir()
    info = cli_json("fork", "--name", "bound", str(target), cwd=ws)
    assert isinstance(info, dict)
    assert info["bound"] == str(target)
    assert os.path.ismount(target)
    assert sorted(os.listdir(target)) == ["README.md", "src"]
    (target / "made-here.txt").write_text("through the bind\n")
    assert (ws / ".forks" / "bound" / "made-here.txt").read_text() == "through the bind\n"
    merged = cli_ok("merge", str(target))  # the bind names the fork and its workspace
    assert merged.startswith(f"Merged fork bound into {ws}: 1 path(s) changed")
    out = cli_ok("unmount", str(target))
    assert out.strip() == f"Dropped fork bound; unbound {target}"
    assert not os.path.ismount(target)
    assert os.listdir(target) == []
    assert cli_json("forks", cwd=ws) == []
    assert (ws / "made-here.txt").exists()  # the workspace itself is still mounted
    # --drop unbinds too.
    cli_json("fork", "--name", "again", str(target), cwd=ws)
    assert cli_json("fork", "--drop", "again", cwd=ws) == {
        "dropped": "again",
        "unbound": [str(target)],
    }
    assert not os.path.ismount(target)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another user")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is missing")
def test_binding_needs_root(tmp_path: Path) -> None:
    target = tmp_path / "bind"
    target.mkdir()
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    done = subprocess.run(
        [*as_nobody, sys.executable, "-m", "workspacefs.cli", "fork", str(target)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SOURCE_ROOT},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "binding a fork to a directory needs root" in done.stderr
