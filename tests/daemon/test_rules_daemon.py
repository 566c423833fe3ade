"""Access rules of a daemon's workspace: declared at mount or later, enforced on its
mount and for its clients, listed, kept by its store, and the denials shown by
``denials`` and ``blame``."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from support.daemon import Daemons, cli, cli_json, cli_ok, stop
from workspacefs import AccessDeniedError, Cause, QuotaExceededError, Rule, attributed
from workspacefs.daemon import MountRecord, connect


def source(base: Path) -> Path:
    root = base / "source"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".env").write_text("TOKEN=hunter2\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / "logs").mkdir()
    (root / "logs" / "a.log").write_text("0123456789")
    return root


def test_rules_from_mount_to_resume(tmp_path: Path) -> None:
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    made = cli_json(
        "mount",
        str(mountpoint),
        "--from",
        str(source(tmp_path)),
        "--store",
        str(tmp_path / "store"),
        "--protect",
        ".git",
        "--hide",
        ".env",
        "--quota",
        "logs/**=16",
    )
    assert isinstance(made, dict)
    record = MountRecord.from_dict(made)
    try:
        # The mount: refused with the errno a process expects, nothing changed.
        with pytest.raises(PermissionError):
            (mountpoint / ".git" / "config").write_text("x")
        assert (mountpoint / ".git" / "config").read_text() == "[core]\n"
        assert ".env" not in os.listdir(mountpoint)
        fd = os.open(mountpoint / "logs" / "a.log", os.O_WRONLY | os.O_APPEND)
        try:
            with pytest.raises(OSError) as caught:
                os.write(fd, b"x" * 7)
        finally:
            os.close(fd)
        assert caught.value.errno == errno.EDQUOT
        # A client: the rule's error comes back as itself, naming the rule.
        with connect(record.socket) as fs:
            with (
                attributed(Cause.call("edit_file", "toolu_7")),
                pytest.raises(AccessDeniedError, match=r"read-only '\.git'"),
            ):
                fs.write(".git/config", "x")
            with pytest.raises(QuotaExceededError, match="quota 16 B 'logs/\\*\\*'"):
                fs.write("logs/b.log", "x" * 7)
            assert not fs.exists(".env")
            assert fs.read(".git/config").content == "[core]\n"
            denials = fs.denials()
            assert [(d.path, d.action) for d in denials] == [
                (".git/config", "truncate"),
                ("logs/a.log", "write"),
                (".git/config", "write"),
                ("logs/b.log", "create"),
            ]
            assert denials[0].cause is not None
            assert denials[0].cause.pid is not None
            assert denials[2].cause == Cause.call("edit_file", "toolu_7")
            assert [d.seq for d in fs.denials(after=3)] == [4]
        listed = cli_ok("rules", str(mountpoint))
        for shown_mode in ("read-only", "hidden", "quota 16 B"):
            assert shown_mode in listed
        shown = cli_ok("blame", str(mountpoint), ".git/config")
        assert "Refused by access rules (2" in shown
        assert "toolu_7" in shown
        assert len(cli_json("denials", str(mountpoint), "logs")) == 2  # type: ignore[arg-type]
        # Changed later: removed, and a tool's own.
        cli_ok("rules", str(mountpoint), "--remove", ".env", "--protect", "src", "--tool", "shell")
        assert (mountpoint / ".env").read_text() == "TOKEN=hunter2\n"
    finally:
        stop(record)
    # Resumed from its store: the rules it had are in force again.
    resumed = cli_json("mount", str(mountpoint), "--store", str(tmp_path / "store"))
    assert isinstance(resumed, dict)
    try:
        with connect(resumed["socket"]) as fs:
            declared = fs.access_rules()
            assert declared.own == (
                Rule(".git"),
                Rule("logs/**", "quota", quota=16),
                Rule("src", tool="shell"),
            )
        with pytest.raises(PermissionError):
            (mountpoint / ".git" / "config").write_text("x")
    finally:
        stop(MountRecord.from_dict(resumed))


def test_fork_rules_and_bad_input(daemons: Daemons) -> None:
    record = daemons.start(durability="none")
    mountpoint = Path(record.mountpoint)
    (mountpoint / "a.txt").write_text("a\n")
    cli_ok("fork", "--of", str(mountpoint), "--name", "review")
    cli_ok("rules", str(mountpoint), "--protect", "a.txt")
    listed = cli_json("rules", str(mountpoint), "--fork", "review", "--protect", "**")
    assert listed == {
        "scope": "fork",
        "own": [{"pattern": "**", "mode": "read-only", "quota": None, "tool": None}],
        "inherited": [{"pattern": "a.txt", "mode": "read-only", "quota": None, "tool": None}],
    }
    fork = mountpoint / ".forks" / "review"
    with pytest.raises(OSError) as caught:
        (fork / "new.txt").write_text("x")
    assert caught.value.errno == errno.EROFS
    (mountpoint / "b.txt").write_text("the workspace writes on\n")
    with connect(record.socket) as fs:
        (denial,) = fs.denials(fork="review")
        assert (denial.path, denial.scope, denial.errno) == ("new.txt", "fork", errno.EROFS)
        assert not fs.denials()
        with pytest.raises(FileNotFoundError):
            fs.access_rules(fork="nope")
    for bad in (
        ["--quota", "logs"],
        ["--protect", "../x"],
        ["--tool", "shell"],
        ["--quota", "a=lots"],
    ):
        result = cli("rules", str(mountpoint), *bad)
        assert result.returncode != 0, bad
        assert "Traceback" not in result.stderr
    assert "a.txt" in cli_ok("rules", str(mountpoint))  # nothing changed by the refusals


def test_fork_rules_are_kept_by_the_store(tmp_path: Path) -> None:
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    store = str(tmp_path / "store")
    made = cli_json("mount", str(mountpoint), "--from", str(source(tmp_path)), "--store", store)
    assert isinstance(made, dict)
    try:
        cli_ok("fork", "--of", str(mountpoint), "--name", "review")
        cli_ok("fork", "--of", str(mountpoint), "--name", "scratch")
        cli_ok("rules", str(mountpoint), "--fork", "review", "--protect", "**")
        cli_ok("rules", str(mountpoint), "--fork", "scratch", "--hide", ".env")
        cli_ok("fork", "--drop", "scratch", "--of", str(mountpoint))  # its rules go with it
    finally:
        stop(MountRecord.from_dict(made))
    # Forks are not kept (docs/forks.md), their rules are: the fork made again under
    # its name is bound by them before it is served.
    resumed = cli_json("mount", str(mountpoint), "--store", store)
    assert isinstance(resumed, dict)
    try:
        cli_ok("fork", "--of", str(mountpoint), "--name", "review")
        cli_ok("fork", "--of", str(mountpoint), "--name", "scratch")
        with connect(resumed["socket"]) as fs:
            assert fs.access_rules(fork="review").own == (Rule("**"),)
            assert fs.access_rules(fork="scratch").own == ()
            assert fs.access_rules().own == ()
        with pytest.raises(OSError) as caught:
            (mountpoint / ".forks" / "review" / "new.txt").write_text("x")
        assert caught.value.errno == errno.EROFS
        cli_ok("rules", str(mountpoint), "--fork", "review", "--remove", "**")
    finally:
        stop(MountRecord.from_dict(resumed))
    again = cli_json("mount", str(mountpoint), "--store", store)
    assert isinstance(again, dict)
    try:
        cli_ok("fork", "--of", str(mountpoint), "--name", "review")
        (mountpoint / ".forks" / "review" / "new.txt").write_text("x")  # removed: kept so
        cli_ok("rules", str(mountpoint), "--fork", "review", "--protect", "src")
    finally:
        stop(MountRecord.from_dict(again))
    kept = Path(store) / "fork-rules"
    assert "src" in kept.read_text()
    kept.write_text('{"review": [{"pattern": "../x"}]}')  # damaged: refused, not ignored
    refused = cli("mount", str(mountpoint), "--store", store)
    assert refused.returncode != 0
    assert "access rules are unreadable" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_hidden_paths_are_in_no_listing_of_changes(daemons: Daemons) -> None:
    record = daemons.start(durability="none")
    mountpoint = Path(record.mountpoint)
    (mountpoint / ".env").write_text("TOKEN=1\n")
    (mountpoint / "app.py").write_text("print(1)\n")
    with connect(record.socket) as fs:
        first = fs.snapshot(tag="first")
        fs.write(".env", "TOKEN=2\n")
        fs.write("app.py", "print(2)\n")
        fs.add_rules([Rule(".env", "hidden")])
        with fs.events() as stream:
            fs.restore(first)
            events = []
            while (event := stream.next_event(1.0)) is not None:
                events.append(event)
        assert [(e.kind, e.paths) for e in events] == [("modified", ("app.py",))]
        fs.write("app.py", "print(3)\n")
        assert fs.diff(first).modified == ("app.py",)
        assert [c.path for c in fs.changes().changes] == ["app.py"]
        assert fs.blame(".env") == []
    assert ".env" not in cli_ok("log", str(mountpoint), "--files")
    assert ".env" not in cli_ok("diff", str(mountpoint), "first")
