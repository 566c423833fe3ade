"""A fork merged more than once: each merge's base is where the last one left the two.

After a merge, both sides hold what was merged; the next merge of the same
two must start from there (as git's merge base moves to the merged commit),
not from the fork point, where every path merged before looks added or
changed on both sides.
"""

from __future__ import annotations

from workspacefs import InMemoryFilesystem
from workspacefs.git import merge

LINES = b"1\n2\n3\n4\n5\n6\n7\n"


def _contents(fs: InMemoryFilesystem) -> dict[str, bytes]:
    return {
        match.path: fs.read_bytes(match.path).content
        for match in fs.glob("**/*")
        if fs.stat(match.path).is_file
    }


def _origin() -> InMemoryFilesystem:
    origin = InMemoryFilesystem()
    origin.write_bytes("keep.txt", b"keep\n")
    return origin


def test_a_fork_merged_edited_and_merged_again_merges_clean() -> None:
    origin = _origin()
    fork = origin.fork()
    fork.write_bytes("a.txt", LINES)
    fork.write_bytes("gone.txt", b"to be deleted\n")
    first = merge(origin, fork)
    assert (first.applied, first.conflicts) == (True, ())
    origin.write_bytes("mine.txt", b"the origin's own\n")  # the origin moves on as well
    fork.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n"))
    fork.write_bytes("b.txt", b"new in step two\n")
    fork.delete("gone.txt")
    second = merge(origin, fork)
    assert second.conflicts == ()
    assert second.applied
    assert second.changed == ("a.txt", "b.txt", "gone.txt")
    assert _contents(origin) == {
        "keep.txt": b"keep\n",
        "a.txt": LINES.replace(b"1\n", b"one\n"),
        "b.txt": b"new in step two\n",
        "mine.txt": b"the origin's own\n",
    }
    # A third time, both sides having changed one line of a file merged before.
    fork.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n").replace(b"7\n", b"seven\n"))
    origin.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n").replace(b"7\n", b"sieben\n"))
    third = merge(origin, fork, markers=True)
    assert [(c.path, c.kind) for c in third.conflicts] == [("a.txt", "content")]
    # Settled on the origin's side by another edit: the fourth merge takes theirs too.
    origin.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n").replace(b"4\n", b"four\n"))
    fourth = merge(origin, fork)
    assert fourth.applied
    assert origin.read_bytes("a.txt").content == (
        LINES.replace(b"1\n", b"one\n").replace(b"4\n", b"four\n").replace(b"7\n", b"seven\n")
    )


def test_a_true_conflict_after_a_merge_is_still_a_conflict() -> None:
    origin = _origin()
    fork = origin.fork()
    fork.write_bytes("a.txt", LINES)
    assert merge(origin, fork).applied
    origin.write_bytes("a.txt", LINES.replace(b"4\n", b"four\n"))
    fork.write_bytes("a.txt", LINES.replace(b"4\n", b"vier\n"))
    result = merge(origin, fork, markers=True)
    (conflict,) = result.conflicts
    assert (conflict.path, conflict.kind) == ("a.txt", "content")
    assert conflict.base is not None
    assert conflict.base.data == LINES  # the merged state, not the fork point (no a.txt)
    assert conflict.markers is not None
    assert b"<<<<<<< ours\n" in conflict.markers
    assert not result.applied
    assert origin.read_bytes("a.txt").content == LINES.replace(b"4\n", b"four\n")
    # A deletion against an edit, after the merge, too.
    fork.write_bytes("a.txt", LINES)
    fork.delete("a.txt")
    (gone,) = merge(origin, fork).conflicts
    assert (gone.path, gone.kind) == ("a.txt", "delete/modify")


def test_merges_both_ways_each_start_from_the_last() -> None:
    origin = _origin()
    fork = origin.fork()
    fork.write_bytes("a.txt", LINES)
    assert merge(origin, fork).applied
    origin.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n"))
    origin.write_bytes("o.txt", b"from the origin\n")
    back = merge(fork, origin)  # the origin into the fork
    assert (back.applied, back.conflicts) == (True, ())
    assert _contents(fork) == _contents(origin)
    fork.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n").replace(b"7\n", b"seven\n"))
    origin.write_bytes("a.txt", LINES.replace(b"1\n", b"one\n").replace(b"2\n", b"two\n"))
    again = merge(origin, fork)
    assert again.conflicts == ()
    assert origin.read_bytes("a.txt").content == (
        LINES.replace(b"1\n", b"one\n").replace(b"2\n", b"two\n").replace(b"7\n", b"seven\n")
    )
    assert merge(fork, origin).applied
    assert _contents(fork) == _contents(origin)


def test_equal_changes_on_both_sides_count_as_merged() -> None:
    origin = _origin()
    fork = origin.fork()
    origin.write_bytes("a.txt", b"same\n")
    fork.write_bytes("a.txt", b"same\n")
    nothing = merge(origin, fork)  # nothing to change: the two agree
    assert (nothing.applied, nothing.changed, nothing.conflicts) == (False, (), ())
    fork.write_bytes("a.txt", b"newer\n")
    result = merge(origin, fork)
    assert result.conflicts == ()
    assert origin.read_bytes("a.txt").content == b"newer\n"


def test_a_fast_forward_counts_as_merged() -> None:
    origin = _origin()
    fork = origin.fork()
    fork.write_bytes("a.txt", b"v1\n")
    assert origin.fast_forward(fork)
    fork.write_bytes("a.txt", b"v2\n")
    origin.write_bytes("mine.txt", b"mine\n")  # no fast-forward now: a three-way merge
    result = merge(origin, fork)
    assert result.conflicts == ()
    assert origin.read_bytes("a.txt").content == b"v2\n"


def test_a_restore_to_before_the_merge_forgets_it() -> None:
    """Restored to before a merge, the origin no longer holds what was merged: the
    next merge brings it again (a base at the merge would read it as deleted)."""
    origin = _origin()
    fork = origin.fork()
    fork.write_bytes("a.txt", LINES)
    first = merge(origin, fork)
    assert first.snapshot is not None
    origin.restore(first.snapshot)
    assert not origin.exists("a.txt")
    again = merge(origin, fork)
    assert (again.applied, again.conflicts, again.changed) == (True, (), ("a.txt",))
    assert origin.read_bytes("a.txt").content == LINES


def test_a_dry_run_or_a_conflict_records_no_merge() -> None:
    origin = _origin()
    fork = origin.fork()
    fork.write_bytes("a.txt", b"fork\n")
    origin.write_bytes("a.txt", b"origin\n")
    assert merge(origin, fork).conflicts  # add/add: nothing merged
    assert not merge(origin, fork, dry_run=True).applied
    origin.write_bytes("a.txt", b"fork\n")  # settled by hand on the origin's side
    fork.write_bytes("a.txt", b"fork, edited\n")
    # Had the refused merge counted, its base would hold "fork\n" and this would merge.
    (conflict,) = merge(origin, fork).conflicts
    assert conflict.kind == "add/add"


def test_snapshots_of_a_side_line_merged_in_steps() -> None:
    """The same with the workspace's own snapshots: a line of work kept as snapshots
    (s1, then s2 from it) merged into the live tree one after the other."""
    fs = _origin()
    start = fs.snapshot()
    fs.write_bytes("n.txt", b"v1\n")
    s1 = fs.snapshot()
    fs.write_bytes("n.txt", b"v2\n")
    s2 = fs.snapshot()
    fs.restore(start)
    fs.write_bytes("mine.txt", b"mine\n")
    assert merge(fs, s1).applied
    result = merge(fs, s2)
    assert result.conflicts == ()
    assert _contents(fs) == {"keep.txt": b"keep\n", "mine.txt": b"mine\n", "n.txt": b"v2\n"}
