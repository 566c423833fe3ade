"""The workloads whose state is the mount's file tree: ``tar -x`` with fsyncs, calls
through the API with snapshots and restores, a container writing and syncing. Each
runs rounds of steps and records them in a ``History`` (see ``harness``); ``apps``
has the others (git, sqlite)."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from support.daemon import SOURCE_ROOT
from workspacefs import FilesystemSnapshot, connect
from workspacefs.daemon import RemoteFilesystem

from .files import (
    DIRECTORY,
    Directory,
    Entry,
    Files,
    Link,
    describe_files,
    files_match,
    read_files,
)
from .history import History, Step


class FileWorkload:
    """A workload whose state is the mount's file tree."""

    history: History[Files]

    def setup(self, mountpoint: Path) -> None:
        pass

    def observe(self, mountpoint: Path) -> Files:
        return read_files(mountpoint)

    def matches(self, observed: Files, step: Step[Files], following: Step[Files] | None) -> bool:
        return files_match(observed, step, following)

    def describe(self, observed: Files, state: Files) -> str:
        return describe_files(observed, state)

    def recovered(self, mountpoint: Path, step: int) -> None:
        pass


def _with_parents(files: Files, path: str) -> None:
    """Add the directories above ``path`` to ``files``."""
    parent = os.path.dirname(path)
    while parent:
        files[parent] = DIRECTORY
        parent = os.path.dirname(parent)


# -- tar -x, then fsync of every extracted path ------------------------------------------------


class TarWorkload(FileWorkload):
    """Rounds of ``tar -x`` of a small tree into the mount (each member, in archive
    order, a step: files of up to 300 KB are written in many requests and may be
    caught midway; a hard link; a symbolic link), ``sync PATH...`` of every extracted
    path (an fsync each: the round is acknowledged), then a step each for: the
    previous round's note renamed over ``archived.txt``, the blob cut to 100 KB and
    grown to 400 KB (a hole), and its directory renamed."""

    ROUNDS = 4
    """Extractions per round of the harness."""

    def __init__(self, rng: random.Random, scratch: Path) -> None:
        self.rng = rng
        self.scratch = scratch
        self.history = History[Files]({})
        self.extractions = 0

    def members(self, number: int) -> list[tuple[str, Entry]]:
        """The tree of extraction ``number``, in archive order: most files change every
        time, some every other time, some never; the link moves to the new note."""
        data = random.Random(number).randbytes(300_000)  # one seed per extraction
        main = f"print({number // 2})\n".encode() * 40
        return [
            ("proj", DIRECTORY),
            ("proj/README.md", f"# extraction {number}\n".encode()),
            ("proj/src", DIRECTORY),
            ("proj/src/main.py", main),
            ("proj/src/main_link.py", main),  # a hard link to main.py
            ("proj/src/pkg", DIRECTORY),
            *(
                (f"proj/src/pkg/mod{j}.py", f"VALUE = {number * j}\n".encode() * (j * 300 + 1))
                for j in range(5)
            ),
            ("proj/src/pkg/const.py", b"NEVER_CHANGES = True\n"),
            ("proj/data", DIRECTORY),
            ("proj/data/blob.bin", data),
            ("proj/docs", DIRECTORY),
            (f"proj/docs/note{number}.txt", f"note {number}\n".encode() * number),
            ("proj/latest", Link(f"docs/note{number}.txt")),
        ]

    def archive(self, number: int) -> Path:
        path = self.scratch / f"tree-{number}.tar"
        with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
            for name, entry in self.members(number):
                info = tarfile.TarInfo(name)
                info.mtime = 1_700_000_000 + number
                if isinstance(entry, Directory):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                elif isinstance(entry, Link):
                    info.type, info.linkname = tarfile.SYMTYPE, entry.target
                    tar.addfile(info)
                elif name.endswith("_link.py"):
                    info.type, info.linkname = tarfile.LNKTYPE, name.replace("_link", "")
                    tar.addfile(info)
                else:
                    info.size, info.mode = len(entry), 0o644
                    tar.addfile(info, io.BytesIO(entry))
        return path

    def kill_point(self) -> tuple[int, float]:
        ahead = self.rng.randrange(len(self.members(1)) * (self.ROUNDS - 1))
        return len(self.history.steps) - 1 + ahead, self.rng.uniform(0, 0.04)

    def round(self, mountpoint: Path) -> None:
        for _ in range(self.ROUNDS):
            self.extractions += 1
            self.extract(mountpoint, self.extractions)

    def extract(self, mountpoint: Path, number: int) -> None:
        history = self.history
        archive = self.archive(number)
        members = self.members(number)
        for name, entry in members:
            files = dict(history.state)
            files[name] = entry
            history.plan(files, [name])
        subprocess.run(["tar", "-x", "-f", str(archive), "-C", str(mountpoint)], check=True,
                       capture_output=True)  # fmt: skip
        history.end()
        synced = [str(mountpoint / n) for n, e in members if not isinstance(e, Link)]
        subprocess.run(["sync", *synced], check=True, capture_output=True)
        history.acknowledge()
        previous, archived = f"proj/docs/note{number - 1}.txt", "proj/docs/archived.txt"
        if previous in history.state:
            files = dict(history.state)
            files[archived] = files.pop(previous)
            history.plan(files)
            os.rename(mountpoint / previous, mountpoint / archived)
            history.end()
        blob = "proj/data/blob.bin"
        for size in (100_000, 400_000):
            files = dict(history.state)
            data = files[blob]
            assert isinstance(data, bytes)
            files[blob] = data[:size] + bytes(max(0, size - len(data)))
            history.plan(files)
            os.truncate(mountpoint / blob, size)
            history.end()
        self.move_data(mountpoint)

    def move_data(self, mountpoint: Path) -> None:
        """``proj/data`` renamed to ``proj/data.prev`` (a directory renamed), the one
        there before removed first: a step per unlink, rmdir and rename."""
        history = self.history
        for path in sorted(p for p in history.state if p.startswith("proj/data.prev/")):
            files = dict(history.state)
            del files[path]
            history.plan(files)
            os.unlink(mountpoint / path)
            history.end()
        if "proj/data.prev" in history.state:
            files = dict(history.state)
            del files["proj/data.prev"]
            history.plan(files)
            os.rmdir(mountpoint / "proj/data.prev")
            history.end()
        files = {
            "proj/data.prev" + path[len("proj/data") :]
            if path == "proj/data" or path.startswith("proj/data/")
            else path: entry
            for path, entry in history.state.items()
        }
        history.plan(files)
        os.rename(mountpoint / "proj/data", mountpoint / "proj/data.prev")
        history.end()

    def recovered(self, mountpoint: Path, step: int) -> None:
        # The next extraction goes on from the one the workspace came back in.
        notes = [p for p in self.history.state if p.startswith("proj/docs/note")]
        self.extractions = max((int(p[len("proj/docs/note") : -4]) for p in notes), default=0)


# -- the API: writes, snapshots, restores ----------------------------------------------------


@dataclass
class Kept:
    """A snapshot the API workload took, and what it holds."""

    files: Files
    acknowledged: bool = False
    """The snapshot call returned: it is on disk."""
    deleted: int = 0
    """0: kept; 1: deletion asked (on disk at the next durability point); 2: on disk."""
    record: FilesystemSnapshot | None = None
    checked: bool = False


class ApiWorkload(FileWorkload):
    """Calls through ``workspacefs.connect(mountpoint)``: writes of text and of bytes
    over several 64 KiB chunks, appends, deletes (of directories too), tagged
    snapshots (acknowledged when they return), restores and deletions of snapshots.
    After each kill every snapshot that may be there is restored and read back.

    Every other round is *unacknowledged*: no snapshot is taken or deleted, the calls
    come at an agent's pace (up to 20 ms apart) and the kill comes seconds in, so what
    must come back is what the interval put on disk, not what a snapshot did."""

    ROUND = 150
    DIRECTORIES = ("a", "a/b", "c")
    TEXTS = tuple(f"{d}f{j}.txt" for d in ("", "a/", "a/b/", "c/") for j in range(4))
    BLOBS = ("big0.bin", "big1.bin", "a/big.bin")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.history = History[Files]({})
        self.snapshots: dict[str, Kept] = {}
        self.tags = 0
        self.resumes = 0
        self.rounds = 0

    @property
    def unacknowledged(self) -> bool:
        """Whether the round under way (or next) takes no snapshot."""
        return self.rounds % 2 == 1

    def kill_point(self) -> tuple[int, float]:
        self.rounds += 1
        low = 100 if self.unacknowledged else 10  # about 1.5 s in
        return len(self.history.steps) - 1 + self.rng.randrange(low, 130), self.rng.uniform(0, 0.02)

    def round(self, mountpoint: Path) -> None:
        with connect(mountpoint) as fs:
            for _ in range(self.ROUND):
                self.step(fs)
                if self.unacknowledged:
                    time.sleep(self.rng.uniform(0, 0.02))

    def step(self, fs: RemoteFilesystem) -> None:
        """One call, chosen at random, recorded before it is made."""
        rng, history = self.rng, self.history
        files = dict(history.state)
        existing = [p for p, e in files.items() if isinstance(e, bytes)]
        kept = [t for t, k in self.snapshots.items() if k.deleted == 0 and k.record is not None]
        choice = rng.random()
        if choice < 0.35 or not existing:
            path = rng.choice(self.TEXTS)
            text = f"{path} at step {len(history.steps)}\n" * rng.randint(1, 2000)
            files[path] = text.encode()
            _with_parents(files, path)
            history.plan(files)
            fs.write(path, text)
        elif choice < 0.45:
            path = rng.choice(self.BLOBS)
            data = rng.randbytes(rng.choice([70_000, 200_000, 600_000]))
            files[path] = data
            _with_parents(files, path)
            history.plan(files)
            fs.write_bytes(path, data)
        elif choice < 0.55:
            path = rng.choice(existing)
            data = rng.randbytes(rng.randint(1, 100_000))
            old = files[path]
            assert isinstance(old, bytes)
            files[path] = old + data
            history.plan(files)
            fs.write_bytes(path, data, mode="append")
        elif choice < 0.63:
            path = rng.choice(existing)
            del files[path]
            history.plan(files)
            fs.delete(path)
        elif choice < 0.66:
            directory = rng.choice(self.DIRECTORIES)
            if directory not in files:
                return
            for path in [p for p in files if p == directory or p.startswith(directory + "/")]:
                del files[path]
            history.plan(files)
            fs.delete(directory, recursive=True)
        elif choice < 0.70:
            directory = rng.choice(self.DIRECTORIES) + "/sub"
            files[directory] = DIRECTORY
            _with_parents(files, directory)
            history.plan(files)
            fs.mkdir(directory)
        elif choice < 0.82 and not self.unacknowledged:
            self.tags += 1
            tag = f"s{self.tags}"
            self.snapshots[tag] = Kept(files)
            number = history.plan(files)
            record = fs.snapshot(tag=tag)
            history.end()
            history.acknowledge(number)  # returned once on disk, with all before it
            self.snapshots[tag].record = record
            self.snapshots[tag].acknowledged = True
            for earlier in self.snapshots.values():
                if earlier.deleted == 1:
                    earlier.deleted = 2  # its FORGET came before: on disk too
            return
        elif choice < 0.92 and kept:
            tag = rng.choice(kept)
            target = self.snapshots[tag]
            assert target.record is not None
            history.plan(dict(target.files))
            fs.restore(target.record)
        elif kept and not self.unacknowledged:
            tag = rng.choice(kept)
            target = self.snapshots[tag]
            assert target.record is not None
            target.deleted = 1
            history.plan(files)
            fs.delete_snapshot(target.record)
        else:
            return
        history.end()

    def recovered(self, mountpoint: Path, step: int) -> None:
        """Every snapshot acknowledged (and not deleted on disk) is there, none deleted
        on disk is; each there restores byte-exact (those not checked yet, and a few
        more); then the live state comes back through a snapshot of its own, and is
        made durable again."""
        self.resumes += 1
        with connect(mountpoint) as fs:
            present = {s.tag: s for s in fs.snapshots() if s.tag is not None}
            assert not present.keys() - self.snapshots.keys(), "snapshots nobody took"
            for tag, kept in self.snapshots.items():
                if kept.deleted == 2:
                    assert tag not in present, f"snapshot {tag} came back after its deletion"
                elif kept.acknowledged and kept.deleted == 0:
                    assert tag in present, f"acknowledged snapshot {tag} lost"
                kept.deleted = 0 if tag in present else 2
                kept.acknowledged = tag in present
                kept.record = present.get(tag)
            unchecked = [t for t in present if not self.snapshots[t].checked]
            older = sorted(t for t in present if self.snapshots[t].checked)
            checked = unchecked + self.rng.sample(older, min(2, len(older)))
            tag = f"resumed-{self.resumes}"
            mark = fs.snapshot(tag=tag)
            self.snapshots[tag] = Kept(self.history.state, True, 0, mark, True)
            for tag in checked:
                kept = self.snapshots[tag]
                assert kept.record is not None
                fs.restore(kept.record)
                found = read_files(mountpoint)
                assert found == kept.files, f"snapshot {tag}: {describe_files(found, kept.files)}"
                kept.checked = True
            fs.restore(mark)
        assert read_files(mountpoint) == self.history.state
        # A durability point: the restores above are no steps of the history, which
        # holds the state after them as acknowledged (without it, a kill within the
        # interval may rightly bring back the last snapshot restored).
        directory = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


# -- a container on the mount -----------------------------------------------------------------


class ContainerWorkload(FileWorkload):
    """``workspacefs run --mountpoint DIR -- sh -c SCRIPT``: step N writes
    ``fN%8.txt`` (``yes | head``: several requests, may be caught midway), syncs it and
    says N (acknowledged when read)."""

    ROUND = 40

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.history = History[Files]({})
        self.written = 0
        self.number_of: dict[int, int] = {0: 0}
        """Step -> the number the script wrote in it."""

    @staticmethod
    def content(number: int) -> bytes:
        return f"line {number}\n".encode() * (number * 37 % 1500 + 1)

    def kill_point(self) -> tuple[int, float]:
        return len(self.history.steps) - 1 + self.rng.randrange(2, 30), self.rng.uniform(0, 0.02)

    def round(self, mountpoint: Path) -> None:
        first = self.written + 1
        numbers = range(first, first + self.ROUND)
        steps = {}
        for number in numbers:
            files = dict(self.history.state)
            path = f"f{number % 8}.txt"
            files[path] = self.content(number)
            steps[number] = self.history.plan(files, [path])
            self.number_of[steps[number]] = number
        script = (
            f"for n in $(seq {first} {numbers[-1]}); do "
            'f=f$((n % 8)).txt; yes "line $n" | head -n $((n * 37 % 1500 + 1)) > $f '
            "&& sync $f && echo $n || exit 1; done"
        )
        env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
        runner = subprocess.Popen(
            [sys.executable, "-m", "workspacefs.cli", "run", "--mountpoint", str(mountpoint),
             "--", "sh", "-c", script],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert runner.stdout is not None
        assert runner.stderr is not None
        with runner:
            for line in runner.stdout:
                self.written = int(line)
                self.history.end(steps[self.written])
                self.history.acknowledge()
            error = runner.stderr.read()
        # Nothing after the step under way when it stopped was begun.
        del self.history.steps[steps.get(self.written + 1, len(self.history.steps)) + 1 :]
        assert runner.returncode == 0, error

    def recovered(self, mountpoint: Path, step: int) -> None:
        self.written = self.number_of[step]
