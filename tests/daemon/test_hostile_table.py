"""The hostile-input table: each hostile input through each door that takes it, against
one daemon under a real memory limit. Every row ends in a clear error or a bounded
result; after it the daemon answers, the workspace holds exactly what it held before
(its own diff against a snapshot taken before the row is empty), and the kernel's OOM
killer has killed nothing.

| input | door | outcome |
|---|---|---|
| lazy 512 MiB of zeros (a 0.5 MB repository) | mount: ``md5sum`` | its digest; zeros stay holes |
| a lazy 256 MiB blob of ones, past the budget | mount: ``cat`` | ENOSPC; the file stays lazy |
| the same | API: ``read_bytes`` | a limit error naming the read limit |
| a 64 GiB sparse file | container: ``truncate -s 64G`` | done, costing nothing |
| the same | ``persist`` | EFBIG naming the file, before anything is written |
| the same | ``export`` | EFBIG before anything is compressed |
| the same | ``diff --patch`` | its sizes, never its bytes |
| the same | debug UI ``/api/diff?patch=1`` | the same, within ``max_lines`` |
| a ZIP of 3 MB declaring 3 GiB of zeros | ``import`` | ENOSPC before anything is written |
| 17.9 M directories in 8 records (a tree bomb) | ``mount --from`` | refused, naming the limit |
| a repository recording uid 2^40 | ``mount --from`` | refused, naming the path and the value |
| a repository recording an mtime of 2^80 ns | ``mount --from`` | clamped to 9999-12-31 |
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.daemon import cli, serve_debug, stop, stop_debug
from support.forged_repos import DIR, FILE, Forge, bomb, record
from support.memory_limit import MemoryLimit, memory_limit
from support.zipbomb import zero_bomb
from workspacefs import FilesystemSnapshot, connect
from workspacefs.daemon import MountRecord

pytestmark = pytest.mark.container

MIB = 1 << 20
GIB = 1 << 30
LIMIT = 512 * MIB
ZEROS = 512 * MIB
ONES = 256 * MIB
SPARSE = 64 * GIB


@dataclass
class Hostile:
    """The daemon every row runs against, and what the rows need."""

    base: Path
    mountpoint: Path
    record: MountRecord
    limit: MemoryLimit

    def snapshot(self) -> FilesystemSnapshot:
        with connect(self.mountpoint, timeout=30) as fs:
            return fs.snapshot(tag=None)

    def unchanged_since(self, before: FilesystemSnapshot) -> None:
        """The daemon answers and the workspace is what it was at ``before``."""
        with connect(self.mountpoint, timeout=30) as fs:
            assert int(fs.status()["pid"]) == self.record.pid
            changes = fs.diff(before)
        assert [*changes.added, *changes.modified, *changes.deleted] == [], changes
        assert self.limit.oom_kills() == 0, self.limit.kind


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    base = tmp_path_factory.mktemp("hostile")
    forge = Forge(base / "lazy.git")
    forge.root(
        {
            "small.txt": (record(FILE, size=6), forge.blob(b"small\n")),
            "zeros.bin": (record(FILE, size=ZEROS), forge.big_blob(ZEROS)),
            "ones.bin": (record(FILE, size=ONES), forge.big_blob(ONES, fill=b"\x01")),
        }
    )
    mountpoint = base / "ws"
    mountpoint.mkdir()
    with memory_limit(LIMIT) as limit:
        started = cli(
            "mount",
            str(mountpoint),
            "--from",
            f"{forge.path}#1",
            "--json",
            preexec_fn=limit.preexec,
        )
        assert started.returncode == 0, started.stderr
        found = MountRecord.from_dict(json.loads(started.stdout))
        try:
            with connect(mountpoint, timeout=30) as fs:
                fs.snapshot(tag="start")  # what the diff rows compare with
            # The sparse file every later row meets, planted as an agent's container would.
            planted = cli(
                "run",
                "--mountpoint",
                str(mountpoint),
                "--",
                "truncate",
                "-s",
                str(SPARSE),
                "sparse.img",
            )
            assert planted.returncode == 0, planted.stderr
            assert (mountpoint / "sparse.img").stat().st_size == SPARSE
            yield Hostile(base, mountpoint, found, limit)
        finally:
            stop(found)


def _md5sum_of_lazy_zeros(h: Hostile) -> None:
    done = subprocess.run(
        ["md5sum", str(h.mountpoint / "zeros.bin")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    zeros = hashlib.md5(usedforsecurity=False)
    block = bytes(MIB)
    for _ in range(ZEROS // MIB):
        zeros.update(block)
    assert done.stdout.split()[0] == zeros.hexdigest()


def _cat_past_the_budget(h: Hostile) -> None:
    for _ in range(2):  # the same clear error each time: the file stays lazy
        done = subprocess.run(
            ["cat", str(h.mountpoint / "ones.bin")], capture_output=True, timeout=120, check=False
        )
        assert done.returncode != 0
        assert b"No space left on device" in done.stderr


def _api_read_past_the_limits(h: Hostile) -> None:
    with connect(h.mountpoint, timeout=60) as fs, pytest.raises(OSError) as refused:
        fs.read_bytes("ones.bin")
    assert "ones.bin" in str(refused.value)


def _persist_a_sparse_file(h: Hostile) -> None:
    done = cli("persist", str(h.mountpoint))
    assert done.returncode == 1, done.stdout
    assert "sparse.img" in done.stderr
    assert "68,719,476,736" in done.stderr


def _export_a_sparse_file(h: Hostile) -> None:
    target = h.base / "out.zip"
    with connect(h.mountpoint, timeout=60) as fs, pytest.raises(OSError) as refused:
        fs.export_archive(str(target))
    assert "sparse.img" in str(refused.value)
    assert not target.exists()


def _diff_patch_of_a_sparse_file(h: Hostile) -> None:
    done = cli("diff", str(h.mountpoint), "start", "--patch")
    assert done.returncode == 0, done.stderr
    assert "b/sparse.img differ (0 -> 68,719,476,736 bytes" in done.stdout


def _debug_ui_patch_of_a_sparse_file(h: Hostile) -> None:
    server = serve_debug(h.mountpoint)
    try:
        with connect(h.mountpoint, timeout=30) as fs:
            start = next(s for s in fs.snapshots() if s.tag == "start")
        params = {"from": str(start.snapshot_id), "to": "live", "patch": "1", "max_lines": "3"}
        answer = server.get("/api/diff", params=params, timeout=60).json()
        assert answer["added"] == ["sparse.img"]
        assert answer["patch"].splitlines() == [
            "diff --git a/sparse.img b/sparse.img",
            "new file mode 100644",
            "Binary files /dev/null and b/sparse.img differ (0 -> 68,719,476,736 bytes, "
            "over the 1,048,576-byte limit)",
        ]
    finally:
        stop_debug(server)


def _import_a_zip_bomb(h: Hostile) -> None:
    bomb_zip = zero_bomb(h.base / "bomb.zip", 3 * GIB)
    done = cli("import", str(h.mountpoint), str(bomb_zip))
    assert done.returncode == 1, done.stdout
    assert "3,221,225,472 bytes" in done.stderr


def _mount_from(h: Hostile, repository: Forge) -> subprocess.CompletedProcess[str]:
    point = h.base / f"from-{repository.path.name}"
    point.mkdir(exist_ok=True)
    return cli(
        "mount", str(point), "--from", f"{repository.path}#1", "--json", preexec_fn=h.limit.preexec
    )


def _mount_a_tree_bomb(h: Hostile) -> None:
    forge = Forge(h.base / "bomb.git")
    bomb(forge, fanout=16, depth=6)
    done = _mount_from(h, forge)
    assert done.returncode != 0
    assert "--load-limit max_entries=" in done.stderr


def _mount_a_hostile_owner(h: Hostile) -> None:
    forge = Forge(h.base / "owner.git")
    forge.root({"f": (record(FILE, size=1, uid=1 << 40), forge.blob(b"x"))})
    done = _mount_from(h, forge)
    assert done.returncode != 0
    assert str(1 << 40) in done.stderr
    assert "f" in done.stderr


def _mount_a_hostile_time(h: Hostile) -> None:
    forge = Forge(h.base / "time.git")
    forge.root({"d": (record(DIR, mtime=1 << 80), None)})
    done = _mount_from(h, forge)
    assert done.returncode == 0, done.stderr
    found = MountRecord.from_dict(json.loads(done.stdout))
    try:
        info = os.stat(Path(found.mountpoint) / "d")
        assert stat.S_ISDIR(info.st_mode)
        assert info.st_mtime_ns == 253_402_300_799 * 10**9  # 9999-12-31T23:59:59
    finally:
        stop(found)


ROWS: dict[str, Callable[[Hostile], None]] = {
    "lazy zeros / mount md5sum": _md5sum_of_lazy_zeros,
    "lazy past the budget / mount cat": _cat_past_the_budget,
    "lazy past the budget / API read_bytes": _api_read_past_the_limits,
    "sparse 64 GiB / persist": _persist_a_sparse_file,
    "sparse 64 GiB / export": _export_a_sparse_file,
    "sparse 64 GiB / diff --patch": _diff_patch_of_a_sparse_file,
    "sparse 64 GiB / debug UI patch": _debug_ui_patch_of_a_sparse_file,
    "zip declaring 3 GiB / import": _import_a_zip_bomb,
    "tree bomb / mount --from": _mount_a_tree_bomb,
    "uid 2^40 / mount --from": _mount_a_hostile_owner,
    "mtime 2^80 / mount --from": _mount_a_hostile_time,
}


@pytest.mark.parametrize("row", list(ROWS))
def test_hostile_input(hostile: Hostile, row: str) -> None:
    before = hostile.snapshot()
    ROWS[row](hostile)
    hostile.unchanged_since(before)
