"""The trust tier: a user made for the test (``useradd``) tries every door of a
workspace it does not own, set up as its owner would, and is refused.

The workspace lives in a directory every user may enter (``open_directory``),
and so do its runtime directory (``XDG_RUNTIME_DIR``) and data directory
(``XDG_DATA_HOME``): nothing but what workspacefs itself creates stands in the
way. The doors: the FUSE mount (the workspace, its ``/.snapshots`` and
``/.forks``), the daemon's control socket and runtime files (record, log), the
debug UI, the named workspace's store and persisted repository, and an export.
The per-door tests with ``nobody`` (tests/daemon/test_private_mounts.py and
test_daemon_lifecycle.py, tests/debug/test_auth.py,
tests/git/test_private_repositories.py, tests/archive/test_private_exports.py)
check each rule alone; this tier tries them all on one workspace as a fresh
user, then opens one door on purpose, so a refusal is shown to be the modes'.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.daemon import DebugProcess, cli_json, cli_ok, serve_debug, stop, stop_debug
from support.other_user import OtherUser, created_user, needs_useradd, open_directory
from workspacefs.daemon import MountRecord

pytestmark = [pytest.mark.fuse, needs_useradd]

SYSTEM_PYTHON = "/usr/bin/python3"
"""A Python every user may run (the test's own may live in root's home)."""
CURL = shutil.which("curl")
SECRET = "API_KEY=hunter2"

CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print(exc.errno)
else:
    print("connected")
"""


@dataclass
class Workspace:
    """A named workspace mounted, snapshotted, forked, persisted, exported and served
    by ``workspacefs debug``, all as root (its owner)."""

    base: Path
    mountpoint: Path
    record: MountRecord
    repository: Path
    export: Path
    debug: DebugProcess


@pytest.fixture(scope="module")
def stranger() -> Iterator[OtherUser]:
    with created_user() as user:
        yield user


@pytest.fixture(scope="module")
def owned() -> Iterator[Workspace]:
    with open_directory() as base, pytest.MonkeyPatch.context() as env:
        for name in ("run", "data", "ws"):
            (base / name).mkdir(mode=0o755)
            (base / name).chmod(0o755)
        env.setenv("XDG_RUNTIME_DIR", str(base / "run"))
        env.setenv("XDG_DATA_HOME", str(base / "data"))
        mountpoint = base / "ws"
        name = f"trust-{secrets.token_hex(3)}"
        found = cli_json("mount", str(mountpoint), "--name", name)
        assert isinstance(found, dict)
        record = MountRecord.from_dict(found)
        debug = None
        try:
            (mountpoint / "public.txt").write_text("hello\n")
            (mountpoint / "secret.env").write_text(SECRET + "\n")
            (mountpoint / "secret.env").chmod(0o600)
            cli_json("snapshot", str(mountpoint), "--tag", "old")
            cli_ok("fork", "--name", "side", cwd=mountpoint)
            persisted = cli_json("persist", str(mountpoint))
            assert isinstance(persisted, dict)
            export = base / "ws.zip"
            cli_ok("export", str(mountpoint), str(export))
            debug = serve_debug(mountpoint)
            yield Workspace(base, mountpoint, record, Path(persisted["repository"]), export, debug)
        finally:
            if debug is not None:
                stop_debug(debug)
            stop(record)
            cli_ok("discard", name)


def test_the_base_directory_is_open_to_the_stranger(owned: Workspace, stranger: OtherUser) -> None:
    listing = stranger.run("ls", owned.base)
    assert listing.returncode == 0, listing.stderr
    assert set(listing.stdout.split()) >= {"run", "data", "ws", "ws.zip"}


def test_the_mount_refuses_a_stranger(owned: Workspace, stranger: OtherUser) -> None:
    ws = owned.mountpoint
    for command in (
        ("ls", ws),
        ("cat", ws / "public.txt"),
        ("cat", ws / "secret.env"),
        ("ls", ws / ".snapshots" / "old"),
        ("cat", ws / ".snapshots" / "old" / "secret.env"),
        ("cat", ws / ".forks" / "side" / "public.txt"),
        ("touch", ws / "planted"),
    ):
        assert stranger.refused(*command), command


def test_the_control_socket_and_runtime_files_refuse_a_stranger(
    owned: Workspace, stranger: OtherUser
) -> None:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip("no /usr/bin/python3 for the stranger to connect with")
    socket_path = owned.record.socket
    tried = stranger.run(SYSTEM_PYTHON, "-c", CONNECT, socket_path)
    assert tried.stdout.strip() == str(errno.EACCES), tried.stderr
    runtime = Path(socket_path).parent
    record = Path(socket_path).with_suffix(".json")
    for command in (("ls", runtime), ("cat", owned.record.log), ("cat", record)):
        assert stranger.refused(*command), command


@pytest.mark.skipif(CURL is None, reason="curl is missing")
def test_the_debug_ui_refuses_a_stranger(owned: Workspace, stranger: OtherUser) -> None:
    assert CURL is not None
    route = owned.debug.base + "/api/snapshots/live/raw?path=secret.env"
    for url in (route, route + "&token=" + secrets.token_urlsafe(32), owned.debug.base + "/"):
        answer = stranger.run(CURL, "-s", "-w", "\n%{http_code}", url)
        assert answer.returncode == 0, answer.stderr
        body, status = answer.stdout.rsplit("\n", 1)
        assert status == "401", url
        assert SECRET not in body


def test_the_store_repository_and_export_refuse_a_stranger(
    owned: Workspace, stranger: OtherUser
) -> None:
    store = owned.repository.parent
    for command in (
        ("ls", store),
        ("ls", store / "journal"),
        ("ls", owned.repository),
        ("cat", owned.repository / "HEAD"),
        ("cat", owned.export),
    ):
        assert stranger.refused(*command), command


def test_a_door_opened_by_the_owner_opens_only_as_far_as_the_modes_say(
    owned: Workspace, stranger: OtherUser
) -> None:
    ws = owned.mountpoint
    ws.chmod(0o755)  # the owner opens the workspace's root, e.g. for a container user
    try:
        read = stranger.run("cat", ws / "public.txt")
        assert read.stdout == "hello\n", read.stderr  # the test can fail: this door is open
        assert stranger.refused("cat", ws / "secret.env")  # a 0600 file stays its owner's
        assert stranger.refused("touch", ws / "planted")  # 0755: no writes by others
        # the snapshot keeps the root's mode of its time, 0700
        assert stranger.refused("ls", ws / ".snapshots" / "old")
    finally:
        ws.chmod(0o700)
    assert stranger.refused("cat", ws / "public.txt")
