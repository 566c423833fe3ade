"""What every benchmark shares: the result line, a quiet, deterministic git, a scratch
directory in memory, private places for the daemons it starts, and a workspace of many
small files."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workspacefs import InMemoryFilesystem

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    # No background `git gc --auto` racing the next step.
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "gc.auto",
    "GIT_CONFIG_VALUE_0": "0",
}


def scratch_dir(prefix: str) -> Path:
    """A new directory for a benchmark's files, in /dev/shm where it can be (a disk would
    time the disk); the caller removes it."""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


@contextmanager
def private_places(base: Path) -> Iterator[None]:
    """Runtime and data directories of the benchmark's own, under ``base``: the daemons
    it starts keep their sockets and their stores (a named one for each, by default)
    there, so it neither sees nor leaves anything among the user's workspaces."""
    places = {"XDG_RUNTIME_DIR": base / "run", "XDG_DATA_HOME": base / "data"}
    saved = {name: os.environ.get(name) for name in places}
    for name, place in places.items():
        place.mkdir(mode=0o700)
        os.environ[name] = str(place)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class Result:
    """One benchmark line: our figure, the baseline's, and the target."""

    name: str
    ours: float
    baseline: float
    unit: str
    target: str
    met: bool
    higher_is_better: bool = False
    note: str = ""

    @property
    def ratio(self) -> float:
        """How many times better than the baseline (>1: better)."""
        better, worse = (
            (self.ours, self.baseline)
            if self.higher_is_better
            else (
                self.baseline,
                self.ours,
            )
        )
        return better / worse if worse else float("inf")

    def line(self) -> str:
        verdict = "ok  " if self.met else "MISS"
        return (
            f"{verdict} {self.name:<58} {self.ours:>10.2f} {self.unit:<4} "
            f"baseline {self.baseline:>10.2f} {self.unit:<4} {self.ratio:>8.2f}x  "
            f"target: {self.target}" + (f"\n     {self.note}" if self.note else "")
        )


PER_DIR = 1000
"""Files per directory in ``build_workspace``."""


def build_workspace(files: int) -> InMemoryFilesystem:
    """An in-memory workspace of ``files`` 20-byte files, ``PER_DIR`` a directory
    (``d<n>/f<m>.txt``)."""
    fs = InMemoryFilesystem()
    with fs.transaction() as tree:
        for d in range(max(1, files // PER_DIR)):
            parent = tree.make_dirs(f"d{d}")
            for f in range(min(files, PER_DIR)):
                tree.write(tree.create(parent, f"f{f}.txt"), 0, b"line\n" * 4)
    return fs
