"""Bulk writes and consistent reads for the layers above the in-memory filesystem."""

from __future__ import annotations

import pytest

from workspacefs import InMemoryFilesystem, ReadOnlyError
from workspacefs.tree import ROOT_INO, Journal


def listing(fs: InMemoryFilesystem) -> list[tuple[str, bytes]]:
    return sorted(
        (m.path, fs.read_bytes(m.path).content if m.is_file else b"") for m in fs.glob("**")
    )


@pytest.fixture
def fs() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("keep/a.txt", "a")
    fs.write("b.txt", "bb")
    return fs


def test_a_failed_transaction_changes_nothing_and_says_what_to_invalidate(
    fs: InMemoryFilesystem,
) -> None:
    base = fs.snapshot()
    before = listing(fs)
    counts = (fs.tree.file_count, fs.tree.total_bytes)
    published: list[Journal] = []
    fs.subscribe(published.append)

    def half_an_import() -> None:
        with fs.transaction() as tree:
            tree.empty(ROOT_INO)
            tree.write(tree.create(ROOT_INO, "new.txt"), 0, b"half an import")
            raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="broke"):
        half_an_import()
    assert listing(fs) == before
    assert (fs.tree.file_count, fs.tree.total_bytes) == counts
    assert not fs.diff(base).changed
    assert len(published) == 1
    assert {(ROOT_INO, "new.txt"), (ROOT_INO, "b.txt")} <= published[0].entries  # touched


def test_a_transaction_publishes_what_it_wrote(fs: InMemoryFilesystem) -> None:
    published: list[Journal] = []
    fs.subscribe(published.append)
    with fs.transaction() as tree:
        tree.write(tree.create(ROOT_INO, "new.txt"), 0, b"new")
    assert fs.read("new.txt").content == "new"
    assert len(published) == 1
    assert (ROOT_INO, "new.txt") in published[0].entries


def test_a_transaction_works_on_a_read_only_workspace() -> None:
    fs = InMemoryFilesystem(read_only=True)
    with fs.transaction() as tree:
        tree.create(ROOT_INO, "set-up.txt")
    assert fs.exists("set-up.txt")
    with pytest.raises(ReadOnlyError):
        fs.write("other.txt", "refused")


def test_frozen_view_is_a_consistent_read_only_state(fs: InMemoryFilesystem) -> None:
    view = fs.frozen_view()
    fs.write("b.txt", "changed")
    fs.delete("keep", recursive=True)
    assert view.read("b.txt").content == "bb"
    assert view.read("keep/a.txt").content == "a"
    assert view.read_only
    with pytest.raises(ReadOnlyError):
        view.write("b.txt", "refused")
    assert fs.snapshots() == []  # a view is not a snapshot
