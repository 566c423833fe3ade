"""``workspacefs mount --from REPO.git`` on hostile repositories, the daemon under a real
memory limit: lazy files stream into the budget, bombs and bad records are refused
with a clear error before anything is built, and the daemon (or the next one) serves."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import cli, cli_ok, stop
from support.forged_repos import DIR, FILE, Forge, bomb, record
from support.memory_limit import MemoryLimit, memory_limit
from workspacefs import InMemoryFilesystem
from workspacefs.daemon import MountRecord

MIB = 1 << 20
BIG = 256 * MIB
"""A zero blob: 256 KiB in the repository, more than the daemon's memory limit."""
DAEMON_LIMIT = 192 * MIB
"""The daemon needs about 60 MiB to serve; holding BIG whole would be far past this."""


def md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as file:
        while block := file.read(MIB):
            digest.update(block)
    return digest.hexdigest()


def statfs(point: Path) -> tuple[int, int]:
    info = os.statvfs(point)
    return info.f_blocks * info.f_frsize, info.f_bfree * info.f_frsize


def zeros_md5(size: int) -> str:
    digest = hashlib.md5()
    block = bytes(MIB)
    for start in range(0, size, MIB):
        digest.update(block[: size - start])
    return digest.hexdigest()


def mount_limited(
    point: Path, source: str, limited: MemoryLimit, *options: str
) -> subprocess.CompletedProcess[str]:
    """``workspacefs mount POINT --from SOURCE --json``, its daemon inside ``limited``."""
    point.mkdir(exist_ok=True)
    return cli(
        "mount", str(point), "--from", source, *options, "--json", preexec_fn=limited.preexec
    )


@pytest.fixture
def mounted() -> Iterator[list[MountRecord]]:
    """Daemons a test started, stopped at its end."""
    records: list[MountRecord] = []
    try:
        yield records
    finally:
        for found in records:
            stop(found)


def started(result: subprocess.CompletedProcess[str], records: list[MountRecord]) -> MountRecord:
    assert result.returncode == 0, result.stderr
    found = MountRecord.from_dict(json.loads(result.stdout))
    records.append(found)
    return found


@pytest.fixture(scope="module")
def zero_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    forge = Forge(tmp_path_factory.mktemp("zeros") / "repo.git")
    data = os.urandom(3 * MIB)
    forge.root(
        {
            "big.bin": (record(FILE, size=BIG), forge.big_blob(BIG)),
            "few.bin": (record(FILE, size=len(data)), forge.blob(data)),
            "small.txt": (record(FILE, size=6), forge.blob(b"small\n")),
        }
    )
    (forge.path / "few.md5").write_text(hashlib.md5(data).hexdigest())
    return forge.path


def test_md5sum_of_a_big_lazy_file_through_the_mount(
    zero_repo: Path, tmp_path: Path, mounted: list[MountRecord]
) -> None:
    point = tmp_path / "ws"
    with memory_limit(DAEMON_LIMIT) as limited:
        started(mount_limited(point, f"{zero_repo}#1", limited), mounted)
        assert md5(point / "big.bin") == zeros_md5(BIG)
        assert md5(point / "few.bin") == (zero_repo / "few.md5").read_text()
        assert (point / "small.txt").read_bytes() == b"small\n"
        assert "memory" in cli_ok("status", str(point))  # the daemon still answers
        assert limited.oom_kills() == 0


@pytest.mark.slow
def test_md5sum_of_a_2_gib_zero_blob_under_512_mib(
    tmp_path: Path, mounted: list[MountRecord]
) -> None:
    # The reported case was 8 GiB under 2 GiB; the same ratio at a quarter of the size
    # keeps the suite's time (git's hash-object and zlib's inflate dominate it).
    size = 2 << 30
    forge = Forge(tmp_path / "repo.git")
    forge.root({"big.bin": (record(FILE, size=size), forge.big_blob(size))})
    point = tmp_path / "ws"
    with memory_limit(512 << 20) as limited:
        started(mount_limited(point, f"{forge.path}#1", limited), mounted)
        assert md5(point / "big.bin") == zeros_md5(size)
        cli_ok("status", str(point))
        assert limited.oom_kills() == 0


def test_a_file_past_the_daemons_budget_is_enospc(
    tmp_path: Path, mounted: list[MountRecord]
) -> None:
    size = 256 * MIB
    forge = Forge(tmp_path / "repo.git")
    forge.root(
        {
            "ones.bin": (record(FILE, size=size), forge.big_blob(size, fill=b"\x01")),
            "small.txt": (record(FILE, size=6), forge.blob(b"small\n")),
        }
    )
    point = tmp_path / "ws"
    space = 512 * MIB

    with memory_limit(space) as limited:
        found = started(mount_limited(point, f"{forge.path}#1", limited), mounted)
        assert (point / "small.txt").read_bytes() == b"small\n"
        budget, free = statfs(point)  # statfs shows the workspace's memory budget
        assert budget < size
        for _ in range(2):  # the same clear error each time: the file is still lazy
            done = subprocess.run(
                ["md5sum", str(point / "ones.bin")], capture_output=True, text=True
            )
            assert done.returncode != 0
            assert "No space left on device" in done.stderr
        os.kill(found.pid, 0)  # the daemon is alive
        # Nothing of the refused file is held (its store's clean data may have left
        # memory to make room for it first: docs/memory.md, "Memory as a cache").
        after = statfs(point)
        assert after[0] == budget
        assert after[1] >= free
        # Refused by the budget, not by a MemoryError caught at the last moment.
        assert "out of memory" not in Path(found.log).read_text()
        assert limited.oom_kills() == 0


def test_a_bomb_is_refused_before_the_daemon_builds_it(
    tmp_path: Path, zero_repo: Path, mounted: list[MountRecord]
) -> None:
    forge = Forge(tmp_path / "bomb.git")
    bomb(forge, fanout=16, depth=6)  # 17,895,697 directories from 8 records
    point = tmp_path / "ws"
    with memory_limit(512 * MIB) as limited:
        refused = mount_limited(point, f"{forge.path}#1", limited)
        assert refused.returncode != 0
        assert "over the limit of 1,000,000" in refused.stderr
        assert "--load-limit max_entries=" in refused.stderr
        assert not os.path.ismount(point)
        assert os.listdir(point) == []
        assert limited.oom_kills() == 0
        started(mount_limited(point, f"{zero_repo}#1", limited), mounted)  # the next one serves
        assert (point / "small.txt").read_bytes() == b"small\n"


def test_the_entry_limit_is_an_option_of_mount(tmp_path: Path, mounted: list[MountRecord]) -> None:
    forge = Forge(tmp_path / "bomb.git")
    bomb(forge, fanout=4, depth=3)  # 85 entries
    point = tmp_path / "ws"
    with memory_limit(512 * MIB) as limited:
        refused = mount_limited(point, f"{forge.path}#1", limited, "--load-limit", "max_entries=84")
        assert "85 entries, over the limit of 84" in refused.stderr
        started(
            mount_limited(point, f"{forge.path}#1", limited, "--load-limit", "max_entries=85"),
            mounted,
        )
        assert len(list(point.rglob("*"))) == 85


def hostile_repo(tmp_path: Path, **overrides: object) -> Path:
    forge = Forge(tmp_path / "hostile.git")
    blob = forge.blob(b"#!/bin/sh\n")
    forge.root(
        {
            "tool": (record(FILE | 0o4755, size=10, uid=0, gid=0), blob),
            "old": (record(FILE, size=10, mtime=-(2**80)), blob),
            "future": (record(FILE, size=10, mtime=2**80), blob),
            "shared": (record(DIR | 0o2775), None),
            "f": (record(FILE, size=10) | overrides, blob),
        }
    )
    return forge.path


@pytest.mark.parametrize(("field", "value"), [("uid", 2**40), ("gid", -1)])
def test_owners_no_kernel_takes_are_refused(tmp_path: Path, field: str, value: int) -> None:
    point = tmp_path / "ws"
    point.mkdir()
    refused = cli("mount", str(point), "--from", f"{hostile_repo(tmp_path, **{field: value})}#1")
    assert refused.returncode != 0
    assert f"/f: {field} {value}" in refused.stderr
    assert not os.path.ismount(point)
    assert os.listdir(point) == []


def test_what_a_repository_records_is_shown_sanely(
    tmp_path: Path, mounted: list[MountRecord]
) -> None:
    repo = hostile_repo(tmp_path)
    point = tmp_path / "ws"
    point.mkdir()
    found = MountRecord.from_dict(
        json.loads(cli_ok("mount", str(point), "--from", f"{repo}#1", "--json"))
    )
    mounted.append(found)
    listing = subprocess.run(
        ["ls", "-ln", "--time-style=+%Y", str(point)], capture_output=True, text=True
    )
    assert listing.returncode == 0, listing.stderr
    years = {line.split()[-1]: line.split()[-2] for line in listing.stdout.splitlines()[1:]}
    assert years["future"] == "9999"
    assert years["old"] == "0001"
    assert stat.S_IMODE(os.stat(point / "tool").st_mode) == 0o755  # no setuid from a repository
    assert stat.S_IMODE(os.stat(point / "shared").st_mode) == 0o775
    stop(found)
    mounted.clear()
    asked = cli_ok("mount", str(point), "--from", f"{repo}#1", "--special-modes", "--json")
    kept = MountRecord.from_dict(json.loads(asked))
    mounted.append(kept)
    assert stat.S_IMODE(os.stat(point / "tool").st_mode) == 0o4755  # asked for


def test_an_archive_brings_no_set_id_bit_unless_asked(
    tmp_path: Path, mounted: list[MountRecord]
) -> None:
    # The rule of git sources holds for archives: `mount --from FILE.zip` and
    # `workspacefs import` drop setuid and setgid bits; --special-modes keeps them.
    made = InMemoryFilesystem()
    made.write("tool", "#!/bin/sh\n")
    made.mkdir("shared")
    with made.tree.lock:
        made.tree.setattr(made.tree.resolve_path("tool") or 0, mode=0o4755)
        made.tree.setattr(made.tree.resolve_path("shared") or 0, mode=0o2775)
    archive = tmp_path / "special.zip"
    made.export_archive(archive)
    point = tmp_path / "ws"
    point.mkdir()

    def modes() -> tuple[int, int]:
        return stat.S_IMODE(os.stat(point / "tool").st_mode), stat.S_IMODE(
            os.stat(point / "shared").st_mode
        )

    found = MountRecord.from_dict(
        json.loads(cli_ok("mount", str(point), "--from", str(archive), "--json"))
    )
    mounted.append(found)
    assert modes() == (0o755, 0o775)
    (point / "tool").chmod(0o4755)
    cli_ok("import", str(point), str(archive))
    assert modes() == (0o755, 0o775)
    stop(found)
    mounted.clear()
    asked = cli_ok("mount", str(point), "--from", str(archive), "--special-modes", "--json")
    mounted.append(MountRecord.from_dict(json.loads(asked)))
    assert modes() == (0o4755, 0o2775)
