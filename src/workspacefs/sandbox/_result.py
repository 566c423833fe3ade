"""``ExecResult`` and ``SandboxSnapshot``: what ``exec`` and ``snapshot`` return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..fs import FilesystemDiff, FilesystemSnapshot, InMemoryFilesystem, SnapshotableFilesystem
from ._exec import Completed

SnapshotStrategy = Literal["workspace", "container_commit"]
"""``workspace``: the tree only, O(1). ``container_commit``: the tree and the container's
own files (what it installed outside the workspace)."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """How one command in the sandbox went, and what it changed in the workspace.

    Attributes:
        exit_code: The command's exit status (128 + n if signal n ended it, so
            137 after a timeout's SIGKILL).
        stdout: Its standard output, decoded; beyond the sandbox's
            ``output_limit`` only the head and tail are kept, with a notice of
            how many bytes were cut between them.
        stderr: Its standard error, likewise.
        duration: Seconds it took.
        timed_out: True if it ran past its timeout and was killed with its
            whole process group.
        changes: Files (and symlinks) it added, modified and deleted in the
            workspace: the diff between ``before`` and ``after``.
        before: The snapshot taken just before it ran (restore it to undo the command).
        after: The snapshot taken just after it ended.
        stdout_bytes: Bytes it wrote to stdout, including any cut.
        stderr_bytes: Bytes it wrote to stderr, including any cut.
        cut_bytes: Bytes of output (both streams) cut from the middle.
    """

    exit_code: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool
    changes: FilesystemDiff
    before: FilesystemSnapshot = field(repr=False, kw_only=True)
    after: FilesystemSnapshot = field(repr=False, kw_only=True)
    stdout_bytes: int = field(default=0, kw_only=True)
    stderr_bytes: int = field(default=0, kw_only=True)
    cut_bytes: int = field(default=0, kw_only=True)

    @classmethod
    def of(
        cls,
        done: Completed,
        changes: FilesystemDiff,
        *,
        before: FilesystemSnapshot,
        after: FilesystemSnapshot,
    ) -> ExecResult:
        """The result of the command that ended as ``done`` and changed ``changes``
        between ``before`` and ``after``."""
        return cls(
            exit_code=done.exit_code,
            stdout=done.stdout.text,
            stderr=done.stderr.text,
            duration=done.duration,
            timed_out=done.timed_out,
            changes=changes,
            before=before,
            after=after,
            stdout_bytes=done.stdout.total_bytes,
            stderr_bytes=done.stderr.total_bytes,
            cut_bytes=done.stdout.cut_bytes + done.stderr.cut_bytes,
        )

    @property
    def ok(self) -> bool:
        """True if the command exited 0 within its time."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        """True if some output was cut."""
        return self.cut_bytes > 0


@dataclass(frozen=True, slots=True)
class SandboxSnapshot:
    """A snapshot taken by ``PodmanSandbox.snapshot``.

    Attributes:
        workspace: The workspace's O(1) snapshot.
        strategy: What else was recorded.
        container_state: For ``container_commit``: the committed image's name,
            or the saved copy of the overlay's upper layer; None otherwise.
        sandbox: The name of the sandbox that took it (a commit restores only there).
    """

    workspace: FilesystemSnapshot
    strategy: SnapshotStrategy = "workspace"
    container_state: str | None = None
    sandbox: str = ""

    @property
    def tag(self) -> str | None:
        """The workspace snapshot's tag."""
        return self.workspace.tag


def changes_and_after(
    fs: SnapshotableFilesystem, before: FilesystemSnapshot, tag: str
) -> tuple[FilesystemDiff, FilesystemSnapshot]:
    """What changed since ``before``, and a snapshot tagged ``tag`` of exactly that state.

    In memory, the diff is taken against the live tree first, under the same
    hold of the lock as the snapshot: a retention policy may prune ``before``
    the moment the new snapshot is recorded. (A running workspace's daemon
    takes each call under its own lock: what another writer changes between
    the two shows in the next command's changes.)
    """
    if not isinstance(fs, InMemoryFilesystem):
        changes = fs.diff(before)
        return changes, fs.snapshot(tag=tag)
    with fs.tree.lock:
        changes = fs.diff(before)
        return changes, fs.snapshot(tag=tag)
