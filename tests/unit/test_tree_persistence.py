"""What the tree offers persistence layers: content keys, deferred content, history keys."""

from __future__ import annotations

from workspacefs.tree import CHUNK_SIZE, ROOT_INO, File, Tree, TreeView


class Stored:
    """Content held elsewhere, as a git blob would be."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.loads = 0

    @property
    def key(self) -> object:
        return ("stored", self.data)

    def load(self) -> bytes:
        self.loads += 1
        return self.data


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
    assert node.content_key != deferred  # loading names the bytes anew
    assert content.loads == 1


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
