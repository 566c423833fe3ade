"""Listings in pages: a walk in git's order, resumed after any entry, gives the rest of the
walk, and the pages of ``entries`` make up the whole listing, in memory and on the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fs import MAX_ENTRIES, TreeEntry, tree_entries, tree_key
from workspacefs.host import HostFilesystem

# Names where a directory's own order ("a/") and its name ("a") disagree with "a-b".
PATHS = ["a-b.txt", "a/x.txt", "a/y/z.txt", "a.txt", "a0/q", "b", "é/è", "Z", "a b", "a/y0"]


def workspace() -> InMemoryFilesystem:
    fs = InMemoryFilesystem(mount_point="/workspace")
    for number, path in enumerate(PATHS):
        fs.write(path, str(number))
    fs.mkdir("empty")
    with fs.transaction() as tree:
        tree.symlink(1, "link", "/usr/bin/python3")
    return fs


def test_the_walk_is_in_git_order_and_resumes_after_any_entry() -> None:
    view = workspace().frozen_view().view
    walked = list(tree_entries(view))
    keys = [tree_key(entry) for entry in walked]
    assert keys == sorted(set(keys))
    files = [entry.path for entry in walked if entry.kind != "directory"]
    assert files == sorted([*PATHS, "link"])
    assert TreeEntry("link", "symlink", 16, 0o120777, "/usr/bin/python3") in walked
    for index, key in enumerate(["", *keys]):
        assert list(tree_entries(view, after=key)) == walked[index:]
    for cursor in ("a/x", "a/y/", "a/yz", "zz", "a.txt0"):  # keys of nothing in the tree
        assert list(tree_entries(view, after=cursor)) == [e for e in walked if tree_key(e) > cursor]


def test_pages_of_entries_make_up_the_listing() -> None:
    fs = workspace()
    whole = fs.entries()
    pages: list[TreeEntry] = []
    after = ""
    while page := fs.entries(after=after, limit=3):
        pages += page
        after = tree_key(page[-1])
    assert pages == whole
    assert [e.path for e in fs.entries("/workspace/a", recursive=False)] == [
        "a/x.txt",
        "a/y",
        "a/y0",
    ]
    assert fs.at(fs.snapshot()).entries() == whole


def test_bad_pages_are_refused() -> None:
    fs = workspace()
    with pytest.raises(ValueError, match="limit"):
        fs.entries(limit=0)
    with pytest.raises(ValueError, match="limit"):
        fs.entries(limit=MAX_ENTRIES + 1)
    with pytest.raises(NotADirectoryError):
        fs.entries("b")
    with pytest.raises(FileNotFoundError):
        fs.entries("missing")
    with pytest.raises(PermissionError):
        fs.entries("../x")


def host_copy(root: Path) -> HostFilesystem:
    """The same files as ``workspace`` in a host directory."""
    for number, path in enumerate(PATHS):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(str(number))
    (root / "empty").mkdir()
    (root / "link").symlink_to("/usr/bin/python3")
    return HostFilesystem(str(root), mount_point="/workspace")


def _shown(entries: list[TreeEntry]) -> list[tuple[str, str, int, str | None]]:
    return [(e.path, e.kind, e.size, e.target) for e in entries]  # modes follow the umask


def test_a_host_directory_pages_its_listing_as_the_tree_does(tmp_path: Path) -> None:
    host, memory = host_copy(tmp_path), workspace()
    assert _shown(host.entries()) == _shown(memory.entries())
    for after in ("", "a/", "a/y/z.txt", "b"):
        assert _shown(host.entries(after=after, limit=3)) == _shown(
            memory.entries(after=after, limit=3)
        )
    assert _shown(host.entries("/workspace/a", recursive=False)) == _shown(
        memory.entries("/workspace/a", recursive=False)
    )
    with pytest.raises(NotADirectoryError):
        host.entries("b")
    with pytest.raises(FileNotFoundError):
        host.entries("missing")
    with pytest.raises(PermissionError):
        host.entries("../x")
    with pytest.raises(ValueError, match="limit"):
        host.entries(limit=0)
