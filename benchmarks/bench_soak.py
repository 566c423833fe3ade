"""Soak: the mount and the API under concurrent load, checked against a model.

Run: ``python -m benchmarks.bench_soak [--seconds 120]`` (``scripts/bench.sh soak``);
``tests/fuse/test_soak.py`` runs a short form in the normal suite and this
long one when ``WORKSPACEFS_SOAK_SECONDS`` is set (CI sets it).

What runs at once, on one mounted workspace:

* two writer *processes* creating, writing, appending, truncating, renaming
  (files and directories) and removing through the mount, each in its own
  directory;
* an API writer thread doing the same through the ``Filesystem`` protocol;
* a snapshot every 100 ms; a persist to git every few seconds;
* about once a second a barrier: every writer pauses, the workspace must
  equal each writer's model exactly, and then either a new barrier snapshot
  is taken or the workspace is restored to an earlier one (the writers'
  models go back with it).

Every writer records the digest of its model after each operation; one
operation is one request to the tree, so the tree passes through exactly
those states. (A write(2) is not atomic for other observers: the kernel may
split an unaligned one into several requests, at a page it would otherwise
have to read first. The writers on the mount therefore write whole pages;
unaligned I/O is the differential test's business.)

Checked: at each barrier and at the end, the workspace equals the models
replayed from the recorded operations; every 100 ms snapshot shows, for
each writer, a state that writer recorded (snapshots are atomic); every
persisted commit loads back equal to its snapshot; nothing is logged at
WARNING or above; no writer fails; nothing deadlocks (every wait has a
deadline). Peak memory is reported.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import os
import queue
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WAIT = 60.0  # seconds any one step may take before the run counts as deadlocked
NAMES = ["a", "b", "c", "d", "e", "f"]
DIRS = ["", "x", "y", "x/z"]
PAGE = 4096
SIZES = [0, PAGE, 3 * PAGE, 12 * PAGE]  # whole pages: one write(2) is one request


# -- the model every writer keeps ----------------------------------------------


@dataclass
class Model:
    """What one writer's directory holds: files (path -> bytes) and directories."""

    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)

    def copy(self) -> Model:
        return Model(dict(self.files), set(self.dirs))

    def digest(self) -> str:
        entries = [f"D {d}" for d in self.dirs]
        entries += [f"F {p} {hashlib.sha256(b).hexdigest()}" for p, b in self.files.items()]
        return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def parent_ok(self, path: str) -> bool:
        parent = path.rpartition("/")[0]
        return parent == "" or parent in self.dirs

    def summary(self) -> dict[str, str]:
        """Path -> size and digest prefix (or "dir"), for a readable difference."""
        found = dict.fromkeys(self.dirs, "dir")
        found.update(
            (p, f"{len(b)}:{hashlib.sha256(b).hexdigest()[:8]}") for p, b in self.files.items()
        )
        return found


def read_back(listing: Iterator[tuple[str, bytes | None]]) -> Model:
    """A directory read back: (relative path, bytes or None for a directory)."""
    model = Model()
    for path, content in listing:
        if content is None:
            model.dirs.add(path)
        else:
            model.files[path] = content
    return model


Op = tuple[str, tuple[Any, ...]]


def choose(rng: random.Random, model: Model, *, api: bool) -> Op | None:
    """A random operation valid in ``model`` (the API writer has no rename)."""
    files = sorted(model.files)
    dirs = sorted(model.dirs)
    kind = rng.choice(
        ["create", "create", "pwrite", "append", "truncate", "unlink", "mkdir", "rmdir"]
        + ([] if api else ["rename", "rename", "rename_dir"])
    )
    path = "/".join(p for p in (rng.choice(DIRS), rng.choice(NAMES)) if p)
    data = rng.randbytes(rng.choice(SIZES) + (rng.randrange(PAGE) if api else 0))
    if kind == "create" and model.parent_ok(path) and path not in model.dirs:
        return ("create", (path, data if api else b""))
    if kind in ("pwrite", "append", "truncate", "unlink") and files:
        target = rng.choice(files)
        if kind == "pwrite":
            return ("pwrite", (target, rng.randrange(0, 40) * PAGE, data))
        if kind == "append":
            return ("append", (target, data))
        if kind == "truncate":
            return ("truncate", (target, rng.randrange(0, 30) * PAGE))
        return ("unlink", (target,))
    if kind == "mkdir":
        new = rng.choice(DIRS[1:])
        if new not in model.dirs and model.parent_ok(new) and new not in model.files:
            return ("mkdir", (new,))
    if kind == "rmdir" and dirs:
        target = rng.choice(dirs)
        if not any(p.startswith(target + "/") for p in [*model.files, *model.dirs]):
            return ("rmdir", (target,))
        if api:
            return ("rmtree", (target,))
    if kind == "rename" and files:
        source = rng.choice(files)
        if model.parent_ok(path) and path not in model.dirs:
            return ("rename", (source, path))
    if kind == "rename_dir" and dirs:
        source = rng.choice(dirs)
        target = rng.choice(["x", "y", "w"])
        if (
            not model.exists(target)
            and not target.startswith(source + "/")
            and target != source
            and model.parent_ok(target)
        ):
            return ("rename", (source, target))
    return None


def apply(model: Model, op: Op) -> None:
    """What ``op`` does to ``model``: POSIX semantics, for the operations ``choose`` makes."""
    kind, args = op
    if kind == "create":
        model.files[args[0]] = args[1]
    elif kind == "pwrite":
        path, offset, data = args
        if not data:
            return  # writes nothing, grows nothing
        old = model.files[path]
        grown = old + bytes(max(0, offset - len(old)))
        model.files[path] = grown[:offset] + data + grown[offset + len(data) :]
    elif kind == "append":
        model.files[args[0]] += args[1]
    elif kind == "truncate":
        path, size = args
        old = model.files[path]
        model.files[path] = old[:size] + bytes(max(0, size - len(old)))
    elif kind == "unlink":
        del model.files[args[0]]
    elif kind == "mkdir":
        model.dirs.add(args[0])
    elif kind == "rmdir":
        model.dirs.discard(args[0])
    elif kind == "rmtree":
        target = args[0]
        model.dirs = {d for d in model.dirs if d != target and not d.startswith(target + "/")}
        model.files = {p: b for p, b in model.files.items() if not p.startswith(target + "/")}
    elif kind == "rename":
        source, target = args
        if source in model.files:
            model.files[target] = model.files.pop(source)
            return
        prefix = source + "/"
        model.dirs = {target + d[len(source) :] if d.startswith(prefix) else d for d in model.dirs}
        model.dirs.discard(source)
        model.dirs.add(target)
        model.files = {
            (target + p[len(source) :] if p.startswith(prefix) else p): b
            for p, b in model.files.items()
        }


# -- a writer process on the mount ---------------------------------------------


def mount_syscalls(root: Path, op: Op) -> None:
    """Do ``op`` through the mount, one request to the tree per state change."""
    kind, args = op
    path = root / args[0] if args else root
    if kind == "create":
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    elif kind == "pwrite":
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, args[2], args[1])
        finally:
            os.close(fd)
    elif kind == "append":
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, args[1])
        finally:
            os.close(fd)
    elif kind == "truncate":
        os.truncate(path, args[1])
    elif kind == "unlink":
        os.unlink(path)
    elif kind == "mkdir":
        os.mkdir(path)
    elif kind == "rmdir":
        os.rmdir(path)
    elif kind == "rename":
        os.rename(path, root / args[1])


def worker(root: Path, seed: int) -> int:
    """A writer process: operations on ``root`` until told to stop; see ``Writer``."""
    rng = random.Random(seed)
    model = Model()
    barriers: dict[str, Model] = {}
    commands: queue.Queue[str] = queue.Queue()

    def read_commands() -> None:
        for line in sys.stdin:
            commands.put(line)

    threading.Thread(target=read_commands, daemon=True).start()
    root.mkdir()
    print(json.dumps({"digest": model.digest()}), flush=True)
    steps = 0
    while True:
        try:
            command = commands.get_nowait().split()
        except queue.Empty:
            op = choose(rng, model, api=False)
            if op is None:
                continue
            mount_syscalls(root, op)
            apply(model, op)
            steps += 1
            print(json.dumps({"digest": model.digest(), "op": op[0]}), flush=True)
            if op[0] == "create" and rng.random() < 0.7:  # then fill it: a second step
                data = rng.randbytes(rng.choice(SIZES[1:]))
                fill = ("pwrite", (op[1][0], 0, data))
                mount_syscalls(root, fill)
                apply(model, fill)
                print(json.dumps({"digest": model.digest(), "op": "pwrite"}), flush=True)
            continue
        if command[0] == "pause":
            print(json.dumps({"paused": model.digest()}), flush=True)
            command = commands.get(timeout=WAIT).split()
            if command[0] == "dump":
                print(json.dumps({"model": model.summary()}), flush=True)
                command = commands.get(timeout=WAIT).split()
            if command[0] == "mark":
                barriers[command[1]] = model.copy()
            elif command[0] == "restore":
                model = barriers[command[1]].copy()
            if command[0] != "stop":
                continue
        print(json.dumps({"final": model.digest(), "steps": steps}), flush=True)
        return 0


# -- the coordinator -----------------------------------------------------------


class Writer:
    """The coordinator's side of one writer: the digests it recorded, and its controls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: set[str] = set()
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.steps = 0
        self.error: str | None = None
        self.last_ops: collections.deque[str] = collections.deque(maxlen=20)

    def record(self, message: dict[str, Any]) -> None:
        if "digest" in message:
            self.seen.add(message["digest"])
            self.last_ops.append(message.get("op", "?"))
        else:
            if "paused" in message:
                self.seen.add(message["paused"])
            self.replies.put(message)

    def reply(self) -> dict[str, Any]:
        try:
            return self.replies.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"{self.name}: no reply in {WAIT} s ({self.error})") from None

    def send(self, command: str) -> None:
        """Pass a control command (pause, mark, restore, stop)."""
        raise NotImplementedError

    def finish(self) -> None:
        """Wait for the writer to end; raise if it failed."""
        raise NotImplementedError


class ProcessWriter(Writer):
    """A writer process on the mount."""

    def __init__(self, name: str, root: Path, seed: int) -> None:
        super().__init__(name)
        command = [sys.executable, __file__, "--worker", str(root), "--seed", str(seed)]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.record(json.loads(line))
        assert self.process.stderr is not None
        self.error = self.process.stderr.read() or None

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        """Kill the process if it still runs; close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(WAIT)  # it reads to the end of the output first
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def finish(self) -> None:
        self.process.wait(WAIT)
        self._reader.join(WAIT)
        self.close()
        if self.process.returncode != 0 or self.error:
            raise AssertionError(f"{self.name} failed ({self.process.returncode}): {self.error}")


class ApiWriter(Writer):
    """A writer thread using the ``Filesystem`` protocol."""

    def __init__(self, name: str, fs: Any, seed: int) -> None:
        super().__init__(name)
        self._fs = fs
        self._rng = random.Random(seed)
        self._commands: queue.Queue[str] = queue.Queue()
        self._current = Model()
        fs.mkdir(name)
        self.record({"digest": Model().digest()})
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def send(self, command: str) -> None:
        self._commands.put(command)

    def _call(self, op: Op) -> None:
        fs, kind, args = self._fs, op[0], op[1]
        path = f"{self.name}/{args[0]}"
        if kind == "create":
            fs.write_bytes(path, args[1], create_parents=False)
        elif kind == "append":
            fs.write_bytes(path, args[1], mode="append")
        elif kind in ("pwrite", "truncate"):  # the protocol writes whole files, at once
            model = Model({args[0]: self._current.files[args[0]]})
            apply(model, op)
            fs.write_bytes(path, model.files[args[0]])
        elif kind == "unlink":
            fs.delete(path)
        elif kind == "mkdir":
            fs.mkdir(path, parents=False, exist_ok=False)
        elif kind in ("rmdir", "rmtree"):
            fs.delete(path, recursive=True)

    def _run(self) -> None:
        barriers: dict[str, Model] = {}
        try:
            while True:
                try:
                    command = self._commands.get_nowait().split()
                except queue.Empty:
                    op = choose(self._rng, self._current, api=True)
                    if op is not None:
                        self._call(op)
                        apply(self._current, op)
                        self.steps += 1
                        self.record({"digest": self._current.digest()})
                    time.sleep(0.0005)  # the mount writers get their share of the lock
                    continue
                if command[0] == "pause":
                    self.record({"paused": self._current.digest()})
                    command = self._commands.get(timeout=WAIT).split()
                    if command[0] == "dump":
                        self.record({"model": self._current.summary()})
                        command = self._commands.get(timeout=WAIT).split()
                    if command[0] == "mark":
                        barriers[command[1]] = self._current.copy()
                    elif command[0] == "restore":
                        self._current = barriers[command[1]].copy()
                    if command[0] != "stop":
                        continue
                self.record({"final": self._current.digest(), "steps": self.steps})
                return
        except BaseException as exc:
            self.error = repr(exc)
            self.record({"final": None, "error": repr(exc)})

    def finish(self) -> None:
        self._thread.join(WAIT)
        if self.error:
            raise AssertionError(f"{self.name} failed: {self.error}")


@dataclass
class Report:
    """What a soak run did and saw."""

    seconds: float
    steps: dict[str, int]
    barriers: int
    restores: int
    snapshots: int
    persists: int
    peak_rss: int
    peak_held: int
    warnings: list[str]

    def lines(self) -> list[str]:
        steps = ", ".join(f"{name} {count}" for name, count in sorted(self.steps.items()))
        return [
            f"soak: {self.seconds:.0f} s; operations: {steps}",
            f"      {self.barriers} barriers checked against the models, {self.restores} restores,"
            f" {self.snapshots} snapshots checked, {self.persists} persists loaded back",
            f"      peak RSS {self.peak_rss / 2**20:.0f} MiB, peak file data held "
            f"{self.peak_held / 2**20:.1f} MiB, warnings logged: {len(self.warnings)}",
        ]


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def workspace_model(fs: Any, name: str) -> Model:
    """Directory ``name`` of ``fs`` (any ``Filesystem``), read back."""

    def listing() -> Iterator[tuple[str, bytes | None]]:
        for match in fs.glob("**", path=name):
            relative = match.path[len(name) + 1 :]
            if match.is_file:
                yield relative, fs.read_bytes(match.path).content
            else:
                yield relative, None

    return read_back(listing())


def workspace_digest(fs: Any, name: str) -> str:
    """The digest of directory ``name`` of ``fs``."""
    return workspace_model(fs, name).digest()


def run(seconds: float, *, seed: int = 0) -> Report:
    """Soak a mounted workspace for ``seconds``; raises AssertionError on any finding."""
    from workspacefs import InMemoryFilesystem, mount
    from workspacefs import git as wgit

    warnings = _Warnings()
    logging.getLogger("workspacefs").addHandler(warnings)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="workspacefs-soak-") as scratch:
        mnt = Path(scratch) / "mnt"
        mnt.mkdir()
        repo = Path(scratch) / "repo.git"
        fs = InMemoryFilesystem()
        lost: list[BaseException] = []
        with mount(fs, mnt, on_lost=lost.append):
            report = _soak(fs, mnt, repo, seconds, rng, wgit)
        logging.getLogger("workspacefs").removeHandler(warnings)
        report.warnings = warnings.messages
        assert not lost, f"the mount was lost: {lost}"
        assert not warnings.messages, f"logged: {warnings.messages[:5]}"
    return report


def _soak(fs: Any, mnt: Path, repo: Path, seconds: float, rng: random.Random, wgit: Any) -> Report:
    writers: list[Writer] = [
        ProcessWriter("w1", mnt / "w1", rng.randrange(1 << 30)),
        ProcessWriter("w2", mnt / "w2", rng.randrange(1 << 30)),
    ]
    for writer in writers:  # each made its directory and recorded the empty model
        deadline = time.monotonic() + WAIT
        while not writer.seen and time.monotonic() < deadline:
            time.sleep(0.01)
    writers.append(ApiWriter("api", fs, rng.randrange(1 << 30)))
    stop = threading.Event()
    failures: list[str] = []
    counts = {"snapshots": 0, "persists": 0}
    peak_held = [0]
    pending: collections.deque[tuple[float, Any]] = collections.deque()

    def check_snapshot(record: Any) -> None:
        view = fs.at(record)
        for writer in writers:
            digest = workspace_digest(view, writer.name)
            if digest not in writer.seen:
                failures.append(f"snapshot {record.snapshot_id}: {writer.name} never was so")
        counts["snapshots"] += 1
        fs.delete_snapshot(record)

    def snapshots() -> None:
        try:
            while not stop.wait(0.1):
                pending.append((time.monotonic(), fs.snapshot()))
                peak_held[0] = max(peak_held[0], fs.memory_usage().held)
        except BaseException as exc:
            failures.append(f"snapshots: {exc!r}")

    def check_snapshots_before(moment: float) -> None:
        """Every writer has reported every state it had before ``moment`` (they
        replied to a pause since): the snapshots taken until then can be checked."""
        while pending and pending[0][0] < moment:
            check_snapshot(pending.popleft()[1])

    persist_rng = random.Random(rng.randrange(1 << 30))  # one generator per thread

    def persists() -> None:
        try:
            while not stop.wait(persist_rng.uniform(1.5, 3.0)):
                record = fs.snapshot(tag=None)
                persisted = wgit.persist(fs, record, repo)
                loaded = wgit.load(repo, persisted.ref)
                for writer in writers:
                    expected = workspace_digest(fs.at(record), writer.name)
                    if workspace_digest(loaded, writer.name) != expected:
                        failures.append(f"persist {persisted.number}: {writer.name} differs")
                fs.delete_snapshot(record)
                counts["persists"] += 1
        except BaseException as exc:
            failures.append(f"persists: {exc!r}")

    threads = [threading.Thread(target=snapshots), threading.Thread(target=persists)]
    for thread in threads:
        thread.start()
    barriers: list[tuple[str, Any]] = []
    restores = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds and not failures:
            time.sleep(rng.uniform(0.5, 1.2))
            moment = time.monotonic()
            paused = _pause(writers)
            _check_barrier(fs, writers, paused)
            check_snapshots_before(moment)
            if len(barriers) >= 2 and (rng.random() < 0.4 or not restores):
                name, record = rng.choice(barriers)
                fs.restore(record)
                restores += 1
                for writer in writers:
                    writer.send(f"restore {name}")
            else:
                name = f"b{len(barriers)}"
                barriers.append((name, fs.snapshot(tag=name)))
                for writer in writers:
                    writer.send(f"mark {name}")
        paused = _pause(writers)
        _check_barrier(fs, writers, paused)
        for writer in writers:
            writer.send("stop")
        finals = {writer.name: writer.reply() for writer in writers}
        for writer in writers:
            writer.finish()
            writer.steps = finals[writer.name].get("steps", writer.steps)
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT)
        for writer in writers:
            if isinstance(writer, ProcessWriter):
                writer.close()
    while pending:
        check_snapshot(pending.popleft()[1])
    _check_barrier(fs, writers, {w.name: finals[w.name]["final"] for w in writers})
    assert sorted(entry.name for entry in fs.list()) == sorted(w.name for w in writers)
    assert not failures, failures[:5]
    return Report(
        seconds=time.monotonic() - started,
        steps={writer.name: writer.steps for writer in writers},
        barriers=len(barriers) + restores + 2,
        restores=restores,
        snapshots=counts["snapshots"],
        persists=counts["persists"],
        peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        peak_held=peak_held[0],
        warnings=[],
    )


def _pause(writers: list[Writer]) -> dict[str, str]:
    for writer in writers:
        writer.send("pause")
    return {writer.name: writer.reply()["paused"] for writer in writers}


def _check_barrier(fs: Any, writers: list[Writer], expected: dict[str, str]) -> None:
    """With every writer paused, the workspace must be exactly what their models say."""
    for writer in writers:
        got = workspace_model(fs, writer.name)
        if got.digest() != expected[writer.name]:
            writer.send("dump")
            model = writer.reply().get("model", {})
            seen = got.summary()
            differing = sorted(p for p in seen.keys() | model.keys() if seen.get(p) != model.get(p))
            raise AssertionError(
                f"{writer.name}: the workspace differs from its model at "
                + ", ".join(f"{p} (is {seen.get(p)}, model {model.get(p)})" for p in differing)
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="a few seconds only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker(args.worker, args.seed)
    report = run(5.0 if args.quick else args.seconds, seed=args.seed)
    for line in report.lines():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
