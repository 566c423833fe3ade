"""``workspacefs diff --patch`` against a real daemon: symlinks as git shows them, whatever they
point to, and files too large to show by their sizes, never read whole."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import SOURCE_ROOT, cli_mounted, cli_ok, demo_source
from support.memory_limit import memory_limit
from workspacefs import connect
from workspacefs.tools import ToolContext, filesystem_tools

HUGE = 64 << 30


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """A workspace mounted with ``workspacefs mount`` from ``demo_source``."""
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, demo_source(tmp_path)):
        yield mountpoint


def plant(root: Path) -> None:
    """The state before: a file, an empty directory, a link to a directory and one to a file."""
    (root / "notes.txt").write_text("notes\n")
    (root / "build").mkdir()
    (root / "build" / "app.py").write_text("built\n")
    (root / "venv" / "bin").mkdir(parents=True)
    os.symlink("src", root / "docs")
    os.symlink("notes.txt", root / "latest")


def change(root: Path) -> None:
    """Every kind of link change, a mode change and an edit."""
    os.symlink("/usr/bin/python3", root / "venv" / "bin" / "python")  # leaves the workspace
    os.symlink("src", root / "srclink")  # to a directory
    (root / "latest").unlink()
    os.symlink("README.md", root / "latest")  # retargeted
    (root / "docs").unlink()  # a link to a directory, deleted
    (root / "notes.txt").unlink()
    os.symlink("README.md", root / "notes.txt")  # a file became a link
    os.chmod(root / "README.md", 0o755)
    shutil.rmtree(root / "build")
    os.symlink("src", root / "build")  # a directory became a link: build/app.py is gone
    (root / "src" / "app.py").write_text("print('changed')\n")


def git_patch(tmp_path: Path) -> str:
    """What ``git diff`` prints for the same change, in a real repository."""
    repo = tmp_path / "repo"
    shutil.copytree(demo_source(tmp_path / "for-git"), repo, symlinks=True)
    plant(repo)
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "start")
    change(repo)
    git("add", "-A")
    return git("-c", "diff.renames=false", "diff", "--cached", "--no-color", "--no-ext-diff")


def without_index(patch: str) -> str:
    """The patch without its ``index`` lines (blob ids: workspacefs does not hash files)."""
    return "".join(line for line in patch.splitlines(True) if not line.startswith("index "))


def test_patch_shows_links_as_git_does(workspace: Path, tmp_path: Path) -> None:
    plant(workspace)
    cli_ok("snapshot", str(workspace), "--tag", "start")
    change(workspace)
    assert cli_ok("diff", str(workspace), "start").splitlines() == [
        "A\tbuild",
        "A\tsrclink",
        "A\tvenv/bin/python",
        "M\tREADME.md",
        "M\tlatest",
        "M\tnotes.txt",
        "M\tsrc/app.py",
        "D\tbuild/app.py",
        "D\tdocs",
    ]
    patch = cli_ok("diff", str(workspace), "start", "--patch")
    assert "# demo" not in patch  # the links to README.md are shown, not followed
    assert patch == without_index(git_patch(tmp_path))
    assert "+/usr/bin/python3\n\\ No newline at end of file\n" in patch


def test_patch_of_a_huge_sparse_file_gives_its_sizes(workspace: Path) -> None:
    (workspace / "disk.img").write_bytes(b"boot")
    cli_ok("snapshot", str(workspace), "--tag", "start")
    os.truncate(workspace / "disk.img", HUGE)
    (workspace / "sparse.img").touch()
    os.truncate(workspace / "sparse.img", HUGE)
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    command = [sys.executable, "-m", "workspacefs.cli", "diff", str(workspace), "start", "--patch"]
    with memory_limit(512 << 20) as limit:
        done = subprocess.run(
            command,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=limit.preexec,
            check=False,
        )
        assert limit.oom_kills() == 0, limit.kind
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "diff --git a/disk.img b/disk.img",
        "Binary files a/disk.img and b/disk.img differ (4 -> 68,719,476,736 bytes, "
        "over the 1,048,576-byte limit)",
        "diff --git a/sparse.img b/sparse.img",
        "new file mode 100644",
        "Binary files /dev/null and b/sparse.img differ (0 -> 68,719,476,736 bytes, "
        "over the 1,048,576-byte limit)",
    ]


def test_diff_tool_over_the_daemon_shows_links(workspace: Path) -> None:
    with connect(str(workspace)) as fs:
        tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)
        assert tools.call("snapshot", {"tag": "before"}, context=context).success
        os.symlink("/usr/bin/python3", workspace / "python")
        os.symlink("README.md", workspace / "readme")
        result = tools.call("diff", {"from": "before"}, context=context)
    assert result.success, result.message
    assert "diff --git a/python b/python\nnew file mode 120000\n--- /dev/null\n" in result.message
    assert "+++ b/python\n@@ -0,0 +1 @@\n+/usr/bin/python3\n\\ No newline" in result.message
    assert "+++ b/readme\n@@ -0,0 +1 @@\n+README.md\n\\ No newline at end of file" in result.message
    assert "# demo" not in result.message
