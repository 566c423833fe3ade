"""Space accounting: which holders reach which bytes of file data.

A *holding* is what one holder keeps alive: some versions (a snapshot, a
frozen live tree, a fork point) and loose nodes (a live tree's orphans). The
bytes a holding *reaches* are those of every chunk reachable from it; they
are *exclusive* to it when no other holding reaches them, which is what
dropping it would free: a chunk is freed with its last reference (see
``_budget``). Bytes are counted by chunk identity, as the budget counts
them, so data that copy-on-write shares between versions counts once.

Why it need not walk every version: versions share by identity, and the
lineage says where they may differ. An inode outside ``changes_between(a,
b)`` holds the very same node object in ``a`` and in ``b`` (every change
stores a new node or clears the slot, and records the inode). So the
versions are arranged in a tree along their lineage, each below its nearest
ancestor among them (a version with none below the oldest one), and
numbered depth first, which makes every subtree a range of numbers. An inode
no edge of that tree changed holds one node in every version: its data is
counted once, from the top version's table, as reached by everyone. An
inode that some edges changed holds, in each version, the node of the
nearest version above it (itself included) where it changed: a range of
numbers minus the ranges of the changes below, found with one sorted sweep.
Chunks of the distinct nodes at such an inode are then told apart by
identity; they are never shared across inodes (a node is cloned only into
its own inode).

The cost: one pass over the top version's inode table, the lineage steps
between the versions, and for each inode an edge changed, its change points
and the chunks of its distinct nodes: O(inodes + changes), with a factor of
versions / 64 for the bit sets of the holders (machine words of a Python int).

What is not counted: deferred content not loaded yet (it holds no memory),
and the tree's bookkeeping (nodes, directories, table pages), as in the
budget.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from ._chunks import Chunk
from ._lineage import Lineage, changes_between
from ._nodes import File, Node
from ._table import PAGE_BITS
from ._version import Version


@dataclass(frozen=True, slots=True)
class Holding:
    """What one holder keeps alive: versions of one family of trees, and loose
    nodes (the orphans of a live tree, as ``Tree.orphan_nodes`` gives them)."""

    versions: Sequence[Version]
    orphans: Sequence[tuple[int, Node]] = ()


class Shares:
    """Bytes of file data by the set of holdings that reach them.

    Holdings are named by their index in the sequence ``shares`` was given.
    What one holding reaches, or holds alone, is counted for all of them in
    one pass on first use; a query about a group costs O(distinct sets of
    holders).
    """

    __slots__ = ("_alone", "_by_mask", "_count", "_reached")

    def __init__(self, by_mask: dict[int, int], count: int) -> None:
        self._by_mask = by_mask
        self._count = count
        self._reached: list[int] | None = None
        self._alone: list[int] | None = None

    @property
    def total(self) -> int:
        """Bytes reached by any holding, shared bytes counted once."""
        return sum(self._by_mask.values())

    def reached(self, holdings: Collection[int]) -> int:
        """Bytes at least one of these holdings reaches."""
        group = self._group(holdings)
        if len(holdings) == 1:
            return self._each()[0][group.bit_length() - 1]
        return sum(size for mask, size in self._by_mask.items() if mask & group)

    def exclusive(self, holdings: Collection[int], *, dropped: Collection[int] = ()) -> int:
        """Bytes reached by these holdings and by no other: what dropping all of
        them together would free. With ``dropped``, as if those were gone already
        (what they shared with these becomes these holdings' alone)."""
        group = self._group(holdings)
        if len(holdings) == 1 and not dropped:
            return self._each()[1][group.bit_length() - 1]
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

    def _each(self) -> tuple[list[int], list[int]]:
        """What each holding reaches, and holds alone. Masks are read run by run
        into a difference array: O(runs of the masks + holdings)."""
        if self._reached is None or self._alone is None:
            steps = [0] * (self._count + 1)
            alone = [0] * self._count
            for mask, size in self._by_mask.items():
                if not mask & (mask - 1):
                    alone[mask.bit_length() - 1] += size
                for start, end in _runs(mask):
                    steps[start] += size
                    steps[end] -= size
            reached, running = [], 0
            for step in steps[:-1]:
                running += step
                reached.append(running)
            self._reached, self._alone = reached, alone
        return self._reached, self._alone


def _runs(mask: int) -> Iterator[tuple[int, int]]:
    """The runs of set bits of ``mask``, lowest first, as ranges [start, end)."""
    while mask:
        low = mask & -mask
        start = low.bit_length() - 1
        carried = mask + low  # the run cleared, and the bit above it set
        end = (carried & -carried).bit_length() - 1
        yield start, end
        mask = carried ^ (1 << end)


def shares(holdings: Sequence[Holding]) -> Shares:
    """Count who reaches which bytes of file data (see the module docstring).

    Every version must belong to one family of trees (a tree and its forks).
    The caller keeps the versions alive and unchanged meanwhile (versions never
    change; a live tree is frozen first, see ``Tree.orphan_nodes``).
    """
    # Bits name "roots" while counting: one per distinct table (versions sharing
    # a table reach the same), then one per holding with orphans. ``owners[bit]``
    # says which holdings a root stands for; masks become holdings' at the end.
    roots, owners = _distinct_tables(holdings)
    counts: dict[int, int] = {}
    changed: dict[int, list[int]] = {}
    tree = _RootTree(roots) if roots else None
    if tree is not None:
        roots = tree.roots
        owners = [owners[root] for root in tree.order]
        changed = tree.change_points()
    loose = _loose_nodes(holdings, owners)
    touched = changed.keys() | loose.keys()
    if tree is not None:
        unchanged = _unchanged_bytes(roots[0], touched)
        if unchanged:
            counts[(1 << len(roots)) - 1] = unchanged
    for ino in touched:
        found: dict[int, tuple[Node, int]] = {}
        if tree is not None:
            for number, mask in tree.holders_at(changed.get(ino, [])):
                slot = roots[number]._table.get(ino)
                if slot is not None:
                    _reach(found, slot, mask)
        for orphan, bit in loose.get(ino, ()):
            _reach(found, orphan, bit)
        _count_inode(found.values(), counts)
    return Shares(_by_holders(counts, owners), len(holdings))


def _distinct_tables(holdings: Sequence[Holding]) -> tuple[list[Version], list[int]]:
    """One version per distinct table the holdings' versions have, and for each the
    mask of the holdings that have it."""
    roots: list[Version] = []
    owners: list[int] = []
    by_table: dict[int, int] = {}
    for index, holding in enumerate(holdings):
        for version in holding.versions:
            root = by_table.setdefault(id(version._table), len(roots))
            if root == len(roots):
                roots.append(version)
                owners.append(0)
            owners[root] |= 1 << index
    return roots, owners


def _loose_nodes(
    holdings: Sequence[Holding], owners: list[int]
) -> dict[int, list[tuple[Node, int]]]:
    """Inode -> (node, root bit) of the holdings' orphans: each holding with orphans gets
    the next root bit, appended to ``owners`` as the mask of that holding alone."""
    loose: dict[int, list[tuple[Node, int]]] = {}
    for index, holding in enumerate(holdings):
        if holding.orphans:
            bit = 1 << len(owners)
            owners.append(1 << index)
            for ino, node in holding.orphans:
                loose.setdefault(ino, []).append((node, bit))
    return loose


class _RootTree:
    """Distinct versions in a tree along their lineage, numbered depth first.

    ``roots[n]`` is version number ``n`` (0 the top); ``changes[n]`` the inodes
    that may differ between it and its parent in the tree (none for the top);
    ``sizes[n]`` the size of its subtree, which holds numbers ``n`` to ``n +
    sizes[n] - 1``; ``order[n]`` its index in the list given.
    """

    __slots__ = ("changes", "order", "roots", "sizes")

    def __init__(self, versions: Sequence[Version]) -> None:
        at: dict[int, int] = {id(version.lineage): index for index, version in enumerate(versions)}
        parents: list[int | None] = []
        edges: list[set[int]] = []
        tops = []
        for index, version in enumerate(versions):
            steps: list[Lineage] = [version.lineage]
            step = version.lineage.parent
            while step is not None and id(step) not in at:
                steps.append(step)
                step = step.parent
            if step is None:  # no version above it: joined to the first such, below
                tops.append(index)
                parents.append(None)
                edges.append(set())
            else:
                parents.append(at[id(step)])
                edges.append(set().union(*(s.changes for s in steps)))
        top = tops[0]
        for index in tops[1:]:
            parents[index] = top
            edges[index] = changes_between(versions[index].lineage, versions[top].lineage)
        children: list[list[int]] = [[] for _ in versions]
        for index, parent in enumerate(parents):
            if parent is not None:
                children[parent].append(index)
        order: list[int] = []
        stack = [top]
        while stack:  # depth first, children in the order given
            index = stack.pop()
            order.append(index)
            stack.extend(reversed(children[index]))
        number = {index: n for n, index in enumerate(order)}
        sizes = [1] * len(order)
        for n in range(len(order) - 1, 0, -1):
            parent = parents[order[n]]
            assert parent is not None
            sizes[number[parent]] += sizes[n]
        self.order = order
        self.roots = [versions[index] for index in order]
        self.changes = [edges[index] for index in order]
        self.sizes = sizes

    def change_points(self) -> dict[int, list[int]]:
        """Inode -> the numbers (ascending) of the versions whose edge above changed it."""
        changed: dict[int, list[int]] = {}
        for number, inodes in enumerate(self.changes):
            for ino in inodes:
                changed.setdefault(ino, []).append(number)
        return changed

    def holders_at(self, points: list[int]) -> list[tuple[int, int]]:
        """(version number, mask of the versions holding its node) for one inode
        changed on the edges above ``points`` (ascending): each point, and the
        top, holds its node for its range minus the ranges of the points below."""
        masks: dict[int, int] = {}
        stack: list[tuple[int, int]] = []  # (point, end of its range), nested
        for point in [0, *points]:
            size = self.sizes[point]
            while stack and point >= stack[-1][1]:
                stack.pop()
            span = ((1 << size) - 1) << point
            if stack:
                masks[stack[-1][0]] ^= span
            masks[point] = span
            stack.append((point, point + size))
        return list(masks.items())


def _by_holders(counts: dict[int, int], owners: list[int]) -> dict[int, int]:
    """``counts`` by masks of roots turned into masks of holdings.

    A mask of roots is a few runs of consecutive bits (ranges of the depth
    first numbering, see ``_RootTree.holders_at``), so it is read run by run,
    each run's owners taken at once from a table of ORs over power-of-two
    blocks: O(runs) per mask, not O(roots).
    """
    blocks = [owners]  # blocks[k][i]: the OR of owners[i : i + 2**k]
    while (1 << len(blocks)) <= len(owners):
        half, previous = 1 << (len(blocks) - 1), blocks[-1]
        blocks.append([previous[i] | previous[i + half] for i in range(len(previous) - half)])
    result: dict[int, int] = {}
    for mask, size in counts.items():
        holders = 0
        for start, end in _runs(mask):
            level = (end - start).bit_length() - 1
            holders |= blocks[level][start] | blocks[level][end - (1 << level)]
        result[holders] = result.get(holders, 0) + size
    return result


def _reach(found: dict[int, tuple[Node, int]], node: Node, mask: int) -> None:
    """Note that the holders in ``mask`` reach ``node``."""
    held = found.get(id(node))
    found[id(node)] = (node, mask if held is None else held[1] | mask)


def _unchanged_bytes(base: Version, changed: Collection[int]) -> int:
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
    dicts: dict[int, tuple[File, int, dict[int, Chunk]]] = {}
    for node, mask in nodes:
        if not isinstance(node, File):
            continue
        chunks = node.resident()  # read once: a file may be loaded or evicted meanwhile
        if chunks is None:
            continue
        held = dicts.get(id(chunks))
        dicts[id(chunks)] = (node, mask if held is None else held[1] | mask, chunks)
    if not dicts:
        return
    if len(dicts) == 1:  # one data state (e.g. a chmod since): no chunk to tell apart
        node, mask, _ = next(iter(dicts.values()))
        if node.held:
            counts[mask] = counts.get(mask, 0) + node.held
        return
    seen: dict[int, tuple[int, int]] = {}
    for _, mask, chunks in dicts.values():
        for chunk in chunks.values():
            found = seen.get(id(chunk))
            seen[id(chunk)] = (len(chunk), mask if found is None else found[1] | mask)
    for size, mask in seen.values():
        counts[mask] = counts.get(mask, 0) + size
