"""Space accounting: which holders reach which bytes of file data.

A *holding* is what one holder keeps alive: some versions (a snapshot, a
frozen live tree, a fork point) and loose nodes (a live tree's orphans). The
bytes a holding *reaches* are those of every chunk reachable from it; they
are *exclusive* to it when no other holding reaches them, which is what
dropping it would free: a chunk is freed with its last reference (see
``_budget``). Bytes are counted by chunk identity, as the budget counts
them, so data that copy-on-write shares between versions counts once.

Why it need not look at every version's every file: versions share by
identity, and the lineage says where they may differ. Every inode outside
``changes_between(v, base)`` holds in ``v`` the very node object it holds in
the base version (a change stores a new node or clears the slot, and that
records the inode), so its data is reached by every holding alike. Only the
inodes some version changed, relative to the base, are looked at per version;
their chunks are told apart by identity, per inode, since chunks are never
shared across inodes (a node is cloned only into its own inode). The cost:
one pass over the base version's table, plus, for each inode in the union
``U`` of the versions' change sets, a lookup in each distinct table and a
look at the chunks of its distinct nodes: O(inodes + |U| x tables + chunks of
the nodes at U).

What is not counted: deferred content not loaded yet (it holds no memory),
and the tree's bookkeeping (nodes, directories, table pages), as in the
budget.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ._lineage import changes_between
from ._nodes import File, Node
from ._table import PAGE_BITS
from ._tree import Version


@dataclass(frozen=True, slots=True)
class Holding:
    """What one holder keeps alive: versions of one family of trees, and loose
    nodes (the orphans of a live tree, as ``Tree.orphan_nodes`` gives them)."""

    versions: Sequence[Version]
    orphans: Sequence[tuple[int, Node]] = ()


class Shares:
    """Bytes of file data by the set of holdings that reach them.

    Holdings are named by their index in the sequence ``shares`` was given.
    Each query costs O(distinct sets of holders): a handful per version.
    """

    __slots__ = ("_by_mask", "_count")

    def __init__(self, by_mask: dict[int, int], count: int) -> None:
        self._by_mask = by_mask
        self._count = count

    @property
    def total(self) -> int:
        """Bytes reached by any holding, shared bytes counted once."""
        return sum(self._by_mask.values())

    def reached(self, holdings: Collection[int]) -> int:
        """Bytes at least one of these holdings reaches."""
        group = self._group(holdings)
        return sum(size for mask, size in self._by_mask.items() if mask & group)

    def exclusive(self, holdings: Collection[int], *, dropped: Collection[int] = ()) -> int:
        """Bytes reached by these holdings and by no other: what dropping all of
        them together would free. With ``dropped``, as if those were gone already
        (what they shared with these becomes these holdings' alone)."""
        group = self._group(holdings)
        others = ~(group | self._group(dropped))
        return sum(
            size for mask, size in self._by_mask.items() if mask & group and not mask & others
        )

    def _group(self, holdings: Collection[int]) -> int:
        group = 0
        for holding in holdings:
            if not 0 <= holding < self._count:
                raise IndexError(f"no holding {holding}")
            group |= 1 << holding
        return group


def shares(holdings: Sequence[Holding]) -> Shares:
    """Count who reaches which bytes of file data (see the module docstring).

    Every version must belong to one family of trees (a tree and its forks).
    The caller keeps the versions alive and unchanged meanwhile (versions never
    change; a live tree is frozen first, see ``Tree.orphan_nodes``).
    """
    # Versions sharing a table reach the same: one root each, with every holder's bit.
    roots: list[Version] = []
    root_masks: list[int] = []
    by_table: dict[int, int] = {}
    orphans: dict[int, list[tuple[Node, int]]] = {}
    for index, holding in enumerate(holdings):
        bit = 1 << index
        for version in holding.versions:
            root = by_table.setdefault(id(version._table), len(roots))
            if root == len(roots):
                roots.append(version)
                root_masks.append(0)
            root_masks[root] |= bit
        for ino, node in holding.orphans:
            orphans.setdefault(ino, []).append((node, bit))
    counts: dict[int, int] = {}
    changed: set[int] = set(orphans)
    if roots:
        base = roots[0]
        for version in roots[1:]:
            changed |= changes_between(version.lineage, base.lineage)
        everyone = 0
        for mask in root_masks:
            everyone |= mask
        unchanged = _unchanged_bytes(base, changed)
        if unchanged:
            counts[everyone] = unchanged
    tables = [(version._table, mask) for version, mask in zip(roots, root_masks, strict=True)]
    for ino in changed:
        found: dict[int, tuple[Node, int]] = {}
        for table, mask in tables:
            slot = table.get(ino)
            if slot is not None:
                _reach(found, slot, mask)
        for orphan, bit in orphans.get(ino, ()):
            _reach(found, orphan, bit)
        _count_inode(found.values(), counts)
    return Shares(counts, len(holdings))


def _reach(found: dict[int, tuple[Node, int]], node: Node, mask: int) -> None:
    """Note that the holders in ``mask`` reach ``node``."""
    held = found.get(id(node))
    found[id(node)] = (node, mask if held is None else held[1] | mask)


def _unchanged_bytes(base: Version, changed: set[int]) -> int:
    """Bytes held by the base's files at inodes outside ``changed``."""
    total = 0
    for index, page in enumerate(base._table.pages):
        if page is None:
            continue
        first = index << PAGE_BITS
        for offset, node in enumerate(page.slots):
            if type(node) is File and node.lazy is None and first + offset not in changed:
                total += node.held
    return total


def _count_inode(nodes: Collection[tuple[Node, int]], counts: dict[int, int]) -> None:
    """Add the bytes of one inode's distinct nodes to ``counts``, chunk by chunk
    where the nodes share some of them."""
    files = [(node, mask) for node, mask in nodes if isinstance(node, File) and node.lazy is None]
    if not files:
        return
    dicts: dict[int, tuple[File, int]] = {}
    for node, mask in files:
        held = dicts.get(id(node.chunks))
        dicts[id(node.chunks)] = (node, mask if held is None else held[1] | mask)
    if len(dicts) == 1:  # one data state (e.g. a chmod since): no chunk to tell apart
        node, mask = next(iter(dicts.values()))
        if node.held:
            counts[mask] = counts.get(mask, 0) + node.held
        return
    chunks: dict[int, tuple[int, int]] = {}
    for node, mask in dicts.values():
        for chunk in node.chunks.values():
            seen = chunks.get(id(chunk))
            chunks[id(chunk)] = (len(chunk), mask if seen is None else seen[1] | mask)
    for size, mask in chunks.values():
        counts[mask] = counts.get(mask, 0) + size
