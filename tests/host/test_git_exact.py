"""Host git snapshots are byte-exact (issue 11, item 3).

No ``.gitattributes`` filter runs on capture or restore (a blob is the
working file's bytes), and nested repositories (``git init`` in a
subdirectory, ``.git`` files and links, the root itself a repository) are
captured as plain directories, ``.git`` content included, and come back
exactly, empty directories too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs import HostFilesystem

from .hostile import GIT_ENV, state

CRLF = b"line one\r\nline two\r\n"
LF = b"line one\nline two\n"
MIXED = b"a\r\nb\nc\r"
IDENT = b"version $Id$\nand $Id: 0123456789abcdef $\n"


def git(where: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(where), *args], capture_output=True, text=True, env=GIT_ENV
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def files(root: Path, attributes: bytes) -> None:
    (root / ".gitattributes").write_bytes(attributes)
    (root / "crlf.txt").write_bytes(CRLF)
    (root / "lf.txt").write_bytes(LF)
    (root / "mixed.txt").write_bytes(MIXED)
    (root / "ident.txt").write_bytes(IDENT)
    (root / "binary.bin").write_bytes(bytes(range(256)) + b"\r\n\x00")


def nested_init(root: Path) -> None:
    (root / "nested" / "lib").mkdir(parents=True)
    (root / "nested" / "lib" / "code.py").write_bytes(CRLF)
    git(root / "nested", "init", "-q", "-b", "main")
    git(root / "nested", "add", "-A")
    git(root / "nested", "commit", "-qm", "nested")


def nested_clone(root: Path) -> None:
    nested_init(root)
    git(root, "clone", "-q", str(root / "nested"), "clone")


def git_file_and_link(root: Path) -> None:
    nested_init(root)
    (root / "worktree").mkdir()
    (root / "worktree" / ".git").write_text("gitdir: ../nested/.git/worktrees/x\n")
    (root / "linked").mkdir()
    os.symlink("../nested/.git", root / "linked" / ".git")


def root_is_a_repository(root: Path) -> None:
    (root / "src.py").write_bytes(CRLF)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "root")


CASES: dict[str, Callable[[Path], None]] = {
    "text=auto": lambda root: files(root, b"* text=auto\n"),
    "eol=crlf": lambda root: files(root, b"* text eol=crlf\n"),
    "eol=lf": lambda root: files(root, b"* text eol=lf\n"),
    "ident": lambda root: files(root, b"*.txt ident\n"),
    "unknown filter": lambda root: files(root, b"* filter=lfs diff=lfs merge=lfs -text\n"),
    "nested git init": nested_init,
    "nested clone": nested_clone,
    ".git file and link": git_file_and_link,
    "root is a repository": root_is_a_repository,
}


def picture(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below ``root``, exec bits as git keeps them (the owner's)."""
    return state(root, exec_bits=0o100)


def spoil(root: Path) -> None:
    for entry in root.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            subprocess.run(["rm", "-rf", str(entry)], check=True)
        else:
            entry.unlink()
    (root / "crlf.txt").write_bytes(b"something else\n")


@pytest.mark.parametrize("case", sorted(CASES))
def test_host_git_snapshots_are_byte_exact(case: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    CASES[case](root)
    before = picture(root)
    fs = HostFilesystem(root, git_dir=tmp_path / "g.git", snapshot_strategy="git")
    snapshot = fs.snapshot()
    assert not fs.diff(snapshot).changed
    spoil(root)
    fs.restore(snapshot)
    assert picture(root) == before
    assert not fs.diff(snapshot).changed
    fresh = HostFilesystem(root)  # another process restores from the record alone
    spoil(root)
    fresh.restore(snapshot)
    assert picture(root) == before


def test_blobs_are_the_working_bytes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    files(root, b"* text eol=crlf\n*.txt ident\n")
    fs = HostFilesystem(root, git_dir=tmp_path / "g.git", snapshot_strategy="git")
    commit = fs.snapshot().ref.location
    for name in ("crlf.txt", "lf.txt", "ident.txt", "mixed.txt"):
        command = ["git", f"--git-dir={tmp_path / 'g.git'}", "cat-file", "blob", f"{commit}:{name}"]
        shown = subprocess.run(command, capture_output=True, env=GIT_ENV, check=True)
        assert shown.stdout == (root / name).read_bytes(), name


def test_nested_repositories_still_work_after_restore(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    nested_clone(root)
    fs = HostFilesystem(root, git_dir=tmp_path / "g.git", snapshot_strategy="git")
    snapshot = fs.snapshot()
    spoil(root)
    fs.restore(snapshot)
    assert git(root / "clone", "status", "--porcelain") == ""
    assert git(root / "clone", "log", "--format=%s") == "nested\n"
    subprocess.run(
        ["git", f"--git-dir={tmp_path / 'g.git'}", "fsck", "--strict"],
        check=True,
        env=GIT_ENV,
        capture_output=True,
    )
