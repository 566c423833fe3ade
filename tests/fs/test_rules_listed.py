"""Hidden paths stay out of every door that lists paths (diff, changes, history, blame,
the change feed), and the change feed carries each denial as a ``denied`` event."""

from __future__ import annotations

import errno

import pytest

from workspacefs import (
    AccessDeniedError,
    Cause,
    FilesystemSnapshot,
    InMemoryFilesystem,
    Rule,
    attributed,
)
from workspacefs.fs import ChangeEvent, ChangeStream

CALL = Cause.call("write_file", "toolu_01")
HIDDEN = Rule(".env", "hidden")
SECRET = "secrets/**"


def drain(stream: ChangeStream, quiet: float = 0.5) -> list[ChangeEvent]:
    found = []
    while (event := stream.next_event(quiet)) is not None:
        found.append(event)
    return found


def changed_in_secret() -> tuple[InMemoryFilesystem, FilesystemSnapshot]:
    """A workspace whose hidden paths changed after its first snapshot, as did a shown one."""
    fs = InMemoryFilesystem()
    fs.write(".env", "TOKEN=1\n")
    fs.write("secrets/key", "k1\n")
    fs.write("app.py", "print(1)\n")
    first = fs.snapshot(tag="first")
    fs.write(".env", "TOKEN=2\n")
    fs.write("secrets/new", "k2\n")
    fs.delete("secrets/key")
    fs.write("app.py", "print(2)\n")
    fs.snapshot(tag="second")
    fs.write(".env", "TOKEN=3\n")
    fs.write("app.py", "print(3)\n")
    fs.rules.add(HIDDEN, Rule(SECRET, "hidden"))
    return fs, first


def test_diff_leaves_hidden_paths_out() -> None:
    fs, first = changed_in_secret()
    diff = fs.diff(first)
    assert (diff.added, diff.modified, diff.deleted) == ((), ("app.py",), ())
    (second,) = [s for s in fs.snapshots() if s.tag == "second"]
    between = fs.diff(first, second)
    assert (between.added, between.modified, between.deleted) == ((), ("app.py",), ())


def test_changes_and_history_leave_hidden_paths_out() -> None:
    fs, _ = changed_in_secret()
    assert [c.path for c in fs.changes().changes] == ["app.py"]
    steps = list(fs.history())
    assert [[c.path for c in step.changes] for step in steps] == [
        ["app.py"],
        ["app.py"],
        ["app.py"],
    ]


def test_blame_of_a_hidden_path_finds_nothing() -> None:
    fs, _ = changed_in_secret()
    assert fs.blame(".env") == []
    assert fs.blame("secrets/new") == []
    assert len(fs.blame("app.py")) == 3


def test_a_rule_for_one_tool_hides_the_paths_from_its_calls_alone() -> None:
    fs, first = changed_in_secret()
    fs.rules.set([Rule(".env", "hidden", tool="shell")])
    with attributed(Cause.call("shell", "toolu_02")):
        assert fs.diff(first).modified == ("app.py",)
    assert fs.diff(first).modified == (".env", "app.py")


def test_the_store_and_git_still_record_hidden_paths() -> None:
    # What the workspace records of itself (its history, kept by the store and in git)
    # is not a reader's listing: hiding a path must not erase its history.
    fs, _ = changed_in_secret()
    paths = {c.path for step in fs.history(everything=True) for c in step.changes}
    assert {".env", "secrets/new", "secrets/key", "app.py"} <= paths


def test_the_change_feed_leaves_hidden_paths_out() -> None:
    fs, first = changed_in_secret()
    with fs.events() as stream:
        fs.restore(first)  # the owner's bulk change: not bound, its hidden paths not shown
        events = drain(stream)
    assert [(e.kind, e.paths) for e in events] == [("modified", ("app.py",))]


def test_a_denial_is_an_event_of_the_change_feed() -> None:
    fs = InMemoryFilesystem()
    fs.write(".git/config", "[core]\n")
    rule = Rule(".git")
    fs.rules.add(rule)
    with fs.events() as stream:
        with attributed(CALL), pytest.raises(AccessDeniedError):
            fs.write(".git/config", "x")
        fs.write("app.py", "x\n")
        events = drain(stream)
    assert [(e.kind, e.paths) for e in events] == [
        ("denied", (".git/config",)),
        ("added", ("app.py",)),
    ]
    denied = events[0]
    assert denied.causes == (CALL,)
    assert denied.denial == fs.denials()[-1]
    assert denied.denial is not None
    assert (denied.denial.rule, denied.denial.action, denied.denial.errno) == (
        rule,
        "write",
        errno.EACCES,
    )
    assert ChangeEvent.from_dict(denied.to_dict()) == denied
    assert "denied write of .git/config by write_file call toolu_01" in denied.describe()


def test_a_fork_s_denials_are_in_its_own_feed() -> None:
    fs = InMemoryFilesystem()
    fork = fs.fork()
    fork.rules.add(Rule("**"))
    with fork.events() as forked, fs.events() as origin:
        with pytest.raises(AccessDeniedError):
            fork.write("a", "x")
        assert [e.kind for e in drain(forked)] == ["denied"]
        assert drain(origin, 0.2) == []
