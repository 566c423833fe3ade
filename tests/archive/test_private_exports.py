"""Archives, session dumps and checkpoints are their owner's alone (0600 files, 0700
directories made for them), whatever the umask: they hold every file of the workspace,
whatever its mode, and the session's state."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from support.other_user import needs_root, open_directory, refused, umask
from workspacefs import InMemoryFilesystem, JsonSession, NotPermittedError
from workspacefs.archive import (
    ArchiveSnapshots,
    SessionCheckpoints,
    dump_session,
    export_archive,
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def workspace() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("key", "secret\n")
    return fs


@pytest.mark.parametrize("mask", [0o022, 0o000])
def test_an_export_is_private_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    (tmp_path / "old.zip").write_bytes(b"")
    (tmp_path / "old.zip").chmod(0o644)
    with umask(mask):
        export_archive(workspace(), tmp_path / "new.zip")
        export_archive(workspace(), tmp_path / "old.zip")  # replaced, not reused
    assert mode_of(tmp_path / "new.zip") == 0o600
    assert mode_of(tmp_path / "old.zip") == 0o600


@pytest.mark.parametrize("mask", [0o022, 0o000])
def test_dumps_and_checkpoints_are_private_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    session = JsonSession({"messages": ["token=hunter2"]})
    with umask(mask):
        dump_session(session, workspace(), tmp_path / "dumps", "s1")
        SessionCheckpoints(session, {"ws": workspace()}, tmp_path / "cps").checkpoint("c1")
        ArchiveSnapshots(workspace(), tmp_path / "snaps").snapshot("one")
    made = {
        "dumps": 0o700,
        "dumps/s1.jsonl": 0o600,
        "dumps/s1.fs.zip": 0o600,
        "cps": 0o700,
        "cps/c1.session.json": 0o600,
        "cps/ws": 0o700,
        "cps/ws/c1.zip": 0o600,
        "snaps": 0o700,
        "snaps/one.zip": 0o600,
    }
    assert {path: mode_of(tmp_path / path) for path in made} == made


def test_the_default_snapshot_directory_is_this_users_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    manager = ArchiveSnapshots(workspace())
    assert manager.snapshot_dir == tmp_path / f"workspacefs-snapshots-{os.geteuid()}"
    assert mode_of(manager.snapshot_dir) == 0o700
    # One another user made first (the temp dir is everyone's) is refused, not used.
    manager.snapshot_dir.chmod(0o777)
    with pytest.raises(NotPermittedError, match="others may write"):
        ArchiveSnapshots(workspace())


@needs_root
def test_another_user_reads_no_export() -> None:
    with open_directory() as base, umask(0o022):
        export_archive(workspace(), base / "ws.zip")
        dump_session(JsonSession({"secret": 1}), workspace(), base / "dumps", "s1")
        assert refused("cat", base / "ws.zip")
        assert refused("ls", base / "dumps")
