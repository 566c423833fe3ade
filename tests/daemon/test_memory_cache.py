"""``workspacefs mount --memory-budget``: the budget of a durable workspace is a cache.

A workspace several times its budget goes through the mount -- ``tar -x``, ``grep -r``
twice, a snapshot, a restore, a fork -- and reads back byte-exact, while the file data
the daemon holds (sampled every 100 ms) stays within the budget; ``status`` shows what
is in memory, what of it may leave, and what is on disk only. Under a memory cgroup a
little above the budget, a long write workload through the mount never meets the OOM
killer, and the daemon's resident memory (sampled too) stays under the limit.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks.bench_memory import overhead

from support.daemon import cli, cli_ok, stop
from support.memory_limit import memory_limit
from workspacefs.daemon import MountRecord, connect

pytestmark = pytest.mark.fuse

MIB = 1 << 20
BUDGET = 16 * MIB
NEEDLE = b"needle-in-the-cache"


class Sampler:
    """The most file data the daemon held (``status``) and the most resident memory
    its process had (``/proc``), sampled every 100 ms in a thread."""

    def __init__(self, record: MountRecord) -> None:
        self.record = record
        self.held = 0
        self.rss = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with connect(self.record.socket) as fs:
            while not self._stop.wait(0.1):
                self.held = max(self.held, fs.status()["memory_held"])
                self.rss = max(self.rss, rss_of(self.record.pid))
                self.samples += 1

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def source_files(total: int) -> dict[str, bytes]:
    """Files of 4 KiB to 1.5 MiB, text (some with ``NEEDLE``) and random bytes."""
    rng = random.Random(29)
    files: dict[str, bytes] = {}
    size = 0
    n = 0
    while size < total:
        length = rng.choice([4 << 10, 100 << 10, 700 << 10, 1536 << 10])
        if n % 2:
            data = rng.randbytes(length)
        else:
            line = b"%d: some text %s\n" % (n, NEEDLE if n % 4 == 0 else b"hay")
            data = line * (length // len(line))
        files[f"src/p{n % 5}/f{n}.{'txt' if n % 2 == 0 else 'bin'}"] = data
        size += len(data)
        n += 1
    return files


def tarball(files: dict[str, bytes], path: Path) -> None:
    with tarfile.open(path, "w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def digests(root: Path, names: list[str]) -> dict[str, bytes]:
    return {name: hashlib.sha256((root / name).read_bytes()).digest() for name in names}


def expected(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name: hashlib.sha256(data).digest() for name, data in files.items()}


def grep_count(root: Path) -> int:
    found = subprocess.run(
        ["grep", "-rl", NEEDLE.decode(), str(root / "src")], capture_output=True, check=False
    )
    assert found.returncode in (0, 1), found.stderr
    return len(found.stdout.splitlines())


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[tuple[Path, MountRecord]]:
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    result = cli(
        "mount", str(mountpoint), "--store", str(tmp_path / "store"),
        "--memory-budget", "16M", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = MountRecord.from_dict(json.loads(result.stdout))
    try:
        yield mountpoint, record
    finally:
        stop(record)


def test_a_mount_holds_several_budgets(tmp_path: Path, mounted: tuple[Path, MountRecord]) -> None:
    mountpoint, record = mounted
    files = source_files(4 * BUDGET)
    tarball(files, tmp_path / "src.tar")
    names = list(files)
    needles = sum(NEEDLE in data for data in files.values())
    with Sampler(record) as sampler:
        subprocess.run(["tar", "-xf", str(tmp_path / "src.tar"), "-C", str(mountpoint)], check=True)
        assert grep_count(mountpoint) == needles
        assert grep_count(mountpoint) == needles
        assert digests(mountpoint, names) == expected(files)
        cli_ok("snapshot", str(mountpoint), "--tag", "extracted")
        changed = names[1::6]
        for name in changed:
            (mountpoint / name).write_bytes(os.urandom(300 << 10))
        fork = Path(cli_ok("fork", "--of", str(mountpoint)).strip().splitlines()[0])
        cli_ok("restore", str(mountpoint), "extracted")
        assert digests(mountpoint, names) == expected(files)
        snapshot = mountpoint / ".snapshots" / "extracted"
        assert digests(snapshot, changed) == expected({name: files[name] for name in changed})
        assert digests(fork, changed[:3]) != expected({name: files[name] for name in changed[:3]})
        assert digests(fork, names[::6]) == expected({n: files[n] for n in names[::6]})
        status = json.loads(cli_ok("status", str(mountpoint), "--json"))
        shown = cli_ok("status", str(mountpoint))
    assert sampler.samples > 5
    assert sampler.held <= BUDGET
    assert status["memory_budget"] == BUDGET
    assert status["memory_held"] <= BUDGET
    assert 0 < status["memory_evictable"] <= status["memory_held"]
    assert status["memory_on_disk"] > 2 * BUDGET
    budget_line = next(line for line in shown.splitlines() if line.startswith("budget "))
    assert "evictable" in budget_line
    assert "on disk only" in budget_line
    assert "Traceback" not in Path(record.log).read_text()


def _write_workload(mountpoint: Path, total: int, piece: int) -> dict[str, bytes]:
    """Files of ``piece`` bytes through the mount until ``total`` are written, each
    synced; the digest of each."""
    written: dict[str, bytes] = {}
    rng = random.Random(7)
    for n in range(total // piece):
        name = f"out/d{n % 8}/f{n}.bin"
        (mountpoint / name).parent.mkdir(parents=True, exist_ok=True)
        data = rng.randbytes(piece // 2) * 2
        with open(mountpoint / name, "wb") as out:
            out.write(data)
            if n % 10 == 0:
                os.fsync(out.fileno())
        written[name] = hashlib.sha256(data).digest()
    return written


def _under_a_cgroup(tmp_path: Path, budget: int, total: int) -> None:
    limit = budget + overhead(budget)  # what docs/memory.md states
    with memory_limit(limit) as cgroup:
        if cgroup.cgroup is None:
            pytest.skip("no memory cgroup can be made here")
        mountpoint = tmp_path / "ws"
        mountpoint.mkdir()
        result = cli(
            "mount", str(mountpoint), "--store", str(tmp_path / "store"),
            "--memory-budget", str(budget), "--json", preexec_fn=cgroup.preexec,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        record = MountRecord.from_dict(json.loads(result.stdout))
        try:
            with Sampler(record) as sampler:
                written = _write_workload(mountpoint, total, 2 * MIB)
                sample = dict(list(written.items())[:: max(1, len(written) // 20)])
                assert digests(mountpoint, list(sample)) == sample
            assert cgroup.oom_kills() == 0
            assert record.pid in cgroup.pids()
            assert sampler.held <= budget
            assert sampler.rss < limit
        finally:
            stop(record)


def test_writing_many_budgets_under_a_cgroup_never_meets_the_oom_killer(tmp_path: Path) -> None:
    _under_a_cgroup(tmp_path, 32 * MIB, 128 * MIB)


@pytest.mark.slow
def test_a_long_write_workload_under_a_cgroup(tmp_path: Path) -> None:
    _under_a_cgroup(tmp_path, 64 * MIB, 2 << 30)
