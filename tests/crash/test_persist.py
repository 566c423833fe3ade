"""SIGKILL the daemon while ``workspacefs persist`` writes the workspace to git: the
store stays consistent and resumes with everything acknowledged, the repository
passes ``git fsck``, and the next persist writes the workspace whole."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pygit2
import pytest

from support.daemon import SOURCE_ROOT, cli_json, scratch_dir
from support.polling import eventually
from workspacefs.store import read_journal

from .apps import git_fsck, tree_files
from .files import Files, read_files
from .harness import LONG_FORM, Workspace

FILES = 1100
"""Small files in the tree: more than a persist writes as loose objects (it writes a
pack of its own then)."""


def rewrite(mountpoint: Path, files: dict[str, bytes], rng: random.Random, count: int) -> None:
    """Write ``count`` of the small files anew through the mount (every one the first
    time, and four of 1 MiB), then fsync: acknowledged."""
    names = [f"d{n % 30}/f{n}.txt" for n in range(FILES)]
    chosen = rng.sample(names, count) if files else [*names, *(f"big{n}.bin" for n in range(4))]
    for name in chosen:
        data = rng.randbytes(1 << 20 if name.startswith("big") else rng.randint(50, 6000))
        (mountpoint / name).parent.mkdir(exist_ok=True)
        (mountpoint / name).write_bytes(data)
        files[name] = data
    with open(mountpoint / chosen[0], "rb") as synced:
        os.fsync(synced.fileno())


def persist(mountpoint: Path) -> float:
    """``workspacefs persist``; how long it took."""
    started = time.monotonic()
    cli_json("persist", str(mountpoint))
    return time.monotonic() - started


def persisted_files(repository: Path) -> dict[str, bytes]:
    """The files of the newest snapshot persisted in ``repository``."""
    repo = pygit2.Repository(str(repository))
    refs = [r for r in repo.references if "/snapshots/" in r]
    newest = max(refs, key=lambda r: int(r.rsplit("/", 1)[1]))
    return tree_files(repo.references[newest].peel(pygit2.Commit).tree)


def kill_persisting(workspace: Workspace, delay: float) -> None:
    """Start ``workspacefs persist``, and SIGKILL the daemon ``delay`` seconds after
    it began (its snapshot reached the journal: git is written next)."""
    journal = workspace.store / "journal"

    def journalled() -> int:  # the last record's number (segments grow in zeros ahead)
        return read_journal(str(journal)).last_sequence

    before = journalled()
    command = [sys.executable, "-m", "workspacefs.cli", "persist", str(workspace.mountpoint)]
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        eventually(lambda: journalled() > before, 30, "persist began", interval=0.001)
        time.sleep(delay)
        workspace.kill()
    workspace.detach()


@pytest.mark.parametrize("kills", [1, pytest.param(6, marks=[pytest.mark.slow, LONG_FORM])])
def test_kill_during_persist(rng: random.Random, kills: int) -> None:
    with scratch_dir() as scratch:
        name = f"persist-{uuid.uuid4().hex[:8]}"
        workspace = Workspace(scratch / "ws", name, "--interval", "0.2")
        mountpoint, files = workspace.mountpoint, dict[str, bytes]()
        repository = Path(workspace.mount().repository or "")
        try:
            rewrite(mountpoint, files, rng, FILES)
            takes = persist(mountpoint)
            for _ in range(kills):
                # Many files: one pack written by workspacefs; a few: loose objects by libgit2.
                rewrite(mountpoint, files, rng, rng.choice([40, FILES]))
                kill_persisting(workspace, rng.uniform(0, takes))
                workspace.check_store()
                workspace.mount()
                found: Files = read_files(mountpoint)
                assert {p: d for p, d in found.items() if isinstance(d, bytes)} == files
                if repository.exists():
                    git_fsck(repository)
                takes = persist(mountpoint)
                git_fsck(repository)
                assert persisted_files(repository) == files
        finally:
            workspace.stop()


def test_what_a_killed_persist_left_does_not_stop_the_next_nor_stay(tmp_path: Path) -> None:
    # A kill while libgit2 updated a snapshot's refs leaves their lock files (made
    # with O_EXCL, renamed into place once written): git and libgit2 then refuse those
    # refs for good. The store's own repository is written by its daemon alone.
    with scratch_dir() as scratch:
        workspace = Workspace(scratch / "ws", f"locked-{uuid.uuid4().hex[:8]}")
        record = workspace.mount()
        repository = Path(record.repository or "")
        try:
            (workspace.mountpoint / "a.txt").write_text("first\n")
            persist(workspace.mountpoint)
            workspace.kill()
            workspace.detach()
            namespace = repository / "refs" / "workspacefs" / record.workspace_id
            for kind in ("meta", "snapshots"):
                (namespace / kind / "2.lock").write_text("")  # cut short before the rename
            partial = repository / "objects" / "pack" / "tmp_pack_Xy12ab"
            partial.write_bytes(b"PACK" + bytes(1 << 20))  # a pack cut short
            workspace.mount()
            assert not partial.exists()
            (workspace.mountpoint / "b.txt").write_text("second\n")
            persist(workspace.mountpoint)
            git_fsck(repository)
            assert persisted_files(repository) == {"a.txt": b"first\n", "b.txt": b"second\n"}
        finally:
            workspace.stop()
