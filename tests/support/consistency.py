"""The tree's invariants, checked after every test of this tier (an fsck for the tree).

Independent of how the tree keeps its books: every figure is recomputed by a
walk from the root and compared with what the tree says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set

from workspacefs.tree import CHUNK_SIZE, ROOT_INO, Directory, File, Tree, Version


def check_consistent(tree: Tree | Version, held: Set[int] = frozenset()) -> None:
    """Fail if ``tree`` breaks an invariant.

    Args:
        tree: The live tree or a frozen version.
        held: The live inodes the kernel holds (its lookup counts are not
            zero): exactly those of them that are unlinked must be orphans.
    """
    links: dict[int, list[tuple[int, str]]] = {ROOT_INO: []}
    subdirectories: Counter[int] = Counter()
    pending = [ROOT_INO]
    while pending:
        parent = pending.pop()
        for name, child in tree.directory(parent).entries.items():
            seen_before = child in links
            links.setdefault(child, []).append((parent, name))
            node = tree.node(child)
            if isinstance(node, Directory):
                assert not seen_before, f"directory {child} has two names"
                subdirectories[parent] += 1
                pending.append(child)

    file_count = total_bytes = 0
    for ino, names in links.items():
        node = tree.node(ino)
        assert sorted(node.links) == sorted(names), f"inode {ino}: links {node.links} vs {names}"
        if isinstance(node, Directory):
            assert node.nlink == 2 + subdirectories[ino], f"directory {ino}: nlink {node.nlink}"
            continue
        assert node.nlink == len(names), f"inode {ino}: nlink {node.nlink}, {len(names)} names"
        file_count += len(names)
        if isinstance(node, File):
            total_bytes += node.size * len(names)
            _check_file_data(ino, node)
    assert tree.file_count == file_count, f"file_count {tree.file_count}, walk {file_count}"
    assert tree.total_bytes == total_bytes, f"total_bytes {tree.total_bytes}, walk {total_bytes}"

    if isinstance(tree, Tree):
        unlinked = {ino for ino in held if ino not in links}
        assert set(tree.orphans) == unlinked, f"orphans {set(tree.orphans)}, held {unlinked}"
        for ino in unlinked:
            node = tree.node(ino)
            assert node.nlink == 0, f"orphan {ino} has nlink {node.nlink}"
            assert not node.links, f"orphan {ino} still has names {node.links}"
        for ino in links:
            assert tree.held(ino) == (ino in held), f"inode {ino}: held {tree.held(ino)}"


def _check_file_data(ino: int, node: File) -> None:
    """Chunks lie within the size, and ``allocated`` counts exactly their bytes."""
    if node.lazy is not None:
        return  # nothing loaded yet: the content says the size
    for index, chunk in node.chunks.items():
        assert len(chunk) <= CHUNK_SIZE, f"inode {ino}: chunk {index} too long"
        end = index * CHUNK_SIZE + len(chunk)
        assert end <= node.size, f"inode {ino}: chunk {index} ends at {end} past {node.size}"
    allocated = sum(len(chunk) for chunk in node.chunks.values())
    assert node.allocated == allocated, f"inode {ino}: allocated {node.allocated} vs {allocated}"
    assert node.allocated <= node.size
