"""The paged inode table: ``ino -> Node`` with copy-on-write pages.

A table is a list of pages of ``PAGE_SIZE`` slots. The table and each page
record the epoch that created them. Writing a slot from a newer epoch copies
the table's page list (one pointer per page) and the one page it touches, so
a frozen table stays intact and the copy costs one page, not the whole table.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._nodes import Node

PAGE_BITS = 10
PAGE_SIZE = 1 << PAGE_BITS
_PAGE_MASK = PAGE_SIZE - 1


class Page:
    """``PAGE_SIZE`` inode slots owned by one epoch."""

    __slots__ = ("epoch", "slots")

    def __init__(self, epoch: int, slots: list[Node | None]) -> None:
        self.epoch = epoch
        self.slots = slots


class Table:
    """The root of an inode table; a frozen version keeps one of these."""

    __slots__ = ("epoch", "pages")

    def __init__(self, epoch: int, pages: list[Page | None]) -> None:
        self.epoch = epoch
        self.pages = pages

    def get(self, ino: int) -> Node | None:
        """The node at ``ino``, or None."""
        index = ino >> PAGE_BITS
        if index >= len(self.pages):
            return None
        page = self.pages[index]
        return None if page is None else page.slots[ino & _PAGE_MASK]


def put(table: Table, ino: int, node: Node | None, epoch: int) -> Table:
    """Store ``node`` at ``ino`` on behalf of ``epoch``; return the (maybe new) root.

    The root and the page are copied only if an older epoch owns them.
    """
    if table.epoch != epoch:
        table = Table(epoch, list(table.pages))
    pages = table.pages
    index = ino >> PAGE_BITS
    if index >= len(pages):
        pages.extend([None] * (index + 1 - len(pages)))
    page = pages[index]
    if page is None:
        if node is None:
            return table
        page = pages[index] = Page(epoch, [None] * PAGE_SIZE)
    elif page.epoch != epoch:
        page = pages[index] = Page(epoch, list(page.slots))
    page.slots[ino & _PAGE_MASK] = node
    return table


def nodes(table: Table) -> Iterator[Node]:
    """Every node in ``table``, in inode order."""
    for page in table.pages:
        if page is not None:
            yield from (node for node in page.slots if node is not None)
