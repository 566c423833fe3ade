"""Times an archive records: any the protocol can show survive export and import
exactly; those past it (a hostile manifest) are clamped, as git snapshots' are."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.archive import export_archive, import_archive
from workspacefs.fs import FIRST_TIME_NS, LAST_TIME_NS

from .test_archive import make_archive

FILE = stat.S_IFREG | 0o644


def mtime(fs: InMemoryFilesystem, path: str) -> int:
    return fs.tree.node(fs.tree.resolve_path(path) or 0).mtime_ns


def test_manifest_times_past_what_the_protocol_shows_are_clamped(tmp_path: Path) -> None:
    manifest = {
        "format": "workspacefs-archive",
        "version": 1,
        "created_at": "2026-01-01T00:00:00+00:00",
        "file_count": 3,
        "total_bytes": 3,
        "mtimes": {"future": 2**80, "past": -(2**80), "plain": 1_700_000_000 * 10**9},
    }
    entries = [(f"files/{name}", b"x", FILE) for name in ("future", "past", "plain")]
    fs = InMemoryFilesystem()
    import_archive(fs, make_archive(tmp_path / "a.zip", entries, manifest=manifest))
    assert mtime(fs, "future") == LAST_TIME_NS
    assert mtime(fs, "past") == FIRST_TIME_NS
    assert mtime(fs, "plain") == 1_700_000_000 * 10**9
    assert all(fs.stat(entry.path).modified_at for entry in fs.list())  # stat shows them


@pytest.mark.parametrize(
    "when", [LAST_TIME_NS, FIRST_TIME_NS, 4_354_819_199 * 10**9, 315_532_799 * 10**9, -1]
)
def test_any_time_the_protocol_shows_survives_export_and_import(tmp_path: Path, when: int) -> None:
    # ZIP headers hold 1980 to 2107 only: the manifest keeps the exact time.
    fs = InMemoryFilesystem()
    fs.write("a.txt", "x")
    with fs.tree.lock:
        fs.tree.setattr(fs.tree.resolve_path("a.txt") or 0, mtime_ns=when)
    export_archive(fs, tmp_path / "a.zip")
    again = InMemoryFilesystem()
    import_archive(again, tmp_path / "a.zip")
    assert mtime(again, "a.txt") == when
