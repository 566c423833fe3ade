"""Archive versions, escaped names, declared sizes, and links judged against the tree."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from workspacefs import HostFilesystem, InMemoryFilesystem, PathEscapeError
from workspacefs.archive import ArchiveError, export_archive, import_archive
from workspacefs.tree import ROOT_INO

from .test_archive import DIR, FILE, LINK, make_archive, picture, sample
from .test_cross_backend import host_state

CHAIN = "d/u/" * 8 + "../" * 16 + "etc/passwd"


def manifest_of(path: Path) -> dict[str, object]:
    with zipfile.ZipFile(path) as archive:
        data: dict[str, object] = json.loads(archive.read("manifest.json"))
    return data


def test_ordinary_trees_stay_version_1_with_declared_sizes(tmp_path: Path) -> None:
    export_archive(sample(), tmp_path / "a.zip")
    manifest = manifest_of(tmp_path / "a.zip")
    assert manifest["version"] == 1
    assert manifest["sizes"] == {"README.md": 8, "bin/blob.bin": 300_000, "src/pkg/run.sh": 18}


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda fs: fs.write("back\\slash.txt", "x"), id="backslash"),
        pytest.param(
            lambda fs: fs.write(b"\xe9t\xe9".decode("utf-8", "surrogateescape"), "x"), id="bytes"
        ),
        pytest.param(lambda fs: fs.tree.symlink(ROOT_INO, "py", "/usr/bin/python3"), id="link"),
    ],
)
def test_what_version_1_cannot_hold_makes_version_2(build: object, tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("50%.txt", "percent")
    with fs.tree.lock:
        build(fs)  # type: ignore[operator]
    export_archive(fs, tmp_path / "a.zip")
    assert manifest_of(tmp_path / "a.zip")["version"] == 2
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        names = archive.namelist()
    assert "files/50%25.txt" in names
    assert not [n for n in names if "\\" in n]
    back = InMemoryFilesystem()
    import_archive(back, tmp_path / "a.zip")
    assert picture(back) == picture(fs)


def test_unzip_reads_version_2_names_escaped(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("back\\slash.txt", "x")
    export_archive(fs, tmp_path / "a.zip")
    subprocess.run(
        ["unzip", "-q", str(tmp_path / "a.zip"), "-d", str(tmp_path / "out")], check=True
    )
    assert (tmp_path / "out" / "files" / "back%5Cslash.txt").read_text() == "x"


@pytest.mark.parametrize("name", ["files/%41.txt", "files/a%2Fb", "files/%e9", "files/50%"])
def test_version_2_names_must_be_canonical(name: str, tmp_path: Path) -> None:
    archive = make_archive(
        tmp_path / "a.zip",
        [(name, b"x", FILE)],
        manifest={"format": "workspacefs-archive", "version": 2, "file_count": 1},
    )
    with pytest.raises(ArchiveError):
        import_archive(InMemoryFilesystem(), archive)


def test_declared_sizes_let_compressible_files_in_and_bombs_stay_out(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    with fs.tree.lock:  # past the per-call write limit: written as a tool chain would
        ino = fs.tree.create(ROOT_INO, "zeros.bin")
        for offset in range(0, 64 << 20, 8 << 20):
            fs.tree.write(ino, offset, bytes(8 << 20))  # compresses ~1000:1
    export_archive(fs, tmp_path / "zeros.zip")
    back = InMemoryFilesystem()
    assert import_archive(back, tmp_path / "zeros.zip") == 1
    assert back.stat("zeros.bin").size_bytes == 64 << 20
    undeclared = make_archive(tmp_path / "bomb.zip", [("files/bomb", bytes(64 << 20), FILE)])
    with pytest.raises(ValueError, match="ratio"):
        import_archive(InMemoryFilesystem(), undeclared)


def test_older_archives_still_import(tmp_path: Path) -> None:
    """A version 1 archive as the previous release wrote it: no sizes, mtimes by path."""
    archive = make_archive(
        tmp_path / "old.zip",
        [
            ("files/dir/", b"", DIR),
            ("files/dir/a.txt", b"old", FILE),
            ("files/link", b"dir/a.txt", LINK),
        ],
    )
    fs = InMemoryFilesystem()
    assert import_archive(fs, archive) == 2
    assert fs.read("link").content == "old"


def chained(version: int, path: Path) -> Path:
    return make_archive(
        path,
        [("files/d/", b"", DIR), ("files/d/u", b"..", LINK), ("files/pw", CHAIN.encode(), LINK)],
        manifest={"format": "workspacefs-archive", "version": version, "file_count": 2},
    )


@pytest.mark.parametrize("version", [1, 2])
def test_chained_links_are_refused_into_memory_and_host(version: int, tmp_path: Path) -> None:
    archive = chained(version, tmp_path / "chain.zip")
    fs = sample()
    before = picture(fs)
    with pytest.raises(PathEscapeError, match="chain"):
        import_archive(fs, archive)
    assert picture(fs) == before
    root = tmp_path / "host"
    (root / "keep").mkdir(parents=True)
    (root / "keep" / "data.txt").write_text("precious")
    state = host_state(root)
    with pytest.raises(PathEscapeError, match="chain"):
        import_archive(HostFilesystem(root), archive)
    assert host_state(root) == state


def test_a_workspace_with_a_hidden_escape_is_refused_at_export(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.mkdir("d")
    with fs.tree.lock:
        directory = fs.tree.resolve_path("d")
        assert directory is not None
        fs.tree.symlink(directory, "u", "..")
        fs.tree.symlink(ROOT_INO, "pw", CHAIN)
    with pytest.raises(PathEscapeError, match="chain"):
        export_archive(fs, tmp_path / "a.zip")
    assert list(tmp_path.iterdir()) == []


def test_links_out_restore_as_links_into_a_host_directory(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    with fs.tree.lock:
        fs.tree.symlink(ROOT_INO, "python", "/usr/bin/python3")
        fs.tree.symlink(ROOT_INO, "out", "../build")
    export_archive(fs, tmp_path / "a.zip")
    root = tmp_path / "root"
    root.mkdir()
    import_archive(HostFilesystem(root), tmp_path / "a.zip")
    assert os.readlink(root / "python") == "/usr/bin/python3"
    assert os.readlink(root / "out") == "../build"
    assert not (tmp_path / "build").exists()


SPECIAL = [
    ("files/suid", b"#!/bin/sh\n", stat.S_IFREG | 0o4755),
    ("files/shared/", b"", stat.S_IFDIR | 0o2777),
    ("files/sticky/", b"", stat.S_IFDIR | 0o1777),
]


def test_special_modes_are_sanitised_on_import_to_a_host_directory(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "special.zip", SPECIAL)
    root = tmp_path / "root"
    root.mkdir()
    import_archive(HostFilesystem(root), archive)
    assert stat.S_IMODE(os.lstat(root / "suid").st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(root / "shared").st_mode) == 0o777
    assert stat.S_IMODE(os.lstat(root / "sticky").st_mode) == 0o1777  # it only restricts


SPECIAL_FILE = ("files/sticky-file", b"x", stat.S_IFREG | 0o1644)


def memory_modes(fs: InMemoryFilesystem) -> dict[str, int]:
    with fs.tree.lock:
        return {
            entry.name: stat.S_IMODE(fs.tree.node(fs.tree.resolve_path(entry.path) or 0).mode)
            for entry in fs.list(".")
        }


def test_special_modes_are_sanitised_on_import_into_memory(tmp_path: Path) -> None:
    # One rule (fs.sanitised_mode) on every import path: an archive from elsewhere
    # brings no setuid or setgid bit in, nor a file's sticky bit; a directory keeps its
    # sticky bit (it only restricts). Through the function, the method and a daemon.
    archive = make_archive(tmp_path / "special.zip", [*SPECIAL, SPECIAL_FILE])
    sanitised = {"suid": 0o755, "shared": 0o777, "sticky": 0o1777, "sticky-file": 0o644}
    fs = InMemoryFilesystem()
    import_archive(fs, archive)
    assert memory_modes(fs) == sanitised
    again = InMemoryFilesystem()
    again.import_archive(archive)
    assert memory_modes(again) == sanitised


def test_special_modes_are_kept_in_memory_only_on_request(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "special.zip", [*SPECIAL, SPECIAL_FILE])
    fs = InMemoryFilesystem()
    import_archive(fs, archive, special_modes=True)
    assert memory_modes(fs) == {
        "suid": 0o4755,
        "shared": 0o2777,
        "sticky": 0o1777,
        "sticky-file": 0o1644,
    }


def test_special_modes_are_kept_only_on_request_and_never_for_root(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "special.zip", SPECIAL)
    root = tmp_path / "root"
    root.mkdir()
    host = HostFilesystem(root)
    if os.geteuid() == 0:
        with pytest.raises(ValueError, match="root"):
            host.import_archive(archive, special_modes=True)
        assert list(root.iterdir()) == []
    else:
        host.import_archive(archive, special_modes=True)
        assert stat.S_IMODE(os.lstat(root / "suid").st_mode) == 0o4755
