"""Try-runs: a command in a fork of the workspace, kept only if accepted."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from support.merges import digest
from workspacefs import InMemoryFilesystem, InvalidArgumentError, ReadOnlyError
from workspacefs.git import WorkspaceMerges
from workspacefs.sandbox import PodmanSandbox, PodmanWorkspace, TryRun

from .conftest import closed_cleanly, container_names

pytestmark = pytest.mark.container

SEED = {
    "src/app.py": b"def main():\n    return 1\n",
    "src/util.py": b"X = 1\n",
    "README.md": b"# project\n",
    ".hidden/config": b"secret = 0\n",
}


def files(fs: InMemoryFilesystem, directory: str = ".") -> dict[str, bytes]:
    """Every file (and symlink, as its target) of ``fs`` by path, hidden ones too."""
    found = {}
    for entry in fs.list(directory):
        path = entry.name if directory == "." else f"{directory}/{entry.name}"
        if entry.is_symlink:
            ino = fs.tree.resolve_path(path)
            assert ino is not None
            found[path] = b"-> " + os.fsencode(fs.tree.readlink(ino))
        elif entry.is_directory:
            found |= files(fs, path)
        else:
            found[path] = fs.read_bytes(path).content
    return found


@pytest.fixture
def box() -> Iterator[PodmanSandbox]:
    fs = InMemoryFilesystem(mount_point="/workspace")
    for path, data in SEED.items():
        fs.write_bytes(path, data)
    with closed_cleanly(PodmanSandbox(fs)) as sandbox:
        yield sandbox
    name = sandbox.name
    assert not [c for c in container_names() if c.startswith(name)], "a try's container stayed"


def test_accept_leaves_exactly_the_tries_tree(box: PodmanSandbox) -> None:
    fs = box.filesystem
    run = box.try_exec(
        "sed -i 's/1/2/' src/app.py && rm src/util.py && mkdir -p build && echo out > build/a "
        "&& ln -s ../README.md build/readme && chmod +x src/app.py && echo done"
    )
    assert run.state == "pending"
    assert run.result.ok, run.result.stderr
    assert run.result.stdout == "done\n"
    changes = run.result.changes
    assert changes.added == ("build/a", "build/readme")
    assert changes.modified == ("src/app.py",)
    assert changes.deleted == ("src/util.py",)
    assert files(fs) == SEED  # nothing yet
    assert box.tries() == {run.id: run}
    assert os.path.isdir(run.path)
    expected = files(run.filesystem)
    run.filesystem.write("late.txt", "after the command")  # not what was reported
    outcome = run.accept()
    assert outcome.applied
    assert outcome.changed == ("build/a", "build/readme", "src/app.py", "src/util.py")
    assert files(fs) == expected
    assert fs.stat("src/app.py").mode & 0o111
    assert fs.read("src/app.py").content == "def main():\n    return 2\n"
    assert run.state in ("accepted",)
    assert box.tries() == {}
    assert not os.path.exists(run.path)
    # The workspace's mount and container see it, and the snapshot undoes it.
    assert box.exec("cat build/a && ls src").stdout == "out\napp.py\n"
    assert outcome.snapshot is not None
    fs.restore(outcome.snapshot)
    assert files(fs) == SEED
    with pytest.raises(InvalidArgumentError):
        run.accept()


def test_reject_leaves_exactly_the_workspace(box: PodmanSandbox) -> None:
    fs = box.filesystem
    before = fs.snapshot()
    run = box.try_exec("echo new > new.txt && rm -r src && echo x >> README.md")
    assert run.result.changes.deleted == ("src/app.py", "src/util.py")
    run.reject()
    assert run.state == "rejected"
    assert files(fs) == SEED
    diff = fs.diff(before)
    assert (diff.added, diff.modified, diff.deleted) == ((), (), ())
    assert not os.path.exists(run.path)
    assert box.exec("ls -A").stdout.split() == [".hidden", "README.md", "src"]
    with pytest.raises(InvalidArgumentError):
        run.accept()


def test_a_try_cannot_change_the_workspace(box: PodmanSandbox) -> None:
    fs = box.filesystem
    run = box.try_exec(
        "rm -rf /workspace/* /workspace/.[!.]*; ls -A /workspace | wc -l; "
        "ls -a /workspace/.forks /workspace/.snapshots 2>&1 | wc -l; "
        "cd /workspace/.. && ls -A workspace | wc -l; "
        "grep -c ' /workspace ' /proc/self/mountinfo; "
        "touch /workspace/../outside 2>/dev/null; echo end"
    )
    lines = run.result.stdout.split()
    assert lines[0] == "0"  # the try's /workspace is empty ...
    assert lines[2] == "0"
    assert lines[3] == "1"  # ... and it is one bind mount: the fork's directory
    assert lines[-1] == "end"
    assert len(run.result.changes.deleted) == len(SEED)
    assert files(fs) == SEED  # ... while the workspace is whole
    assert box.exec("ls -A | wc -l").stdout.strip() == "3"
    run.reject()
    assert files(fs) == SEED


def test_accept_merges_when_the_workspace_moved(box: PodmanSandbox) -> None:
    fs = box.filesystem
    run = box.try_exec("echo try > try.txt && sed -i 's/1/2/' src/app.py")
    fs.write("api.txt", "api")  # the workspace moved on meanwhile
    box.exec("echo 'X = 3' > src/util.py")
    outcome = run.accept()
    assert outcome.applied
    assert outcome.changed == ("src/app.py", "try.txt")
    assert outcome.snapshot is not None
    assert outcome.snapshot.tag == "before-merge"
    got = files(fs)
    assert got["api.txt"] == b"api"
    assert got["src/util.py"] == b"X = 3\n"
    assert got["try.txt"] == b"try\n"
    assert got["src/app.py"] == b"def main():\n    return 2\n"


def test_tries_accepted_one_after_another_each_merge_from_their_own_fork(
    box: PodmanSandbox,
) -> None:
    """Each try forks the workspace as it is then, so the second try's merge starts
    from the first's result: a file the first made and the second edits merges clean."""
    fs = box.filesystem
    first = box.try_exec("printf 'a\\nb\\n' > notes.txt")
    fs.write("api-1.txt", "api")  # the workspace moves on: a three-way merge, not a fast-forward
    assert first.accept().applied
    second = box.try_exec("printf 'a\\nb\\nc\\n' > notes.txt")
    fs.write("api-2.txt", "api")
    outcome = second.accept()
    assert outcome.conflicts == ()
    assert outcome.changed == ("notes.txt",)
    got = files(fs)
    assert got["notes.txt"] == b"a\nb\nc\n"
    assert (got["api-1.txt"], got["api-2.txt"]) == (b"api", b"api")


def test_a_conflicting_accept_applies_nothing(box: PodmanSandbox) -> None:
    fs = box.filesystem
    run = box.try_exec("sed -i 's/return 1/return 2/' src/app.py && echo t > t.txt")
    fs.write("src/app.py", "def main():\n    return 3\n")
    outcome = run.accept()
    assert not outcome.applied
    assert [(c.path, c.kind) for c in outcome.conflicts] == [("src/app.py", "content")]
    assert run.state == "pending"
    assert not fs.exists("t.txt")
    assert fs.read("src/app.py").content == "def main():\n    return 3\n"
    run.reject()
    assert box.tries() == {}


def test_api_writes_during_a_try_are_kept(box: PodmanSandbox) -> None:
    fs = box.filesystem
    done: list[TryRun] = []
    errors: list[BaseException] = []

    def run_try() -> None:
        try:
            # It ends once the test has written through the API (``go``, below).
            done.append(box.try_exec("until [ -e go ]; do sleep 0.01; done; echo try > try.txt"))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run_try)
    thread.start()
    fork_dir = os.path.join(box.mountpoint, ".forks", "try-1")
    written = 0
    while thread.is_alive():
        if written < 200 and os.path.isdir(fork_dir):  # forked: write while it runs
            fs.write(f"api/{written}.txt", str(written))
            written += 1
            if written == 20:
                with open(os.path.join(fork_dir, "go"), "w"):
                    pass
    thread.join()
    assert not errors, errors
    assert written > 0
    outcome = done[0].accept()
    assert outcome.applied
    assert fs.read("try.txt").content == "try\n"
    for index in range(written):
        assert fs.read(f"api/{index}.txt").content == str(index)


def test_the_try_sees_the_sandboxs_container_but_changes_nothing_of_it(
    box: PodmanSandbox,
) -> None:
    box.exec("echo tool > /usr/local/bin/made-here && echo a > /etc/sandbox-note")
    run = box.try_exec("cat /usr/local/bin/made-here && echo b > /etc/sandbox-note")
    assert run.result.stdout == "tool\n"
    run.accept()
    assert box.exec("cat /etc/sandbox-note").stdout == "a\n"  # only the workspace is kept


def test_context_manager_and_close_reject_what_is_pending(box: PodmanSandbox) -> None:
    fs = box.filesystem
    with box.try_exec("echo a > a.txt") as run:
        assert run.state == "pending"
    assert run.state in ("rejected",)
    with box.try_exec("echo b > b.txt") as accepted:
        accepted.accept()
    assert accepted.state == "accepted"
    left = box.try_exec("echo c > c.txt", cwd="src")
    assert left.result.changes.added == ("src/c.txt",)
    box.close()
    assert left.state in ("rejected",)
    assert sorted(files(fs)) == sorted([*SEED, "b.txt"])


def test_tries_are_refused_where_they_cannot_be_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    import workspacefs.sandbox._sandbox as sandbox_module

    frozen = InMemoryFilesystem(mount_point="/workspace", read_only=True)
    with PodmanSandbox(frozen) as box, pytest.raises(ReadOnlyError):
        box.try_exec("true")
    monkeypatch.setattr(sandbox_module, "MAX_PENDING_TRIES", 1)
    with PodmanSandbox() as box:
        first = box.try_exec("true")
        with pytest.raises(OSError, match="wait for a decision"):
            box.try_exec("true")
        first.reject()
        box.try_exec("true").reject()


def test_dry_runs_through_the_tools() -> None:
    with PodmanWorkspace(dry_run=True) as section:
        fs = section.filesystem
        fs.write("notes.md", "keep\n")
        context = section.context()
        schema = next(s for s in section.tools.anthropic_schemas() if s["name"] == "shell")
        assert "dry_run" in schema["input_schema"]["properties"]
        assert {"accept_try", "reject_try"} <= set(section.tools.names)
        result = section.tools.call(
            "shell", {"command": "rm notes.md && echo x > x.txt", "dry_run": True}, context=context
        )
        assert result.success
        assert result.message.startswith("Dry run try-1: the command ran in a copy")
        assert "It would change 2 files in the workspace: 1 added, 1 deleted." in result.message
        assert 'call accept_try with try_id "try-1"' in result.message
        assert fs.exists("notes.md")
        missing = section.tools.call("accept_try", {"try_id": "try-9"}, context=context)
        assert not missing.success
        assert "pending: try-1" in missing.message
        accepted = section.tools.call("accept_try", {"try_id": "try-1"}, context=context)
        assert accepted.success, accepted.message
        assert accepted.message.startswith("Accepted try-1: the workspace now has its changes")
        assert not fs.exists("notes.md")
        assert fs.read("x.txt").content == "x\n"
        again = section.tools.call(
            "shell", {"command": "touch y", "dry_run": True}, context=context
        )
        assert "try-2" in again.message
        rejected = section.tools.call("reject_try", {"try_id": "try-2"}, context=context)
        assert rejected.success
        assert not fs.exists("y")
        plain = section.tools.call("shell", {"command": "touch z"}, context=context)
        assert plain.success
        assert fs.exists("z")


def state_of(run: TryRun) -> str:
    """Where ``run`` stands (read anew each time: mypy keeps a property narrowed)."""
    return run.state


def test_an_accept_with_nothing_left_to_merge_accepts(box: PodmanSandbox) -> None:
    """The workspace got the try's change meanwhile: the merge has nothing to change,
    and the try is accepted (not left pending, as a conflict would leave it)."""
    fs = box.filesystem
    run = box.try_exec("echo same > same.txt")
    fs.write("same.txt", "same\n")
    outcome = run.accept()
    assert (outcome.applied, outcome.conflicts) == (False, ())
    assert run.state == "accepted"
    assert box.tries() == {}


def test_a_conflicting_accept_held_open_and_resolved_by_the_tools() -> None:
    with PodmanWorkspace(dry_run=True) as section:
        fs = section.filesystem
        fs.write("src/app.py", "def main():\n    return 1\n")
        context = section.context()
        assert {"conflicts", "resolve", "abort_merge"} <= set(section.tools.names)
        tried = section.tools.call(
            "shell",
            {
                "command": "sed -i 's/return 1/return 2/' src/app.py && echo t > t.txt",
                "dry_run": True,
            },
            context=context,
        )
        assert tried.success, tried.message
        fs.write("src/app.py", "def main():\n    return 3\n")
        before = digest(fs)
        held = section.tools.call("accept_try", {"try_id": "try-1", "hold": True}, context=context)
        assert held.success, held.message
        assert "src/app.py: content conflict" in held.message
        assert "    ours:\n          return 3\n    theirs:\n          return 2" in held.message
        assert "the merge is held open" in held.message
        assert held.value is not None
        assert held.value.held is not None
        assert held.value.held.source == "try-1"
        assert digest(fs) == before
        (run,) = section.sandbox.tries().values()
        assert state_of(run) == "pending"

        dropped = section.tools.call("abort_merge", {}, context=context)
        assert dropped.success, dropped.message
        assert digest(fs) == before
        assert state_of(run) == "pending"

        section.tools.call("accept_try", {"try_id": "try-1", "hold": True}, context=context)
        done = section.tools.call("resolve", {"take": {"src/app.py": "theirs"}}, context=context)
        assert done.success, done.message
        assert state_of(run) == "accepted"
        assert section.sandbox.tries() == {}
        assert fs.read("src/app.py").content == "def main():\n    return 2\n"
        assert fs.read("t.txt").content == "t\n"


def test_rejecting_a_try_aborts_its_merge_held_open(box: PodmanSandbox) -> None:
    fs = box.filesystem
    run = box.try_exec("sed -i 's/return 1/return 2/' src/app.py")
    fs.write("src/app.py", "def main():\n    return 3\n")
    before = digest(fs)
    outcome = run.accept(hold=True)
    assert outcome.held is not None
    merges = WorkspaceMerges.of(fs)
    assert merges.open is not None
    run.reject()
    assert merges.open is None
    assert digest(fs) == before
