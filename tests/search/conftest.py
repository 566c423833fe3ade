"""Each corpus built once per session: as a reference directory, a host root, a memory tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.search_corpus import (
    LIMITS,
    Line,
    build_directory,
    build_host_root,
    build_memory,
    corpus,
    gnu_grep,
)
from workspacefs import Filesystem, HostFilesystem, InMemoryFilesystem


class Trees:
    """Lazily built corpora and cached reference answers."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._references: dict[str, Path] = {}
        self._backends: dict[tuple[str, str], Filesystem] = {}
        self._grep: dict[tuple[str, str], list[Line]] = {}

    def reference(self, name: str) -> Path:
        """The plain directory the tools run on (escaping links dangle there)."""
        if name not in self._references:
            root = self._base / "reference" / name / "root"
            root.mkdir(parents=True)
            build_directory(corpus(name), root)
            self._references[name] = root
        return self._references[name]

    def backend(self, name: str, kind: str) -> Filesystem:
        """The corpus in a backend: ``memory`` or ``host``."""
        key = (name, kind)
        if key not in self._backends:
            if kind == "memory":
                fs = InMemoryFilesystem(limits=LIMITS)
                build_memory(corpus(name), fs)
                self._backends[key] = fs
            else:
                base = self._base / "host" / name
                base.mkdir(parents=True)
                self._backends[key] = HostFilesystem(
                    build_host_root(corpus(name), base), limits=LIMITS
                )
        return self._backends[key]

    def gnu_grep(self, name: str, pattern: str) -> list[Line]:
        key = (name, pattern)
        if key not in self._grep:
            self._grep[key] = gnu_grep(self.reference(name), pattern)
        return self._grep[key]


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Trees:
    return Trees(tmp_path_factory.mktemp("search"))
