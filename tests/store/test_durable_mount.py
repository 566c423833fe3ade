"""fsync on a durable workspace's mount is a durability point: what a program wrote
before its fsync returned survives a SIGKILL of the process serving the mount."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from support.interpreter import child_env
from workspacefs.fuse import recover
from workspacefs.store import Durability, open_workspace

pytestmark = pytest.mark.fuse

SERVER = """
import sys, time
from workspacefs import mount
from workspacefs.store import Durability, open_workspace
durable, _ = open_workspace(sys.argv[1], durability=Durability.REQUESTED)
with mount(durable.fs, sys.argv[2], on_sync=durable.sync):
    print("mounted", flush=True)
    time.sleep(3600)
"""


def serve(store: Path, mountpoint: Path) -> subprocess.Popen[str]:
    """A process serving the durable workspace in ``store`` at ``mountpoint``."""
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(store), str(mountpoint)],
                              stdout=subprocess.PIPE, text=True, env=child_env())  # fmt: skip
    assert server.stdout is not None
    assert server.stdout.readline() == "mounted\n"
    return server


def kill(server: subprocess.Popen[str], mountpoint: Path) -> None:
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    if server.stdout is not None:
        server.stdout.close()
    recover(str(mountpoint))


def test_what_fsync_acknowledged_survives_a_kill(tmp_path: Path) -> None:
    store, mountpoint = tmp_path / "store", tmp_path / "mnt"
    mountpoint.mkdir()
    server = serve(store, mountpoint)
    try:
        fd = os.open(mountpoint / "synced.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"on disk before fsync returned\n")
        os.fsync(fd)
        os.close(fd)
        (mountpoint / "not-synced.txt").write_text("never promised\n")
    finally:
        kill(server, mountpoint)
    durable, recovery = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        assert recovery.damage is None
        assert durable.fs.read("synced.txt").content == "on disk before fsync returned\n"


def test_committed_sqlite_transactions_survive_a_kill(tmp_path: Path) -> None:
    store, mountpoint = tmp_path / "store", tmp_path / "mnt"
    mountpoint.mkdir()
    server = serve(store, mountpoint)
    committed = 0
    try:
        database = sqlite3.connect(mountpoint / "app.db", isolation_level=None)
        # EXTRA: sqlite also syncs the directory once a commit deletes its rollback
        # journal (FULL leaves that to luck, on any filesystem: without it the last
        # commit may roll back after a crash).
        database.execute("PRAGMA synchronous=EXTRA")
        database.execute("CREATE TABLE t (n INTEGER)")
        for n in range(60):
            database.execute("INSERT INTO t VALUES (?)", (n,))  # a transaction: one fsync
            committed = n + 1
        database.close()
    finally:
        kill(server, mountpoint)
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        copy = tmp_path / "copy.db"
        copy.write_bytes(durable.fs.read_bytes("app.db").content)
        for name in ("app.db-journal", "app.db-wal"):
            if durable.fs.exists(name):
                (tmp_path / name.replace("app", "copy")).write_bytes(
                    durable.fs.read_bytes(name).content
                )
        rows = sqlite3.connect(copy).execute("SELECT count(*) FROM t").fetchone()[0]
        assert rows == committed
