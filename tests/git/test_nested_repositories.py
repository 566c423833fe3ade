"""Workspaces holding git repositories persist to commits git itself accepts.

A nested ``.git`` (and the other names ``git fsck`` refuses in a tree) is
stored under an escaped name and restored exactly by ``load``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from workspacefs import HostMount, InMemoryFilesystem
from workspacefs import git as wgit
from workspacefs.fs import TreeFilesystem
from workspacefs.git import ESCAPE_PREFIX, tree_name, workspace_name
from workspacefs.tree import File, Symlink

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
GIT_USER = {
    **GIT_ENV,
    "GIT_AUTHOR_NAME": "User",
    "GIT_AUTHOR_EMAIL": "user@example.invalid",
    "GIT_COMMITTER_NAME": "User",
    "GIT_COMMITTER_EMAIL": "user@example.invalid",
}


def git(git_dir: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, env=GIT_ENV
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def picture(fs: TreeFilesystem) -> dict[str, tuple[object, ...]]:
    """Names, kinds, modes, times and contents of everything in a tree."""
    found: dict[str, tuple[object, ...]] = {}
    for path, _, node in fs.view.walk():
        content: object = None
        if isinstance(node, File):
            content = node.read(0, node.size)
        elif isinstance(node, Symlink):
            content = node.target
        found[path] = (node.mode, node.mtime_ns, content)
    return found


def workspace_with_repositories(tmp_path: Path) -> InMemoryFilesystem:
    """A workspace as an agent leaves it: a clone inside, and every name git is picky about."""
    project = tmp_path / "host" / "project"
    (project / "lib").mkdir(parents=True)
    (project / "lib" / "code.py").write_text("print('nested')\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "nested"]):
        subprocess.run(["git", "-C", str(project), *args], check=True, env=GIT_USER)
    fs = InMemoryFilesystem()
    fs.hydrate_from_host(
        HostMount("project", mount_path="vendor/project"), allowed_roots=[tmp_path / "host"]
    )
    fs.write("sub/.git", "gitdir: ../elsewhere/.git\n")  # a worktree's .git file
    fs.write("odd/.GIT/config", "[core]\n")
    fs.write("odd/git~1", "short name\n")
    fs.write("odd/.git. ", "trailing dot and space\n")
    fs.write(".gitmodules/inside", "a directory named .gitmodules\n")
    fs.write(f"{ESCAPE_PREFIX}plain", "a name that looks escaped\n")
    fs.write("normal/.gitignore", "*.log\n")
    fs.write("targets/ignore-rules", "*.tmp\n")
    tree = fs.tree
    with tree.lock:
        odd = tree.resolve_path("odd")
        assert odd is not None
        tree.symlink(odd, ".gitignore", "../targets/ignore-rules")
        tree.symlink(odd, ".gitattributes", "../targets/ignore-rules")
        tree.symlink(odd, ".git", "../vendor/project/.git")
    return fs


def test_nested_git_persists_fsck_clean_and_loads_exactly(tmp_path: Path) -> None:
    fs = workspace_with_repositories(tmp_path)
    snapshot = fs.snapshot(tag="nested")
    repo = tmp_path / "store.git"
    persisted = wgit.persist(fs, snapshot, repo)
    checked = subprocess.run(
        ["git", f"--git-dir={repo}", "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        env=GIT_ENV,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    problems = [
        line
        for line in (checked.stdout + checked.stderr).splitlines()
        if line.startswith(("error", "warning"))
    ]
    assert problems == []
    names = git(repo, "ls-tree", "-r", "--name-only", persisted.commit).splitlines()
    assert f"vendor/project/{ESCAPE_PREFIX}.git/HEAD" in names
    assert f"{ESCAPE_PREFIX}{ESCAPE_PREFIX}plain" in names
    assert not [n for n in names if ".git/" in n.replace(f"{ESCAPE_PREFIX}.git/", "")]
    loaded = wgit.load(repo, "nested", workspace=fs.workspace_id)
    assert picture(loaded) == picture(fs.at(snapshot))
    assert loaded.read("vendor/project/lib/code.py").content == "print('nested')\n"
    assert loaded.exists("vendor/project/.git/HEAD")


def test_persisted_nested_git_checks_out_with_git_worktree(tmp_path: Path) -> None:
    fs = workspace_with_repositories(tmp_path)
    repo = tmp_path / "store.git"
    persisted = wgit.persist(fs, fs.snapshot(), repo)
    checkout = tmp_path / "checkout"
    git(repo, "worktree", "add", "--detach", str(checkout), persisted.commit)
    head = checkout / "vendor" / "project" / f"{ESCAPE_PREFIX}.git" / "HEAD"
    assert head.read_bytes() == fs.read_bytes("vendor/project/.git/HEAD").content
    assert (checkout / "sub" / f"{ESCAPE_PREFIX}.git").read_text() == "gitdir: ../elsewhere/.git\n"
    status = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain"],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    )
    assert status.stdout == ""


def test_incremental_persist_keeps_escaping(tmp_path: Path) -> None:
    fs = workspace_with_repositories(tmp_path)
    repo = tmp_path / "store.git"
    wgit.persist(fs, fs.snapshot(), repo)
    fs.write("vendor/project/.git/description", "changed\n")
    second = fs.snapshot(tag="second")
    wgit.persist(fs, second, repo)
    checked = subprocess.run(
        ["git", f"--git-dir={repo}", "fsck", "--strict"],
        capture_output=True,
        text=True,
        env=GIT_ENV,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    loaded = wgit.load(repo, "second", workspace=fs.workspace_id)
    assert loaded.read("vendor/project/.git/description").content == "changed\n"


@pytest.mark.parametrize(
    "name",
    [".git", ".GIT", ".Git", ".git.", ".git ", "git~1", "GIT~1", ".git\u200c", ".git::$INDEX"],
)
def test_every_spelling_of_dot_git_is_escaped(name: str) -> None:
    for mode in (wgit.MODE_FILE, wgit.MODE_TREE, wgit.MODE_LINK):
        stored = tree_name(name, mode)
        assert stored == ESCAPE_PREFIX + name
        assert workspace_name(stored) == name


@pytest.mark.parametrize("name", ["a.git", ".gitx", ".git.txt", "..git", "git", "README"])
def test_ordinary_names_are_kept(name: str) -> None:
    assert tree_name(name, wgit.MODE_FILE) == name
    assert workspace_name(name) == name


def test_escaping_is_one_to_one() -> None:
    names = [".git", ESCAPE_PREFIX + ".git", ESCAPE_PREFIX + ESCAPE_PREFIX + ".git", "x"]
    stored = [tree_name(n, wgit.MODE_FILE) for n in names]
    assert len(set(stored)) == len(names)
    assert [workspace_name(s) for s in stored] == names
    assert os.sep not in "".join(stored)
