"""The git shadow-repo provider on real repositories: the user's repo is never touched."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from support.other_user import umask
from workspacefs.host import GitShadowProvider

from .hostile import GIT_ENV


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=GIT_ENV
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def fingerprint(repo: Path) -> dict[str, str]:
    """Checksums of the user's index, HEAD, branch refs and working files."""
    found = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_dir() or rel.startswith((".git/objects", ".git/workspacefs")):
            continue
        if rel.startswith(".git/") and not (
            rel in (".git/index", ".git/HEAD", ".git/packed-refs")
            or rel.startswith(".git/refs/heads")
        ):
            continue
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        found[rel] = hashlib.sha256(data).hexdigest()
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "user-repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('v1')\n")
    (root / "README.md").write_text("readme\n")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    (root / "src" / "app.py").write_text("print('staged')\n")
    git(root, "add", "src/app.py")
    (root / "README.md").write_text("unstaged edit\n")
    (root / "notes.txt").write_text("untracked\n")
    (root / "debug.log").write_text("ignored\n")
    return root


def test_snapshot_captures_working_state_without_touching_the_repo(repo: Path) -> None:
    before = fingerprint(repo)
    provider = GitShadowProvider(repo, session_id="s1")
    snapshot = provider.snapshot(tag="first")
    assert fingerprint(repo) == before
    assert git(repo, "show", f"{snapshot.commit}:src/app.py") == "print('staged')\n"
    assert git(repo, "show", f"{snapshot.commit}:README.md") == "unstaged edit\n"
    files = git(repo, "ls-tree", "-r", "--name-only", snapshot.commit).split()
    assert "notes.txt" not in files  # untracked: opt-in
    assert "debug.log" not in files
    assert git(repo, "rev-parse", f"{snapshot.commit}^") == git(repo, "rev-parse", "HEAD")
    assert snapshot.ref == "refs/workspacefs/sessions/s1/snapshots/1"
    assert git(repo, "status", "--porcelain") == " M README.md\nM  src/app.py\n?? notes.txt\n"
    git(repo, "fsck", "--strict")


def test_untracked_opt_in_and_ignored_excluded(repo: Path) -> None:
    provider = GitShadowProvider(repo, session_id="s2", include_untracked=True)
    files = git(repo, "ls-tree", "-r", "--name-only", provider.snapshot().commit).split()
    assert "notes.txt" in files
    assert "debug.log" not in files


def test_incremental_snapshots_rehash_only_changes(repo: Path) -> None:
    provider = GitShadowProvider(repo, session_id="s3")
    first = provider.snapshot()
    objects = repo / ".git" / "objects"
    before = sum(len(f) for _, _, f in os.walk(objects))
    (repo / "README.md").write_text("second edit\n")
    second = provider.snapshot()
    written = sum(len(f) for _, _, f in os.walk(objects)) - before
    assert written <= 3  # the new blob, the root tree, the commit
    diff = git(repo, "diff", "--name-only", first.commit, second.commit)
    assert diff.split() == ["README.md"]


def test_branch_worktree_restore_and_cleanup(repo: Path, tmp_path: Path) -> None:
    before = fingerprint(repo)
    provider = GitShadowProvider(repo, session_id="s4")
    first = provider.snapshot()
    (repo / "README.md").write_text("agent edit\n")
    (repo / "src" / "app.py").unlink()
    second = provider.snapshot()
    work = provider.branch(first, "try-again", tmp_path / "branch")
    assert (Path(work) / "README.md").read_text() == "unstaged edit\n"
    (Path(work) / "README.md").write_text("edited on the branch\n")  # writable
    assert git(Path(work), "status", "--porcelain") == " M README.md\n"  # git sees a worktree
    assert str(work) in git(repo, "worktree", "list")
    seek = provider.seek(second, tmp_path / "seek")
    assert not (Path(seek) / "src" / "app.py").exists()
    assert not os.access(Path(seek) / "README.md", os.W_OK) or os.geteuid() == 0
    provider.restore(first)
    assert fingerprint(repo) == before
    assert len(provider.snapshots()) == 2
    assert provider.info()["snapshots"] == [first.ref, second.ref]
    provider.cleanup()
    assert not Path(work).exists()
    assert not Path(seek).exists()
    assert "refs/workspacefs" not in git(repo, "for-each-ref")
    assert fingerprint(repo) == before


def test_separate_shadow_uses_alternates(repo: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow.git"
    provider = GitShadowProvider(repo, session_id="s5", shadow=shadow)
    snapshot = provider.snapshot()
    alternates = (shadow / "objects" / "info" / "alternates").read_text().strip()
    assert alternates == str((repo / ".git" / "objects").resolve())
    assert "refs/workspacefs" not in git(repo, "for-each-ref")
    assert git(shadow, "show", f"{snapshot.commit}:README.md") == "unstaged edit\n"
    assert git(shadow, "config", "gc.auto").strip() == "0"
    assert provider.capabilities()["shadow"] == "separate"


def test_refuses_during_merge_and_on_conflicts(repo: Path) -> None:
    provider = GitShadowProvider(repo, session_id="s6")
    (repo / ".git" / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    with pytest.raises(OSError, match="merge"):
        provider.snapshot()
    (repo / ".git" / "MERGE_HEAD").unlink()
    (repo / ".git" / "rebase-merge").mkdir()
    with pytest.raises(OSError, match="rebase"):
        provider.snapshot()


def test_gitattributes_filters_apply(repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.txt text eol=lf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attrs")
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    git(repo, "add", "crlf.txt")
    provider = GitShadowProvider(repo, session_id="s7")
    snapshot = provider.snapshot()
    command = ["git", "-C", str(repo), "cat-file", "blob", f"{snapshot.commit}:crlf.txt"]
    blob = subprocess.run(command, capture_output=True, env=GIT_ENV).stdout
    assert blob == b"one\ntwo\n"


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        GitShadowProvider(tmp_path)


def test_refuses_unmerged_entries(repo: Path) -> None:
    git(repo, "stash", "-q")  # start clean
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README.md").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    subprocess.run(
        ["git", "-C", str(repo), "merge", "-q", "other"], capture_output=True, env=GIT_ENV
    )
    (repo / ".git" / "MERGE_HEAD").unlink()  # only the unmerged index entries remain
    with pytest.raises(OSError, match="unmerged"):
        GitShadowProvider(repo, session_id="s8").snapshot()


def test_index_version_4_is_read_too(repo: Path) -> None:
    git(repo, "update-index", "--index-version", "4")
    before = fingerprint(repo)
    snapshot = GitShadowProvider(repo, session_id="s9").snapshot()
    assert git(repo, "show", f"{snapshot.commit}:README.md") == "unstaged edit\n"
    assert fingerprint(repo) == before


def test_submodules_stay_gitlinks(repo: Path, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    (sub / "x.txt").write_text("x")
    git(sub, "add", "-A")
    git(sub, "commit", "-qm", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendor/sub")
    snapshot = GitShadowProvider(repo, session_id="s10").snapshot()
    listing = git(repo, "ls-tree", snapshot.commit, "vendor/sub")
    assert listing.startswith("160000 commit ")


def test_bad_names_refused(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="session id"):
        GitShadowProvider(repo, session_id="../escape")
    provider = GitShadowProvider(repo, session_id="s11")
    snapshot = provider.snapshot()
    with pytest.raises(ValueError, match="branch name"):
        provider.branch(snapshot, "../../heads/main", tmp_path / "w")
    assert not (tmp_path / "w").exists()
    assert "refs/heads/main" in git(repo, "for-each-ref", "--format=%(refname)")


def test_a_new_separate_shadow_is_private_whatever_the_umask(repo: Path, tmp_path: Path) -> None:
    with umask(0o000):
        GitShadowProvider(repo, session_id="s9", shadow=tmp_path / "shadow.git").snapshot()
    # The owner's alone; the setgid bit is the seed's --shared=group.
    assert stat.S_IMODE((tmp_path / "shadow.git").stat().st_mode) == 0o2700
