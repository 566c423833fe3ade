"""What merging and persisting report: one set of types for the git layer and the daemon.

``workspacefs.git`` merges and persists (with pygit2); a daemon's client asks
it to over the control socket, without pygit2. Both report with these types,
so a result means the same whichever side made it. Where the far side needs
less than the merge itself has, the smaller type is the base and the larger
one extends it (no field is declared twice):

* ``MergeReport`` / ``ConflictReport``: the paths, the conflicts by kind, the
  marker text, each conflict's sides described (``ConflictDetail``: kinds,
  modes, sizes, text hunks) and a merge held open (``HeldMerge``);
  ``MergeResult`` / ``MergeConflict`` add the three sides of each conflict
  (whole file contents, which stay in the process that merged);
* ``PersistedSnapshot``: where ``git.persist`` put a snapshot;
  ``PersistResult`` adds what the daemon did around it (its repository, a push);
* ``TransferResult``: what a ``push`` or ``fetch`` wrote and what it refused.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from ._conflicts import ConflictDetail, HeldState
from ._snapshots import FilesystemSnapshot

ConflictKind = Literal[
    "content", "binary", "mode", "symlink", "type", "delete/modify", "add/add", "directory"
]
"""Why a path could not be merged (see ``workspacefs.git.merge``)."""


@dataclass(frozen=True, slots=True)
class MergeSide:
    """One side's state of a path: its kind, full mode and bytes (a file's
    content, or a symlink's target); ``rdev`` for a device node."""

    kind: Literal["file", "symlink", "other"]
    mode: int
    data: bytes
    rdev: int = 0


@dataclass(frozen=True, slots=True)
class ConflictReport:
    """A path both sides changed in ways that do not merge.

    ``markers`` is the text merged with git's conflict markers, for a
    ``content`` or text ``add/add`` conflict when asked for; ``detail``
    describes the three sides (and a text's conflicting hunks).
    """

    path: str
    kind: ConflictKind
    markers: bytes | None = None
    detail: ConflictDetail | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeConflict(ConflictReport):
    """A conflict with its three sides: ``base``, ``ours`` and ``theirs`` are the
    path's states (None where it does not exist)."""

    base: MergeSide | None
    ours: MergeSide | None
    theirs: MergeSide | None


@dataclass(frozen=True, slots=True)
class HeldMerge:
    """A merge held open: its result so far is in a fork of the workspace (clean
    changes applied, each conflicting path as ``WorkspaceMerges`` placed it: text
    with conflict markers), and the workspace is unchanged until it continues.

    Attributes:
        source: What is merged in (a fork's name, a try's id).
        fork: The name of the fork holding the merge.
        path: Where that fork is served (``<mountpoint>/.forks/<fork>``), if it is.
        changed: The paths that merge cleanly (the fork holds their changes).
        conflicts: The conflicts as found when the merge was opened.
        states: Where each conflict stands now, in the same order.
    """

    source: str
    fork: str
    path: str | None
    changed: tuple[str, ...]
    conflicts: tuple[ConflictReport, ...]
    states: tuple[HeldState, ...]

    @property
    def unresolved(self) -> tuple[str, ...]:
        """The conflicting paths not resolved yet."""
        return tuple(state.path for state in self.states if not state.resolved)


@dataclass(frozen=True, slots=True)
class MergeReport:
    """What a merge did, or with ``applied`` False would have done.

    Attributes:
        changed: The paths the merge changes in the workspace (those it would
            change, for a dry run or a merge refused for its ``conflicts``).
        conflicts: The paths that do not merge; any conflict applies nothing.
        applied: True if the workspace changed.
        snapshot: The snapshot taken before an applied merge.
        held: The merge is held open (it had conflicts, and holding was asked
            for): resolve them in its fork, then continue or abort it.
    """

    changed: tuple[str, ...]
    conflicts: tuple[ConflictReport, ...]
    applied: bool
    snapshot: FilesystemSnapshot | None = None
    held: HeldMerge | None = None

    @property
    def clean(self) -> bool:
        """True if no path conflicts."""
        return not self.conflicts


@dataclass(frozen=True, slots=True)
class MergeResult(MergeReport):
    """A ``MergeReport`` whose conflicts carry their three sides (``git.merge``)."""

    conflicts: tuple[MergeConflict, ...]


@dataclass(frozen=True, slots=True)
class PersistedSnapshot:
    """Where a snapshot went: its commit, refs and number in the workspace; a receipt
    ``git.verify_persisted`` checks later (the snapshot record holds the file count
    and bytes, ``tree`` the digest of every byte: git's tree id)."""

    commit: str
    meta_commit: str
    ref: str
    number: int
    objects_written: int
    snapshot: FilesystemSnapshot
    tree: str


@dataclass(frozen=True, slots=True)
class RefWritten:
    """A ref a push or fetch wrote: ``name`` on the receiving side, from the
    sending side's ``source`` (another name when its snapshot number was taken)."""

    name: str
    source: str
    commit: str


@dataclass(frozen=True, slots=True)
class RefRefused:
    """A sending side's ref that a push or fetch did not take, and why (the
    receiving side keeps its own ref of that name, or the ref is not whole)."""

    name: str
    commit: str
    reason: str


@dataclass(frozen=True, slots=True)
class TransferResult:
    """What ``push`` or ``fetch`` did: the refs ``written`` on the receiving side,
    the sending side's refs ``refused``, and how many it held already (``unchanged``).
    Nothing the receiving side kept was replaced."""

    url: str
    written: tuple[RefWritten, ...]
    refused: tuple[RefRefused, ...]
    unchanged: int


@dataclass(frozen=True, slots=True)
class PersistResult(PersistedSnapshot):
    """Where a daemon persisted a snapshot: the repository, and what the push to a
    remote then did (None: no push)."""

    repository: str
    pushed: TransferResult | None = None

    @classmethod
    def of(
        cls, persisted: PersistedSnapshot, repository: str, pushed: TransferResult | None = None
    ) -> PersistResult:
        """``persisted``, put in ``repository`` and pushed as ``pushed`` says."""
        done = {f.name: getattr(persisted, f.name) for f in fields(PersistedSnapshot)}
        return cls(**done, repository=repository, pushed=pushed)
