"""A daemon started by ``workspacefs mount`` inside a memory cgroup, written past its limit.

Reproduces the loss this fixes: the budget read only cgroup v2's ``memory.max``, so
under a cgroup v1 limit of 1 GiB ``df`` showed a budget of the machine's free memory
and a write past the limit -- through the mount, the API, a container or an imported
archive -- had the kernel's OOM killer end the daemon. Now the budget is below the
limit: each of those writes fails with ENOSPC, the daemon serves on, earlier files are
intact and the OOM killer has killed nothing. A request body larger than any call needs
is refused before the daemon holds it (it killed the daemon too).

The workspaces here are kept in memory only (``--durability none``): their budget is a
hard limit. A durable workspace's budget is a cache whose data spills to its store;
``test_memory_cache.py`` writes many budgets through one under a cgroup.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import cli, cli_json, cli_ok, stop
from support.memory_limit import MemoryLimit, memory_limit
from support.zipbomb import zero_bomb
from workspacefs import NoSpaceError
from workspacefs.daemon import MountRecord, connect
from workspacefs.fs import Limits

LIMIT = 1 << 30
MIB = 1 << 20
PIECE = 64 * MIB
"""Writes go in pieces this large (a few per test: the tests stay short)."""
EARLY = bytes(range(256)) * 4096


@dataclass
class Limited:
    """A daemon under ``LIMIT``, with ``early.bin`` (``EARLY``) written through its mount."""

    mountpoint: Path
    record: MountRecord
    limit: MemoryLimit

    def status(self) -> dict[str, Any]:
        """``workspacefs status --json``: a command run after the fact."""
        status = cli_json("status", str(self.mountpoint))
        assert isinstance(status, dict)
        return status

    def assert_survived(self) -> None:
        """The daemon serves (a later command works), earlier files are intact, and the
        OOM killer killed nothing."""
        assert self.limit.oom_kills() == 0
        assert self.record.pid in self.limit.pids()
        assert self.status()["pid"] == self.record.pid
        # ENOSPC came from the budget, not from a MemoryError a handler turned into it.
        log = Path(self.record.log).read_text()
        assert "out of memory" not in log
        assert "Traceback" not in log
        assert (self.mountpoint / "early.bin").read_bytes() == EARLY
        (self.mountpoint / "after.txt").write_text("still writable")
        with connect(self.record.socket) as fs:
            assert fs.read("after.txt").content == "still writable"


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Limited]:
    with memory_limit(LIMIT) as limit:
        if limit.cgroup is None:
            pytest.skip("no memory cgroup can be made here (RLIMIT_AS: tests/fuse/)")
        mountpoint = tmp_path / "ws"
        mountpoint.mkdir()
        result = cli(
            "mount", str(mountpoint), "--durability", "none", "--json", preexec_fn=limit.preexec
        )
        assert result.returncode == 0, result.stderr
        record = MountRecord.from_dict(json.loads(result.stdout))
        try:
            assert limit.pids() == [record.pid]  # the daemon is under the limit
            (mountpoint / "early.bin").write_bytes(EARLY)
            yield Limited(mountpoint, record, limit)
        finally:
            stop(record)


def fill(path: Path) -> tuple[int, int | None]:
    """Write ``PIECE``s to ``path`` until a write fails: bytes written, errno."""
    written = 0
    with open(path, "wb", buffering=0) as target:
        while written < 2 * LIMIT:
            try:
                written += target.write(b"x" * PIECE)
            except OSError as exc:
                return written, exc.errno
    return written, None


def test_df_and_status_show_a_budget_below_the_limit(limited: Limited) -> None:
    info = os.statvfs(limited.mountpoint)
    size, free = info.f_blocks * info.f_frsize, info.f_bavail * info.f_frsize
    assert 0 < size <= LIMIT // 2  # half of what the cgroup leaves the daemon
    assert free == size - len(EARLY)
    status = limited.status()
    assert (status["memory_budget"], status["memory_held"]) == (size, len(EARLY))
    shown = cli_ok("status", str(limited.mountpoint)).splitlines()
    budget_line = next(line for line in shown if line.startswith("budget "))
    assert budget_line.endswith(" MiB (1.0 MiB held)")
    assert limited.limit.oom_kills() == 0


def test_writing_past_the_limit_through_the_mount(limited: Limited) -> None:
    written, error = fill(limited.mountpoint / "big")
    assert error == errno.ENOSPC
    budget = limited.status()["memory_budget"]
    assert budget - PIECE < written + len(EARLY) <= budget  # stopped at the budget
    assert (limited.mountpoint / "big").stat().st_size == written
    limited.assert_survived()


def test_writing_past_the_limit_through_the_api(limited: Limited) -> None:
    # The mount fills the budget but for two and a half API calls' worth (faster).
    piece = Limits().max_write_bytes  # the most one call may write
    info = os.statvfs(limited.mountpoint)
    with open(limited.mountpoint / "most.bin", "wb") as most:
        os.posix_fallocate(most.fileno(), 0, info.f_bavail * info.f_frsize - 5 * piece // 2)
    with connect(limited.record.socket) as fs:
        for _ in range(2):
            fs.write_bytes("api.bin", b"a" * piece, mode="append")
        with pytest.raises(NoSpaceError) as raised:  # the third call does not fit
            fs.write_bytes("api.bin", b"a" * piece, mode="append")
    assert raised.value.errno == errno.ENOSPC
    assert (limited.mountpoint / "api.bin").stat().st_size == 2 * piece  # nothing changed
    limited.assert_survived()


HEAD, TAIL = b'{"path": "huge.bin", "content": "', b'"}'


def _huge_write(size: int) -> Iterator[bytes]:
    """A ``write_bytes`` request body of ``size`` MiB of base64 and its JSON around it,
    made as it is sent."""
    yield HEAD
    for _ in range(size // MIB):
        yield b"aGhoaGho" * (MIB // 8)
    yield TAIL


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_request_larger_than_the_daemon_can_hold(limited: Limited, declared: bool) -> None:
    # The daemon holds a request's body whole, then decodes it twice (JSON, base64):
    # a body past what a call may carry is refused before it is held.
    size = LIMIT * 5 // 8
    headers = {"content-length": str(len(HEAD) + size + len(TAIL))} if declared else {}
    transport = httpx.HTTPTransport(uds=limited.record.socket)
    with httpx.Client(transport=transport, base_url="http://workspacefs", timeout=60) as client:
        answer = client.post("/v3/write_bytes", content=_huge_write(size), headers=headers)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["type"], error["errno"]) == ("LimitExceededError", errno.EFBIG)
    assert "over the limit" in error["message"]
    assert not (limited.mountpoint / "huge.bin").exists()
    limited.assert_survived()


@pytest.mark.container
def test_writing_past_the_limit_from_a_container(limited: Limited) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    # The container runs in Podman's cgroup, not under the limit: only the daemon that
    # serves its writes is.
    script = "dd if=/dev/zero of=/workspace/big bs=64M count=32 2>&1; echo status $?"
    result = cli("run", "--mountpoint", str(limited.mountpoint), "--", "/bin/sh", "-c", script)
    assert result.returncode == 0, result.stderr
    assert "No space left on device" in result.stdout
    assert "status 1" in result.stdout
    budget = limited.status()["memory_budget"]
    assert budget - PIECE < (limited.mountpoint / "big").stat().st_size + len(EARLY) <= budget
    limited.assert_survived()


@pytest.fixture(scope="module")
def zeros_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace archive of about 3 MB holding one file of 3 GiB of zeros, its size
    declared in the manifest (so the zip-bomb ratio check lets it through)."""
    return zero_bomb(tmp_path_factory.mktemp("zip") / "zeros.zip", 3 << 30)


def test_importing_an_archive_past_the_limit(limited: Limited, zeros_zip: Path) -> None:
    with connect(limited.record.socket) as fs, pytest.raises(NoSpaceError) as raised:
        fs.import_archive(zeros_zip)
    assert raised.value.errno == errno.ENOSPC
    assert sorted(os.listdir(limited.mountpoint)) == ["early.bin"]  # all or nothing
    limited.assert_survived()
