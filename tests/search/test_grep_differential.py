"""fs.grep against GNU grep -RnIE on the same files: the same lines, the same first matches."""

from __future__ import annotations

import pytest

from support.search_corpus import GREP_CASES, LIMITS, assert_same_lines

from .conftest import Trees


@pytest.mark.parametrize("backend", ["memory", "host"])
@pytest.mark.parametrize(("name", "pattern"), GREP_CASES)
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
