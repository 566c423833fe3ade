"""Merges held open (``WorkspaceMerges``): a conflicting merge's result in a fork, the
conflicts described per path, continued all or nothing once resolved, or aborted
leaving the workspace bit-identical."""

from __future__ import annotations

import pytest

from support.merges import State, contents, digest, three_way
from workspacefs import (
    BusyError,
    ContentChangedError,
    InvalidArgumentError,
    NotFoundError,
    UnresolvedConflictsError,
)
from workspacefs.fs import ConflictHunk, ConflictSide
from workspacefs.git import WorkspaceMerges, merge

LINES = b"1\n2\n3\n4\n5\n6\n7\n"
BIN = b"\0bin\n"

BASE: State = {
    "text": LINES,
    "gone": LINES,
    "blob": BIN + b"1",
    "run.sh": LINES,
    "link": ("l", b"x"),
    "same": b"same\n",
}
OURS: State = {
    "text": LINES.replace(b"4\n", b"four\n"),
    "blob": BIN + b"2",
    "run.sh": ("x", LINES),
    "link": ("l", b"y"),
    "same": b"same\n",
    "added": b"mine\n",
    "ours-only": b"o\n",
}
THEIRS: State = {
    "text": LINES.replace(b"4\n", b"vier\n"),
    "gone": LINES + b"8\n",
    "blob": BIN + b"3",
    "run.sh": ("m", 0o600, LINES.replace(b"7\n", b"seven\n")),
    "link": ("l", b"z"),
    "same": b"same\n",
    "added": b"theirs\n",
    "theirs-only": b"t\n",
}


def _held() -> tuple[WorkspaceMerges, object]:
    ws, fork = three_way(BASE, OURS, THEIRS)
    merges = WorkspaceMerges.of(ws)
    result = merges.merge(fork, hold=True, source="exp")
    return merges, result


def test_a_conflicting_merge_held_open_describes_each_path() -> None:
    ws, fork = three_way(BASE, OURS, THEIRS)
    before = digest(ws)
    merges = WorkspaceMerges.of(ws)
    result = merges.merge(fork, hold=True, source="exp")
    assert not result.applied
    assert digest(ws) == before  # the workspace is untouched while the merge is open
    kinds = {c.path: c.kind for c in result.conflicts}
    assert kinds == {
        "added": "add/add",
        "blob": "binary",
        "gone": "delete/modify",
        "link": "symlink",
        "run.sh": "mode",
        "text": "content",
    }
    details = {c.path: c.detail for c in result.conflicts}
    text = details["text"]
    assert text is not None
    assert text.hunks == (ConflictHunk(4, "4\n", "four\n", "vier\n"),)
    assert (text.base.kind, text.ours.size, text.theirs.size) == ("file", 17, 17)
    gone = details["gone"]
    assert gone is not None
    assert (gone.ours, gone.theirs.size) == (ConflictSide("absent"), len(LINES) + 2)
    blob = details["blob"]
    assert blob is not None
    assert (blob.ours.binary, blob.theirs.binary, blob.hunks) == (True, True, ())
    link = details["link"]
    assert link is not None
    assert (link.base.target, link.ours.target, link.theirs.target) == ("x", "y", "z")
    mode = details["run.sh"]
    assert mode is not None
    assert (mode.base.mode & 0o777, mode.ours.mode & 0o777, mode.theirs.mode & 0o777) == (
        0o644,
        0o755,
        0o600,
    )
    added = details["added"]
    assert added is not None
    assert added.base.kind == "absent"
    assert [(h.base, h.ours, h.theirs) for h in added.hunks] == [("", "mine\n", "theirs\n")]

    held = result.held
    assert held is not None
    assert (held.source, held.unresolved) == ("exp", tuple(sorted(kinds)))
    # The fork holds the clean changes, the text conflicts with markers (diff3), the
    # side that kept a deleted path, the merged content under our mode, and ours else.
    fork_state = contents(merges.open.filesystem)  # type: ignore[union-attr]
    assert fork_state["theirs-only"] == b"t\n"
    assert fork_state["ours-only"] == b"o\n"
    assert fork_state["text"] == LINES.replace(
        b"4\n", b"<<<<<<< ours\nfour\n||||||| base\n4\n=======\nvier\n>>>>>>> theirs\n"
    )
    assert fork_state["gone"] == LINES + b"8\n"
    assert fork_state["run.sh"] == ("x", LINES.replace(b"7\n", b"seven\n"))
    assert fork_state["blob"] == BIN + b"2"
    assert fork_state["link"] == ("l", b"y")
    states = {s.path: s for s in held.states}
    assert states["text"].marker_lines == (4, 6, 8, 10)


def test_continue_is_refused_while_markers_remain_and_changes_nothing() -> None:
    merges, _ = _held()
    held = merges.open
    assert held is not None
    ws, fork = merges.filesystem, held.filesystem
    before, fork_before = digest(ws), digest(fork)
    with pytest.raises(UnresolvedConflictsError) as refused:
        merges.continue_merge(choose={"blob": "theirs", "link": "theirs"})
    message = str(refused.value)
    assert "text (conflict markers on lines 4, 6, 8, 10)" in message
    assert "added (conflict markers on lines 1, 3, 4, 6)" in message
    assert "gone (delete/modify: edit it or take a side)" in message
    assert "blob" not in message  # its side was taken, before the refusal undid it
    assert (digest(ws), digest(fork)) == (before, fork_before)
    assert merges.merge_status().unresolved == (  # type: ignore[union-attr]
        "added",
        "blob",
        "gone",
        "link",
        "run.sh",
        "text",
    )


def test_resolved_by_edits_and_sides_then_continued() -> None:
    merges, _ = _held()
    held = merges.open
    assert held is not None
    fork = held.filesystem
    fork.write("text", LINES.replace(b"4\n", b"four-vier\n").decode())
    fork.write("added", "mine and theirs\n")
    fork.delete("gone")
    status = merges.merge_status()
    assert status is not None
    assert status.unresolved == ("blob", "link", "run.sh")
    result = merges.continue_merge(choose={"blob": "theirs", "link": "base", "run.sh": "ours"})
    assert result.applied
    assert result.snapshot is not None
    assert result.snapshot.tag == "before-merge"
    assert merges.open is None
    assert contents(merges.filesystem) == {
        "text": LINES.replace(b"4\n", b"four-vier\n"),
        "blob": BIN + b"3",
        "run.sh": ("x", LINES.replace(b"7\n", b"seven\n")),
        "link": ("l", b"x"),
        "same": b"same\n",
        "added": b"mine and theirs\n",
        "ours-only": b"o\n",
        "theirs-only": b"t\n",
    }
    with pytest.raises(NotFoundError):
        merges.continue_merge()


def test_abort_leaves_the_workspace_bit_identical() -> None:
    ws, fork = three_way(BASE, OURS, THEIRS)
    before = digest(ws)
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True)
    held = merges.open
    assert held is not None
    held.filesystem.write("text", "edited in the merge's fork\n")
    held.take({"blob": "theirs"})
    merges.abort_merge()
    assert digest(ws) == before
    assert merges.open is None
    with pytest.raises(NotFoundError):
        merges.abort_merge()
    with pytest.raises(NotFoundError):
        held.continue_merge()
    # Aborted, the merge can be held open again.
    again = merges.merge(fork, hold=True)
    assert again.held is not None


def test_one_merge_held_at_a_time_and_plain_merges_meanwhile() -> None:
    merges, _ = _held()
    held = merges.open
    assert held is not None
    other = merges.filesystem.fork()
    other.write("plain.txt", "clean\n")
    with pytest.raises(BusyError):
        merges.merge(other, hold=True)
    done = merges.merge(other)  # a merge that is not held goes through meanwhile
    assert done.applied
    assert merges.open is held


def test_a_workspace_that_moved_meanwhile_keeps_its_changes() -> None:
    merges, _ = _held()
    held = merges.open
    assert held is not None
    ws = merges.filesystem
    ws.write("meanwhile.txt", "written while the merge was open\n")
    fork = held.filesystem
    fork.write("text", "resolved\n")
    fork.write("added", "resolved\n")
    result = merges.continue_merge(
        choose={"gone": "ours", "blob": "ours", "link": "ours", "run.sh": "theirs"}
    )
    assert result.applied
    state = contents(ws)
    assert state["meanwhile.txt"] == b"written while the merge was open\n"
    assert state["text"] == b"resolved\n"
    assert "gone" not in state
    assert state["run.sh"] == ("m", 0o600, LINES.replace(b"7\n", b"seven\n"))


def test_a_workspace_that_changed_a_resolved_path_refuses_the_continue() -> None:
    merges, _ = _held()
    held = merges.open
    assert held is not None
    ws = merges.filesystem
    ws.write("text", "the workspace's own change\n")
    before = digest(ws)
    fork = held.filesystem
    fork.write("text", "resolved\n")
    fork.write("added", "resolved\n")
    with pytest.raises(ContentChangedError) as refused:
        merges.continue_merge(
            choose={"gone": "ours", "blob": "ours", "link": "ours", "run.sh": "ours"}
        )
    assert refused.value.filename == "text"
    assert digest(ws) == before
    assert merges.open is held  # still open: abort it, and merge again


def test_bad_sides_and_paths_are_refused_naming_them() -> None:
    merges, _ = _held()
    with pytest.raises(InvalidArgumentError) as unknown:
        merges.continue_merge(choose={"same": "ours"})
    assert unknown.value.filename == "same"
    with pytest.raises(InvalidArgumentError) as side:
        merges.continue_merge(choose={"text": "mine"})  # type: ignore[dict-item]
    assert "base, ours or theirs" in str(side.value)


def test_marker_lines_the_sides_held_are_content() -> None:
    """A line like ``=======`` that the file held already (a heading's underline) is
    not taken for a conflict marker."""
    page = b"Title\n=======\n\nbody\n"
    ws, fork = three_way(
        {"page.rst": page},
        {"page.rst": page.replace(b"body", b"ours")},
        {"page.rst": page.replace(b"body", b"theirs")},
    )
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True)
    held = merges.open
    assert held is not None
    held.filesystem.write("page.rst", page.replace(b"body", b"both").decode())
    assert merges.continue_merge().applied
    assert contents(ws)["page.rst"] == page.replace(b"body", b"both")


def test_a_clean_merge_is_not_held() -> None:
    ws, fork = three_way({"a": b"a\n"}, {"a": b"a\n", "o": b"o\n"}, {"a": b"b\n"})
    result = WorkspaceMerges.of(ws).merge(fork, hold=True)
    assert (result.applied, result.held) == (True, None)
    assert WorkspaceMerges.of(ws).open is None


def test_merge_itself_reports_details_without_holding() -> None:
    ws, fork = three_way(BASE, OURS, THEIRS)
    result = merge(ws, fork)
    assert result.held is None
    assert all(conflict.detail is not None for conflict in result.conflicts)
    assert WorkspaceMerges.of(ws).open is None


@pytest.mark.parametrize(
    ("side", "expected"),
    [
        ("theirs", {"a": b"a\n", "d": b"now a file\n"}),
        ("ours", {"a": b"a\n", "d/z": b"z\n"}),
    ],
)
def test_a_directory_conflict_settled_by_a_side(side: str, expected: State) -> None:
    """A file where the other side has a directory it added to: taking the file's
    side removes the directory; taking ours keeps the directory as the merge leaves
    it (d/x, which theirs deleted and ours did not touch, goes, as in git)."""
    ws, fork = three_way(
        {"a": b"a\n", "d/x": b"x\n"},
        {"a": b"a\n", "d/x": b"x\n", "d/z": b"z\n"},
        {"a": b"a\n", "d": b"now a file\n"},
    )
    merges = WorkspaceMerges.of(ws)
    result = merges.merge(fork, hold=True)
    assert [(c.path, c.kind) for c in result.conflicts] == [("d", "directory")]
    detail = result.conflicts[0].detail
    assert detail is not None
    assert (detail.ours.kind, detail.theirs.kind) == ("directory", "file")
    assert merges.continue_merge(choose={"d": side}).conflicts == ()  # type: ignore[dict-item]
    assert contents(ws) == expected
