"""A mount served by a process under an address-space limit, written past it.

Reproduces the loss this fixes: under ``RLIMIT_AS`` a ``dd`` through the mount
ran the process out of memory inside pyfuse3, the FUSE loop died and later
writes landed in the directory underneath. Now the workspace's default budget
follows the limit: writes past it, through the mount or the API, fail with
ENOSPC, the mount stays up, every earlier file is intact, statfs tells the
truth, and deleting frees the space again.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.polling import eventually

MIB = 1 << 20
LIMIT = 1 << 30  # address space of the serving process

SERVER = textwrap.dedent(
    """
    import json, sys
    from workspacefs import InMemoryFilesystem, NoSpaceError, mount

    fs = InMemoryFilesystem()  # the default budget, from the address-space limit
    fs.write_bytes("early.bin", bytes(range(256)) * 4096)
    lost = []

    def reply(**values):
        print(json.dumps(values), flush=True)

    with mount(fs, sys.argv[1], on_lost=lost.append):
        reply(budget=fs.memory_budget)
        for line in sys.stdin:
            command = line.split()
            if command == ["api-fill"]:
                written = 0
                try:
                    while True:
                        fs.write_bytes("api.bin", b"a" * (16 << 20), mode="append")
                        written += 16 << 20
                except NoSpaceError as exc:
                    reply(result="ENOSPC", written=written, message=str(exc))
            elif command == ["api-small"]:
                fs.write_bytes("small.txt", b"fits")
                reply(result="ok")
            elif command == ["usage"]:
                usage = fs.memory_usage()
                reply(held=usage.held, free=usage.free, files=sorted(e.name for e in fs.list()))
            elif command == ["quit"]:
                break
    reply(lost=[repr(error) for error in lost])
    """
)


class Server:
    """The child process serving the mount, driven line by line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, Path, int]]:
    point = tmp_path / "mnt"
    point.mkdir()
    (point / "underneath.txt").write_text("host")
    with subprocess.Popen(
        [sys.executable, "-c", SERVER, str(point)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT)),
    ) as process:
        try:
            assert process.stdout is not None
            budget = json.loads(process.stdout.readline())["budget"]
            yield Server(process), point, budget
            assert process.stdin is not None
            process.stdin.write("quit\n")
            process.stdin.flush()
            out, err = process.communicate(timeout=60)
            assert json.loads(out.splitlines()[-1]) == {"lost": []}
            assert "Traceback" not in err, err
            assert "Error" not in err, err
            assert process.returncode == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            subprocess.run(["fusermount3", "-uz", str(point)], capture_output=True, check=False)
    assert (point / "underneath.txt").read_text() == "host"
    assert os.listdir(point) == ["underneath.txt"]  # nothing ever landed underneath


def statfs(point: Path) -> tuple[int, int]:
    info = os.statvfs(point)
    return info.f_blocks * info.f_frsize, info.f_bfree * info.f_frsize


def fill(path: Path) -> tuple[int, int | None]:
    """Write MiBs to ``path`` until a write fails (as ``dd`` does): bytes written, errno."""
    written = 0
    with open(path, "wb", buffering=0) as target:
        while written < 2 * LIMIT:
            try:
                target.write(b"x" * MIB)
            except OSError as exc:
                return written, exc.errno
            written += MIB
    return written, None


def test_writes_past_the_limit_fail_with_enospc(server: tuple[Server, Path, int]) -> None:
    child, point, budget = server
    assert 100 * MIB < budget < LIMIT // 2
    assert statfs(point) == (budget, budget - MIB)  # early.bin holds 1 MiB

    written, error = fill(point / "big")
    assert error == errno.ENOSPC
    assert budget - 2 * MIB <= written <= budget - MIB

    # Alive, intact and truthful.
    assert sorted(os.listdir(point)) == ["big", "early.bin"]
    assert (point / "early.bin").read_bytes() == bytes(range(256)) * 4096
    assert (point / "big").stat().st_size == written
    with open(point / "big", "rb") as big:
        big.seek(written - MIB)
        assert big.read() == b"x" * MIB
    size, free = statfs(point)
    usage = child.ask("usage")
    assert size == budget
    assert free == usage["free"] // 4096 * 4096 < 2 * MIB
    assert usage["held"] == written + MIB

    api = child.ask("api-fill")
    assert (api["result"], api["written"]) == ("ENOSPC", 0)
    assert "memory budget" in api["message"]

    # Deleting frees the space; the workspace is usable again, both ways.
    (point / "big").unlink()  # freed when the kernel forgets the inode, a moment later
    eventually(lambda: statfs(point) == (budget, budget - MIB), 10, "the space is free again")
    (point / "after.bin").write_bytes(b"y" * (10 * MIB))
    assert child.ask("api-small") == {"result": "ok"}
    assert child.ask("usage")["files"] == ["after.bin", "early.bin", "small.txt"]
