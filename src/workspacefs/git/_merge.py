"""Three-way merge of two versions of a workspace (a fork and its origin, or a
snapshot and the live tree), with git's semantics per path.

The work is O(changes): the change sets since the common ancestor name the
paths each side changed (``Tree.changes_between``, ``diff_versions``), and
only paths both sides changed need a decision. Per path, as ``git merge``
(ort) decides without rename detection:

* changed on one side only: that side wins;
* changed alike on both: kept;
* both regular files: mode and content merge separately, each taking the
  side that changed it; content both sides changed is merged line-wise by
  libgit2's merge-file (``_mergefile``), binary content (a NUL byte in the
  first 8000, as git) cannot be;
* otherwise a conflict, classified: ``content``, ``binary``, ``mode``,
  ``symlink`` (two targets, or a symlink against another kind), ``type``
  (file against device node and the like), ``delete/modify``, ``add/add``
  (two different additions; two equal ones merge clean) and ``directory``
  (a file where the other side has a directory).

A rename is a delete and an add (git would follow it by content similarity).
Directories follow their files, as in git: one emptied by the merge goes.

A merge applies all or nothing: with any conflict it changes nothing and
reports the conflicts with both sides, each described (``detail``: kinds,
modes, sizes, a text's hunks; ``_details``) and, for text, the merged text
with conflict markers if asked; otherwise it takes a snapshot tagged
``before-merge`` and applies every change in one transaction.
``WorkspaceMerges`` (``_held``) can hold a conflicting merge open in a fork
instead, to be resolved there and continued.
"""

from __future__ import annotations

import os
import stat as _stat
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from .._errors import InvalidArgumentError, ReadOnlyError
from ..fs import (
    ConflictKind,
    FilesystemSnapshot,
    HeldMerge,
    InMemoryFilesystem,
    MergeConflict,
    MergeResult,
    MergeSide,
    is_binary,
)
from ..tree import (
    Directory,
    File,
    Lineage,
    Node,
    Special,
    Symlink,
    Tree,
    TreeView,
    Version,
    diff_versions,
)
from ..tree import same_entry as _same
from ._details import describe_conflict
from ._mergefile import merge_text

Target = MergeSide | None
"""What a path becomes: a state, or None for deleted."""


def merge(
    fs: InMemoryFilesystem,
    other: InMemoryFilesystem | FilesystemSnapshot,
    *,
    base: FilesystemSnapshot | Version | None = None,
    dry_run: bool = False,
    markers: bool = False,
) -> MergeResult:
    """Merge ``other`` (a fork, the workspace a fork came from, or one of
    ``fs``'s snapshots) into ``fs``'s live tree, three-way against their common
    ancestor; all or nothing.

    Args:
        fs: The workspace merged into.
        other: A related workspace (its live state now), or a snapshot of ``fs``.
        base: The common ancestor; default: the nearest one that ``fs``,
            ``other`` or a fork point of either keeps (see ``find_base``).
        dry_run: Only report.
        markers: Give text conflicts the merged text with conflict markers.

    Returns:
        The changes and the conflicts (each with its ``detail``); ``applied``
        says whether the live tree changed (never with a conflict or a dry
        run). To hold a conflicting merge open instead, see ``WorkspaceMerges``.

    Raises:
        InvalidArgumentError: No common ancestor is known; pass ``base``.
        ReadOnlyError: ``fs`` is read-only (and this is no dry run).
    """
    return merge_or_hold(fs, other, base=base, dry_run=dry_run, markers=markers, hold=None)


@dataclass(frozen=True, slots=True)
class PlannedMerge:
    """A merge worked out and not applied, for a hold (``WorkspaceMerges``).

    Attributes:
        ancestor: The common ancestor.
        ours: The workspace's state merged into (its live tree, frozen).
        theirs: The state merged in.
        plan: What changes in ``ours``, path -> new state (None: deleted);
            a ``directory`` conflict's path is in it too.
        conflicts: The paths that do not merge.
    """

    ancestor: Version
    ours: Version
    theirs: Version
    plan: dict[str, Target]
    conflicts: tuple[MergeConflict, ...]


Hold = Callable[[PlannedMerge], HeldMerge]
"""Holds a conflicting merge open; called holding the workspace's lock, with the
live tree still equal to ``PlannedMerge.ours``."""


def merge_or_hold(
    fs: InMemoryFilesystem,
    other: InMemoryFilesystem | FilesystemSnapshot,
    *,
    base: FilesystemSnapshot | Version | None,
    dry_run: bool,
    markers: bool,
    hold: Hold | None,
) -> MergeResult:
    """``merge``, which, given ``hold``, hands a merge with conflicts to it (unless a
    dry run) and reports what it holds in ``held``."""
    if isinstance(other, InMemoryFilesystem):
        with other.tree.lock:
            theirs = other.tree.snapshot()
    else:
        theirs = fs.version(other)
    with fs.tree.lock:
        ours = fs.tree.snapshot()  # O(1); equal to the live tree while we hold the lock
        if base is None:
            ancestor = find_base(fs, other, ours, theirs)
        else:
            ancestor = fs.version(base) if isinstance(base, FilesystemSnapshot) else base
        plan, conflicts = plan_merge(ancestor, ours, theirs, markers=markers)
        changed = tuple(sorted(plan))
        if conflicts and hold is not None and not dry_run:
            if fs.read_only:
                raise ReadOnlyError("read-only filesystem", "/")
            held = hold(PlannedMerge(ancestor, ours, theirs, plan, tuple(conflicts)))
            return MergeResult(changed, tuple(conflicts), applied=False, held=held)
        if dry_run or conflicts:
            return MergeResult(changed, tuple(conflicts), applied=False)
        if not plan:  # the two agree already: merged, with nothing to change
            record_merged(fs, other, ours, theirs)
            return MergeResult(changed, (), applied=False)
        record = apply_merge(fs, plan, theirs)
        record_merged(fs, other, fs.tree.snapshot(), theirs)  # O(1): the merged state's step
    return MergeResult(changed, (), applied=True, snapshot=record)


def apply_merge(
    fs: InMemoryFilesystem, plan: dict[str, Target], theirs: Version
) -> FilesystemSnapshot:
    """Apply ``plan`` to ``fs``'s live tree in one transaction, after a snapshot tagged
    ``before-merge`` (returned); the caller holds the tree's lock.

    Raises:
        ReadOnlyError: ``fs`` is read-only.
    """
    if fs.read_only:
        raise ReadOnlyError("read-only filesystem", "/")
    record = fs.snapshot(tag="before-merge")
    with fs.transaction() as tree:
        apply_plan(tree, plan, theirs)
    return record


def record_merged(
    fs: InMemoryFilesystem,
    other: InMemoryFilesystem | FilesystemSnapshot,
    merged: Version,
    theirs: Version,
) -> None:
    """After a clean merge: from ``merged`` on, ``fs`` holds ``theirs``, the base of
    the two's next merge (whichever way it goes). A snapshot of ``fs`` counts as
    ``fs`` itself: its next merge of a snapshot from that line starts there."""
    fs.record_merge(other if isinstance(other, InMemoryFilesystem) else fs, merged.lineage, theirs)


def find_base(
    fs: InMemoryFilesystem,
    other: InMemoryFilesystem | FilesystemSnapshot,
    ours: Version,
    theirs: Version,
) -> Version:
    """The nearest common ancestor of ``ours`` and ``theirs`` that some kept
    version stands for: a snapshot of either workspace, a fork point, one of
    the two itself (when one side descends from the other), or what an earlier
    merge of the two brought in (``InMemoryFilesystem.record_merge``).

    The walk climbs the two histories to where they meet, deeper side first
    (as ``changes_between`` does), then up to the first kept version; whether
    a side descends from a recorded merge is a climb from it to the merge's
    depth. Either costs the distance to the ancestor, not the length of the
    history.
    """
    spaces = [fs, other] if isinstance(other, InMemoryFilesystem) else [fs]
    points = [point for space in spaces for point in space.merge_points()]
    candidates = [
        merged
        for _, merged in points
        if _holds(ours.lineage, merged, points) and _holds(theirs.lineage, merged, points)
    ]
    # A merged version lies on one side's history; an ancestor both histories share
    # is nearer only if it is deeper than that (on that history, deeper is later).
    floor = max((merged.lineage.depth for merged in candidates), default=-1)
    found = _shared_history(spaces, ours, theirs, floor=floor, required=not candidates)
    if found is not None:
        candidates.append(found)
    # The nearest: one that no other candidate descends from (the deepest, if several).
    nearest = [
        candidate
        for candidate in candidates
        if not any(
            later is not candidate and _holds(later.lineage, candidate, points)
            for later in candidates
        )
    ]
    return max(nearest or candidates, key=lambda version: version.lineage.depth)


def _shared_history(
    spaces: list[InMemoryFilesystem],
    ours: Version,
    theirs: Version,
    *,
    floor: int = -1,
    required: bool = True,
) -> Version | None:
    """The nearest common ancestor in the two histories that a kept version stands
    for, if it is deeper than ``floor`` (None otherwise: the walk stops there).

    Raises:
        InvalidArgumentError: None is kept (or the two share no history) and
            ``required``.
    """
    known: dict[Hashable, Version] = {ours.history_key: ours, theirs.history_key: theirs}
    for space in spaces:
        for record in space.snapshots():
            version = space.version(record)
            known.setdefault(version.history_key, version)
        if space.fork_point is not None:
            known.setdefault(space.fork_point.history_key, space.fork_point)
    mine: Lineage | None = ours.lineage
    yours: Lineage | None = theirs.lineage
    while mine is not yours:
        if mine is None or yours is None:
            if not required:
                return None
            raise InvalidArgumentError("the two workspaces share no history", None)
        if max(mine.depth, yours.depth) <= floor:
            return None
        if mine.depth >= yours.depth:
            mine = mine.parent
        else:
            yours = yours.parent
    while mine is not None and mine.depth > floor:
        if mine in known:
            return known[mine]
        mine = mine.parent
    if not required:
        return None
    raise InvalidArgumentError("no common ancestor of the two workspaces is kept", None)


def _descends(lineage: Lineage, ancestor: Lineage) -> bool:
    """True if the step ``lineage`` descends from (or is) the step ``ancestor``:
    a climb to ``ancestor``'s depth (forks continue their origin's steps, so
    depths are comparable across a family)."""
    step: Lineage | None = lineage
    while step is not None and step.depth > ancestor.depth:
        step = step.parent
    return step is ancestor


def _holds(state: Lineage, version: Version, points: list[tuple[Lineage, Version]]) -> bool:
    """True if the state at step ``state`` descends from ``version``: it is on that
    history, or a recorded merge on it brought ``version`` in."""
    return _descends(state, version.lineage) or any(
        merged is version and _descends(state, step) for step, merged in points
    )


def side_of(node: Node | None) -> MergeSide | None:
    if node is None:
        return None
    if isinstance(node, File):
        return MergeSide("file", node.mode, node.read(0, node.size))
    if isinstance(node, Symlink):
        return MergeSide("symlink", node.mode, node.target.encode("utf-8", "surrogateescape"))
    return MergeSide("other", node.mode, b"", node.rdev if isinstance(node, Special) else 0)


def entry_at(view: TreeView, path: str) -> Node | None:
    ino = view.resolve_path(path)
    node = None if ino is None else view.get(ino)
    return None if isinstance(node, Directory) else node


def plan_merge(
    base: Version, ours: Version, theirs: Version, *, markers: bool
) -> tuple[dict[str, Target], list[MergeConflict]]:
    """What to change in ``ours`` (path -> new state) and what conflicts."""
    mine = diff_versions(base, ours, Tree.changes_between(base, ours))
    other = diff_versions(base, theirs, Tree.changes_between(base, theirs))
    ours_changed = {*mine.added, *mine.modified, *mine.deleted}
    plan: dict[str, Target] = {}
    conflicts: list[MergeConflict] = []
    for path in sorted({*other.added, *other.modified, *other.deleted}):
        b, o, t = entry_at(base, path), entry_at(ours, path), entry_at(theirs, path)
        if path not in ours_changed:
            plan[path] = side_of(t)
        elif (o is None and t is None) or (o is not None and t is not None and _same(o, t)):
            continue
        else:
            target, conflict = _merge_entry(path, b, o, t, markers=markers)
            if conflict is not None:
                conflicts.append(conflict)
            elif target is not None and not (o is not None and _same_side(o, target)):
                plan[path] = target
    for path, target in plan.items():
        if target is not None and _blocked(ours, path, plan):
            was = side_of(entry_at(base, path))
            ino = ours.resolve_path(path)
            there = None if ino is None else ours.get(ino)
            directory = there.mode if isinstance(there, Directory) else None
            conflicts.append(
                MergeConflict(
                    path=path,
                    kind="directory",
                    detail=describe_conflict(
                        "directory", was, None, target, ours_directory=directory
                    ),
                    base=was,
                    ours=None,
                    theirs=target,
                )
            )
    return plan, conflicts


def _same_side(node: Node, side: MergeSide) -> bool:
    return side_of(node) == side


def _blocked(ours: Version, path: str, plan: dict[str, Target]) -> bool:
    """True if writing ``path`` meets a directory of ours at it that keeps a
    file after the merge's deletions, or a file of ours above it that the
    merge keeps. (Walking that directory costs its size, only in this case.)"""
    ino = ours.resolve_path(path)
    if ino is not None and isinstance(ours.get(ino), Directory):
        return any(
            plan.get(inner, 1) is not None
            for inner, _, node in ours.walk(ino, path)
            if not isinstance(node, Directory)
        )
    parts = path.split("/")
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        ino = ours.resolve_path(prefix)
        if ino is None:
            return False
        if not isinstance(ours.get(ino), Directory) and plan.get(prefix, 1) is not None:
            return True
    return False


def _merge_entry(
    path: str, b: Node | None, o: Node | None, t: Node | None, *, markers: bool
) -> tuple[Target, MergeConflict | None]:
    """Both sides changed ``path`` differently: the merged state, or a conflict."""
    base, mine, other = side_of(b), side_of(o), side_of(t)
    outcome: MergeSide | _Conflict
    if mine is None or other is None:
        outcome = "delete/modify", None
    elif mine.kind != other.kind or mine.kind == "other":
        outcome = _kinds_differ(base, mine, other), None
    else:
        if base is not None and base.kind != mine.kind:
            base = None  # a type change on both sides: no common content
        outcome = _merge_same_kind(base, mine, other)
    if isinstance(outcome, MergeSide):
        return outcome, None
    kind, text = outcome
    conflict = MergeConflict(
        path=path,
        kind=kind,
        markers=text if markers else None,
        detail=describe_conflict(kind, base, mine, other),
        base=base,
        ours=mine,
        theirs=other,
    )
    return None, conflict


_Conflict = tuple[ConflictKind, bytes | None]
"""Why an entry does not merge, and its text with conflict markers if it has one."""


def _kinds_differ(base: MergeSide | None, mine: MergeSide, other: MergeSide) -> ConflictKind:
    """The conflict of two sides of different kinds (or neither a file nor a symlink)."""
    if base is None:
        return "add/add"
    return "symlink" if "symlink" in (mine.kind, other.kind) else "type"


def _merge_same_kind(
    base: MergeSide | None, mine: MergeSide, other: MergeSide
) -> MergeSide | _Conflict:
    """Merge two files or two symlinks, ``base`` being None where they have no common
    content (both added, or both changed from another kind)."""
    if mine.kind == "symlink":
        return ("add/add" if base is None else "symlink"), None
    mode = pick(base.mode if base else None, mine.mode, other.mode)
    if base is None:
        if mine.data == other.data:
            return MergeSide("file", mode, mine.data) if mode is not None else ("mode", None)
        if is_binary(mine.data) or is_binary(other.data):
            return "add/add", None
        return "add/add", merge_text(None, mine.data, other.data)[0]
    data = pick(base.data, mine.data, other.data)
    if data is None:
        if is_binary(base.data) or is_binary(mine.data) or is_binary(other.data):
            return "binary", None
        merged, clean = merge_text(base.data, mine.data, other.data)
        if not clean:
            return "content", merged
        data = merged
    if mode is None:
        return "mode", None
    return MergeSide("file", mode, data)


_T = TypeVar("_T")


def pick(base: _T | None, mine: _T, other: _T) -> _T | None:
    """The three-way choice of one value: the side that changed it, or None
    if both changed it differently."""
    if mine == other or other == base:
        return mine
    if mine == base:
        return other
    return None


def apply_plan(tree: Tree, plan: dict[str, Target], theirs: Version) -> None:
    """Make ``tree`` hold ``plan``: deletions first (they may empty a directory
    that a file of the same name replaces), then writes."""
    for path, target in plan.items():
        if target is None:
            parent_path, _, name = path.rpartition("/")
            parent = tree.resolve_path(parent_path)
            if parent is not None and tree.find(parent, name) is not None:
                tree.unlink(parent, name)
                _prune_dirs(tree, parent_path, theirs)
    for path, target in plan.items():
        if target is not None:
            write_entry(tree, path, target)


def _prune_dirs(tree: Tree, path: str, theirs: Version) -> None:
    """Remove directories the merge emptied, up from ``path``, unless theirs
    has them too (directories follow their files, as in git)."""
    while path:
        ino = tree.resolve_path(path)
        if ino is None or tree.directory(ino).entries or _is_dir(theirs, path):
            return
        parent_path, _, name = path.rpartition("/")
        parent = tree.resolve_path(parent_path)
        assert parent is not None
        tree.rmdir(parent, name)
        path = parent_path


def _is_dir(view: TreeView, path: str) -> bool:
    ino = view.resolve_path(path)
    return ino is not None and isinstance(view.get(ino), Directory)


def write_entry(tree: Tree, path: str, target: MergeSide) -> None:
    parent_path, _, name = path.rpartition("/")
    parent = tree.make_dirs(parent_path)
    ino = tree.find(parent, name)
    if ino is not None and target.kind == "file" and isinstance(tree.node(ino), File):
        tree.replace(ino, target.data)
        tree.setattr(ino, mode=target.mode)
        return
    if ino is not None and isinstance(tree.node(ino), Directory):
        tree.empty(ino)  # only directories are left in it (see ``_blocked``)
        tree.rmdir(parent, name)
    elif ino is not None:
        tree.unlink(parent, name)
    uid, gid = os.getuid(), os.getgid()
    if target.kind == "file":
        ino = tree.create(parent, name, _stat.S_IMODE(target.mode), uid, gid)
        tree.write(ino, 0, target.data)
    elif target.kind == "symlink":
        tree.symlink(parent, name, target.data.decode("utf-8", "surrogateescape"), uid, gid)
    else:
        tree.mknod(parent, name, target.mode, target.rdev, uid, gid)
