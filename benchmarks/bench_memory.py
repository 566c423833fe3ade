"""A workspace several times its memory budget, through a mount (issue 29's acceptance).

Run: ``python -m benchmarks.bench_memory [--quick | --full] [--budget SIZE] [--times N]
[--against REF [--rounds N]]`` (``--full``: the issue's size, a 1 GiB budget and a
3 GiB tree; default 256 MiB and 3 budgets).

A daemon serves a durable workspace (store on the machine's disk, /var/tmp) with
``--memory-budget BUDGET``, and goes through: ``tar -x`` of a tree ``TIMES`` times the
budget (source-like text files in a git repository, binaries beside them), ``grep -r``
twice, ``git status`` twice, a snapshot, a restore, a fork, every file read back and
checked byte-exact, and a sequential read of the binaries (mostly evicted by then).
Every 100 ms a thread samples the daemon's resident memory (``/proc``), and every
500 ms the file data it holds (``status``).

Baselines, in the same run: the same commands on an ext4 (or whatever /var/tmp is)
copy of the tree, its page cache dropped for the files first (``posix_fadvise``,
DONTNEED; the store's packs too before the mount's sequential read: both cold); and
``tar -x`` and ``grep -r`` on a mount whose budget holds the whole tree (nothing
leaves memory).

``--against REF`` adds the comparison the cache must not lose: the same workloads on a
workspace that fits in its budget (the default budget: eviction enabled, nothing to
evict), served by this code and by the code of the git revision ``REF`` of this
repository (``git archive``; e.g. the commit before the cache), each through its own
``workspacefs`` CLI, in alternating rounds (``--rounds``), medians compared: no more
than 10% slower, the workloads together (each one is reported).

Targets: the held bytes never pass the budget; the daemon's resident memory stays
under the budget plus ``overhead(budget)`` (what docs/memory.md states); the sequential
read of evicted data is at least half as fast as the cold disk's.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import workspacefs
import workspacefs.git
from workspacefs.daemon import MountRecord, connect, start
from workspacefs.fuse import unavailable_reason

from ._common import GIT_ENV, Result, scratch_dir
from .bench_durability import disk_dir, filesystem_of

MIB = 1 << 20


def overhead(budget: int) -> int:
    """Resident memory past ``budget`` the daemon of a cache may use: 104 MiB and an
    eighth of the budget (docs/memory.md, *What the budget does not count, with a
    cache*). Fixed: the daemon's own 45 MiB at start (interpreter, libraries, mount,
    control server), the allocator's holes the trimmer lets reach 64 MiB before it
    returns them, request and read buffers. Growing with the budget: the journal's
    records in flight (a 64th of the budget each, up to 16 MiB, held and copied on
    their way to the disk), and what the heap keeps between chunks that trimming cannot
    return. Measured peaks: budget + 228 MiB at 1 GiB (during ``tar -x``), + 115 MiB at
    256 MiB, + 75 MiB at 128 MiB, + 71 MiB at 64 MiB."""
    return 104 * MIB + budget // 8


NEEDLE = "needle-in-the-cache"
CPU = "daemon CPU, all workloads"


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1:].isalpha() else int(text)


# -- the tree ---------------------------------------------------------------------------


def make_tree(root: Path, total: int) -> dict[str, bytes]:
    """Text files (a git repository tracks them) and binaries (ignored) until ``total``
    bytes; the digest of each file."""
    rng = random.Random(29)
    digests: dict[str, bytes] = {}
    size = n = 0
    while size < total:
        if n % 3:
            name, length = f"bin/b{n % 17}/{n}.bin", rng.choice([256 << 10, 1 << 20, 4 << 20])
            data = rng.randbytes(length)
        else:
            name = f"src/m{n % 23}/s{n}.py"
            line = f"def f{n}(x):  # {NEEDLE if n % 9 == 0 else 'hay'}\n    return x + {n}\n"
            data = (line * (rng.choice([16 << 10, 128 << 10]) // len(line))).encode()
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digests[name] = hashlib.sha256(data).digest()
        size += len(data)
        n += 1
    (root / ".gitignore").write_text("*.bin\n")
    git = ["git", "-c", "core.compression=1"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
        subprocess.run([*git, *command], cwd=root, env=GIT_ENV, check=True)
    return digests


def tar_of(root: Path, path: Path) -> None:
    with tarfile.open(path, "w") as archive:
        archive.add(root, arcname=".")


def drop_cache(paths: Iterator[Path]) -> None:
    """Push the files out of the page cache (this process's fadvise: cold reads)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def files_under(root: Path) -> Iterator[Path]:
    for base, _, names in os.walk(root):
        for name in names:
            yield Path(base) / name


# -- measuring ----------------------------------------------------------------------------


def timed(action: Callable[[], object]) -> float:
    start_ = time.perf_counter()
    action()
    return time.perf_counter() - start_


def run(*command: str, cwd: Path | None = None) -> None:
    subprocess.run(command, cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def grep(root: Path) -> None:
    found = subprocess.run(["grep", "-rl", NEEDLE, str(root)], capture_output=True, check=False)
    assert found.returncode == 0, found.stderr


def sequential_read(paths: list[Path]) -> float:
    """MB/s reading ``paths`` whole, in order, 1 MiB at a time."""
    total = 0
    begin = time.perf_counter()
    for path in paths:
        with open(path, "rb", buffering=0) as handle:
            while block := handle.read(MIB):
                total += len(block)
    return total / MIB / (time.perf_counter() - begin)


class Sampler:
    """Peak resident memory of the daemon (every 100 ms; at the peak, how much of it was
    anonymous memory and how much mapped files, and which workload ran) and peak held
    data (500 ms)."""

    def __init__(self, record: MountRecord) -> None:
        self.record = record
        self.rss = self.held = self.samples = 0
        self.at_peak: dict[str, int] = {}
        self.phase = self.peak_phase = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with connect(self.record.socket) as fs:
            ticks = 0
            while not self._stop.wait(0.1):
                status = Path(f"/proc/{self.record.pid}/status").read_text()
                fields = {
                    key: int(value.split()[0]) * 1024
                    for key, _, value in (line.partition(":") for line in status.splitlines())
                    if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem")
                }
                if fields["VmRSS"] > self.rss:
                    self.rss, self.at_peak, self.peak_phase = fields["VmRSS"], fields, self.phase
                self.samples += 1
                ticks += 1
                if ticks % 5 == 0:
                    self.held = max(self.held, fs.status()["memory_held"])

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def daemon(mnt: Path, store: Path, budget: int) -> Iterator[MountRecord]:
    mnt.mkdir()
    record = start(mnt, store=str(store), memory_budget=budget)
    try:
        yield record
    finally:
        with connect(record.socket) as fs:
            fs.unmount()


def cli(*args: str, source: Path | None = None) -> str:
    """Run the ``workspacefs`` CLI of this code (or of the source tree ``source``)."""
    package = source or Path(workspacefs.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(package)}
    done = subprocess.run(
        [sys.executable, "-m", "workspacefs.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def workloads(
    mnt: Path,
    work: Path,
    digests: dict[str, bytes],
    source: Path | None = None,
    sampler: Sampler | None = None,
) -> dict[str, float]:
    """The issue's workloads on the workspace mounted at ``mnt``, each timed: ``tar -x``,
    ``grep -r`` and ``git status`` twice, a snapshot, a restore (some files changed
    since), a fork, and every file read back and checked byte-exact."""
    seconds: dict[str, float] = {}

    def step(name: str, action: Callable[[], object]) -> None:
        if sampler is not None:
            sampler.phase = name
        seconds[name] = timed(action)

    step("tar -x", lambda: run("tar", "-xf", str(work / "tree.tar"), "-C", str(mnt)))
    step("grep -r, 1st", lambda: grep(mnt))
    step("grep -r, 2nd", lambda: grep(mnt))
    step("git status, 1st", lambda: run("git", "status", "--short", cwd=mnt))
    step("git status, 2nd", lambda: run("git", "status", "--short", cwd=mnt))
    step("snapshot", lambda: cli("snapshot", str(mnt), "--tag", "bench", source=source))
    for name in list(digests)[::7]:
        (mnt / name).write_bytes(b"changed\n")
    step("restore", lambda: cli("restore", str(mnt), "bench", source=source))
    step("fork", lambda: cli("fork", "--of", str(mnt), "--name", "bench", source=source))

    def check() -> None:
        for name, digest in digests.items():
            assert hashlib.sha256((mnt / name).read_bytes()).digest() == digest, name

    # The kernel's page cache of the mount would answer the reads: dropped, so that
    # what left the daemon's memory is read from the store.
    drop_cache(mnt / name for name in digests)
    step("read back byte-exact", check)
    return seconds


# -- the run ------------------------------------------------------------------------------


def evicting(
    work: Path, disk: Path, digests: dict[str, bytes], budget: int
) -> tuple[dict[str, float], Sampler, dict[str, int]]:
    """The workloads on a mount with ``budget``; seconds of each, the sampler."""
    mnt = work / "evicting"
    with daemon(mnt, disk / "store", budget) as record, Sampler(record) as sampler:
        seconds = workloads(mnt, work, digests, sampler=sampler)
        sampler.phase = "sequential read"
        binaries = [mnt / name for name in digests if name.endswith(".bin")]
        drop_cache(iter(binaries))
        drop_cache(files_under(disk / "store" / "git" / "objects"))
        seconds["sequential read MB/s"] = sequential_read(binaries)
        with connect(record.socket) as fs:
            status = fs.status()
        usage = {key: status[key] for key in ("memory_held", "memory_evictable", "memory_on_disk")}
    return seconds, sampler, usage


def on_disk(work: Path, disk: Path, tree_bytes: dict[str, bytes]) -> dict[str, float]:
    root, seconds = disk / "plain", {}
    root.mkdir()
    seconds["tar -x"] = timed(lambda: run("tar", "-xf", str(work / "tree.tar"), "-C", str(root)))
    drop_cache(files_under(root))
    seconds["grep -r, 1st"] = timed(lambda: grep(root))
    seconds["grep -r, 2nd"] = timed(lambda: grep(root))
    seconds["git status, 1st"] = timed(lambda: run("git", "status", "--short", cwd=root))
    seconds["git status, 2nd"] = timed(lambda: run("git", "status", "--short", cwd=root))
    binaries = [root / name for name in tree_bytes if name.endswith(".bin")]
    drop_cache(iter(binaries))
    seconds["sequential read MB/s"] = sequential_read(binaries)
    return seconds


def exported(ref: str, into: Path) -> Path:
    """The ``src`` directory of the revision ``ref`` of the repository this code is in."""
    repository = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(repository), "archive", ref, "src"], capture_output=True, check=True
    ).stdout
    into.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fitting(
    work: Path, disk: Path, digests: dict[str, bytes], source: Path | None
) -> tuple[dict[str, float], int]:
    """The workloads on a workspace whose default budget holds them all (with a store:
    eviction enabled, nothing to evict), served by the code in ``source`` (None: this
    code); the seconds of each (and the daemon's CPU seconds in all), and the budget."""
    mnt, store = work / "fitting", disk / "store-fits"
    mnt.mkdir()
    pid = json.loads(cli("mount", str(mnt), "--store", str(store), "--json", source=source))["pid"]
    try:
        budget = json.loads(cli("status", str(mnt), "--json", source=source))["memory_budget"]
        before = cpu_seconds(pid)
        seconds = workloads(mnt, work, digests, source)
        seconds[CPU] = cpu_seconds(pid) - before
        return seconds, budget
    finally:
        cli("unmount", str(mnt), source=source)
        shutil.rmtree(store, ignore_errors=True)
        mnt.rmdir()


def compared(
    work: Path, disk: Path, digests: dict[str, bytes], against: str | None, rounds: int
) -> tuple[dict[str, float], dict[str, float] | None]:
    """Medians of ``rounds`` rounds of ``fitting`` for this code and, with ``against``,
    for the code of that revision, the two alternating which goes first."""
    sides: list[Path | None] = [None]
    if against is not None:
        sides.append(exported(against, work / "against"))
    times: list[dict[str, list[float]]] = [{} for _ in sides]
    for round_ in range(rounds):
        for index in range(len(sides)) if round_ % 2 == 0 else reversed(range(len(sides))):
            seconds, budget = fitting(work, disk, digests, sides[index])
            if round_ == 0:
                side = "this code" if sides[index] is None else against
                print(f"fitting, {side}: budget {budget / MIB:,.0f} MiB")
            for name, value in seconds.items():
                times[index].setdefault(name, []).append(value)
    medians = [{name: statistics.median(values) for name, values in t.items()} for t in times]
    return medians[0], medians[1] if against is not None else None


# -- mount --from a large repository ------------------------------------------------------


def snapshot_repo(path: Path, files: int) -> None:
    """A repository holding a snapshot (tag ``big``) of ``files`` small files, a hundred
    a directory (``pkg<k>/mod<d>/f<i>.py``), manifests at the root (``app/``)."""
    fs = workspacefs.InMemoryFilesystem()
    with fs.transaction() as tree:
        for d in range(files // 100):
            directory = tree.make_dirs(f"pkg{d % 50}/mod{d}")
            for i in range(100):
                tree.write(
                    tree.create(directory, f"f{i}.py"), 0, f"# {d}/{i}\nprint({i})\n".encode()
                )
        app = tree.make_dirs("app")
        for name in ("package.json", "pyproject.toml", "package-lock.json"):
            tree.write(tree.create(app, name), 0, b"{}\n")
    workspacefs.git.persist(fs, fs.snapshot(tag="big"), path)


def mounted_from(
    work: Path, disk: Path, repo: Path | None, files: int, source: Path | None = None
) -> dict[str, float]:
    """``mount --from REPO#big`` (None: an empty workspace) with a store, then at once a
    first ``ls``, a ``cat`` deep in it, ``ls -R``; seconds of each from the command's
    start, and when the hydration said it was done."""
    mnt, store, seconds = work / "from", disk / "store-from", {}
    mnt.mkdir()
    begin = time.perf_counter()
    args = ["mount", str(mnt), "--store", str(store)]
    cli(*args, *([] if repo is None else ["--from", f"{repo}#big"]), source=source)
    try:
        os.listdir(mnt)
        seconds["mount, then the first ls"] = time.perf_counter() - begin
        if repo is None:
            return seconds
        deep = mnt / f"pkg{(files // 200) % 50}/mod{files // 200}/f7.py"
        seconds["cat deep in it, right after"] = timed(deep.read_bytes)
        listed: list[int] = []
        seconds["ls -R, right after"] = timed(
            lambda: listed.append(sum(len(names) for _, _, names in os.walk(mnt)))
        )
        assert listed == [files // 100 * 100 + 3], listed
        while True:
            facts = json.loads(cli("status", str(mnt), "--json", source=source)).get("hydration")
            if facts is None or facts["state"] not in ("listing", "hydrating"):
                break
            time.sleep(0.1)
        seconds["hydration done, from the mount's start"] = time.perf_counter() - begin
        return seconds
    finally:
        cli("unmount", str(mnt), source=source)
        shutil.rmtree(store, ignore_errors=True)
        mnt.rmdir()


def from_results(
    work: Path, disk: Path, files: int, against: str | None, rounds: int
) -> list[Result]:
    """``mount --from`` a repository of ``files`` files: the first request within 1 s,
    against an empty workspace's (the daemon's own start) and, with ``against``, the
    same mount by that revision's code."""
    repo = disk / "large.git"
    snapshot_repo(repo, files)
    sides: list[tuple[str, Path | None]] = [("this code", None)]
    if against is not None:
        sides.append((against, exported(against, work / "against-from")))
    found: dict[str, list[dict[str, float]]] = {}
    empty: list[float] = []
    for _ in range(rounds):
        empty.append(mounted_from(work, disk, None, files)["mount, then the first ls"])
        for side, source in sides:
            found.setdefault(side, []).append(mounted_from(work, disk, repo, files, source))
    medians = {
        side: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for side, runs in found.items()
    }
    ours, base = medians["this code"], statistics.median(empty)
    results = [
        Result(
            f"mount --from ({files:,} files), then the first ls, vs an empty workspace",
            ours["mount, then the first ls"],
            base,
            "s",
            "< 1 s",
            ours["mount, then the first ls"] < 1.0,
        )
    ]
    results += [
        Result(f"{key} ({files:,} files)", value, value, "s", "report", True)
        for key, value in ours.items()
        if key != "mount, then the first ls"
    ]
    if against is not None:
        theirs = medians[against]
        results += [
            Result(
                f"{key} ({files:,} files), vs {against}",
                ours[key],
                theirs[key],
                "s",
                "report",
                True,
            )
            for key in theirs
            if key in ours
        ]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    parser.add_argument(
        "--full", action="store_true", help="the issue's size: a 1 GiB budget, a 3 GiB tree"
    )
    parser.add_argument("--budget", default=None, help="the memory budget (default 256M)")
    parser.add_argument("--times", type=float, default=3.0, help="the tree, in budgets")
    parser.add_argument(
        "--against",
        metavar="REF",
        help="compare a workspace that fits its budget with the code of this git revision",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="rounds of that comparison (default 3; 1 alone)"
    )
    parser.add_argument(
        "--parts",
        default="evicting,fits,from",
        help="which parts to run: evicting (with the disk), fits, from (mount --from)",
    )
    parser.add_argument(
        "--from-files",
        type=int,
        default=None,
        help="files of the repository mount --from loads (default 200,000 with --full)",
    )
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if reason := unavailable_reason():
        print(f"memory benchmarks skipped: {reason}")
        return 0
    default = "8M" if args.quick else "1G" if args.full else "256M"
    budget = parse_size(args.budget or default)
    rounds = args.rounds or (3 if args.against else 1)
    work, disk = scratch_dir("bench-memory-"), disk_dir("bench-memory-")
    ours: dict[str, float] = {}
    plain: dict[str, float] = {}
    sampler: Sampler | None = None
    usage: dict[str, int] = {}
    fits: dict[str, float] = {}
    theirs: dict[str, float] | None = None
    from_lines: list[Result] = []
    total = 0
    try:
        if parts & {"evicting", "fits"}:
            tree = disk / "source"
            digests = make_tree(tree, int(budget * args.times))
            tar_of(tree, work / "tree.tar")
            total = sum((tree / name).stat().st_size for name in digests)
            print(
                f"the tree: {len(digests):,} files, {total / MIB:.0f} MiB "
                f"({total / budget:.1f} budgets of {budget / MIB:.0f} MiB); the store and "
                f"the baseline on {filesystem_of(disk)}"
            )
            if "evicting" in parts:
                ours, sampler, usage = evicting(work, disk, digests, budget)
                plain = on_disk(work, disk, dict.fromkeys(digests, b""))
            fits, theirs = compared(work, disk, digests, args.against, rounds)
        if "from" in parts:
            files = args.from_files or (12_000 if args.quick else 200_000 if args.full else 50_000)
            from_lines = from_results(work, disk, files, args.against, rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(disk, ignore_errors=True)
    results = list(from_lines)
    if sampler is not None:
        results += evicting_results(ours, plain, fits, sampler, budget, total)
    if theirs is not None:
        # The measure is the workloads together; a row of a few milliseconds
        # (git status again) moves by half from one run to the next, so rows are reported.
        wall = [name for name in fits if name != CPU]
        ours_total, theirs_total = (sum(side[name] for name in wall) for side in (fits, theirs))
        results.append(
            Result(
                f"all workloads: fits its budget, vs {args.against} (median of {rounds})",
                ours_total,
                theirs_total,
                "s",
                "<= 1.10x",
                ours_total <= 1.10 * theirs_total,
                note="the sum of the rows below but the daemon's CPU",
            )
        )
        results += [
            Result(
                f"{name}: fits its budget, vs {args.against} (median of {rounds})",
                fits[name],
                theirs[name],
                "s",
                "report",
                True,
            )
            for name in fits
        ]
    print(
        f"memory benchmarks (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
        f"average {', '.join(f'{v:.1f}' for v in os.getloadavg())})"
        + ("; at the end: " if usage else "")
        + json.dumps({key: f"{value / MIB:.1f} MiB" for key, value in usage.items()})
    )
    for result in results:
        print(result.line())
    return 0 if all(r.met for r in results) or args.quick else 1


def evicting_results(
    ours: dict[str, float],
    plain: dict[str, float],
    fits: dict[str, float],
    sampler: Sampler,
    budget: int,
    total: int,
) -> list[Result]:
    """The evicting mount's lines: against the disk, against a mount whose budget holds
    the tree, and its memory against the budget."""
    results = [
        Result(
            f"{name} ({total / MIB:.0f} MiB, budget {budget / MIB:.0f} MiB)",
            ours[name],
            plain[name],
            "s",
            "report",
            True,
        )
        for name in ("tar -x", "grep -r, 1st", "grep -r, 2nd", "git status, 1st", "git status, 2nd")
    ]
    results += [
        Result(
            f"{name}: evicting, vs a budget holding the tree",
            ours[name],
            fits[name],
            "s",
            "report",
            True,
        )
        for name in fits
        if name in ours
    ]
    read, cold = ours["sequential read MB/s"], plain["sequential read MB/s"]
    results.append(
        Result(
            "sequential read of evicted data vs the cold disk",
            read,
            cold,
            "MB/s",
            ">= 0.5x",
            read >= cold / 2,
            higher_is_better=True,
        )
    )
    results.append(
        Result(
            "peak file data held (sampled every 500 ms) vs the budget",
            sampler.held / MIB,
            budget / MIB,
            "MiB",
            "<= budget",
            sampler.held <= budget,
        )
    )
    results.append(
        Result(
            f"peak daemon RSS ({sampler.samples:,} samples, every 100 ms) vs budget + overhead",
            sampler.rss / MIB,
            (budget + overhead(budget)) / MIB,
            "MiB",
            f"<= budget + {overhead(budget) // MIB} MiB",
            sampler.rss <= budget + overhead(budget),
        )
    )
    peak = ", ".join(f"{key} {value / MIB:.0f} MiB" for key, value in sampler.at_peak.items())
    print(f"at the peak of RSS ({sampler.peak_phase}): {peak}")
    return results


if __name__ == "__main__":
    sys.exit(main())
