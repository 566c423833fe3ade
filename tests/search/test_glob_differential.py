"""fs.glob against glob.glob(recursive=True) and bash's globstar on the same files.

Where the two references differ -- bash's ``**`` does not descend into links
to directories, glob.glob's does -- the protocol follows glob.glob; at a
loop (a link to a directory being walked) glob.glob never ends, and the
protocol stops as bash does. So the tree with links but no loops is checked
against glob.glob for every pattern and against bash for patterns without
``**``; the tree made of loops is checked against bash.
"""

from __future__ import annotations

import pytest

from support.search_corpus import GLOB_LOOPS, GLOB_TEXT, bash_glob, glob_pairs, python_glob

from .conftest import Trees


@pytest.mark.parametrize("backend", ["memory", "host"])
@pytest.mark.parametrize("pattern", GLOB_TEXT)
def test_glob_agrees_with_python_glob(trees: Trees, pattern: str, backend: str) -> None:
    matches = list(trees.backend("text", backend).glob(pattern))
    assert [m.path for m in matches] == sorted(m.path for m in matches)
    assert glob_pairs(matches) == python_glob(trees.reference("text"), pattern)


@pytest.mark.parametrize("backend", ["memory", "host"])
@pytest.mark.parametrize("pattern", [p for p in GLOB_TEXT if "**" not in p])
def test_glob_agrees_with_bash(trees: Trees, pattern: str, backend: str) -> None:
    matches = trees.backend("text", backend).glob(pattern)
    assert glob_pairs(list(matches)) == bash_glob(trees.reference("text"), pattern)


@pytest.mark.parametrize("backend", ["memory", "host"])
@pytest.mark.parametrize("pattern", GLOB_LOOPS)
def test_glob_stops_at_loops_as_bash_does(trees: Trees, pattern: str, backend: str) -> None:
    matches = trees.backend("loops", backend).glob(pattern)
    assert glob_pairs(list(matches)) == bash_glob(trees.reference("loops"), pattern)


def test_the_references_differ_where_the_docstring_says(trees: Trees) -> None:
    root = trees.reference("text")
    through_links = {("links/to_src/app.py", True), ("links/chain/app.py", True)}
    assert through_links <= python_glob(root, "**/app.py")
    assert not through_links & bash_glob(root, "**/app.py")
