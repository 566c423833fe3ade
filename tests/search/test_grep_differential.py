"""fs.grep against GNU grep -RnIE on the same files: the same lines, the same first matches."""

from __future__ import annotations

import pytest

from .conftest import Trees
from .corpus import LIMITS, assert_same_lines

TEXT_PATTERNS = [
    "needle",
    "import os",
    r"import\s+os$",
    "^import",
    "^$",
    r"^\s*$",
    "",
    "x*",
    "$",
    "^",
    "hello|needle",
    "hello\nTOKEN",  # a newline separates patterns, as for grep
    "ab|abcd",  # leftmost-longest, as POSIX: abcd
    "(a|ab)(c|bcd)",
    "ne+dle",
    "[[:digit:]]+",
    "[0-9]{2,}",
    "é",
    "wörld",
    "caf.",
    "漢字",
    "😀",
    ".",
    "^.{3}$",
    "[[:space:]]$",
    "needle$",
    "^[A-Z]",
    r"\bneedle\b",
    "[^a-zA-Z0-9 ]",
    "(import|from) +os",
    "^\t",
    "needle.*",
    "line t.*",
    "[A-Z][a-z]+",
    "sorts (before|after)",
    "colon|spaces|bracket",
    "secret|outside",
]
BIG_PATTERNS = [
    "needle",
    "needle$",
    "^needle",
    "straddle",
    "END-OF-HUGE",
    "^0012345 ",
    "[[:space:]]$",
    "tail$",
    "crlf",
    "needle-end$",
    "b needle-end",
]
LOOPS_PATTERNS = ["needle", "", "root|deeper"]

CASES = (
    [("text", p) for p in TEXT_PATTERNS]
    + [("big", p) for p in BIG_PATTERNS]
    + [("loops", p) for p in LOOPS_PATTERNS]
)


@pytest.mark.parametrize("backend", ["memory", "host"])
@pytest.mark.parametrize(("name", "pattern"), CASES)
def test_grep_agrees_with_gnu_grep(trees: Trees, name: str, pattern: str, backend: str) -> None:
    fs = trees.backend(name, backend)
    matches = list(fs.grep(pattern, max_matches=LIMITS.max_grep_matches))
    assert_same_lines(matches, trees.gnu_grep(name, pattern))


@pytest.mark.parametrize("backend", ["memory", "host"])
def test_grep_below_a_link_and_with_a_file_filter(trees: Trees, backend: str) -> None:
    fs = trees.backend("text", backend)
    everywhere = trees.gnu_grep("text", "needle")
    below = [(m.path, m.line_number) for m in fs.grep("needle", path="links/to_src")]
    in_src = [(path, number) for path, number, *_ in everywhere if path.startswith("src/")]
    assert below == [("links/to_src/" + path[4:], number) for path, number in in_src]
    assert below  # the link's target holds matches, so the comparison compared something
    filtered = [m.path for m in fs.grep("needle", glob="*.txt")]
    assert filtered == [path for path, *_ in everywhere if path.endswith(".txt")]
