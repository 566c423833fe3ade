"""Persist, export and import through the real daemon, the daemon under a real memory
limit: file data leaves and enters the tree in bounded pieces, and what cannot fit is
refused up front with the daemon alive and nothing changed.

A sparse file costs the memory budget nothing (holes are missing chunks), so any
process that can write to the mount can plant one (``truncate -s 64G`` in a
container). Git blobs and ZIP members hold no holes: persisting or exporting it
whole is what used to grow the daemon past its limit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pygit2

from support.daemon import cli, cli_json, cli_ok, demo_source, stop
from support.memory_limit import MemoryLimit, memory_limit
from support.zipbomb import zero_bomb
from workspacefs import git as wgit
from workspacefs.daemon import MountRecord, connect

MIB = 1 << 20
GIB = 1 << 30
SPARSE = 64 * GIB


@contextlib.contextmanager
def limited_workspace(tmp_path: Path, limit: MemoryLimit, source: Path) -> Iterator[Path]:
    """``workspacefs mount ws --from SOURCE`` with the daemon under ``limit``."""
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    started = cli(
        "mount",
        str(mountpoint),
        "--from",
        str(source),
        "--persist",
        str(tmp_path / "snapshots.git"),
        "--json",
        preexec_fn=limit.preexec,
    )
    assert started.returncode == 0, started.stderr
    record = MountRecord.from_dict(json.loads(started.stdout))
    try:
        if limit.cgroup is not None:
            assert record.pid in limit.pids()
        yield mountpoint
    finally:
        stop(record)


def alive(mountpoint: Path) -> int:
    """The pid of the daemon serving ``mountpoint`` (it must answer)."""
    with connect(mountpoint, timeout=10) as fs:
        return int(fs.status()["pid"])


def snapshot_ids(mountpoint: Path) -> list[str]:
    with connect(mountpoint, timeout=10) as fs:
        return [str(record.snapshot_id) for record in fs.snapshots()]


def refs_of(repository: str) -> dict[str, str]:
    repo = pygit2.Repository(repository)
    return {name: str(repo.references[name].target) for name in repo.references}


def plant_sparse(path: Path, size: int = SPARSE) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)  # what `truncate -s 64G` does


def test_a_sparse_file_planted_through_the_mount_is_refused_up_front(tmp_path: Path) -> None:
    source = demo_source(tmp_path)
    with memory_limit(GIB) as limit, limited_workspace(tmp_path, limit, source) as ws:
        first = cli_json("persist", str(ws), "--tag", "first")
        assert isinstance(first, dict)
        repository = first["repository"]
        refs = refs_of(repository)
        snapshots = snapshot_ids(ws)
        plant_sparse(ws / "sparse.img")

        persisted = cli("persist", str(ws))
        assert persisted.returncode == 1, persisted.stdout
        message = persisted.stderr
        assert message.startswith("workspacefs: error: sparse.img is 68,719,476,736 bytes")
        assert "--max-file-size" in message
        exported = cli("export", str(ws), str(tmp_path / "out.zip"))
        assert exported.returncode == 1, exported.stdout
        assert exported.stderr.startswith("workspacefs: error: sparse.img is 68,719,476,736 bytes")
        assert not [p for p in os.listdir(tmp_path) if p.startswith("out.zip")]

        assert limit.oom_kills() == 0
        alive(ws)
        assert (ws / "src" / "app.py").read_text() == "print('hello')\n"
        assert os.stat(ws / "sparse.img").st_size == SPARSE
        assert refs_of(repository) == refs  # no half-written snapshot
        assert snapshot_ids(ws) == snapshots  # no snapshot taken for it either

        # A normal file persists and round-trips; the limit can be set per call.
        os.unlink(ws / "sparse.img")
        notes = os.urandom(3 * MIB)
        (ws / "notes.bin").write_bytes(notes)
        lowered = cli("persist", str(ws), "--max-file-size", "1M")
        assert lowered.returncode == 1
        assert lowered.stderr.startswith("workspacefs: error: notes.bin is 3,145,728 bytes")
        assert "over the limit of 1,048,576" in lowered.stderr
        second = cli_json("persist", str(ws))
        assert isinstance(second, dict)
        loaded = wgit.load(repository, second["ref"])
        back = b"".join(
            loaded.read_bytes("notes.bin", offset=o, limit=MIB).content
            for o in range(0, len(notes), MIB)
        )
        assert back == notes
        cli_ok("export", str(ws), str(tmp_path / "out.zip"))
        with zipfile.ZipFile(tmp_path / "out.zip") as archive:
            assert archive.read("files/notes.bin") == notes
        assert limit.oom_kills() == 0


def test_a_sparse_file_hydrated_from_the_source_stays_sparse(tmp_path: Path) -> None:
    source = demo_source(tmp_path)
    plant_sparse(source / "sparse.img")
    with memory_limit(GIB) as limit, limited_workspace(tmp_path, limit, source) as ws:
        assert os.stat(ws / "sparse.img").st_size == SPARSE
        with open(ws / "sparse.img", "rb") as handle:
            handle.seek(SPARSE - MIB)
            assert handle.read() == bytes(MIB)
        refused = cli("persist", str(ws))
        assert refused.returncode == 1
        assert refused.stderr.startswith("workspacefs: error: sparse.img is 68,719,476,736 bytes")
        assert limit.oom_kills() == 0
        alive(ws)
        assert (ws / "README.md").read_text() == "# demo\n"


def test_persist_and_export_stream_under_a_memory_limit(tmp_path: Path) -> None:
    """64 MiB of random bytes persist and export from a daemon limited to 256 MiB (it
    holds about 60 MiB of its own besides the file): copying the file whole, and
    compressing the copy, used to pass the limit (the OOM killer ended the daemon)."""
    size = 64 * MIB
    digest = hashlib.sha1(b"blob %d\0" % size)
    rng = random.Random(3)
    with (
        memory_limit(256 * MIB) as limit,
        limited_workspace(tmp_path, limit, demo_source(tmp_path)) as ws,
    ):
        with open(ws / "big.bin", "wb") as out:
            for _ in range(size // MIB):
                piece = rng.randbytes(MIB)
                digest.update(piece)
                out.write(piece)
        persisted = cli("persist", str(ws), "--json")
        assert persisted.returncode == 0, (limit.oom_kills(), persisted.stderr)
        commit = json.loads(persisted.stdout)["commit"]
        exported = cli("export", str(ws), str(tmp_path / "big.zip"))
        assert exported.returncode == 0, (limit.oom_kills(), exported.stderr)
        assert limit.oom_kills() == 0
        alive(ws)
        assert (ws / "src" / "app.py").read_text() == "print('hello')\n"
        repository = pygit2.Repository(str(tmp_path / "snapshots.git"))
        blob = repository[commit].peel(pygit2.Commit).tree["big.bin"].id
        assert str(blob) == digest.hexdigest()
        with zipfile.ZipFile(tmp_path / "big.zip") as archive:
            assert archive.getinfo("files/big.bin").file_size == size
            assert archive.testzip() is None


def test_a_zip_bomb_import_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """3 GiB of zeros in 3 MB, into a daemon under a memory limit of 1 GiB."""
    bomb = zero_bomb(tmp_path / "bomb.zip", 3 * GIB)
    with (
        memory_limit(GIB) as limit,
        limited_workspace(tmp_path, limit, demo_source(tmp_path)) as ws,
    ):
        pid = alive(ws)
        before = _peak_rss(pid)
        refused = cli("import", str(ws), str(bomb))
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.startswith(
            "workspacefs: error: the archive's files expand to 3,221,225,472 bytes"
        )
        assert _peak_rss(pid) - before < 16 * MIB  # nothing was decompressed into it
        assert alive(ws) == pid
        assert sorted(os.listdir(ws)) == ["README.md", "src"]
        assert (ws / "README.md").read_text() == "# demo\n"


def _peak_rss(pid: int) -> int:
    """The most memory process ``pid`` has held (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")
