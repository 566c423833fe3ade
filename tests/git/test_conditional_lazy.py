"""A conditional change is decided without reading a file whose size already says it changed.

``if_match`` (a ``content_digest``) and ``restore(if_unchanged_since=...)`` are checked
under the tree lock, where a file another writer grew to gigabytes -- or a lazy file
from git, not loaded yet -- would be read whole just to answer "changed". The token
carries the size, and the size is compared first: a lazy file of another size stays
lazy (the workspace holds none of its data).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs import ContentChangedError, InMemoryFilesystem, InvalidArgumentError
from workspacefs import git as wgit
from workspacefs.fs import content_digest

MIB = 1 << 20
DATA = os.urandom(4 * MIB)
"""``big.bin``: random, so that loading it holds every byte (zeros would be holes)."""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Snapshot 1: ``big.bin`` (DATA) and ``small.txt``."""
    path = tmp_path_factory.mktemp("lazy") / "repo.git"
    fs = InMemoryFilesystem(workspace_id="ws")
    fs.write_bytes("big.bin", DATA)
    fs.write("small.txt", "small\n")
    wgit.persist(fs, fs.snapshot(), path)
    return path


@pytest.fixture
def lazy(repo: Path) -> InMemoryFilesystem:
    fs = wgit.load(repo, "1", workspace="ws")
    assert fs.memory_usage().held == 0  # big.bin is lazy: nothing loaded yet
    return fs


CHANGES: dict[str, Callable[[InMemoryFilesystem, str], object]] = {
    "write": lambda fs, token: fs.write("big.bin", "x", if_match=token),
    "write_bytes": lambda fs, token: fs.write_bytes("big.bin", b"x", if_match=token),
    "append": lambda fs, token: fs.write("big.bin", "x", mode="append", if_match=token),
    "delete": lambda fs, token: fs.delete("big.bin", if_match=token),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_file_of_another_size_fails_the_check_unread(
    lazy: InMemoryFilesystem, change: Callable[[InMemoryFilesystem, str], object]
) -> None:
    token = content_digest(DATA[:-1])  # what the caller read: one byte shorter
    with pytest.raises(ContentChangedError):
        change(lazy, token)
    assert lazy.memory_usage().held == 0  # decided by its size: big.bin was never read
    assert lazy.stat("big.bin").size_bytes == len(DATA)


def test_a_file_of_the_same_size_is_compared_by_content(lazy: InMemoryFilesystem) -> None:
    same_size = bytes(len(DATA))
    with pytest.raises(ContentChangedError):
        lazy.write_bytes("big.bin", b"x", if_match=content_digest(same_size))
    lazy.write_bytes("big.bin", b"x", if_match=content_digest(DATA))
    assert lazy.read_bytes("big.bin").content == b"x"


def test_the_token_is_the_same_for_a_whole_content_and_its_blocks() -> None:
    blocks = [DATA[start : start + MIB] for start in range(0, len(DATA), MIB)]
    assert content_digest(DATA) == content_digest(blocks) == content_digest(iter(blocks))
    assert content_digest(b"") != content_digest(b"\0")
    assert content_digest(DATA) != content_digest(DATA[:-1])


@pytest.mark.parametrize("token", ["", "not a token", "0" * 64, "-1:" + "0" * 64, "5:abc"])
def test_a_token_content_digest_cannot_make_is_refused(
    lazy: InMemoryFilesystem, token: str
) -> None:
    with pytest.raises(InvalidArgumentError):
        lazy.write("small.txt", "x", if_match=token)
    assert lazy.read("small.txt").content == "small\n"


def test_restore_if_unchanged_since_does_not_read_a_file_of_another_size(
    lazy: InMemoryFilesystem,
) -> None:
    start = lazy.snapshot()
    lazy.write("small.txt", "changed\n")
    later = lazy.snapshot()
    # Only small.txt changed since ``later``'s parent; big.bin is replaced by a file of
    # another size after ``start``: the check names it without loading the old one.
    lazy.write_bytes("big.bin", b"replaced")
    with pytest.raises(ContentChangedError, match=r"big\.bin"):
        lazy.restore(start, if_unchanged_since=later)
    assert lazy.memory_usage().held < MIB  # the old big.bin was never loaded
    assert lazy.read("small.txt").content == "changed\n"


def test_restore_if_unchanged_since_an_untouched_snapshot(lazy: InMemoryFilesystem) -> None:
    start = lazy.snapshot()
    lazy.write("small.txt", "changed\n")
    later = lazy.snapshot()
    lazy.restore(start, if_unchanged_since=later)
    assert lazy.read("small.txt").content == "small\n"
    # A change written back to what it was is no change.
    lazy.write("small.txt", "other\n")
    lazy.write("small.txt", "small\n")
    lazy.restore(later, if_unchanged_since=start)
    assert lazy.read("small.txt").content == "changed\n"
    assert lazy.memory_usage().held < MIB
