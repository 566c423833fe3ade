"""The shell's search tools through the mount agree with themselves on a plain directory,
and with the API on the tree being mounted.

GNU grep -R, glob.glob and bash's globstar run on the mount point and on a
plain directory holding the same corpus (tests/support/search_corpus.py); fs.grep
and fs.glob run on the in-memory tree behind the mount.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.search_corpus import (
    GLOB_LOOPS,
    GLOB_TEXT,
    GREP_CASES,
    LIMITS,
    assert_same_lines,
    bash_glob,
    build_directory,
    build_memory,
    corpus,
    glob_pairs,
    gnu_grep,
    python_glob,
)
from workspacefs import InMemoryFilesystem, mount


class Mounts:
    """One corpus mounted at a time (one mount per process), each reference built once."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._stack = contextlib.ExitStack()
        self._mounted: tuple[str, Path, InMemoryFilesystem] | None = None
        self._references: dict[str, Path] = {}

    def close(self) -> None:
        self._stack.close()

    def reference(self, name: str) -> Path:
        if name not in self._references:
            root = self._base / f"{name}-reference" / "root"
            root.mkdir(parents=True)
            build_directory(corpus(name), root)
            self._references[name] = root
        return self._references[name]

    def mounted(self, name: str) -> tuple[Path, InMemoryFilesystem]:
        if self._mounted is None or self._mounted[0] != name:
            self._stack.close()
            fs = InMemoryFilesystem(limits=LIMITS)
            build_memory(corpus(name), fs)
            root = self._base / f"{name}-mount" / "root"  # nothing where escaping links point
            root.mkdir(parents=True, exist_ok=True)
            self._stack.enter_context(mount(fs, root))
            self._mounted = (name, root, fs)
        return self._mounted[1], self._mounted[2]


@pytest.fixture(scope="module")
def mounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounts]:
    mounts = Mounts(tmp_path_factory.mktemp("search-mount"))
    try:
        yield mounts
    finally:
        mounts.close()


@pytest.mark.parametrize(("name", "pattern"), GREP_CASES)
def test_grep_through_the_mount(mounts: Mounts, name: str, pattern: str) -> None:
    root, fs = mounts.mounted(name)
    through_mount = gnu_grep(root, pattern)
    assert through_mount == gnu_grep(mounts.reference(name), pattern)
    assert_same_lines(list(fs.grep(pattern, max_matches=LIMITS.max_grep_matches)), through_mount)


@pytest.mark.parametrize(
    ("name", "pattern"), [("text", p) for p in GLOB_TEXT] + [("loops", p) for p in GLOB_LOOPS]
)
def test_globs_through_the_mount(mounts: Mounts, name: str, pattern: str) -> None:
    root, fs = mounts.mounted(name)
    reference = mounts.reference(name)
    shell = bash_glob(root, pattern)
    assert shell == bash_glob(reference, pattern)
    if name == "text":  # glob.glob never ends on the loops
        python = python_glob(root, pattern)
        assert python == python_glob(reference, pattern)
        assert glob_pairs(list(fs.glob(pattern))) == python
    else:
        assert glob_pairs(list(fs.glob(pattern))) == shell
