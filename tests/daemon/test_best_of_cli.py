"""Best of N in a daemon: ``workspacefs try``, ``RemoteFilesystem.best_of`` and the MCP
tools, with real containers started by the workspace's daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from support.best_of import CORRECT, SCORE, STUB, attempts, release_when_all_started, write_project
from support.daemon import SOURCE_ROOT, cli, cli_json, cli_mounted, cli_ok
from workspacefs import ReadOnlyError
from workspacefs.daemon import connect
from workspacefs.fs import Trial, from_json
from workspacefs.sandbox import Trials
from workspacefs.tools import CALL_ID_META

pytestmark = pytest.mark.container


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """A workspace mounted with ``workspacefs mount``: the stats project."""
    source = write_project(tmp_path / "source")
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source):
        yield mountpoint


def workspacefs(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """The command, running (``support.daemon.cli`` waits for it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "workspacefs.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": SOURCE_ROOT, "COLUMNS": "200"},
    )


def test_three_attempts_at_once_from_the_command_line_the_passing_one_accepted(ws: Path) -> None:
    forks = [ws / ".forks" / f"try-{n}" for n in (1, 2, 3)]
    errors: list[str] = []
    releaser = release_when_all_started(forks, errors)
    args = [arg for command in attempts() for arg in ("-c", command)]
    running = workspacefs("try", *args, "--score", SCORE, cwd=ws)
    out, err = running.communicate(timeout=120)
    releaser.join()
    assert errors == []
    assert running.returncode == 0, err  # an attempt passed
    lines = out.splitlines()
    assert lines[0].startswith("trial-1 (pending): 3 attempt(s) in ")
    assert lines[0].endswith(f"scored by: {SCORE}")
    assert lines[1].split() == [
        "ATTEMPT", "EXIT", "SCORE", "PASSED", "TIME", "CHANGED", "STATE", "COMMAND"
    ]  # fmt: skip
    rows = []
    for line in lines[2:5]:
        words = line.split()
        best = words.pop(1) == "*" if words[1] == "*" else False
        rows.append((words[0], best, words[1], words[2], words[3], words[5], words[6]))
    assert rows == [
        ("try-1", False, "0", "0", "no", "1", "pending"),
        ("try-2", True, "0", "1", "yes", "1", "pending"),
        ("try-3", False, "0", "0", "no", "1", "pending"),
    ]
    assert "workspacefs try --accept try-2" in lines[-1]
    assert "try-1: python3 -m unittest -q test_stats: exit 1" in err  # why the others failed
    assert "FAILED (failures=1)" in err
    assert (ws / "stats.py").read_text() == STUB
    assert [(f / "stats.py").exists() for f in forks] == [True, True, True]

    listed = cli_json("try", "--status", cwd=ws)
    assert isinstance(listed, list)
    (trial,) = listed
    assert trial["best"] == "try-2"
    assert [a["passed"] for a in trial["attempts"]] == [False, True, False]
    assert from_json(Trial, {k: v for k, v in trial.items() if k != "best"}).best is not None

    accepted = cli_ok("try", "--accept", "try-2", cwd=ws)
    assert accepted.splitlines()[:2] == [
        "Accepted try-2: 1 path(s) changed; the other attempts are dropped",
        "\tstats.py",
    ]
    assert (ws / "stats.py").read_text() == CORRECT
    assert not (ws / "__pycache__").exists()
    assert not any(f.exists() for f in forks)
    assert cli_ok("forks", cwd=ws).strip() == f"No forks of {ws}."
    status = cli_ok("try", "--status", cwd=ws)
    assert status.startswith("trial-1 (accepted)")
    assert "Accept it" not in status  # decided: no hint
    gone = cli("try", "--accept", "try-1", cwd=ws)
    assert gone.returncode == 1
    assert "no pending trial has an attempt 'try-1'" in gone.stderr


def test_accept_best_in_one_go_and_a_durable_workspace_keeps_it(ws: Path) -> None:
    done = cli(
        "try", "-n", "2", "--score", "grep -q 'a + b' calc.py", "--accept", "best", "--",
        "sed", "-i", "s/a - b/a + b/", "calc.py",
        cwd=ws,
    )  # fmt: skip
    assert done.returncode == 1  # no calc.py: nothing to change, nothing passed
    assert "No attempt passed: dropped every attempt of trial-1." in done.stdout
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    done = cli(
        "try", "-n", "2", "--score", "grep -q 'a + b' calc.py", "--accept", "best", "--",
        "sed", "-i", "s/a - b/a + b/", "calc.py",
        cwd=ws,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Accepted try-3: 1 path(s) changed" in done.stdout
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    listed = cli_json("try", "--status", cwd=ws)
    assert isinstance(listed, list)
    assert [(t["id"], t["state"]) for t in listed] == [
        ("trial-1", "dropped"),
        ("trial-2", "accepted"),
    ]
    # The accept went through the store's journal: the workspace resumes with it.
    info = cli_json("status", cwd=ws)
    assert isinstance(info, dict)
    cli_ok("unmount", str(ws))
    cli_ok("mount", str(ws), "--name", info["name"])
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_a_conflicting_accept_is_held_open_and_continued(ws: Path) -> None:
    (ws / "notes.txt").write_text("a\n")
    cli_ok("try", "-c", "echo b >> notes.txt", "-c", "echo c >> notes.txt", cwd=ws)
    (ws / "notes.txt").write_text("a\nmine\n")  # the same line, meanwhile
    refused = cli("try", "--accept", "try-1", cwd=ws)
    assert refused.returncode == 1
    assert "CONFLICT (content): notes.txt" in refused.stdout
    assert (ws / "notes.txt").read_text() == "a\nmine\n"
    held = cli_ok("try", "--accept", "try-2", "--hold", cwd=ws)
    assert f"held open in {ws}/.forks/merge-1" in held
    assert not (ws / ".forks" / "try-1").exists()  # the choice is made
    assert "<<<<<<< ours" in (ws / ".forks" / "merge-1" / "notes.txt").read_text()
    cli_ok("merge", "--continue", "--take", "notes.txt=theirs", cwd=ws)
    assert (ws / "notes.txt").read_text() == "a\nc\n"
    listed = cli_json("try", "--status", cwd=ws)
    assert isinstance(listed, list)
    assert [(t["state"], [a["state"] for a in t["attempts"]]) for t in listed] == [
        ("accepted", ["rejected", "accepted"])
    ]


def test_bad_requests_are_refused_and_the_daemon_serves_on(ws: Path) -> None:
    nothing = cli("try", cwd=ws)
    assert nothing.returncode == 2
    assert "name the command" in nothing.stderr
    assert cli("try", "-n", "0", "--", "true", cwd=ws).returncode == 2
    assert cli("try", "-n", "2", "-c", "true", cwd=ws).returncode == 2
    assert cli("try", "--hold", "--", "true", cwd=ws).returncode == 2
    assert cli("try", "--status", "--drop", "trial-1", cwd=ws).returncode == 2
    unknown = cli("try", "--drop", "trial-7", cwd=ws)
    assert unknown.returncode == 1
    assert "no trial 'trial-7'" in unknown.stderr
    many = cli("try", "-n", "17", "--", "true", cwd=ws)
    assert many.returncode == 1
    assert "a trial runs 1 to 16 commands, not 17" in many.stderr
    assert cli("try", "--image", "x", "--rootfs", "/", "--", "true", cwd=ws).returncode == 2
    assert cli_ok("try", "--status", cwd=ws).strip() == f"No trials in {ws}."
    assert os.listdir(ws / ".forks") == []
    assert (ws / "stats.py").read_text() == STUB


def test_a_read_only_workspace_runs_no_trial(tmp_path: Path) -> None:
    source = write_project(tmp_path / "source")
    mountpoint = tmp_path / "ro"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source, "--read-only"), connect(str(mountpoint)) as fs:
        with pytest.raises(ReadOnlyError):
            fs.best_of(["true"])
        assert fs.trials() == []


def _server(mountpoint: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "workspacefs.cli", "mcp", str(mountpoint), "--best-of"],
        env={"PYTHONPATH": SOURCE_ROOT, "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]},
    )


def test_the_mcp_tools_run_a_trial_and_accept_and_rewind_undoes_it(ws: Path) -> None:
    commands = [
        "sed -i 's/raise NotImplementedError/return sorted(values)[0]/' stats.py",
        f"cat > stats.py <<'EOF'\n{CORRECT}EOF",
    ]

    async def session() -> None:
        async with Client(_server(ws), read_timeout_seconds=120) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert {"best_of", "accept_attempt", "drop_trial"} <= listed
            ran = await client.call_tool("best_of", {"commands": commands, "score": SCORE})
            assert not ran.is_error
            text = ran.content[0].text  # type: ignore[union-attr]
            assert "- try-2 (passed, score 1, exit 0, score command exit 0, pending)" in text
            assert "Best: try-2. The workspace is unchanged: call accept_attempt(" in text
            assert "FAILED (failures=" in text  # the failed attempt's tests say why
            trial = from_json(Trial, ran.structured_content)
            assert trial.best is not None
            assert trial.best.id == "try-2"
            assert [a.passed for a in trial.attempts] == [False, True]

            bad = await client.call_tool("accept_attempt", {"attempt_id": "try-9"})
            assert bad.is_error
            assert "no pending trial has an attempt 'try-9'" in bad.content[0].text  # type: ignore[union-attr]

            meta = cast("types.RequestParamsMeta", {CALL_ID_META: "toolu_9"})
            done = await client.call_tool("accept_attempt", {"attempt_id": "try-2"}, meta=meta)
            assert not done.is_error
            assert done.structured_content is not None
            assert done.structured_content["changed"] == ["stats.py"]
            assert (ws / "stats.py").read_text() == CORRECT
            history = await client.call_tool("history", {})
            assert history.structured_content is not None
            recorded = history.structured_content["result"]
            # best_of changes no file: not recorded; a refused accept is, as any call that may.
            assert [(c["call_id"], c["tool"]) for c in recorded] == [
                ("call-2", "accept_attempt"),
                ("toolu_9", "accept_attempt"),
            ]
            await client.call_tool("rewind", {"call_id": "toolu_9"})
            assert (ws / "stats.py").read_text() == STUB

    anyio.run(session)


def test_a_daemon_is_a_trial_host(ws: Path) -> None:
    with connect(str(ws)) as fs:
        host: Trials = fs  # what trial_tools takes (mypy checks the client fits)
        trial = host.best_of(["echo x > x.txt"], timeout=30)
        assert [a.changes.added for a in trial.attempts] == [("x.txt",)]
        assert json.loads(json.dumps(fs.status()))["forks"] == 0  # tries are no named forks
        dropped = host.drop_trial(trial.id)
        assert dropped.state == "dropped"
        assert not (ws / "x.txt").exists()
