"""Line diffs: the patch's hunks are difflib's (so ``diff -u``'s), the hunks the UI draws
are the same, and changed lines are exactly the lines a reader must look at."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workspacefs.debug._text import changed_lines, decode_text, hunks, split_lines
from workspacefs.fs import is_binary
from workspacefs.fs._patch import hunks as patch_hunks

# Few distinct lines, so that versions share lines and hunks interleave.
LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  d", "é"]), max_size=30)


@given(LINES, LINES)
def test_patch_hunks_match_difflib_and_the_drawn_hunks(old: list[str], new: list[str]) -> None:
    ours = list(patch_hunks([line + "\n" for line in old], [line + "\n" for line in new]))
    theirs = list(difflib.unified_diff(old, new, "a/f", "b/f", lineterm=""))[2:]
    assert ours == theirs
    drawn = [hunk.header for hunk in hunks(old, new)]
    assert [line for line in ours if line.startswith("@@")] == drawn


@given(LINES, LINES)
def test_hunk_lines_rebuild_both_sides(old: list[str], new: list[str]) -> None:
    for hunk in hunks(old, new, context=10**6):  # one hunk covering everything
        assert [line.text for line in hunk.lines if line.op != "+"] == old
        assert [line.text for line in hunk.lines if line.op != "-"] == new
        assert [line.old for line in hunk.lines if line.op != "+"] == list(range(1, len(old) + 1))
        assert [line.new for line in hunk.lines if line.op != "-"] == list(range(1, len(new) + 1))


@given(LINES, LINES)
def test_unchanged_lines_come_from_the_old_version_in_order(old: list[str], new: list[str]) -> None:
    changed = set(changed_lines(old, new))
    kept = [line for number, line in enumerate(new, 1) if number not in changed]
    remaining = iter(old)
    assert all(line in remaining for line in kept)  # a subsequence of old
    plus = sum(1 for h in hunks(old, new, 0) for line in h.lines if line.op == "+")
    assert len(changed) == plus


def test_text_or_binary() -> None:
    assert decode_text("héllo\n".encode()) == "héllo\n"
    assert decode_text(b"a\0b") is None
    assert decode_text(b"\xff\xfe") is None
    assert decode_text(b"") == ""


@pytest.mark.parametrize("at", [7_999, 8_000, 8_191])
def test_binary_as_git_decides(tmp_path: Path, at: int) -> None:
    # The UI, patches and merges call a file binary where git itself does.
    data = b"a" * at + b"\0\n"
    (tmp_path / "old").write_bytes(b"")
    (tmp_path / "new").write_bytes(data)
    numstat = subprocess.run(
        ["git", "diff", "--no-index", "--numstat", "old", "new"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    git_binary = numstat.startswith("-\t-\t")
    assert is_binary(data) == git_binary
    assert (decode_text(data) is None) == git_binary


def test_split_lines_keeps_what_a_viewer_shows() -> None:
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("") == []
    assert split_lines("a\rb\n") == ["a\rb"]  # only \n ends a line, as in git
