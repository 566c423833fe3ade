"""What the tree offers persistence layers: content keys, deferred content, history keys."""

from __future__ import annotations

import errno
from collections.abc import Iterator

import pytest

from workspacefs import NoSpaceError
from workspacefs.tree import CHUNK_SIZE, ROOT_INO, File, MemoryBudget, Tree, TreeView


class Stored:
    """Content held elsewhere, as a git blob would be, handed out in pieces of
    ``piece`` bytes."""

    def __init__(self, data: bytes, piece: int = 1 << 20) -> None:
        self.data = data
        self.piece = piece
        self.loads = 0
        self.closed = 0

    @property
    def key(self) -> object:
        return ("stored", self.data)

    def pieces(self, budget: MemoryBudget, size: int) -> Iterator[bytes]:
        self.loads += 1
        try:
            for start in range(0, len(self.data), self.piece):
                yield self.data[start : start + self.piece]
        finally:
            self.closed += 1


def file_in(view: TreeView, ino: int) -> File:
    node = view.node(ino)
    assert isinstance(node, File)
    return node


def test_content_key_changes_with_every_write_after_a_snapshot() -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"abc")
    first = tree.snapshot()
    first_key = key = file_in(first, ino).content_key
    for round_ in range(20):
        tree.write(ino, 0, b"ab" + bytes([round_]))  # same size, same chunk
        version = tree.snapshot()
        assert file_in(version, ino).content_key != key
        assert file_in(first, ino).content_key == first_key  # a frozen file keeps its key
        key = file_in(version, ino).content_key


def test_content_key_kept_across_metadata_changes_and_versions() -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"x" * (3 * CHUNK_SIZE))
    before = tree.snapshot()
    tree.setattr(ino, mode=0o600)
    tree.link(ino, ROOT_INO, "g")
    after = tree.snapshot()
    assert file_in(after, ino).content_key == file_in(before, ino).content_key
    tree.truncate(ino, 4 * CHUNK_SIZE)  # growing keeps the chunks, not the bytes
    assert file_in(tree, ino).content_key != file_in(after, ino).content_key


def test_content_key_of_a_dropped_version_is_never_reused() -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"one")
    keys = [file_in(tree.snapshot(), ino).content_key]  # the version itself is dropped
    for round_ in range(200):
        tree.write(ino, 0, b"%03d" % round_)
        key = file_in(tree.snapshot(), ino).content_key
        assert key not in keys
        keys.append(key)


def test_deferred_content_and_its_key() -> None:
    tree = Tree()
    content = Stored(b"hello")
    ino = tree.create_deferred(ROOT_INO, "f", content, 5)
    version = tree.snapshot()
    node = file_in(version, ino)
    assert node.deferred_key == content.key
    deferred = node.content_key
    same = tree.create_deferred(ROOT_INO, "g", Stored(b"hello"), 5)
    assert file_in(tree, same).content_key == deferred  # equal stored keys: equal bytes
    assert content.loads == 0
    assert node.read(0, 5) == b"hello"
    assert node.deferred_key is None
    assert node.content_key == deferred  # loaded and unchanged: still the content's bytes
    assert content.loads == 1
    tree.write(ino, 0, b"j")
    assert file_in(tree, ino).content_key != deferred  # a write names the bytes anew


@pytest.mark.parametrize("piece", [1, 1000, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 7, 1 << 20])
def test_deferred_content_arrives_in_pieces_of_any_size(piece: int) -> None:
    data = bytes(range(256)) * 1000 + bytes(3 * CHUNK_SIZE) + b"tail"  # a hole inside
    tree = Tree()
    ino = tree.create_deferred(ROOT_INO, "f", Stored(data, piece), len(data))
    assert tree.read(ino, 0, len(data)) == data
    node = file_in(tree, ino)
    slices = [data[start : start + CHUNK_SIZE] for start in range(0, len(data), CHUNK_SIZE)]
    assert node.held == sum(len(part) for part in slices if any(part))  # zero chunks: holes
    assert tree.budget.held == node.held


@pytest.mark.parametrize("declared", [10, 3])
def test_deferred_content_of_another_size_is_eio_and_keeps_nothing(declared: int) -> None:
    tree = Tree()
    content = Stored(b"hello" * 100_000, piece=1000)
    ino = tree.create_deferred(ROOT_INO, "f", content, declared * 100_000)
    with pytest.raises(OSError) as caught:
        tree.read(ino, 0, 1)
    assert caught.value.errno == errno.EIO
    assert tree.budget.held == 0
    assert file_in(tree, ino).deferred_key == content.key  # still deferred
    assert content.closed == content.loads == 1  # the source was let go at once


def test_deferred_content_past_the_budget_keeps_nothing() -> None:
    tree = Tree(budget=MemoryBudget(4 * CHUNK_SIZE))
    content = Stored(b"x" * (8 * CHUNK_SIZE), piece=CHUNK_SIZE)
    ino = tree.create_deferred(ROOT_INO, "f", content, 8 * CHUNK_SIZE)
    zeros = tree.create_deferred(ROOT_INO, "z", Stored(bytes(64 * CHUNK_SIZE)), 64 * CHUNK_SIZE)
    for _ in range(2):
        with pytest.raises(NoSpaceError):
            tree.read(ino, 0, 1)
        assert tree.budget.held == 0
    assert content.loads == content.closed == 2
    assert tree.read(zeros, 0, 3) == bytes(3)  # zeros are holes: nothing to hold
    assert tree.budget.held == 0
    tree.budget.limit = 8 * CHUNK_SIZE
    assert tree.read(ino, 8 * CHUNK_SIZE - 1, 1) == b"x"


def test_history_keys_name_versions_and_their_ancestry() -> None:
    tree = Tree()
    one = tree.snapshot()
    tree.create(ROOT_INO, "a")
    two = tree.snapshot()
    three = tree.snapshot()
    assert len({one.history_key, two.history_key, three.history_key}) == 3
    assert list(three.ancestor_keys())[:2] == [two.history_key, one.history_key]
    tree.restore(one)
    four = tree.snapshot()
    assert next(four.ancestor_keys()) == one.history_key
    assert two.history_key not in set(four.ancestor_keys())
