"""The workloads whose state is an application's: git commits (checked with ``git
fsck``) and sqlite transactions (checked with ``PRAGMA integrity_check``)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import sqlite3
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from .history import History, Step

# -- git init, add, commit -------------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Crash Test",
    "GIT_AUTHOR_EMAIL": "crash@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "Crash Test",
    "GIT_COMMITTER_EMAIL": "crash@example.com",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def git(repository: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Real git in ``repository``, isolated from the user's configuration."""
    return subprocess.run(["git", *args], cwd=repository, env={**os.environ, **GIT_ENV},
                          capture_output=True, text=True, check=check)  # fmt: skip


def git_fsck(repository: Path) -> None:
    """``git fsck --full`` finds nothing wrong in ``repository``."""
    fsck = git(repository, "fsck", "--full", "--no-progress", check=False)
    assert fsck.returncode == 0, f"git fsck: {fsck.stdout}{fsck.stderr}"
    for problem in ("error", "broken", "missing"):
        assert problem not in fsck.stderr, fsck.stderr


def tree_files(tree: pygit2.Tree) -> dict[str, bytes]:
    """Every file of a git tree: path -> bytes."""
    files: dict[str, bytes] = {}
    pending: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while pending:
        prefix, current = pending.pop()
        for entry in current:
            name = prefix + str(entry.name)
            if isinstance(entry, pygit2.Tree):
                pending.append((name + "/", entry))
            else:
                assert isinstance(entry, pygit2.Blob)
                files[name] = entry.data
    return files


@dataclass(frozen=True, slots=True)
class Commits:
    """What a repository holds: how many commits lead to HEAD (their subjects are
    ``step N`` down to ``step 1``: -1 if not), and the files of HEAD."""

    count: int
    files: dict[str, bytes] = field(default_factory=dict)


class GitWorkload:
    """``git init``, then commits: step N writes a file (and every fifth step deletes
    one), ``git add -A`` and ``git commit``. Under ``always`` a commit that returned is
    acknowledged. Checked with ``git fsck --full`` and ``git status``; HEAD must be a
    commit of the history with exactly the files recorded for it."""

    ROUND = 12

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.history = History[int](0)
        self.trees: list[dict[str, bytes]] = [{}]

    def setup(self, mountpoint: Path) -> None:
        (mountpoint / "repo").mkdir()
        git(mountpoint / "repo", "init", "-q", "-b", "main")

    def kill_point(self) -> tuple[int, float]:
        return self.history.state + self.rng.randrange(self.ROUND - 1), self.rng.uniform(0, 0.03)

    def round(self, mountpoint: Path) -> None:
        repository = mountpoint / "repo"
        for _ in range(self.ROUND):
            number = self.history.state + 1
            files = dict(self.trees[number - 1])
            files[f"src/f{number % 6}.txt"] = f"step {number}\n".encode() * (number % 50 + 1)
            if number % 5 == 0:
                files.pop(f"src/f{(number + 3) % 6}.txt", None)
            del self.trees[number:]
            self.trees.append(files)
            self.history.plan(number)
            for name in {f"src/f{n}.txt" for n in range(6)}:
                path = repository / name
                if name in files:
                    path.parent.mkdir(exist_ok=True)
                    path.write_bytes(files[name])
                elif path.exists():
                    path.unlink()
            git(repository, "add", "-A")
            git(repository, "commit", "-q", "-m", f"step {number}")
            self.history.end()
            self.history.acknowledge()  # `always`: on disk before each request returned

    def observe(self, mountpoint: Path) -> Commits:
        repository = mountpoint / "repo"
        git_fsck(repository)
        status = git(repository, "status", "--porcelain", check=False)
        assert status.returncode == 0, f"git status: {status.stderr}"
        repo = pygit2.Repository(str(repository))
        if repo.head_is_unborn:
            return Commits(0)
        subjects = git(repository, "log", "--format=%s").stdout.split("\n")[:-1]
        count = len(subjects)
        if subjects != [f"step {n}" for n in range(count, 0, -1)]:
            return Commits(-1)
        return Commits(count, tree_files(repo.head.peel(pygit2.Commit).tree))

    def matches(self, observed: Commits, step: Step[int], following: Step[int] | None) -> bool:
        return observed.count == step.state and observed.files == self.trees[step.state]

    def describe(self, observed: Commits, state: int) -> str:
        return f"HEAD is commit {observed.count} holding {sorted(observed.files)}"

    def recovered(self, mountpoint: Path, step: int) -> None:
        # A git killed midway leaves its lock files; git asks the user to remove them.
        for lock in (mountpoint / "repo" / ".git").rglob("*.lock"):
            lock.unlink()
        del self.trees[step + 1 :]


# -- sqlite transactions ----------------------------------------------------------------------


def payload(row: int) -> bytes:
    """Row ``row``'s payload: up to 1.3 KB, so rows span pages."""
    return hashlib.sha256(str(row).encode()).digest() * (row % 40 + 1)


class SqliteWorkload:
    """Single-insert transactions (row N holds ``payload(N)``), each a commit with an
    fsync (``synchronous=FULL`` in WAL mode, ``EXTRA`` in rollback mode, which also
    syncs the directory once the journal is deleted): acknowledged when it returns.
    Checked with ``PRAGMA integrity_check``; the rows must be exactly 1..N."""

    ROUND = 200

    def __init__(self, rng: random.Random, journal_mode: str) -> None:
        self.rng = rng
        self.journal_mode = journal_mode
        self.history = History[int](0)

    def connect(self, mountpoint: Path) -> sqlite3.Connection:
        database = sqlite3.connect(mountpoint / "app.db", isolation_level=None, timeout=0)
        # Exclusive locking: WAL without a shared-memory index (-shm is mapped, and a
        # mapped page of a dead mount is SIGBUS to this process).
        database.execute("PRAGMA locking_mode=EXCLUSIVE")
        mode = database.execute(f"PRAGMA journal_mode={self.journal_mode}").fetchone()[0]
        assert mode == self.journal_mode.lower()
        sync = "FULL" if self.journal_mode == "WAL" else "EXTRA"
        database.execute(f"PRAGMA synchronous={sync}")
        return database

    def setup(self, mountpoint: Path) -> None:
        with contextlib.closing(self.connect(mountpoint)) as database:
            database.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, payload BLOB NOT NULL)")

    def kill_point(self) -> tuple[int, float]:
        return self.history.state + self.rng.randrange(self.ROUND - 1), self.rng.uniform(0, 0.005)

    def round(self, mountpoint: Path) -> None:
        database = self.connect(mountpoint)
        try:
            for _ in range(self.ROUND):
                row = self.history.plan(self.history.state + 1)
                database.execute("INSERT INTO t VALUES (?, ?)", (row, payload(row)))
                self.history.end()
                self.history.acknowledge()  # the commit returned: it was synced
        finally:
            with contextlib.suppress(sqlite3.Error):
                database.close()

    def observe(self, mountpoint: Path) -> int:
        with contextlib.closing(self.connect(mountpoint)) as database:
            check = database.execute("PRAGMA integrity_check").fetchall()
            assert check == [("ok",)], check
            rows = database.execute("SELECT n, payload FROM t ORDER BY n").fetchall()
        if rows != [(n, payload(n)) for n in range(1, len(rows) + 1)]:
            return -1
        return len(rows)

    def matches(self, observed: int, step: Step[int], following: Step[int] | None) -> bool:
        return observed == step.state

    def describe(self, observed: int, state: int) -> str:
        return "rows not 1..N" if observed < 0 else f"rows 1..{observed}"

    def recovered(self, mountpoint: Path, step: int) -> None:
        pass
