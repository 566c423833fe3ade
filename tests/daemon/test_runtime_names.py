"""Where a user's workspaces are found: a runtime directory no one else can take away,
and mount points named through symbolic links found as they are mounted."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import SOURCE_ROOT, cli, cli_json, cli_ok, demo_source

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
WHERE = "from workspacefs.daemon import runtime_dir; print(runtime_dir())"


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory like ``/tmp``: everyone may create in it (sticky), apart from the
    pytest directories nobody cannot reach."""
    base = Path(tempfile.mkdtemp(prefix="wsfs-tmp-", dir="/tmp"))
    base.chmod(0o1777)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def runtime_dir_of_nobody(tmp: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": SOURCE_ROOT,
        "HOME": str(home),
        "TMPDIR": str(tmp),
    }  # no XDG_RUNTIME_DIR; nobody has no /run/user/65534
    return subprocess.run(
        [*AS_NOBODY, sys.executable, "-c", WHERE], env=env, capture_output=True, text=True
    )


@pytest.mark.skipif(os.getuid() != 0, reason="runs a process as another user")
@pytest.mark.skipif(os.path.exists(f"/run/user/{NOBODY}"), reason="nobody has a /run/user")
def test_a_runtime_directory_someone_else_made_is_stepped_around(shared_tmp: Path) -> None:
    squatted = shared_tmp / f"workspacefs-{NOBODY}"
    squatted.mkdir(mode=0o755)  # root's: its sockets would be root's to fake
    home = shared_tmp / "home"
    home.mkdir(mode=0o700)
    os.chown(home, NOBODY, NOBODY)

    first = runtime_dir_of_nobody(shared_tmp, home)
    assert first.returncode == 0, first.stderr
    chosen = Path(first.stdout.strip())
    assert chosen != squatted
    assert chosen.parent == shared_tmp
    assert chosen.name.startswith(f"workspacefs-{NOBODY}-")
    info = chosen.lstat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (NOBODY, 0o700)
    assert runtime_dir_of_nobody(shared_tmp, home).stdout.strip() == str(chosen)  # recorded

    # Gone (a reboot cleans /tmp) and taken again: a new one, recorded again.
    shutil.rmtree(chosen)
    chosen.mkdir(mode=0o755)
    again = runtime_dir_of_nobody(shared_tmp, home)
    assert again.returncode == 0, again.stderr
    assert Path(again.stdout.strip()) not in (chosen, squatted)


@pytest.mark.skipif(os.getuid() != 0, reason="runs a process as another user")
@pytest.mark.skipif(os.path.exists(f"/run/user/{NOBODY}"), reason="nobody has a /run/user")
def test_with_nowhere_to_record_it_the_error_says_what_to_do(shared_tmp: Path) -> None:
    (shared_tmp / f"workspacefs-{NOBODY}").mkdir(mode=0o755)
    refused = runtime_dir_of_nobody(shared_tmp, Path("/nonexistent"))
    assert refused.returncode != 0
    assert "XDG_RUNTIME_DIR" in refused.stderr
    assert f"workspacefs-{NOBODY}" in refused.stderr


def test_a_mount_point_named_through_links_is_found(tmp_path: Path) -> None:
    """``status`` and ``unmount`` find a workspace through a linked parent directory
    and through a link to the mount point itself."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "ws").mkdir()
    (tmp_path / "parent-link").symlink_to(real)
    (tmp_path / "ws-link").symlink_to(real / "ws")
    through_parent = tmp_path / "parent-link" / "ws"
    record = cli_json("mount", str(through_parent), "--from", str(demo_source(tmp_path)))
    assert isinstance(record, dict)
    assert record["mountpoint"] == str(real / "ws")
    try:
        for name in (through_parent, tmp_path / "ws-link", real / "ws"):
            status = cli("status", str(name), "--json")
            assert status.returncode == 0, (name, status.stderr)
            assert json.loads(status.stdout)["mountpoint"] == str(real / "ws")
        assert (tmp_path / "ws-link" / "README.md").read_text() == "# demo\n"
    finally:
        cli_ok("unmount", str(tmp_path / "ws-link"))
    assert not os.path.ismount(real / "ws")
