"""Trees deeper than Python's stack: no operation recurses per level."""

from __future__ import annotations

import errno
import sys

import pytest

from support.consistency import check_consistent
from workspacefs.tree import ROOT_INO, Tree, diff_versions

DEPTH = max(3000, sys.getrecursionlimit() + 500)


@pytest.fixture
def deep() -> tuple[Tree, list[int]]:
    """A chain of DEPTH directories with a file at the bottom."""
    tree = Tree()
    chain = [ROOT_INO]
    for _ in range(DEPTH):
        chain.append(tree.mkdir(chain[-1], "d"))
    tree.write(tree.create(chain[-1], "leaf"), 0, b"bottom")
    return tree, chain


def test_errors_name_deep_paths(deep: tuple[Tree, list[int]]) -> None:
    tree, chain = deep
    with pytest.raises(OSError) as excinfo:
        tree.rmdir(ROOT_INO, "d")
    assert excinfo.value.errno == errno.ENOTEMPTY
    assert tree.paths(chain[-1]) == ["/".join(["d"] * DEPTH)]
    assert tree.describe(chain[-1], "leaf").endswith("d/d/leaf")


def test_deep_moves_diffs_and_restores(deep: tuple[Tree, list[int]]) -> None:
    tree, chain = deep
    before = tree.snapshot()
    tree.mkdir(ROOT_INO, "other")
    tree.rename(ROOT_INO, "d", tree.lookup(ROOT_INO, "other"), "moved")
    with pytest.raises(OSError) as excinfo:  # the cycle check walks up, not down
        tree.rename(tree.lookup(ROOT_INO, "other"), "moved", chain[-1], "loop")
    assert excinfo.value.errno == errno.EINVAL
    tree.write(tree.lookup(chain[-1], "leaf"), 0, b"changed")  # its paths are looked up
    after = tree.snapshot()
    diff = diff_versions(before, after, Tree.changes_between(before, after))
    leaf = "/".join(["d"] * DEPTH) + "/leaf"
    assert diff.deleted == (leaf,)
    assert diff.added == ("other/moved/" + leaf[2:],)
    tree.restore(before)
    tree.empty(ROOT_INO)
    assert tree.readdir(ROOT_INO) == []
    check_consistent(tree)
    check_consistent(before)
