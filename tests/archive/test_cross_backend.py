"""Archives between the in-memory tree and a host directory, and hostile ones on the host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workspacefs import HostFilesystem, InMemoryFilesystem
from workspacefs.archive import export_archive, import_archive

from .test_archive import HOSTILE, picture, sample


def host_state(root: Path) -> dict[str, tuple[object, ...]]:
    found: dict[str, tuple[object, ...]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        info = os.lstat(path)
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            found[rel] = ("dir", info.st_mode, info.st_mtime_ns)
        else:
            found[rel] = ("file", info.st_mode, info.st_mtime_ns, path.read_bytes())
    return found


def test_memory_to_host_to_memory(tmp_path: Path) -> None:
    source = sample()
    export_archive(source, tmp_path / "a.zip")
    root = tmp_path / "host"
    root.mkdir()
    (root / "stale.txt").write_text("replaced")
    host = HostFilesystem(root)
    assert import_archive(host, tmp_path / "a.zip") == 5
    assert not (root / "stale.txt").exists()
    assert os.readlink(root / "readme") == "README.md"
    assert os.stat(root / "src/pkg/run.sh").st_mode & 0o111
    assert (root / "empty/nested").is_dir()
    export_archive(host, tmp_path / "b.zip")
    back = InMemoryFilesystem()
    import_archive(back, tmp_path / "b.zip")
    assert picture(back) == picture(source)
    assert not [p for p in root.iterdir() if p.name.startswith(".workspacefs-import-")]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_leaves_host_directory_unchanged(case: str, tmp_path: Path) -> None:
    root = tmp_path / "host"
    (root / "keep").mkdir(parents=True)
    (root / "keep" / "data.txt").write_text("precious")
    before = host_state(root)
    archive = HOSTILE[case](tmp_path / "hostile.zip")
    with pytest.raises((ValueError, PermissionError)):
        import_archive(HostFilesystem(root), archive)
    assert host_state(root) == before
    assert not (tmp_path / "evil.txt").exists()
