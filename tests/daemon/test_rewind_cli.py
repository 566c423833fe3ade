"""Rewind on a running workspace: ``workspacefs history`` and ``rewind``, the daemon's
``call_history`` and ``rewind`` verbs, refusals that leave the workspace and the daemon
as they were, and a named workspace whose recorded calls outlive its daemon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Daemons, cli, cli_json, cli_ok, stop
from workspacefs import connect
from workspacefs.daemon import MountRecord
from workspacefs.fs import call_history
from workspacefs.tools import UndoableToolset, filesystem_tools

EXIT_FAILED = 1


def _calls(record: MountRecord) -> dict[str, str]:
    """Three recorded calls through a toolset on ``connect()``; the content of ``a.txt``
    before each."""
    with connect(record.socket) as fs:
        toolset = UndoableToolset(filesystem_tools(fs), fs)
        before = {}
        for number in range(3):
            before[f"toolu_{number}"] = fs.read("a.txt").content if fs.exists("a.txt") else ""
            toolset.call(
                "write_file",
                {"path": "a.txt", "content": f"{number}\n", "mode": "append"},
                call_id=f"toolu_{number}",
            )
        toolset.call("read_file", {"path": "a.txt"}, call_id="toolu_read")
    return before


def test_history_and_rewind_commands(daemons: Daemons) -> None:
    record = daemons.start()
    point = record.mountpoint
    assert cli_ok("history", point) == "No recorded tool call.\n"
    before = _calls(record)
    lines = cli_ok("history", point).splitlines()
    assert [line.split("\t")[:2] for line in lines] == [
        [f"toolu_{n}", "write_file"] for n in range(3)
    ]
    assert all(line.endswith("\tchanged") for line in lines)
    listed = cli_json("history", point)
    assert isinstance(listed, list)
    assert [call["before"]["tag"] for call in listed] == [
        f"undo:write_file:toolu_{n}" for n in range(3)
    ]
    out = cli_ok("rewind", point, "toolu_2")
    assert out.splitlines() == [
        "Rewound to before toolu_2: 1 call undone",
        "undone\ttoolu_2",
        "M\ta.txt",
    ]
    assert Path(point, "a.txt").read_text() == before["toolu_2"]
    done = cli_json("rewind", point, "toolu_0")
    assert isinstance(done, dict)
    assert done["undone"] == ["toolu_0", "toolu_1"]
    assert done["changes"]["deleted"] == ["a.txt"]
    assert not Path(point, "a.txt").exists()
    assert cli_json("history", point) == []


def test_refused_rewinds_change_nothing_and_the_daemon_serves_on(daemons: Daemons) -> None:
    record = daemons.start()
    point = record.mountpoint
    _calls(record)
    Path(point, "editor.txt").write_text("saved by an editor\n")  # through the mount
    with connect(point) as fs:
        held = fs.snapshot()
        for args, why in (
            (["toolu_1"], "another writer changed the workspace after call toolu_2 (editor.txt)"),
            (["toolu_read"], "no recorded call has this id: toolu_read"),
            (["nope"], "no recorded call has this id: nope"),
        ):
            refused = cli("rewind", point, *args)
            assert refused.returncode == EXIT_FAILED, refused.stdout
            assert refused.stdout == ""
            assert why in refused.stderr
        with pytest.raises(LookupError):
            fs.rewind("toolu_1" * (1 << 20))  # 7 MiB of id: refused like any unknown one
        with pytest.raises(ValueError, match="call_id"):
            fs.rewind(3)  # type: ignore[arg-type]
        assert not fs.diff(held).changed
        assert [c.call_id for c in fs.call_history()] == ["toolu_0", "toolu_1", "toolu_2"]
        forced = json.loads(cli_ok("rewind", point, "toolu_1", "--force", "--json"))
        assert forced["discarded"] == ["editor.txt"]
        assert fs.read("a.txt").content == "0\n"
        assert not Path(point, "editor.txt").exists()


def test_a_read_only_workspace_lists_and_refuses_to_rewind(daemons: Daemons) -> None:
    record = daemons.start("ro", read_only=True)
    assert cli_ok("history", record.mountpoint) == "No recorded tool call.\n"
    refused = cli("rewind", record.mountpoint, "any")
    assert refused.returncode == EXIT_FAILED
    assert "read-only workspace" in refused.stderr


def test_recorded_calls_outlive_the_daemon_of_a_named_workspace(tmp_path: Path) -> None:
    first = tmp_path / "one"
    first.mkdir()
    record = MountRecord.from_dict(_json(cli_ok("mount", str(first), "--name", "calls", "--json")))
    try:
        before = _calls(record)
        with connect(record.socket) as fs:
            recorded = [(c.call_id, c.before.snapshot_id, c.after) for c in call_history(fs)]
    finally:
        stop(record)
    second = tmp_path / "two"
    second.mkdir()
    again = MountRecord.from_dict(_json(cli_ok("mount", str(second), "--name", "calls", "--json")))
    try:
        with connect(again.socket) as fs:
            resumed = [(c.call_id, c.before.snapshot_id, c.after) for c in call_history(fs)]
            assert resumed == recorded  # tags, ids and the snapshots after, all kept
            assert fs.rewind("toolu_1").undone == ("toolu_1", "toolu_2")
            assert fs.read("a.txt").content == before["toolu_1"]
        stop(again)
        third = tmp_path / "three"
        third.mkdir()
        again = MountRecord.from_dict(
            _json(cli_ok("mount", str(third), "--name", "calls", "--json"))
        )
        with connect(again.socket) as fs:  # the rewind outlived its daemon too
            assert [c.call_id for c in fs.call_history()] == ["toolu_0"]
            assert fs.read("a.txt").content == before["toolu_1"]
    finally:
        stop(again)
        cli("discard", "calls")


def _json(text: str) -> dict[str, Any]:
    value = json.loads(text)
    assert isinstance(value, dict)
    return value
