"""What the change feed costs a daemon's mount: its write workloads with the feed off and on.

Run: ``python -m benchmarks.bench_feed [--quick] [--rounds N]``.

Two daemons (without a store, whose journal's checkpoints would come at their
own times in either), in the same run: one nobody watches (its feed never starts), one a
watcher process follows from start to end (``RemoteFilesystem.events``, every
event read and its paths counted). Each round runs every workload on both, in
turns (the order alternates per round, so neither always goes first), in a
new directory each time; the figures are medians, and the cost is the median
of each round's ratio (a pair run back to back sees the same load on the
machine). The workloads are the
mount's write benchmarks of ``bench_fuse``: a sequential write in 1 MiB
blocks (the file removed after each run, untimed), create+write+close of small
files that stay, small files made, stat'd and removed (``bench_fuse``'s
small-files, net zero for the feed), and ``tar -x`` of two standard-library
packages (ten times a run); and a sustained one, longer than the feed waits
for a busy mount (``fs.MAX_DELAY``, 1 s): more small files that stay.

Two figures per workload: the wall time (the goal: at most 5% slower with the
feed on), and the CPU time the daemon spent on it in all (from ``/proc``, read
once its feed has taken the last batch: the feed's deferred work included),
with the part of it the feed's own thread spent. Each line names the kernel
requests each mount served for the workload (``status``'s counts), which
must be the same with the feed on and off: the same work, told apart only by
the feed. At the end the watcher says how many paths it saw; every file the
workloads left must be among them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

from workspacefs.daemon import connect, start
from workspacefs.fuse import RequestStats

from ._common import Result, scratch_dir
from .bench_fuse import MIB, corpus_source, small_files, write_file

WATCHER = """
import sys, workspacefs
paths = set()
with workspacefs.connect(sys.argv[1]) as fs, fs.events() as stream:
    print(stream.last_id, flush=True)
    for event in stream:
        paths.update(event.paths)
        if "STOP" in event.paths:
            break
    while (event := stream.next_event(1.0)) is not None:  # the rest of STOP's batch
        paths.update(event.paths)
print(len(paths), flush=True)
for path in sorted(paths):
    print(path)
"""


def _kept_files(root: Path, count: int) -> None:
    payload = b"x" * 100
    for i in range(count):
        directory = root / f"d{i // 500}"
        if i % 500 == 0:
            directory.mkdir()
        fd = os.open(directory / f"f{i}.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, payload)
        os.close(fd)


SETTLE = 0.3
"""Seconds after a workload before the daemon's CPU time is read: the feed takes its
last batch a window (50 ms) after the last change, and diffs it."""


def cpu_seconds(pid: int) -> float:
    """The CPU time of process ``pid`` so far, threads that ended included (user and
    system, in clock ticks: 10 ms)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FEED_THREAD = "workspacefs-feed"


def thread_cpu_seconds(pid: int, name: str) -> float:
    """The CPU time of process ``pid``'s live threads called ``name`` (the kernel's
    ``comm``, which the feed's thread sets), so far."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as stat:
                head, _, rest = stat.read().rpartition(")")
        except FileNotFoundError:  # ended meanwhile
            continue
        if head.partition("(")[2] == name[:15]:
            fields = rest.split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def served(socket: str) -> RequestStats:
    """The kernel requests the daemon's mount has served so far."""
    with connect(socket) as fs:
        requests = fs.status()["requests"]
    return RequestStats(MappingProxyType(requests["counts"]), MappingProxyType(requests["seconds"]))


def workloads(quick: bool, tarball: Path) -> dict[str, Callable[[Path], None]]:
    size = (16 if quick else 256) * MIB
    files = 1_000 if quick else 10_000
    sustained = 5_000 if quick else 50_000
    return {
        f"seq-write {size // MIB} MiB": lambda root: write_file(root / "big", size, MIB),
        f"create {files} files": lambda root: _kept_files(root, files),
        f"small-files {files} (made, removed)": lambda root: small_files(root, files),
        "tar -x json+email, 10 times": lambda root: _extract(tarball, root, 10),
        f"create {sustained} files (sustained)": lambda root: _kept_files(root, sustained),
    }


def _extract(tarball: Path, root: Path, times: int) -> None:
    for n in range(times):
        (root / str(n)).mkdir()
        subprocess.run(["tar", "-xf", str(tarball), "-C", str(root / str(n))], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    parser.add_argument(
        "--rounds", type=int, default=None, help="rounds per workload (medians; default 5, 2 quick)"
    )
    parser.add_argument("--only", default="", help="the workloads whose name holds this text")
    parser.add_argument("--verbose", action="store_true", help="print every run's figures")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 2 if args.quick else 5
    work = scratch_dir("wsfs-bench-feed-")
    runtime = Path(tempfile.mkdtemp(prefix="wsfs-", dir="/tmp"))
    previous = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # its daemons are its own
    tarball = work / "corpus.tar"
    source = corpus_source()
    subprocess.run(["tar", "-cf", str(tarball), "-C", str(source), "json", "email"], check=True)
    mounts = {"off": work / "off", "on": work / "on"}
    records = {}
    watcher = None
    try:
        for name, point in mounts.items():
            point.mkdir()
            # No store: its journal's checkpoints come at their own times, in either daemon.
            records[name] = start(point, durability="none")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        watcher = subprocess.Popen(
            [sys.executable, "-c", WATCHER, records["on"].socket],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert watcher.stdout is not None
        watcher.stdout.readline()  # it follows the feed from here
        times: dict[str, dict[str, list[float]]] = {}
        cpu: dict[str, dict[str, list[float]]] = {}
        feed_cpu: dict[str, list[float]] = {}
        requests: dict[str, dict[str, list[RequestStats]]] = {}
        loads: list[float] = []
        left: set[str] = set()
        for round_number in range(args.rounds):
            chosen = workloads(args.quick, tarball).items()
            for number, (workload, run) in enumerate(chosen):
                if args.only not in workload:
                    continue
                order = ("off", "on") if round_number % 2 == 0 else ("on", "off")
                for name in order:
                    record = records[name]
                    root = mounts[name] / f"w{number}-r{round_number}"
                    root.mkdir()
                    time.sleep(SETTLE)
                    spent = cpu_seconds(record.pid)
                    feed_spent = thread_cpu_seconds(record.pid, FEED_THREAD)
                    before = served(record.socket)
                    started = time.perf_counter()
                    run(root)
                    elapsed = time.perf_counter() - started
                    time.sleep(SETTLE)
                    spent = cpu_seconds(record.pid) - spent
                    feed_spent = thread_cpu_seconds(record.pid, FEED_THREAD) - feed_spent
                    asked = served(record.socket) - before
                    times.setdefault(workload, {}).setdefault(name, []).append(elapsed)
                    cpu.setdefault(workload, {}).setdefault(name, []).append(spent)
                    requests.setdefault(workload, {}).setdefault(name, []).append(asked)
                    if name == "on":
                        feed_cpu.setdefault(workload, []).append(feed_spent)
                    (root / "big").unlink(missing_ok=True)  # no daemon holds GBs of them
                    if args.verbose:
                        print(
                            f"{workload} feed {name}: {elapsed * 1000:.0f} ms, CPU "
                            f"{spent * 1000:.0f} ms (the feed's thread {feed_spent * 1000:.0f} "
                            f"ms), {asked.total:,} requests, load {os.getloadavg()[0]:.1f}",
                            flush=True,
                        )
                    if name == "on":
                        base = mounts["on"]
                        left.update(
                            str(p.relative_to(base))
                            for p in root.rglob("*")
                            if not p.is_dir() or p.is_symlink()
                        )
            loads.append(os.getloadavg()[0])
        (mounts["on"] / "STOP").write_text("")
        seen_count = int(watcher.stdout.readline())
        seen = {watcher.stdout.readline().rstrip("\n") for _ in range(seen_count)}
        watcher.wait(timeout=60)
        results = []
        for workload, by_feed in times.items():
            off, on = statistics.median(by_feed["off"]), statistics.median(by_feed["on"])
            pairs = zip(by_feed["on"], by_feed["off"], strict=True)
            ratio = statistics.median(a / b for a, b in pairs)
            used = cpu[workload]
            cpu_off, cpu_on = statistics.median(used["off"]), statistics.median(used["on"])
            cpu_pairs = zip(used["on"], used["off"], strict=True)
            cpu_ratio = statistics.median(a / b for a, b in cpu_pairs if b)
            feed_thread = statistics.median(feed_cpu[workload])
            served_by = {
                name: statistics.median(r.total for r in runs)
                for name, runs in requests[workload].items()
            }
            results.append(
                Result(
                    f"{workload}: feed on vs off",
                    on * 1000,
                    off * 1000,
                    "ms",
                    "at most 5% slower",
                    ratio - 1 <= 0.05,
                    note=f"wall {ratio - 1:+.1%}; the daemon's CPU {cpu_on * 1000:.0f} vs "
                    f"{cpu_off * 1000:.0f} ms ({cpu_ratio - 1:+.1%}; the feed's thread "
                    f"{feed_thread * 1000:.0f} ms); kernel requests {served_by['on']:,.0f} vs "
                    f"{served_by['off']:,.0f} ({requests[workload]['on'][-1].summary(4)}); "
                    f"medians of {args.rounds} rounds, in turns (the costs: of each round's "
                    "ratio)",
                )
            )
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(
            f"change feed benchmarks (python {sys.version.split()[0]}, load average {load}; "
            f"1-minute load over the rounds {min(loads):.1f} to {max(loads):.1f}, median "
            f"{statistics.median(loads):.1f}, on {os.cpu_count()} CPUs)"
        )
        for result in results:
            print(result.line())
        missing = left - seen
        print(
            f"the watcher saw {len(seen):,} paths; of the {len(left):,} files the workloads "
            f"left, {len(missing):,} missing"
        )
        return 0 if not missing and (args.quick or all(r.met for r in results)) else 1
    finally:
        if watcher is not None:
            if watcher.poll() is None:
                watcher.kill()
            watcher.wait()
            assert watcher.stdout is not None
            watcher.stdout.close()
        for record in records.values():
            with connect(record.socket) as fs:
                fs.unmount()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
        if previous is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous


if __name__ == "__main__":
    sys.exit(main())
