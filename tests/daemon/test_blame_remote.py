"""Blame through a daemon: remote calls carry their cause, the mount names its writers,
and ``workspacefs blame`` / ``log --files`` show both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.daemon import SOURCE_ROOT, Daemons, cli
from workspacefs import Cause, InvalidArgumentError, attributed
from workspacefs.daemon import RemoteFilesystem, connect
from workspacefs.fs import CAUSE_VARIABLE

TOOL = Cause.call("edit_file", "toolu_42", "agent-1")


def test_remote_calls_and_mount_writes_are_blamed(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs:
        with fs.attributed(TOOL):
            fs.write("src/app.py", "v1\n")
        fs.write("notes.md", "no cause set: this process is the cause\n")
        first = fs.snapshot(tag="first")
        shell = subprocess.Popen(["sh", "-c", f"echo v2 > {record.mountpoint}/src/app.py"])
        assert shell.wait(timeout=60) == 0
        with attributed(TOOL):  # the module-level context manager is the same one
            fs.delete("notes.md")

        app = fs.blame("src/app.py")
        assert [(e.snapshot, e.kind) for e in app] == [(None, "modified"), (first, "added")]
        assert [c.pid for c in app[0].causes] == [shell.pid]
        assert app[0].causes[0].command == ("sh", "-c", f"echo v2 > {record.mountpoint}/src/app.py")
        assert app[1].causes == (TOOL,)
        notes = fs.blame("notes.md")
        assert notes[0].causes == (TOOL,)
        (me,) = notes[1].causes
        assert (me.pid, me.uid, me.command) == (os.getpid(), os.getuid(), tuple(sys.orig_argv))

        live = fs.changes()
        assert (live.snapshot, live.base) == (None, first)
        assert [(c.path, c.kind) for c in live.changes] == [
            ("notes.md", "deleted"),
            ("src/app.py", "modified"),
        ]
        assert fs.changes(first).changes == fs.at(first).changes().changes
        assert [e.kind for e in fs.at(first).blame("src/app.py")] == ["added"]


def test_a_client_process_says_its_call_through_the_environment(daemons: Daemons) -> None:
    record = daemons.start()
    script = (
        "import sys, workspacefs\n"
        "with workspacefs.connect(sys.argv[1]) as fs:\n"
        "    fs.write('from-agent.txt', 'x')\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": SOURCE_ROOT,
        CAUSE_VARIABLE: Cause.call("shell", "toolu_7", "python agent.py").environment(),
    }
    done = subprocess.run([sys.executable, "-c", script, record.socket], env=env, check=False)
    assert done.returncode == 0
    with connect(record.socket) as fs:
        ((cause,),) = [e.causes for e in fs.blame("from-agent.txt")]
    assert (cause.tool, cause.call_id, cause.label) == ("shell", "toolu_7", "python agent.py")
    assert cause.command[:2] == (sys.executable, "-c")


def test_a_bad_cause_is_refused_and_changes_nothing(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs:
        with pytest.raises(InvalidArgumentError):
            fs._connection.request("write", {"path": "x", "content": "y", "cause": {"pid": "no"}})
        assert not fs.exists("x")


def test_blame_and_log_files_commands(daemons: Daemons, tmp_path: Path) -> None:
    record = daemons.start()
    mountpoint = str(record.mountpoint)
    with connect(record.socket) as fs:
        with fs.attributed(TOOL):
            fs.write("app.py", "1\n")
        fs.snapshot(tag="one")
    shell = subprocess.Popen(["sh", "-c", "echo 2 >> app.py"], cwd=mountpoint)
    assert shell.wait(timeout=60) == 0

    out = cli("blame", "app.py", cwd=mountpoint)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("live ")
    assert f"M pid {shell.pid} `sh -c echo 2 >> app.py` uid 0" in lines[0]
    assert lines[1].split()[1] == "(one)"
    assert lines[1].endswith(" A edit_file call toolu_42 (agent-1)")
    as_json = json.loads(cli("blame", mountpoint, "app.py", "--at", "one", "--json").stdout)
    assert [(e["kind"], e["causes"]) for e in as_json] == [("added", [TOOL.to_dict()])]
    missing = cli("blame", "nothing.txt", cwd=mountpoint)
    assert (missing.returncode, missing.stdout.strip()) == (0, "No recorded change to nothing.txt.")

    log = cli("log", "--files", cwd=mountpoint)
    assert log.returncode == 0, log.stderr
    lines = log.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].split()[0] == "live"
    assert lines[0].endswith(" (one)")  # "since <id> (one)"
    assert lines[1] == f"    M app.py\tpid {shell.pid} `sh -c echo 2 >> app.py` uid 0"
    assert lines[2].startswith("* ")  # the current snapshot
    assert lines[2].split()[2] == "(one)"
    assert lines[3] == "    A app.py\tedit_file call toolu_42 (agent-1)"
    (entry,) = json.loads(cli("log", "--files", "--json", cwd=mountpoint).stdout)
    assert entry["tag"] == "one"
    assert entry["base"] is None
    assert entry["changes"] == [{"path": "app.py", "kind": "added", "causes": [TOOL.to_dict()]}]


def test_a_view_of_a_snapshot_blames_from_it(daemons: Daemons) -> None:
    record = daemons.start()
    with RemoteFilesystem(record.socket) as fs:
        fs.write("f", "1")
        one = fs.snapshot()
        fs.write("f", "2")
        assert [e.kind for e in fs.blame("f")] == ["modified", "added"]
        assert [e.kind for e in fs.at(one).blame("f")] == ["added"]


def test_a_merge_of_a_fork_is_blamed_on_its_caller(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs:
        fork = fs.fork("f")
        Path(fork.path, "from-fork.txt").write_text("fork\n")
        with fs.attributed(TOOL):
            assert fs.merge_fork("f").applied
        (entry,) = fs.blame("from-fork.txt")
    assert (entry.snapshot, entry.kind, entry.causes) == (None, "added", (TOOL,))


AGENT = (
    "import sys, workspacefs\n"
    "with workspacefs.connect(sys.argv[-1]) as fs:\n"
    "    fs.write('agent.txt', 'x')\n"
)
API_KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwx"


def test_a_clients_secrets_stay_out_of_blame_and_log(daemons: Daemons, tmp_path: Path) -> None:
    """An agent started with ``--api-key=...``: its calls carry its command line, and
    the daemon records it masked; ``blame`` and ``log --files`` show no key."""
    record = daemons.start()
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    argv = [sys.executable, "agent.py", f"--api-key={API_KEY}", record.socket]
    assert subprocess.run(argv, env=env, cwd=tmp_path, check=False).returncode == 0
    mountpoint = str(record.mountpoint)
    blamed = cli("blame", "agent.txt", "--json", cwd=mountpoint)
    logged = cli("log", "--files", cwd=mountpoint)
    assert (blamed.returncode, logged.returncode) == (0, 0)
    ((cause,),) = [entry["causes"] for entry in json.loads(blamed.stdout)]
    assert cause["command"][-2] == "--api-key=***"
    assert "--api-key=***" in logged.stdout
    assert API_KEY not in blamed.stdout + logged.stdout


def test_mount_blame_full_commands_keeps_the_line(tmp_path: Path) -> None:
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    started = cli("mount", str(mountpoint), "--blame-full-commands")
    assert started.returncode == 0, started.stderr
    try:
        env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
        argv = [sys.executable, "-c", AGENT, f"--api-key={API_KEY}", str(mountpoint)]
        assert subprocess.run(argv, env=env, check=False).returncode == 0
        with connect(str(mountpoint)) as fs:
            ((cause,),) = [entry.causes for entry in fs.blame("agent.txt")]
        assert cause.command[-2] == f"--api-key={API_KEY}"
    finally:
        assert cli("unmount", str(mountpoint)).returncode == 0
