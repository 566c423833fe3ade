"""An agent's session in the container: every command's changes, seen at once by the API.

Each command's ``changes`` is checked against a diff computed independently:
the whole tree read through the API before and after, compared file by file.
"""

from __future__ import annotations

import io
import tarfile

import pytest

from support.polling import eventually
from workspacefs import FilesystemDiff, InMemoryFilesystem
from workspacefs.sandbox import ExecResult, PodmanSandbox

pytestmark = pytest.mark.container

GIT = (
    "git -c user.name=agent -c user.email=agent@example.invalid -c init.defaultBranch=main "
    "-c gc.auto=0"
)


def tree_state(fs: InMemoryFilesystem, path: str = ".") -> dict[str, tuple[bytes, int]]:
    """Every file and symlink in the workspace: content and mode, read through the API."""
    state = {}
    for entry in fs.list(path):
        if entry.is_directory and not entry.is_symlink:
            state.update(tree_state(fs, entry.path))
            continue
        info = fs.stat(entry.path)
        content = b"" if entry.is_symlink else fs.read_bytes(entry.path).content
        state[entry.path.removeprefix("/workspace/")] = (content, info.mode)
    return state


def expected_changes(
    before: dict[str, tuple[bytes, int]], after: dict[str, tuple[bytes, int]]
) -> FilesystemDiff:
    return FilesystemDiff(
        added=tuple(sorted(after.keys() - before.keys())),
        modified=tuple(sorted(p for p in before.keys() & after.keys() if before[p] != after[p])),
        deleted=tuple(sorted(before.keys() - after.keys())),
    )


def run(box: PodmanSandbox, command: str) -> ExecResult:
    """Run a command that must succeed; check its changes against the API's own view."""
    before = tree_state(box.filesystem)
    result = box.exec(command)
    assert result.ok, (command, result.exit_code, result.stdout, result.stderr)
    expected = expected_changes(before, tree_state(box.filesystem))
    changes = result.changes
    assert (changes.added, changes.modified, changes.deleted) == (
        expected.added,
        expected.modified,
        expected.deleted,
    ), command
    return result


def test_agent_session(sandbox: PodmanSandbox) -> None:
    fs = sandbox.filesystem
    fs.write("/workspace/src/calc.py", "def add(a, b):\n    return a + b\n")
    fs.write(
        "/workspace/tests/test_calc.py",
        "import sys, unittest\nsys.path.insert(0, 'src')\nfrom calc import add\n\n"
        "class T(unittest.TestCase):\n    def test_add(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n\nunittest.main()\n",
    )

    created = run(sandbox, "mkdir -p notes && printf 'plan: add\\ntodo: sub\\n' > notes/plan.txt")
    assert created.changes.added == ("notes/plan.txt",)
    assert fs.read("/workspace/notes/plan.txt").content == "plan: add\ntodo: sub\n"

    edited = run(sandbox, "sed -i 's/todo: sub/done: sub/' notes/plan.txt")
    assert edited.changes.modified == ("notes/plan.txt",)
    assert not edited.changes.added
    assert not edited.changes.deleted
    assert "done: sub" in fs.read("notes/plan.txt").content

    committed = run(sandbox, f"{GIT} init -q && {GIT} add -A && {GIT} commit -qm initial")
    assert "calc.py" not in " ".join(committed.changes.modified)
    assert all(path.startswith(".git/") for path in committed.changes.added)
    assert ".git/HEAD" in committed.changes.added
    log = run(sandbox, f"{GIT} log --format=%s && {GIT} status --porcelain")
    assert log.stdout == "initial\n"
    assert not log.changes.added
    assert not log.changes.deleted

    tested = run(sandbox, "python3 tests/test_calc.py")
    assert "OK" in tested.stderr
    assert any(p.startswith("src/__pycache__/calc.") for p in tested.changes.added)

    # The API breaks it (a new size too: Python trusts a .pyc whose source kept size and second).
    fs.write("/workspace/src/calc.py", "def add(a, b):\n    return a - b  # wrong\n")
    failing = sandbox.exec("python3 tests/test_calc.py")
    assert failing.exit_code == 1
    assert "FAILED" in failing.stderr
    assert failing.changes.modified == ("src/__pycache__/" + _pyc(fs),)  # recompiled

    packed = run(sandbox, "tar czf notes.tgz notes && tar tzf notes.tgz")
    assert packed.changes.added == ("notes.tgz",)
    with tarfile.open(fileobj=io.BytesIO(fs.read_bytes("notes.tgz").content)) as archive:
        assert sorted(archive.getnames()) == ["notes", "notes/plan.txt"]

    removed = run(sandbox, "rm -r notes && mv src/calc.py src/calculator.py")
    assert removed.changes.deleted == ("notes/plan.txt", "src/calc.py")
    assert removed.changes.added == ("src/calculator.py",)

    # Any command can be undone: its before snapshot is tagged and kept.
    assert removed.before.tag is not None
    assert removed.before.tag.endswith("-before")
    sandbox.restore(removed.before)
    back = sandbox.exec("cat notes/plan.txt && ls src")
    assert back.stdout == "plan: add\ndone: sub\n__pycache__\ncalc.py\n"
    assert not back.changes.changed


def _pyc(fs: InMemoryFilesystem) -> str:
    (name,) = [e.name for e in fs.list("src/__pycache__") if e.name.startswith("calc.")]
    return name


def test_interleaved_container_and_api_writes_stay_coherent(sandbox: PodmanSandbox) -> None:
    fs = sandbox.filesystem
    for i in range(8):
        fs.write("/workspace/counter.txt", f"api {i}\n")
        result = sandbox.exec(
            f"cat counter.txt; echo 'container {i}' >> counter.txt; echo {i} > c{i}.txt"
        )
        assert result.stdout == f"api {i}\n"
        assert fs.read("counter.txt").content == f"api {i}\ncontainer {i}\n"
        assert result.changes.added == (f"c{i}.txt",)
        assert result.changes.modified == ("counter.txt",)
        fs.delete(f"c{i}.txt")
        assert sandbox.exec(f"test ! -e c{i}.txt").ok
    assert sorted(e.name for e in fs.list(".")) == ["counter.txt"]


def test_restore_is_seen_inside_and_open_files_keep_working(sandbox: PodmanSandbox) -> None:
    fs = sandbox.filesystem
    empty = fs.snapshot(tag="empty")
    fs.write("/workspace/data.txt", "version two\n")
    # A process in its own session outlives its exec; it opens the file now
    # and reads it after the restore has removed it from the tree.
    started = sandbox.exec(
        "setsid sh -c 'exec 3< /workspace/data.txt; touch /tmp/opened; sleep 1.5; "
        "cat <&3 > /tmp/seen; test -e /workspace/data.txt && echo present >> /tmp/seen; "
        "touch /tmp/done' > /dev/null 2>&1 < /dev/null & "
        "while [ ! -e /tmp/opened ]; do sleep 0.05; done"
    )
    assert started.ok
    sandbox.restore(empty)
    assert not fs.exists("data.txt")
    assert sandbox.exec("test ! -e data.txt && ls -A").stdout == ""
    eventually(
        lambda: sandbox.exec("test -e /tmp/done").ok,
        20,
        "the background reader finishes",
        interval=0.2,
    )
    # The open descriptor still read the file that was there when it was opened.
    assert sandbox.exec("cat /tmp/seen").stdout == "version two\n"
