"""``diff_versions`` against a walk of both whole trees, where directories appear,
disappear and move: a directory only one side has is not walked from its parent when
it is among the changed inodes itself (its own entries name what is in it), and a
moved one, whose files did not change, still is; and after random changes (hard links,
renames, replaced kinds), between snapshots and between the change feed's frozen views."""

from __future__ import annotations

from collections.abc import Callable

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from workspacefs.tree import ROOT_INO, Directory, Tree, TreeView, diff_versions, same_entry


def files(view: TreeView) -> dict[str, object]:
    return {path: node for path, _, node in view.walk() if not isinstance(node, Directory)}


def walked_diff(base: TreeView, target: TreeView) -> tuple[list[str], list[str], list[str]]:
    old, new = files(base), files(target)
    added = sorted(set(new) - set(old))
    deleted = sorted(set(old) - set(new))
    modified = sorted(p for p in set(old) & set(new) if not same_entry(old[p], new[p]))  # type: ignore[arg-type]
    return added, modified, deleted


def start(tree: Tree) -> None:
    tree.make_dirs("a/x/deep")
    a = tree.lookup(ROOT_INO, "a")
    x = tree.lookup(a, "x")
    for name in ("f1", "f2"):
        tree.write(tree.create(x, name), 0, name.encode())
    tree.write(tree.create(a, "g"), 0, b"g")
    tree.write(tree.create(ROOT_INO, "top"), 0, b"t")


def move_into_new(tree: Tree) -> None:  # a moved directory's files are unchanged inodes
    new = tree.make_dirs("new/inner")
    tree.rename(tree.lookup(ROOT_INO, "a"), "x", new, "x")


def new_tree_with_files(tree: Tree) -> None:
    d = tree.make_dirs("made/one/two")
    tree.write(tree.create(d, "leaf"), 0, b"l")
    tree.write(tree.create(tree.lookup(ROOT_INO, "made"), "f"), 0, b"f")


def remove_around_a_moved_out_directory(tree: Tree) -> None:
    a = tree.lookup(ROOT_INO, "a")
    tree.rename(a, "x", ROOT_INO, "kept")
    tree.unlink(a, "g")
    tree.rmdir(ROOT_INO, "a")


def replace_a_file_by_a_directory(tree: Tree) -> None:
    tree.unlink(ROOT_INO, "top")
    d = tree.mkdir(ROOT_INO, "top")
    tree.write(tree.create(d, "inside"), 0, b"i")


def rename_the_parent(tree: Tree) -> None:
    tree.rename(ROOT_INO, "a", ROOT_INO, "b")
    tree.write(tree.lookup(tree.lookup(ROOT_INO, "b"), "g"), 0, b"G")


@pytest.mark.parametrize(
    "change",
    [
        move_into_new,
        new_tree_with_files,
        remove_around_a_moved_out_directory,
        replace_a_file_by_a_directory,
        rename_the_parent,
    ],
)
def test_diff_matches_a_walk_of_both_trees(change: Callable[[Tree], None]) -> None:
    tree = Tree()
    with tree.lock:
        start(tree)
        base = tree.snapshot()
        change(tree)
        target = tree.snapshot()
    found = diff_versions(base, target, Tree.changes_between(base, target))
    expected = walked_diff(base, target)
    assert (list(found.added), list(found.modified), list(found.deleted)) == expected
    backwards = diff_versions(target, base, Tree.changes_between(base, target))
    added, modified, deleted = expected
    assert (list(backwards.added), list(backwards.modified), list(backwards.deleted)) == (
        deleted,
        modified,
        added,
    )
    assert any(expected)


NAMES = ("a", "b", "c")
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["create", "write", "unlink", "mkdir", "rmdir", "rename", "link", "chmod"]),
        st.integers(0, 50),
        st.integers(0, 50),
        st.sampled_from(NAMES),
    ),
    max_size=25,
)


def apply(tree: Tree, operations: list[tuple[str, int, int, str]]) -> None:
    """Each operation on an entry and a directory picked by number among those there are;
    one the tree refuses changes nothing and is skipped."""
    for verb, first, second, name in operations:
        entries = [(p, parent, n, ino) for p, ino, _ in tree.walk() for parent, n in [_at(tree, p)]]
        directories = [ROOT_INO] + [ino for _, ino, node in tree.walk() if _is_dir(node)]
        directory = directories[second % len(directories)]
        entry = entries[first % len(entries)] if entries else None
        try:
            if verb == "create":
                tree.write(tree.create(directory, name), 0, name.encode())
            elif verb == "mkdir":
                tree.mkdir(directory, name)
            elif entry is None:
                continue
            elif verb == "write":
                tree.write(entry[3], 0, b"w" * (second + 1))
            elif verb == "unlink":
                tree.unlink(entry[1], entry[2])
            elif verb == "rmdir":
                tree.rmdir(entry[1], entry[2])
            elif verb == "rename":
                tree.rename(entry[1], entry[2], directory, name)
            elif verb == "link":
                tree.link(entry[3], directory, name)
            else:
                tree.setattr(entry[3], mode=0o600 + second)
        except OSError:
            continue


def _at(tree: Tree, path: str) -> tuple[int, str]:
    parent, _, name = path.rpartition("/")
    return tree.resolve_path(parent) or ROOT_INO, name


def _is_dir(node: object) -> bool:
    return isinstance(node, Directory)


@settings(max_examples=300, deadline=None)
@given(setup=OPERATIONS, change=OPERATIONS)
def test_diff_matches_a_walk_after_any_changes(
    setup: list[tuple[str, int, int, str]], change: list[tuple[str, int, int, str]]
) -> None:
    """Random changes between two frozen views (as the change feed takes them, the
    inodes its journals named) and between two snapshots: the diff is the walk's."""
    tree = Tree()
    touched: set[int] = set()
    with tree.lock:
        apply(tree, setup)
        base = tree.snapshot()
        before = tree.freeze()
    stop = tree.lock.observe(lambda journal: touched.update(journal.inodes))
    for operation in change:  # each under its own hold, as requests come
        with tree.lock:
            apply(tree, [operation])
    stop()
    with tree.lock:
        after = tree.freeze()
        target = tree.snapshot()
    expected = walked_diff(base, target)
    for old, new, changed in (
        (base, target, Tree.changes_between(base, target)),
        (before, after, touched),
    ):
        found = diff_versions(old, new, changed)
        assert (list(found.added), list(found.modified), list(found.deleted)) == expected
        back = diff_versions(new, old, changed)
        assert (list(back.added), list(back.modified), list(back.deleted)) == (
            expected[2],
            expected[1],
            expected[0],
        )
