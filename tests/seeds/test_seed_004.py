"""Seed 004 (the git shadow-repo snapshot provider): every behaviour its text specifies.

The seed gives shell steps, not Python; each test states one of its rules
and checks it on a real repository with the real ``git``. The provider's
namespace is ``refs/workspacefs/...`` where the seed's product writes
``refs/aw/...``, and its default worktree directory is
``.git/worktrees-workspacefs/`` for the seed's ``.git/worktrees-aw/``
(docs/seeds.md).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from support.daemon import cli
from workspacefs.host import GitShadowProvider

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "User",
    "GIT_AUTHOR_EMAIL": "user@example.invalid",
    "GIT_COMMITTER_NAME": "User",
    "GIT_COMMITTER_EMAIL": "user@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=GIT_ENV
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def user_state(repo: Path) -> dict[str, str]:
    """What the provider must never change: the user's index, HEAD, branches, config and
    working files."""
    found = {"branches": git(repo, "for-each-ref", "refs/heads", "refs/tags")}
    found["HEAD"] = (repo / ".git" / "HEAD").read_text()
    found["index"] = (repo / ".git" / "index").read_bytes().hex()
    found["config"] = (repo / ".git" / "config").read_text()
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel == ".git" or rel.startswith(".git/") or path.is_dir():
            continue
        found[rel] = path.read_bytes().hex()
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "user-repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('v1')\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    (root / "tool.sh").chmod(0o755)
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    (root / "src" / "app.py").write_text("print('staged')\n")
    git(root, "add", "src/app.py")
    (root / "tool.sh").write_text("#!/bin/sh\necho unstaged\n")
    (root / "notes.txt").write_text("untracked\n")
    (root / "debug.log").write_text("ignored\n")
    return root


def test_zero_changes_to_the_users_repository(repo: Path) -> None:
    before = user_state(repo)
    provider = GitShadowProvider(repo, session_id="z")
    first = provider.snapshot(tag="t")
    provider.branch(first, "b")
    provider.seek(first)
    provider.restore(first)
    assert user_state(repo) == before
    provider.cleanup()
    assert user_state(repo) == before


def test_captures_staged_and_unstaged_untracked_opt_in(repo: Path) -> None:
    tracked = GitShadowProvider(repo, session_id="a").snapshot()
    assert git(repo, "show", f"{tracked.commit}:src/app.py") == "print('staged')\n"
    assert git(repo, "show", f"{tracked.commit}:tool.sh") == "#!/bin/sh\necho unstaged\n"
    files = git(repo, "ls-tree", "-r", "--name-only", tracked.commit).split()
    assert "notes.txt" not in files  # includeUntracked defaults to false
    with_untracked = GitShadowProvider(repo, session_id="b", include_untracked=True).snapshot()
    files = git(repo, "ls-tree", "-r", "--name-only", with_untracked.commit).split()
    assert "notes.txt" in files
    assert "debug.log" not in files  # ignored: never
    assert "100755 blob" in git(repo, "ls-tree", with_untracked.commit, "tool.sh")  # exec bit


def test_snapshot_chain_and_reflog(repo: Path) -> None:
    """The first snapshot is parented to HEAD, each later one to the session's previous
    snapshot; refs are ``.../sessions/<sid>/snapshots/<n>`` with a reflog."""
    provider = GitShadowProvider(repo, session_id="chain")
    first = provider.snapshot()
    (repo / "src" / "app.py").write_text("print('second')\n")
    second = provider.snapshot(tag="label")
    third = provider.snapshot()
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", f"{first.commit}^").strip() == head
    assert git(repo, "rev-parse", f"{second.commit}^").strip() == first.commit
    assert git(repo, "rev-parse", f"{third.commit}^").strip() == second.commit
    assert [s.ref for s in provider.snapshots()] == [
        f"refs/workspacefs/sessions/chain/snapshots/{n}" for n in (1, 2, 3)
    ]
    subject = git(repo, "log", "-1", "--format=%s", second.commit)
    assert "chain/2" in subject
    assert "label" in subject
    assert git(repo, "reflog", "show", "--format=%H", second.ref).split() == [second.commit]
    assert (repo / ".git" / "logs" / second.ref).is_file()
    # Another session's chain starts again from HEAD.
    other = GitShadowProvider(repo, session_id="other").snapshot()
    assert git(repo, "rev-parse", f"{other.commit}^").strip() == head


def test_separate_shadow_repository(repo: Path, tmp_path: Path) -> None:
    """``init --bare --shared=group``, alternates to the primary objects, the knobs, and
    unchanged content never duplicated; creation is idempotent."""
    shadow = tmp_path / "cache" / "project.git"
    provider = GitShadowProvider(repo, session_id="s", shadow=shadow)
    provider.snapshot()
    again = GitShadowProvider(repo, session_id="s", shadow=shadow)
    assert again.snapshots() == provider.snapshots()
    config = {
        key: git(shadow, "config", "--get", key).strip()
        for key in (
            "gc.auto",
            "receive.denyCurrentBranch",
            "core.logAllRefUpdates",
            "core.sharedRepository",
            "core.bare",
        )
    }
    assert config == {
        "gc.auto": "0",
        "receive.denyCurrentBranch": "ignore",
        "core.logAllRefUpdates": "true",
        "core.sharedRepository": "1",
        "core.bare": "true",
    }
    assert os.stat(shadow / "objects").st_mode & stat.S_ISGID  # group-shared directories
    alternates = (shadow / "objects" / "info" / "alternates").read_text().split()
    assert alternates == [str((repo / ".git" / "objects").resolve())]
    blobs_in_shadow = [
        oid
        for oid in _loose_objects(shadow)
        if git(shadow, "cat-file", "-t", oid).strip() == "blob"
    ]
    committed = {
        git(repo, "rev-parse", f"HEAD:{path}").strip() for path in (".gitignore", "src/app.py")
    }
    assert not committed & set(blobs_in_shadow)  # reused through alternates, not copied
    assert "refs/workspacefs" not in git(repo, "for-each-ref")


def _loose_objects(git_dir: Path) -> list[str]:
    objects = git_dir / "objects"
    return [d.name + f.name for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()]


def test_writable_branches_in_default_worktrees_directory(repo: Path) -> None:
    """A namespaced branch and a worktree under ``.git/worktrees-workspacefs/<sid>/<name>``
    by default; several at once."""
    provider = GitShadowProvider(repo, session_id="w")
    snapshot = provider.snapshot()
    one = Path(provider.branch(snapshot, "one"))
    two = Path(provider.branch(snapshot, "two"))
    assert one == repo / ".git" / "worktrees-workspacefs" / "w" / "one"
    assert two.parent == one.parent
    assert (one / "src" / "app.py").read_text() == "print('staged')\n"
    (one / "src" / "app.py").write_text("edited in the worktree\n")
    assert git(one, "status", "--porcelain") == " M src/app.py\n"
    assert git(repo, "rev-parse", "refs/workspacefs/branches/w/one").strip() == snapshot.commit
    assert str(one) in git(repo, "worktree", "list")


def test_worktrees_fall_back_to_temp_when_git_dir_not_writable(repo: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes through any mode bits: the fallback cannot be provoked")
    shadow = tmp_path / "shadow.git"
    provider = GitShadowProvider(repo, session_id="t", shadow=shadow)
    snapshot = provider.snapshot()
    (repo / ".git").chmod(0o555)
    try:
        path = Path(provider.branch(snapshot, "x"))
    finally:
        (repo / ".git").chmod(0o755)
    assert not path.is_relative_to(repo)


def test_read_only_seek(repo: Path) -> None:
    """``git worktree add --detach --locked``: a locked, detached, read-only tree."""
    provider = GitShadowProvider(repo, session_id="seek")
    snapshot = provider.snapshot()
    path = Path(provider.seek(snapshot))
    assert (path / "src" / "app.py").read_text() == "print('staged')\n"
    listing = git(repo, "worktree", "list", "--porcelain")
    block = next(b for b in listing.split("\n\n") if f"worktree {path}" in b)
    assert "detached" in block
    assert "locked" in block
    assert not (path / "src" / "app.py").stat().st_mode & 0o222


def test_cleanup(repo: Path, tmp_path: Path) -> None:
    """Worktrees removed, branch and snapshot refs deleted, another session's kept."""
    provider = GitShadowProvider(repo, session_id="gone")
    keep = GitShadowProvider(repo, session_id="kept")
    kept = keep.snapshot()
    snapshot = provider.snapshot()
    worktree = Path(provider.branch(snapshot, "b"))
    seek = Path(provider.seek(snapshot, tmp_path / "seek"))
    provider.cleanup()
    assert not worktree.exists()
    assert not seek.exists()
    refs = git(repo, "for-each-ref", "--format=%(refname)")
    assert "sessions/gone" not in refs
    assert "branches/gone" not in refs
    assert kept.ref in refs
    assert str(worktree) not in git(repo, "worktree", "list")
    git(repo, "fsck", "--strict")


def test_refuses_in_progress_operations_and_unmerged_entries(repo: Path) -> None:
    provider = GitShadowProvider(repo, session_id="busy")
    for marker in ("MERGE_HEAD", "BISECT_LOG", "rebase-merge"):
        path = repo / ".git" / marker
        if marker == "rebase-merge":
            path.mkdir()
        else:
            path.write_text(git(repo, "rev-parse", "HEAD"))
        with pytest.raises(OSError, match=r"merge|bisect|rebase"):
            provider.snapshot()
        path.rmdir() if path.is_dir() else path.unlink()
    provider.snapshot()


def test_submodules_stay_gitlinks(repo: Path, tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q", "-b", "main")
    (inner / "x").write_text("x")
    git(inner, "add", "-A")
    git(inner, "commit", "-qm", "x")
    subprocess.run(
        ["git", "-C", str(repo), "-c", "protocol.file.allow=always", "submodule", "add", "-q",
         str(inner), "sub"],
        check=True, env=GIT_ENV, capture_output=True,
    )  # fmt: skip
    snapshot = GitShadowProvider(repo, session_id="sub").snapshot()
    assert git(repo, "ls-tree", snapshot.commit, "sub").startswith("160000 commit")


def test_detect_capabilities(repo: Path) -> None:
    """Git found, worktrees supported, the store writable; never path-preserving."""
    capabilities = GitShadowProvider(repo, session_id="caps").capabilities()
    assert capabilities["kind"] == "git"
    assert capabilities["git"] is not None
    assert capabilities["worktrees"] is True
    assert capabilities["writable"] is True
    assert capabilities["path_preserving"] is False
    info = GitShadowProvider(repo, session_id="caps").info()
    assert info["provider"] == "git-shadow"


def test_doctor_reports_the_provider(repo: Path) -> None:
    """``workspacefs doctor`` prints the provider's detection results."""
    result = cli("doctor", "--json", cwd=repo)  # exits 4 if this machine lacks something
    checks = {check["name"]: check for check in json.loads(result.stdout)}
    provider = checks["git shadow"]
    assert provider["status"] == "ok"
    for word in ("git", "worktrees", "writable"):
        assert word in provider["detail"]
