"""Merges held open: a conflicting merge's result in a fork, resolved there, then
continued into the workspace all or nothing, or aborted.

``merge`` with conflicts changes nothing. ``WorkspaceMerges.merge(other,
hold=True)`` keeps such a merge open instead, as ``git merge`` leaves its
conflicts in the working tree, except that the workspace itself stays as it
was: the merge's result so far is a fork of the workspace (O(1)) holding
every clean change, and at each conflicting path what git's working tree
would hold:

* text both sides changed (``content``, text ``add/add``): the text merged
  with diff3-style markers (``<<<<<<< ours``, ``||||||| base``, ``=======``,
  ``>>>>>>> theirs``), so each conflict shows the base's lines too;
* ``delete/modify``: the side that kept the path;
* ``mode``: the content (which merged) with our mode;
* anything else (``binary``, ``symlink``, ``type``, binary ``add/add``,
  ``directory``): ours, as it was.

Whoever resolves edits that fork with the ordinary tools (its
``filesystem``, or its directory on a mount), and may take a side for any
conflicting path (``base``, ``ours`` or ``theirs``: for a ``mode`` conflict,
that side's mode, the content staying merged). A path is resolved once a
side was taken for it, or it was changed in the fork and holds no conflict
marker (markers the sides held already do not count).

``continue_merge`` finishes it all or nothing: with any path unresolved it
raises ``UnresolvedConflictsError`` naming them and changes nothing (sides
it was asked to take included); otherwise it merges the fork into the
workspace three-way against the workspace's state when the merge opened, so
what the workspace got meanwhile is kept (a path both changed differently is
``ContentChangedError``, nothing changed). ``abort_merge`` drops the fork;
the workspace never changed.

An open merge lives in the process holding the workspace, beside it: one at
a time per workspace, found by ``WorkspaceMerges.of(fs)``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping

from .._errors import (
    BusyError,
    ContentChangedError,
    InvalidArgumentError,
    NotFoundError,
    UnresolvedConflictsError,
)
from ..fs import (
    SIDES,
    FilesystemSnapshot,
    HeldMerge,
    HeldState,
    InMemoryFilesystem,
    MergeConflict,
    MergeResult,
    MergeSide,
    Side,
    normalize_path,
    short_id,
)
from ..tree import Directory, Tree, TreeView, Version
from ._details import diff3_text
from ._merge import (
    PlannedMerge,
    Target,
    apply_merge,
    apply_plan,
    merge_or_hold,
    pick,
    plan_merge,
    record_merged,
    side_of,
    write_entry,
)
from ._mergefile import marker_like, marker_lines, merge_text

State = MergeSide | int | None
"""What a path holds, for comparing: a side, a directory's mode, or None."""

MAX_NAMED = 20
"""Unresolved paths an error names before counting the rest."""


def _state(view: TreeView, path: str) -> State:
    ino = view.resolve_path(path)
    node = None if ino is None else view.get(ino)
    if isinstance(node, Directory):
        return node.mode
    return side_of(node)


def _known_markers(conflict: MergeConflict) -> frozenset[bytes]:
    """Lines the sides hold that look like conflict markers: content, not markers."""
    sides = (conflict.base, conflict.ours, conflict.theirs)
    return frozenset(
        line
        for side in sides
        if side is not None and side.kind == "file"
        for line in marker_like(side.data)
    )


def _placement(conflict: MergeConflict) -> Target | bool:
    """What the fork holds at a conflicting path when the merge opens: a state
    (None: nothing), or False to leave ours as it is."""
    base, ours, theirs = conflict.base, conflict.ours, conflict.theirs
    text = diff3_text(conflict.kind, base, ours, theirs)
    if text is not None and ours is not None and theirs is not None:
        mode = pick(base.mode if base else None, ours.mode, theirs.mode) or ours.mode
        return MergeSide("file", mode, text)
    if conflict.kind == "delete/modify":
        return theirs if ours is None else False
    if conflict.kind == "mode" and ours is not None and theirs is not None:
        return MergeSide("file", ours.mode, _merged_data(conflict))
    return False


def _merged_data(conflict: MergeConflict) -> bytes:
    """The content of a ``mode`` conflict: it merged (only the mode did not)."""
    base, ours, theirs = conflict.base, conflict.ours, conflict.theirs
    assert ours is not None
    assert theirs is not None
    data = pick(base.data if base else None, ours.data, theirs.data)
    if data is None:
        data = merge_text(base.data if base else None, ours.data, theirs.data)[0]
    return data


def _put(tree: Tree, path: str, target: State) -> None:
    """Make ``tree`` hold ``target`` at ``path``: whatever is in the way goes (a file
    where a directory must be, a directory where a file must be)."""
    parent_path, _, name = path.rpartition("/")
    parts = parent_path.split("/") if parent_path else []
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        ino = tree.resolve_path(prefix)
        if ino is not None and not isinstance(tree.node(ino), Directory):
            above, _, leaf = prefix.rpartition("/")
            holder = tree.resolve_path(above)
            assert holder is not None
            tree.unlink(holder, leaf)
    parent = tree.resolve_path(parent_path)
    ino = None if parent is None else tree.find(parent, name)
    if ino is not None and isinstance(tree.node(ino), Directory):
        if isinstance(target, int):
            return  # a directory it is already
        assert parent is not None
        tree.empty(ino)
        tree.rmdir(parent, name)
    elif ino is not None and target is None:
        assert parent is not None
        tree.unlink(parent, name)
    if isinstance(target, MergeSide):
        write_entry(tree, path, target)
    elif isinstance(target, int):
        parent = tree.make_dirs(parent_path)
        if tree.find(parent, name) is not None:
            tree.unlink(parent, name)
        tree.mkdir(parent, name, target & 0o7777)


class OpenMerge:
    """A merge held open in a fork of the workspace (``WorkspaceMerges.merge``).

    Attributes:
        workspace: The workspace merged into (unchanged until ``continue_merge``).
        filesystem: The fork holding the merge: edit it to resolve.
        source: What is merged in, as the report names it.
    """

    def __init__(
        self,
        workspace: InMemoryFilesystem,
        other: InMemoryFilesystem | FilesystemSnapshot,
        source: str,
        planned: PlannedMerge,
    ) -> None:
        self.workspace = workspace
        self.source = source
        self._other = other
        self._planned = planned
        self._conflicts = {conflict.path: conflict for conflict in planned.conflicts}
        self._known = {path: _known_markers(c) for path, c in self._conflicts.items()}
        self._taken: dict[str, Side] = {}
        self._closers: list[Callable[[bool], None]] = []
        self._lock = threading.Lock()
        self._open = True
        self.name = "merge"
        self.path: str | None = None
        # Called holding the workspace's lock: the fork is ``planned.ours`` exactly.
        self.filesystem = workspace.fork()
        clean = {p: t for p, t in planned.plan.items() if p not in self._conflicts}
        with self.filesystem.transaction() as tree:
            apply_plan(tree, clean, planned.theirs)
            for path, conflict in self._conflicts.items():
                placed = _placement(conflict)
                if placed is not False:
                    _put(tree, path, placed)
            held = tree.snapshot()
        self._placed = {path: _state(held, path) for path in self._conflicts}

    # -- serving ---------------------------------------------------------------------

    def serve(self, name: str, path: str | None) -> None:
        """Say where the fork is served: its ``name`` and directory (the report's)."""
        self.name, self.path = name, path

    def on_close(self, callback: Callable[[bool], None]) -> None:
        """Call ``callback(continued)`` once the merge is continued (True) or aborted."""
        self._closers.append(callback)

    @property
    def is_open(self) -> bool:
        """False once continued or aborted."""
        return self._open

    # -- where it stands -------------------------------------------------------------

    def report(self) -> HeldMerge:
        """The merge as it stands: every conflict, and whether it is resolved yet."""
        with self.filesystem.tree.lock:
            now = self.filesystem.tree.snapshot()
        return self._report(now)

    def _report(self, now: Version) -> HeldMerge:
        planned = self._planned
        return HeldMerge(
            source=self.source,
            fork=self.name,
            path=self.path,
            changed=tuple(sorted(p for p in planned.plan if p not in self._conflicts)),
            conflicts=planned.conflicts,
            states=tuple(self._state_of(now, path) for path in self._conflicts),
        )

    def _state_of(self, now: Version, path: str) -> HeldState:
        state = _state(now, path)
        lines: list[int] = []
        if isinstance(state, MergeSide) and state.kind == "file":
            lines = marker_lines(state.data, self._known[path])
        taken = self._taken.get(path)
        resolved = (taken is not None or state != self._placed[path]) and not lines
        return HeldState(path, resolved, taken, tuple(lines))

    # -- resolving -------------------------------------------------------------------

    def take(self, choose: Mapping[str, Side]) -> None:
        """Take a side for each path of ``choose`` in the fork, all or nothing.

        Raises:
            InvalidArgumentError: A path that does not conflict, or no side's name;
                nothing taken.
        """
        with self._lock:
            self._check_open()
            with self.filesystem.transaction() as tree:
                self._take(tree, choose)

    def _take(self, tree: Tree, choose: Mapping[str, Side]) -> None:
        fs = self.workspace
        # Paths as every verb takes them: relative, or under the workspace's mount point.
        chosen = {normalize_path(path, fs.mount_point, fs.limits): s for path, s in choose.items()}
        for path, side in chosen.items():
            if path not in self._conflicts:
                raise InvalidArgumentError("not a conflicting path of this merge", path)
            if side not in SIDES:
                raise InvalidArgumentError(f"no side {side!r}: base, ours or theirs", path)
        for path, side in chosen.items():
            version = getattr(self._planned, "ancestor" if side == "base" else side)
            target = _state(version, path)
            conflict = self._conflicts[path]
            if conflict.kind == "mode" and isinstance(target, MergeSide):
                target = MergeSide("file", target.mode, _merged_data(conflict))
            _put(tree, path, target)
            self._taken[path] = side

    def continue_merge(self, *, choose: Mapping[str, Side] | None = None) -> MergeResult:
        """Take the sides ``choose`` names, then finish the merge into the workspace:
        all or nothing.

        Returns:
            What the workspace got (``snapshot``: the state before, to undo with
            ``restore``).

        Raises:
            UnresolvedConflictsError: Paths still conflict (named in the message);
                nothing changed, the sides of ``choose`` not taken.
            ContentChangedError: The workspace changed a path since the merge opened
                differently from the fork; nothing changed.
            InvalidArgumentError: ``choose`` names a path that does not conflict.
            NotFoundError: The merge was continued or aborted already.
        """
        with self._lock:
            self._check_open()
            taken = dict(self._taken)
            try:
                # The fork's lock, then the workspace's: the only order the two are
                # held in (opening holds the workspace's while the fork is new).
                with self.filesystem.transaction() as tree:
                    self._take(tree, choose or {})
                    resolved = tree.snapshot()
                    self._refuse_unresolved(resolved)
                    result = self._finish(resolved)
            except BaseException:
                self._taken = taken
                raise
            self._close(True)
        return result

    def _refuse_unresolved(self, resolved: Version) -> None:
        report = self._report(resolved)
        pending = [state for state in report.states if not state.resolved]
        if not pending:
            return
        named = []
        for state in pending[:MAX_NAMED]:
            conflict = self._conflicts[state.path]
            if state.marker_lines:
                lines = ", ".join(map(str, state.marker_lines[:10]))
                named.append(f"{state.path} (conflict markers on lines {lines})")
            else:
                named.append(f"{state.path} ({conflict.kind}: edit it or take a side)")
        more = len(pending) - MAX_NAMED
        tail = f" and {more} more" if more > 0 else ""
        raise UnresolvedConflictsError(
            f"{len(pending)} path(s) still conflict: {'; '.join(named)}{tail}", pending[0].path
        )

    def _finish(self, resolved: Version) -> MergeResult:
        """Merge ``resolved`` (the fork) into the workspace against its state when the
        merge opened, and record that the workspace now holds what was merged in."""
        fs, planned = self.workspace, self._planned
        with fs.tree.lock:
            now = fs.tree.snapshot()
            plan, conflicts = plan_merge(planned.ours, now, resolved, markers=False)
            if conflicts:
                paths = ", ".join(c.path for c in conflicts[:MAX_NAMED])
                raise ContentChangedError(
                    "the workspace changed since the merge opened, differently from the "
                    f"merge at {paths}: nothing merged; abort it and merge again",
                    conflicts[0].path,
                )
            record = apply_merge(fs, plan, resolved) if plan else None
            record_merged(fs, self._other, fs.tree.snapshot(), planned.theirs)
        return MergeResult(tuple(sorted(plan)), (), applied=bool(plan), snapshot=record)

    def abort(self) -> None:
        """Drop the merge and its fork; the workspace was never changed.

        Raises:
            NotFoundError: The merge was continued or aborted already.
        """
        with self._lock:
            self._check_open()
            self._close(False)

    def _check_open(self) -> None:
        if not self._open:
            raise NotFoundError("the merge was continued or aborted already", None)

    def _close(self, continued: bool) -> None:
        self._open = False
        for callback in self._closers:
            callback(continued)


_SHARED: weakref.WeakKeyDictionary[InMemoryFilesystem, WorkspaceMerges] = (
    weakref.WeakKeyDictionary()
)
_SHARED_LOCK = threading.Lock()


class WorkspaceMerges:
    """The merges into one workspace, of which one at a time may be held open.

    ``merge_status``, ``continue_merge`` and ``abort_merge`` have the signatures
    of a daemon's verbs of those names, so the agent tools take either
    (``workspacefs.tools.conflict_tools``).

    Args:
        fs: The workspace merged into.
    """

    def __init__(self, fs: InMemoryFilesystem) -> None:
        self._fs = fs
        self._open: OpenMerge | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, fs: InMemoryFilesystem) -> WorkspaceMerges:
        """The instance shared by everything that merges into ``fs``."""
        with _SHARED_LOCK:
            found = _SHARED.get(fs)
            if found is None:
                found = _SHARED[fs] = cls(fs)
            return found

    @property
    def filesystem(self) -> InMemoryFilesystem:
        """The workspace."""
        return self._fs

    @property
    def open(self) -> OpenMerge | None:
        """The merge held open, if any."""
        return self._open

    def merge(
        self,
        other: InMemoryFilesystem | FilesystemSnapshot,
        *,
        base: FilesystemSnapshot | Version | None = None,
        dry_run: bool = False,
        markers: bool = False,
        hold: bool = False,
        source: str | None = None,
    ) -> MergeResult:
        """``workspacefs.git.merge`` into this workspace; with ``hold``, a merge with
        conflicts is held open (``result.held``, ``open``) instead of refused.

        Args:
            other: What to merge in (see ``merge``).
            base: The common ancestor (see ``merge``).
            dry_run: Only report.
            markers: Give text conflicts the merged text with git's markers.
            hold: Hold a conflicting merge open.
            source: What the report calls ``other`` (default: ``fork`` or the snapshot).

        Raises:
            BusyError: ``hold``, and a merge is held open already.
        """
        if not hold:
            return merge_or_hold(
                self._fs, other, base=base, dry_run=dry_run, markers=markers, hold=None
            )
        if source is None:
            source = "fork" if isinstance(other, InMemoryFilesystem) else _label(other)
        label = source

        def hold_open(planned: PlannedMerge) -> HeldMerge:
            with self._lock:  # checked again: another hold may have opened meanwhile
                self._refuse_if_open()
                held = OpenMerge(self._fs, other, label, planned)
                held.on_close(lambda _: self._closed(held))
                self._open = held
            return held.report()

        if not dry_run:
            self._refuse_if_open()  # before working the merge out, as after
        return merge_or_hold(
            self._fs, other, base=base, dry_run=dry_run, markers=markers, hold=hold_open
        )

    def _refuse_if_open(self) -> None:
        held = self._open
        if held is not None:
            raise BusyError(
                f"a merge of {held.source} is held open already: continue or abort it first",
                None,
            )

    def _closed(self, held: OpenMerge) -> None:
        with self._lock:
            if self._open is held:
                self._open = None

    def _held(self) -> OpenMerge:
        held = self._open
        if held is None:
            raise NotFoundError("no merge is held open in this workspace", None)
        return held

    def merge_status(self) -> HeldMerge | None:
        """The merge held open, as it stands; None if there is none."""
        held = self._open
        return None if held is None else held.report()

    def continue_merge(self, *, choose: Mapping[str, Side] | None = None) -> MergeResult:
        """Finish the merge held open (``OpenMerge.continue_merge``).

        Raises:
            NotFoundError: No merge is held open.
        """
        return self._held().continue_merge(choose=choose)

    def abort_merge(self) -> None:
        """Drop the merge held open; the workspace never changed.

        Raises:
            NotFoundError: No merge is held open.
        """
        self._held().abort()


def _label(snapshot: FilesystemSnapshot) -> str:
    return snapshot.tag or f"snapshot {short_id(snapshot.snapshot_id)}"
