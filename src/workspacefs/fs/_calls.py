"""The workspace's record of the tool calls that changed it, and rewinding to one of them.

A call is recorded by the snapshots taken around it (``UndoableToolset`` takes
them): one just before it, tagged ``undo:<tool>:<call id>`` (``call_tag``), and,
if it changed something, one just after it, tagged ``after:<tool>:<call id>``.
Being ordinary snapshots, they live where the workspace keeps its snapshots --
in memory, in a durable store's journal (so they outlive the daemon), as git
commits -- and every door sees one history: ``call_history`` reads it from the
snapshot list, and ``rewind`` restores the snapshot before a call and deletes
those of that call and every later one.

Other writers. A rewind returns the whole workspace to a snapshot, so it
would also discard what a writer other than the recorded calls (the mount, a
container started by hand, another client's plain writes) changed after the
call rewound to. It refuses instead (``ContentChangedError``, nothing changed,
the paths and calls named), as ``UndoableToolset.undo_to`` always has; with
``force`` it discards those changes too and names their paths in the result
(``RewindResult.discarded``). A change made while a call runs counts as that
call's.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .._errors import ContentChangedError, NotSupportedError, SnapshotNotFoundError
from ..tree import Cause
from ._conditional import changed_paths
from ._protocol import SnapshotableFilesystem
from ._snapshot_names import MAX_NAME
from ._snapshots import FilesystemDiff, FilesystemSnapshot

Phase = Literal["undo", "after"]
"""Which snapshot of a call a tag names: the one before it, or the one after it."""

_PLAIN = re.compile(r"[A-Za-z0-9_-]")
_ESCAPE = re.compile(r"\.([0-9A-F]{2})")
_CUT = ".x"
"""Marks an id cut to fit a tag; a digest of the whole id follows. Never an escape:
an escape is ``.`` and two upper-case hex digits, and a ``.`` of the id is escaped."""
_DIGEST = 16
_MAX_TOOL = 48
"""Characters of a tag a tool's name takes at most (models' tool names are shorter)."""


def _spelt(text: str, room: int) -> tuple[str, bool]:
    """``text`` as a tag spells it, as much of it as ``room`` characters hold, and whether
    that is all of it: a character a git ref name and a tag take anywhere as it is, any
    other as its UTF-8 bytes, ``.XX`` each. Never more than ``room`` is spelt, so a
    hostile megabyte id costs no more than a short one."""
    parts: list[str] = []
    used = 0
    for char in text:
        unit = (
            char
            if _PLAIN.match(char)
            else "".join(f".{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        )
        used += len(unit)
        if used > room:
            return "".join(parts), False
        parts.append(unit)
    return "".join(parts), True


def _decoded(spelt: str) -> str:
    """The text ``_spelt`` spelt (a tag written before ids were escaped reads as it is)."""
    data = bytearray()
    position = 0
    for match in _ESCAPE.finditer(spelt):
        data += spelt[position : match.start()].encode("utf-8", "surrogatepass")
        data.append(int(match[1], 16))
        position = match.end()
    data += spelt[position:].encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "surrogatepass" if _valid(data) else "replace")


def _valid(data: bytearray) -> bool:
    try:
        data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return True


def call_tag(tool: str, call_id: str, phase: Phase = "undo") -> str:
    """The tag of the snapshot before (``undo``) or after a call: ``undo:<tool>:<call id>``.

    The ids models give (``call_...``, ``toolu_...``) and tool names are kept as
    they are; any other character is spelt as its UTF-8 bytes, ``.XX`` each
    (``call.1`` -> ``call.2E1``), so the id reads back exactly (``parse_call_tag``)
    and the tag is a git ref name component, which git persistence needs. An id
    too long for a tag (``MAX_NAME``) is cut and ends in ``.x`` and a digest of
    the whole, so that it still names its call alone.
    """
    named = _spelt(tool, _MAX_TOOL)[0] + ":"
    head = f"{phase}:{named}"
    # Room as the longer phase leaves it: both tags of a call spell the id alike.
    room = MAX_NAME - len("after:") - len(named)
    spelt, whole = _spelt(call_id, room)
    if whole:
        return head + spelt
    digest = hashlib.blake2b(call_id.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return head + _spelt(call_id, room - len(_CUT) - _DIGEST)[0] + _CUT + digest


@dataclass(frozen=True, slots=True)
class CallTag:
    """What a call's snapshot tag says (``parse_call_tag``).

    Attributes:
        phase: ``undo`` (the snapshot before the call) or ``after``.
        tool: The tool's name.
        call_id: The call's id; for one cut to fit the tag, its start and ``...``.
    """

    phase: Phase
    tool: str
    call_id: str


def parse_call_tag(tag: str | None) -> CallTag | None:
    """The call a snapshot's tag (``call_tag``) names, or None if it names none."""
    if tag is None:
        return None
    phase, _, rest = tag.partition(":")
    tool, colon, spelt = rest.partition(":")
    if phase not in ("undo", "after") or not colon or not tool or not spelt:
        return None
    cut = spelt.rfind(_CUT)
    if cut >= 0 and len(spelt) - cut == len(_CUT) + _DIGEST:
        spelt = spelt[:cut]
        return CallTag(phase, _decoded(tool), _decoded(spelt) + "...")  # type: ignore[arg-type]
    return CallTag(phase, _decoded(tool), _decoded(spelt))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A tool call that the workspace recorded: what ``call_history`` lists.

    Attributes:
        call_id: The call's id (the model's tool-call id, or the one the toolset gave).
        tool: The tool called.
        before: The snapshot of the workspace just before the call: what
            ``rewind`` restores.
        after: The snapshot just after it; None if it changed nothing.
    """

    call_id: str
    tool: str
    before: FilesystemSnapshot
    after: FilesystemSnapshot | None = None

    @property
    def cause(self) -> Cause:
        """The cause its changes are attributed to (``blame``): its tool and call id."""
        return Cause.call(self.tool, self.call_id)


@dataclass(frozen=True, slots=True)
class RewindResult:
    """What ``rewind`` did: the cut point, for a harness to trim its transcript to.

    Attributes:
        call_id: The call rewound to: the workspace is now as it was just before it.
        undone: That call and every later recorded one, oldest first: the calls
            whose effects are gone (their results and everything after the first
            no longer describe the workspace). Read-only calls are never recorded.
        changes: How the rewind changed the workspace: files it added back,
            modified and deleted.
        discarded: Paths other writers had changed after ``call_id`` (outside any
            recorded call) whose changes the rewind discarded; only with ``force``,
            since without it such a rewind is refused.
    """

    call_id: str
    undone: tuple[str, ...]
    changes: FilesystemDiff
    discarded: tuple[str, ...] = ()


def recorded_calls(snapshots: Sequence[FilesystemSnapshot]) -> list[RecordedCall]:
    """The calls ``snapshots`` (oldest first) record, oldest first: one per snapshot
    tagged ``undo:...``, with the ``after:...`` snapshot of the same call, if kept."""
    calls: list[RecordedCall] = []
    open_calls: dict[str, int] = {}
    for snapshot in snapshots:
        tag = parse_call_tag(snapshot.tag)
        if tag is None:
            continue
        key = str(snapshot.tag).partition(":")[2]  # the tool and the id as the tag spells them
        if tag.phase == "undo":
            open_calls[key] = len(calls)
            calls.append(RecordedCall(tag.call_id, tag.tool, snapshot))
        else:
            index = open_calls.pop(key, None)
            if index is not None:
                calls[index] = replace(calls[index], after=snapshot)
    return calls


def _listing(fs: SnapshotableFilesystem) -> Callable[[], Sequence[FilesystemSnapshot]]:
    snapshots = getattr(fs, "snapshots", None)
    if not callable(snapshots):
        raise NotSupportedError(
            f"{type(fs).__name__} does not list its snapshots, so it keeps no call history",
            None,
        )
    return snapshots  # type: ignore[no-any-return]


def call_history(fs: SnapshotableFilesystem) -> list[RecordedCall]:
    """The tool calls recorded in ``fs`` that a ``rewind`` can return to, oldest first.

    A daemon's client asks the daemon (its ``call_history`` verb), which answers
    with this function on its workspace.

    Raises:
        NotSupportedError: The backend does not list its snapshots.
    """
    remote = getattr(fs, "call_history", None)
    if callable(remote):
        return list(remote())
    return recorded_calls(_listing(fs)())


def _index(calls: Sequence[RecordedCall], call_id: str) -> int:
    """The newest recorded call with this id."""
    for index in range(len(calls) - 1, -1, -1):
        call = calls[index]
        if call.before.tag == call_tag(call.tool, call_id):
            return index
    raise SnapshotNotFoundError("no recorded call has this id", call_id)


def _others(fs: SnapshotableFilesystem, calls: Sequence[RecordedCall]) -> list[FilesystemDiff]:
    """What writers other than ``calls`` changed between each two of them."""
    return [_every_change(fs, a.after or a.before, b.before) for a, b in itertools.pairwise(calls)]


def _every_change(
    fs: SnapshotableFilesystem, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
) -> FilesystemDiff:
    """``fs.diff``, with the paths access rules hide from the caller too (a change to
    one is a change a rewind would discard all the same), where the backend has rules."""
    recorded = getattr(fs, "recorded_diff", None)
    found: FilesystemDiff = fs.diff(base, target) if recorded is None else recorded(base, target)
    return found


def _paths(changes: FilesystemDiff) -> set[str]:
    return {*changes.added, *changes.modified, *changes.deleted}


def _refused(where: str) -> ContentChangedError:
    return ContentChangedError(
        f"another writer changed the workspace {where}, outside the recorded calls; "
        "rewinding would discard that too, so nothing was undone (a forced rewind discards it)",
        None,
    )


def rewind(fs: SnapshotableFilesystem, call_id: str, *, force: bool = False) -> RewindResult:
    """Return the workspace to how it was just before the recorded call ``call_id``.

    That call and every later recorded call leave the history (their snapshots
    are deleted); the result names them, oldest first: the cut point.

    A daemon's client asks the daemon (its ``rewind`` verb), which answers with
    this function on its workspace.

    Args:
        fs: The workspace.
        call_id: A call ``call_history`` lists (the newest, if several share the id).
        force: Rewind even if another writer changed the workspace after the call,
            discarding those changes too (``RewindResult.discarded`` names them).

    Raises:
        SnapshotNotFoundError: No recorded call has this id.
        ContentChangedError: Without ``force``: a writer other than the recorded
            calls changed the workspace after the call; nothing was changed.
        NotSupportedError: The backend cannot list or delete its snapshots.
    """
    remote = getattr(fs, "rewind", None)
    if callable(remote):
        result: RewindResult = remote(call_id, force=force)
        return result
    delete = getattr(fs, "delete_snapshot", None)
    if not callable(delete):
        raise NotSupportedError(f"{type(fs).__name__} cannot delete snapshots to rewind", None)
    calls = recorded_calls(_listing(fs)())
    undone = calls[_index(calls, call_id) :]
    target, last = undone[0].before, undone[-1].after or undone[-1].before
    discarded: set[str] = set()
    for (earlier, later), others in zip(
        itertools.pairwise(undone), _others(fs, undone), strict=True
    ):
        if not others.changed:
            continue
        shown = fs.diff(earlier.after or earlier.before, later.before)  # no hidden path named
        if not force:
            raise _refused(
                f"between calls {earlier.call_id} and {later.call_id} ({changed_paths(shown)})"
            )
        discarded |= _paths(shown)
    since = _every_change(fs, last)  # after the last call: only another writer's changes
    if since.changed:
        shown = fs.diff(last)
        if not force:
            raise _refused(f"after call {undone[-1].call_id} ({changed_paths(shown)})")
        discarded |= _paths(shown)
    back = fs.diff(target)  # from the state rewound to, to the live one
    try:
        fs.restore(target, if_unchanged_since=None if force else last)
    except ContentChangedError:  # a write landed after ``since`` was read
        late = fs.diff(last)
        raise _refused(f"after call {undone[-1].call_id} ({changed_paths(late)})") from None
    held = {s.snapshot_id: s for c in undone for s in (c.before, c.after) if s is not None}
    for snapshot in held.values():
        with contextlib.suppress(SnapshotNotFoundError):  # pruned meanwhile: gone already
            delete(snapshot)
    return RewindResult(
        call_id=undone[0].call_id,
        undone=tuple(call.call_id for call in undone),
        changes=FilesystemDiff(
            added=back.deleted,
            modified=back.modified,
            deleted=back.added,
            unchanged_count=target.file_count - len(back.deleted) - len(back.modified),
        ),
        discarded=tuple(sorted(discarded)),
    )
