"""``workspacefs log --space`` and ``workspacefs prune`` against a real daemon, and
``RemoteFilesystem.space_usage``/``prune`` under them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import cli, cli_json, cli_mounted, cli_ok
from workspacefs import InvalidArgumentError, SnapshotRetentionPolicy
from workspacefs.daemon import connect

KIB = 1024


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    source = tmp_path / "source"
    source.mkdir()
    (source / "README.md").write_text("# demo\n")
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source):
        with connect(str(mountpoint)) as fs:  # the history below is the test's alone
            fs.delete_snapshot(next(s for s in fs.snapshots() if s.tag == "from"))
        yield mountpoint


def history(workspace: Path) -> None:
    """ "one" alone holds 200 KiB, "two" 100 KiB, the live tree 50 KiB; README is shared."""
    data = workspace / "data.bin"
    data.write_bytes(b"1" * (200 * KIB))
    cli_ok("snapshot", str(workspace), "--tag", "one")
    data.write_bytes(b"2" * (100 * KIB))  # O_TRUNC, then new chunks
    cli_ok("snapshot", str(workspace), "--tag", "two")
    data.write_bytes(b"3" * (50 * KIB))


def test_log_shows_shared_and_exclusive_bytes(workspace: Path) -> None:
    history(workspace)
    found = cli_json("log", str(workspace), "--space")
    assert isinstance(found, dict)
    spaces = {entry["tag"]: entry["space"] for entry in found["snapshots"]}
    assert spaces == {
        "one": {"reached": 200 * KIB + 7, "shared": 7, "exclusive": 200 * KIB},
        "two": {"reached": 100 * KIB + 7, "shared": 7, "exclusive": 100 * KIB},
    }
    space = found["space"]
    assert space["workspace"]["live"] == {
        "reached": 50 * KIB + 7,
        "shared": 7,
        "exclusive": 50 * KIB,
    }
    assert space["held"] == space["accounted"] == 350 * KIB + 7
    lines = cli_ok("log", str(workspace), "--space").splitlines()
    assert lines[0].split() == [
        "ID",
        "TAG",
        "PARENT",
        "TIME",
        "FILES",
        "BYTES",
        "SHARED",
        "EXCLUSIVE",
    ]
    assert lines[1].split()[-4:] == ["7", "B", "200.0", "KiB"]
    assert "snapshots alone hold 300.0 KiB (what deleting all of them frees)" in lines
    with connect(str(workspace)) as fs:
        usage = fs.space_usage()
        assert [(s.tag, s.exclusive) for s in usage.snapshots] == [
            ("one", 200 * KIB),
            ("two", 100 * KIB),
        ]
        with pytest.raises(InvalidArgumentError):
            usage.exclusive_bytes(fs.snapshots())


def test_prune_by_bytes_frees_what_the_accounting_said(workspace: Path) -> None:
    history(workspace)
    kept = cli_json("prune", str(workspace), "--max-bytes", "150KiB", "--dry-run")
    assert isinstance(kept, dict)
    assert kept["pruned"] == []  # tagged snapshots stay unless asked
    planned = cli_json(
        "prune", str(workspace), "--max-bytes", "150KiB", "--include-tagged", "--dry-run"
    )
    assert isinstance(planned, dict)
    assert [r["tag"] for r in planned["pruned"]] == ["one"]
    assert (planned["dry_run"], planned["freed_bytes"]) == (True, 200 * KIB)
    assert planned["held_after"] == planned["held_before"]
    assert len(cli_json("log", str(workspace))) == 2  # type: ignore[arg-type]
    with connect(str(workspace)) as fs:  # the daemon keeps a view of "one" ready
        one = next(s for s in fs.snapshots() if s.tag == "one")
        assert fs.at(one).read_bytes("data.bin").size_bytes == 200 * KIB
    assert cli_ok(
        "prune", str(workspace), "--max-bytes", "150KiB", "--include-tagged"
    ).splitlines() == [
        "Pruned 1 snapshot, freed 200.0 KiB (memory held 350.0 KiB -> 150.0 KiB)",
        f"  {planned['pruned'][0]['snapshot_id'][:8]} (one)",
    ]
    with connect(str(workspace)) as fs:
        assert [s.tag for s in fs.snapshots()] == ["two"]
        assert fs.prune(SnapshotRetentionPolicy(max_count=5)).pruned == ()
        gone = fs.prune(SnapshotRetentionPolicy(max_snapshot_bytes=0, keep_tagged=False))
        assert [s.tag for s in gone.pruned] == ["two"]
        assert gone.held_before - gone.held_after == gone.freed_bytes == 100 * KIB


def test_prune_needs_a_rule_and_a_size(workspace: Path) -> None:
    assert cli("prune", str(workspace)).returncode == 2
    assert cli("prune", str(workspace), "--max-bytes", "lots").returncode == 2
    assert (
        cli_ok("prune", str(workspace), "--keep", "3") == "Pruned 0 snapshots, freed 0 B "
        "(memory held 7 B -> 7 B)\n"
    )


@pytest.mark.parametrize("size", ["nan", "inf", "-5", "lots", "1x"])
def test_prune_refuses_what_is_no_size_as_a_usage_error(size: str) -> None:
    result = cli("prune", "--max-bytes", size)
    assert result.returncode == 2, result.stderr
    assert "not a size" in result.stderr


def test_prune_takes_a_size_of_zero() -> None:
    # Parsed before any workspace is looked for: whatever follows, no usage error.
    assert cli("prune", "--max-bytes", "0").returncode != 2
