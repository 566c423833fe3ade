"""A container sees its own tree only: not ``/.snapshots``, not ``/.forks``, not
another fork, whether it is bound to the workspace or to a try's fork."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.own_tree import escape_attempts, probe
from workspacefs import InMemoryFilesystem
from workspacefs.sandbox import PodmanSandbox

from .conftest import closed_cleanly

pytestmark = pytest.mark.container


@pytest.fixture
def box() -> Iterator[PodmanSandbox]:
    """A sandbox whose workspace had a secret once: it is in snapshot ``old`` only."""
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("secret.env", "API_KEY=hunter2\n")
    fs.write("src/app.py", "print(1)\n")
    fs.snapshot(tag="old")
    fs.delete("secret.env")
    with closed_cleanly(PodmanSandbox(fs)) as sandbox:
        yield sandbox


def test_the_workspaces_container_reaches_no_snapshot_and_no_fork(box: PodmanSandbox) -> None:
    pending = box.try_exec("echo mine > mine.txt")
    assert pending.result.ok, pending.result.stderr
    reached = box.exec(probe(escape_attempts("/workspace", "old", "try-1", "mine.txt")))
    assert reached.stdout.split("\n")[:-1] == []
    assert not pending.filesystem.exists("injected")
    assert not pending.filesystem.exists("made")
    assert pending.result.changes.added == ("mine.txt",)
    outcome = pending.accept()
    assert outcome.changed == ("mine.txt",)
    # Accepts and restores change the workspace's root under the cover: it stays.
    assert outcome.snapshot is not None
    box.restore(outcome.snapshot)
    kept = box.try_exec("echo kept > kept.txt")
    again = box.exec(probe(escape_attempts("/workspace", "old", "try-2", "kept.txt")))
    assert again.stdout.split("\n")[:-1] == []
    assert kept.accept().changed == ("kept.txt",)


def test_a_try_reaches_neither_the_workspace_nor_another_fork(box: PodmanSandbox) -> None:
    first = box.try_exec("echo first > first.txt")
    second = box.try_exec(probe(escape_attempts("/workspace", "old", "try-1", "first.txt")))
    assert second.result.stdout.split("\n")[:-1] == []
    # what it made is its own: nothing named .forks or .snapshots, nothing in the first try
    assert {".forks", ".snapshots"}.isdisjoint(e.name for e in second.filesystem.list("."))
    assert sorted(e.name for e in first.filesystem.list(".")) == ["first.txt", "src"]
    second.reject()
    assert first.accept().changed == ("first.txt",)


def test_a_background_job_cannot_write_into_a_pending_try(box: PodmanSandbox) -> None:
    # An earlier command leaves a job that writes into every fork it finds.
    started = box.exec(
        "setsid sh -c 'while :; do for d in /workspace/.forks/*/; do "
        'echo injected > "$d"injected; done; sleep 0.01; done\' >/dev/null 2>&1 </dev/null &'
    )
    assert started.ok, started.stderr
    run = box.try_exec("sleep 0.5; echo own > own.txt")
    assert run.result.changes.added == ("own.txt",)
    assert not run.filesystem.exists("injected")
    assert run.accept().changed == ("own.txt",)
