"""A walk never returns a path the protocol would refuse to read."""

from __future__ import annotations

import pytest

from workspacefs import InMemoryFilesystem, Limits


def readable(fs: InMemoryFilesystem, path: str) -> bool:
    try:
        fs.stat(path)
    except (OSError, ValueError):
        return False
    return True


def test_nothing_deeper_than_the_path_limit() -> None:
    fs = InMemoryFilesystem()
    tree = fs.tree
    with tree.lock:
        for depth in range(1, 21):
            parent = tree.make_dirs("/".join(f"l{i}" for i in range(depth)))
            tree.write(tree.create(parent, "f.txt"), 0, b"needle\n")
    found = [m.path for m in fs.glob("**")]
    assert found
    assert all(readable(fs, path) for path in found)
    assert max(path.count("/") + 1 for path in found) == fs.limits.max_path_depth
    grepped = [m.path for m in fs.grep("needle")]
    assert len(grepped) == fs.limits.max_path_depth - 1  # f.txt at depths 2..16
    assert all(fs.read(path).content == "needle\n" for path in grepped)


def test_no_name_over_the_segment_limit() -> None:
    fs = InMemoryFilesystem()
    with fs.tree.lock:
        fs.tree.write(fs.tree.create(1, "x" * 100), 0, b"needle\n")
    fs.write("short.txt", "needle\n")
    assert [m.path for m in fs.glob("*")] == ["short.txt"]
    assert [m.path for m in fs.grep("needle")] == ["short.txt"]


@pytest.mark.parametrize("search", ["glob", "grep"])
def test_no_path_through_more_links_than_resolution_follows(search: str) -> None:
    fs = InMemoryFilesystem(limits=Limits(max_path_depth=100))
    tree = fs.tree
    with tree.lock:  # d0/next -> ../d1, d1/next -> ../d2, ...: no loop, just a long chain
        for i in range(45):
            directory = tree.make_dirs(f"d{i}")
            tree.write(tree.create(directory, "leaf.txt"), 0, b"needle\n")
            tree.symlink(directory, "next", f"../d{i + 1}")
    if search == "glob":
        found = [m.path for m in fs.glob("d0/**/leaf.txt")]
    else:
        found = [m.path for m in fs.grep("needle", path="d0")]
    assert all(fs.read(path).content == "needle\n" for path in found)
    assert max(path.count("next") for path in found) == 40  # as far as a read can go
