"""The FUSE mount against kernel tmpfs, measured in the same run.

Run: ``scripts/bench.sh fuse`` (or ``python -m benchmarks.bench_fuse [--quick]``).

Every figure is paired with the same operation on a tmpfs directory
(/dev/shm); the ratio says how the mount compares (>1: faster than tmpfs).
"""

from __future__ import annotations

import argparse
import functools
import mmap
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workspacefs import InMemoryFilesystem, Mount, mount
from workspacefs.fuse import RequestStats, libfuse_path

from ._common import GIT_ENV, Result, scratch_dir

MIB = 1 << 20


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def drop_page_cache(path: Path) -> None:
    """Evict a file's pages from the kernel cache (a no-op for tmpfs, whose pages are the data)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def write_file(path: Path, size: int, block: int) -> None:
    """Write ``size`` bytes in ``block``-sized write(2) calls from one page-aligned
    buffer, as fio does: the kernel sends a direct write of an unaligned MiB to a
    FUSE server as two requests (256 pages at most each), of an aligned one as one."""
    with mmap.mmap(-1, block) as buffer:
        buffer.write(os.urandom(block))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for _ in range(size // block):
                os.write(fd, buffer)
        finally:
            os.close(fd)


def read_file(path: Path, block: int) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.read(fd, block):
            pass
    finally:
        os.close(fd)


def random_reads(path: Path, size: int, count: int) -> None:
    rng = random.Random(7)
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(count):
            os.pread(fd, 4096, rng.randrange(0, size // 4096) * 4096)
    finally:
        os.close(fd)


def small_files(root: Path, count: int) -> None:
    payload = b"x" * 100
    for i in range(count):
        path = root / f"f{i}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, payload)
        os.close(fd)
        os.stat(path)
        os.unlink(path)


def missing_xattrs(path: Path, count: int) -> None:
    for _ in range(count):
        try:  # noqa: SIM105 - suppress() would add its own cost to every round trip
            os.getxattr(path, "user.missing")
        except OSError:
            pass


IO_BENCHMARKS: dict[str, Callable[[Path, int, int], float]] = {}


def io_benchmark(name: str) -> Callable[[Callable[[Path, int, int], float]], object]:
    def register(function: Callable[[Path, int, int], float]) -> object:
        IO_BENCHMARKS[name] = function
        return function

    return register


@io_benchmark("seq-write")
def _seq_write(root: Path, size: int, count: int) -> float:
    return size / MIB / timed(lambda: write_file(root / "big", size, MIB))


@io_benchmark("seq-read-cold")
def _seq_read_cold(root: Path, size: int, count: int) -> float:
    drop_page_cache(root / "big")
    return size / MIB / timed(lambda: read_file(root / "big", MIB))


@io_benchmark("seq-read-warm")
def _seq_read_warm(root: Path, size: int, count: int) -> float:
    read_file(root / "big", MIB)
    return size / MIB / timed(lambda: read_file(root / "big", MIB))


@io_benchmark("random-read-cold")
def _random_read_cold(root: Path, size: int, count: int) -> float:
    drop_page_cache(root / "big")
    return count / timed(lambda: random_reads(root / "big", size, count))


@io_benchmark("small-files")
def _small_files(root: Path, size: int, count: int) -> float:
    return count / timed(lambda: small_files(root, count))


@io_benchmark("getxattr")
def _getxattr(root: Path, size: int, count: int) -> float:
    if not (root / "x").exists():  # the C reference server serves its own
        (root / "x").write_bytes(b"")
    missing_xattrs(root / "x", 1000)
    return count / timed(lambda: missing_xattrs(root / "x", count))


def measure_io(name: str, root: Path, size: int, count: int) -> float:
    """Run one I/O benchmark in a fresh process, as a shell tool would hit the mount."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_fuse",
            "--io",
            name,
            str(root),
            str(size),
            str(count),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent.parent,
    )
    return float(result.stdout)


def requests_note(requests: RequestStats) -> str:
    """The requests of one figure and the time their handlers took (the rest of the
    mount's extra time is the round trips)."""
    return f"{requests.summary()}; {requests.total_seconds:.2f} s in handlers"


@dataclass(frozen=True, slots=True)
class ServerTime:
    """How the mount's FUSE thread spent a stretch of time (Linux's schedstat)."""

    running: float
    """Seconds on a CPU: handlers, pyfuse3, libfuse, the kernel's side of each
    request, and polling for the next one."""
    waiting: float
    """Seconds runnable but off a CPU, other threads having them: waiting to serve a
    request, or polling for the next one (a poll offers its CPU to other threads)."""

    def __sub__(self, earlier: ServerTime) -> ServerTime:
        return ServerTime(self.running - earlier.running, self.waiting - earlier.waiting)


def server_time(handle: Mount) -> ServerTime | None:
    """The FUSE thread's time so far (None where the kernel does not tell)."""
    name = f"fuse:{handle.mountpoint}"  # as _mount names the thread
    for thread in threading.enumerate():
        if thread.name == name and thread.native_id is not None:
            try:
                with open(f"/proc/self/task/{thread.native_id}/schedstat") as stats:
                    running, waiting, _ = stats.read().split()
            except (OSError, ValueError):
                return None
            return ServerTime(int(running) / 1e9, int(waiting) / 1e9)
    return None


def elapsed_server_time(before: ServerTime | None, handle: Mount) -> ServerTime | None:
    """The FUSE thread's time since ``before`` (``server_time``)."""
    after = server_time(handle)
    return None if before is None or after is None else after - before


def floor_note(
    ours: float,
    base: float,
    requests: RequestStats,
    kernel_us: float | None,
    server: ServerTime | None,
    *,
    rate: bool,
) -> str:
    """Where the mount's time goes, from the seconds it and tmpfs took: the floor
    (what no server can go below: tmpfs's time plus each request's kernel round trip,
    as the C reference server measured it), above it the handlers and the rest
    (pyfuse3, the loop, waiting for a CPU), and what the FUSE thread did meanwhile
    (``server``). ``rate``: say the floor as a rate's ratio to tmpfs's (higher is
    better), else as a multiple of tmpfs's time."""
    note = ""
    if kernel_us is not None:
        floor = base + requests.total * kernel_us / 1e6
        above = ours - floor
        handlers = requests.total_seconds
        ratio = f"{base / floor:.2f}x" if rate else f"{floor / base:.1f}x"
        note += f"; floor {ratio} tmpfs ({floor:.2f} s) with a C server; above it {above:.2f} s"
        if above > handlers:
            note += f": handlers {handlers:.2f} s, the rest {above - handlers:.2f} s"
        # Else the handlers did work tmpfs does too, which the floor counts in
        # tmpfs's time (a write's copy into memory new to the process, say).
    if server is not None:
        note += (
            f"; the FUSE thread ran {server.running:.2f} s and was ready but off a CPU "
            f"{server.waiting:.2f} s"
        )
    return note


def io_benchmarks(
    handle: Mount, mnt: Path, shm: Path, size_mb: int, small: int, kernel_us: float | None
) -> list[Result]:
    size = size_mb * MIB
    # (title, benchmark, unit, target: at least this share of tmpfs's rate, count,
    # what the rate counts: the seconds each took are that over the rate)
    table = [
        ("sequential write, 1 MiB blocks", "seq-write", "MB/s", 0.5, 0, size_mb),
        ("sequential read, cold", "seq-read-cold", "MB/s", 0.5, 0, size_mb),
        ("sequential read, warm", "seq-read-warm", "MB/s", 0.9, 0, size_mb),
        ("4 KiB random reads, cold", "random-read-cold", "op/s", 0.1, 5000, 5000),
        ("create + stat + unlink, small files", "small-files", "op/s", 0.3, small, small),
    ]
    results = []
    for title, name, unit, target, count, amount in table:
        before, thread = handle.stats(), server_time(handle)
        ours = measure_io(name, mnt, size, count)
        requests, server = handle.stats() - before, elapsed_server_time(thread, handle)
        base = measure_io(name, shm, size, count)
        floor = floor_note(amount / ours, amount / base, requests, kernel_us, server, rate=True)
        results.append(
            Result(
                title,
                ours,
                base,
                unit,
                f">= {target}x tmpfs",
                ours >= target * base,
                higher_is_better=True,
                note=requests_note(requests) + floor,
            )
        )
    for root in (mnt, shm):
        (root / "big").unlink()
    return results


FLOOR_SOURCE = Path(__file__).with_name("fuse_floor.c")


def libfuse_build_flags() -> list[str]:
    """gcc's flags for the libfuse the mount uses (the one pyfuse3 loaded): the
    project's own build of scripts/setup.sh (its pkg-config file, and an rpath to
    it), else the system's. So the C reference server and the mount speak to the
    kernel through the same libfuse."""
    env, rpath = dict(os.environ), []
    library = libfuse_path()
    if library is not None:
        directory = Path(library).parent
        if (directory / "pkgconfig" / "fuse3.pc").is_file():
            env["PKG_CONFIG_PATH"] = str(directory / "pkgconfig")
            rpath = [f"-Wl,-rpath,{directory}"]
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "fuse3"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.split()
    return flags + rpath


@contextmanager
def floor_server(work: Path) -> Iterator[Path | None]:
    """The C reference server (``fuse_floor.c``) mounted at ``work/floor``, built
    against the mount's libfuse; None where it cannot be built or mounted (no gcc, no
    libfuse 3 headers)."""
    binary, mnt = work / "fuse_floor", work / "floor"
    try:
        flags = libfuse_build_flags()
        subprocess.run(
            ["gcc", "-O2", "-o", str(binary), str(FLOOR_SOURCE), *flags],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"no C reference server: {exc}")
        yield None
        return
    mnt.mkdir()
    server = subprocess.Popen([str(binary), str(mnt)])
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(mnt) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        yield mnt if os.path.ismount(mnt) else None
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False, capture_output=True)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """What one uncached request (a getxattr answered ENODATA) costs, in microseconds."""

    mount: float
    """Against the mount."""
    handler: float
    """The mount's handler's share of ``mount``."""
    floor: float | None
    """Against the C reference server: the kernel's and the machine's share."""
    local: float
    """The same call on tmpfs (no server): the caller's own share."""

    @property
    def kernel(self) -> float | None:
        """What a request costs before any server code runs (``floor`` less the
        caller's share)."""
        return None if self.floor is None else self.floor - self.local

    def describe(self) -> str:
        """The line the benchmark prints."""
        text = (
            f"round trip: {self.mount:.1f} us per uncached request (getxattr), "
            f"{self.handler:.1f} us of it in the handler"
        )
        if self.floor is not None:
            text += (
                f"; {self.floor:.1f} us against a C libfuse server "
                f"(benchmarks/fuse_floor.c), {self.local:.1f} us on tmpfs: "
                f"{self.kernel:.1f} us a request before any server code runs"
            )
        return text


ROUND_TRIP_REPEATS = 3
"""How many times each round trip is measured, in turn; the fastest of each counts."""


def round_trip(handle: Mount, mnt: Path, shm: Path, work: Path, count: int) -> RoundTrip:
    """What one request costs: getxattr is never cached, so each call is a round
    trip to the server; the handler's share is the mount's, the C server's
    figure is the kernel's and the machine's, the rest pyfuse3's.

    The three are measured in turn ``ROUND_TRIP_REPEATS`` times and the fastest
    of each is kept: on a busy machine a lone measurement can catch a spell of
    waiting for a CPU (tmpfs's getxattr once took longer than the C server's).
    """
    mount_us, local, floor = float("inf"), float("inf"), float("inf")
    handler = 0.0
    with floor_server(work) as floor_mnt:
        for _ in range(ROUND_TRIP_REPEATS):
            before = handle.stats()
            ours = 1e6 / measure_io("getxattr", mnt, 0, count)
            if ours < mount_us:
                requests = handle.stats() - before
                calls = max(requests.counts.get("getxattr", 1), 1)
                mount_us, handler = ours, requests.seconds.get("getxattr", 0.0) / calls * 1e6
            local = min(local, 1e6 / measure_io("getxattr", shm, 0, count))
            if floor_mnt is not None:
                floor = min(floor, 1e6 / measure_io("getxattr", floor_mnt, 0, count))
    return RoundTrip(mount_us, handler, None if floor_mnt is None else floor, local)


def corpus_source() -> Path:
    """The interpreter's library: tens of thousands of real source files."""
    return Path(sysconfig.get_paths()["stdlib"])


def make_corpus(tarball: Path, kind: str, copies: int) -> str:
    """Write the tarball the workloads extract; returns its description.

    ``small``: two stdlib packages (smoke tests). ``stdlib``: the standard
    library without site-packages and the static libpython, ``copies`` times
    over (a large tree of real sources). ``full``: the interpreter's whole
    library directory with its site-packages (about 59k entries on the
    development VMs).
    """
    source = corpus_source()
    if kind == "small":
        members = [["-C", str(source), "json", "email"]]
    elif kind == "full":
        members = [["-C", str(source.parent), source.name]]
    else:
        members = [
            [
                "--exclude=site-packages",
                "--exclude=config-*",
                f"--transform=s,^{source.name},copy{copy},",
                "-C",
                str(source.parent),
                source.name,
            ]
            for copy in range(copies)
        ]
    # One archive per member list (tar applies every --transform to every
    # member), concatenated into the first.
    parts = [tarball.with_suffix(f".{index}.tar") for index in range(len(members))]
    for part, selection in zip(parts, members, strict=True):
        subprocess.run(["tar", "-cf", str(part), *selection], check=True, stderr=subprocess.DEVNULL)
    for part in parts[1:]:
        subprocess.run(["tar", "-Af", str(parts[0]), str(part)], check=True)
        part.unlink()
    parts[0].rename(tarball)
    listing = subprocess.run(
        ["tar", "-tf", str(tarball)], capture_output=True, text=True, check=True
    ).stdout.count("\n")
    size = tarball.stat().st_size / MIB
    return f"{kind} corpus from {source} ({listing:,} entries, {size:,.0f} MB)"


WORKLOADS = [
    # (name, shell command, target: at most this many times tmpfs's time)
    ("tar -x", "tar -xf {tarball}", 4.0),
    ("git init + add -A + commit", "git init -q . && git add -A && git commit -qm import", 1.7),
    ("git status (first)", "git status --porcelain", 4.0),
    ("git status (again)", "git status --porcelain", 2.0),
    ("grep -r (first)", "grep -r -c 'import os' . > /dev/null || true", 2.5),
    ("grep -r (again)", "grep -r -c 'import os' . > /dev/null || true", 1.5),
    ("rm -rf", "rm -rf ./* .git", 3.0),
]


def drop_caches() -> None:
    """Make the mount cold: the kernel forgets cached pages, dentries and inodes.

    tmpfs keeps its pages and dentries (they are its data), so only the
    mount loses anything.
    """
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as control:
        control.write("3\n")


def run_workload(command: str, cwd: Path, tarball: Path) -> None:
    """Run one of ``WORKLOADS``' shell commands in ``cwd`` (``{tarball}``: the corpus)."""
    done = subprocess.run(
        ["bash", "-c", command.format(tarball=tarball)],
        cwd=cwd,
        env=GIT_ENV,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command!r} failed in {cwd}: {done.stderr[-2000:]}")


def workload_benchmarks(
    handle: Mount,
    mnt: Path,
    shm: Path,
    tarball: Path,
    rounds: int,
    cold: bool,
    kernel_us: float | None,
) -> list[Result]:
    run = functools.partial(run_workload, tarball=tarball)

    samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in WORKLOADS}
    requests: dict[str, RequestStats] = {}
    servers: dict[str, ServerTime | None] = {}
    for _ in range(rounds):
        for name, command, _ in WORKLOADS:
            if cold and name.endswith("(first)"):
                drop_caches()
            before, thread = handle.stats(), server_time(handle)
            ours = timed(functools.partial(run, command, mnt))
            requests[name] = handle.stats() - before
            servers[name] = elapsed_server_time(thread, handle)
            base = timed(functools.partial(run, command, shm))
            samples[name].append((ours, base))
    results = []
    for name, _, limit in WORKLOADS:
        ours = statistics.median(sample[0] for sample in samples[name])
        base = statistics.median(sample[1] for sample in samples[name])
        note = requests_note(requests[name])
        note += floor_note(ours, base, requests[name], kernel_us, servers[name], rate=False)
        results.append(
            Result(
                f"workload: {name}",
                ours,
                base,
                "s",
                f"<= {limit:g}x tmpfs",
                ours <= limit * base,
                note=note,
            )
        )
    return results


def restore_benchmark(mnt: Path, fs: InMemoryFilesystem, files: int) -> Result:
    tree = fs.tree
    with tree.lock:
        directory = tree.mkdir(1, "many")
        for i in range(files):
            if i % 1000 == 0:
                sub = tree.mkdir(directory, f"d{i // 1000}")
            tree.write(tree.create(sub, f"f{i}.txt"), 0, b"content %d\n" % i)
    subprocess.run(
        ["find", str(mnt / "many"), "-type", "f"], check=True, stdout=subprocess.DEVNULL
    )  # the kernel now knows every inode
    samples = []
    for round_ in range(20):
        index = files // 2 + round_
        path = mnt / f"many/d{index // 1000}/f{index}.txt"
        before = fs.snapshot()
        path.write_text("changed through the mount\n")
        samples.append(timed(functools.partial(fs.restore, before)) * 1000)
        assert path.read_text() == f"content {index}\n"
    samples.sort()
    median = samples[len(samples) // 2]
    return Result(
        f"restore, 1 change in {files:,} files, mounted",
        median,
        10.0,
        "ms",
        "<= 10 ms incl. invalidation (baseline: the target)",
        median <= 10,
    )


@contextmanager
def directories() -> Iterator[tuple[Path, Path, Path]]:
    work = scratch_dir("wsfs-bench-")
    mnt, shm = work / "mnt", work / "tmpfs"
    mnt.mkdir()
    shm.mkdir()
    try:
        yield work, mnt, shm
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    parser.add_argument(
        "--corpus",
        choices=["small", "stdlib", "full"],
        help="what the workloads extract (default: small with --quick, else full)",
    )
    parser.add_argument(
        "--copies", type=int, default=8, help="copies of the standard library in the stdlib corpus"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="run the workloads this many times; report medians"
    )
    parser.add_argument(
        "--workloads-only", action="store_true", help="skip the I/O and restore benchmarks"
    )
    parser.add_argument(
        "--no-open-free",
        action="store_true",
        help="open files and directories with requests, as with a stock pyfuse3",
    )
    parser.add_argument(
        "--no-latency-hint",
        action="store_true",
        help="let idle CPUs sleep while the mount serves (see fuse/_latency.py)",
    )
    parser.add_argument(
        "--no-killpriv",
        action="store_true",
        help="let the kernel clear set-ID bits itself (no HANDLE_KILLPRIV_V2; see docs/fuse.md)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="drop the kernel's caches before each '(first)' workload (root)",
    )
    parser.add_argument(
        "--io",
        nargs=4,
        metavar=("NAME", "ROOT", "SIZE", "COUNT"),
        help="run one I/O benchmark and print its figure (internal)",
    )
    args = parser.parse_args(argv)
    if args.io:
        name, root, size, count = args.io
        print(IO_BENCHMARKS[name](Path(root), int(size), int(count)))
        return 0
    size_mb, small, files = (8, 200, 2_000) if args.quick else (512, 5_000, 100_000)
    corpus = args.corpus or ("small" if args.quick else "full")
    results: list[Result] = []
    with directories() as (work, mnt, shm):
        fs = InMemoryFilesystem()
        open_free = False if args.no_open_free else None
        with mount(
            fs,
            mnt,
            allow_other=True,
            open_free=open_free,
            handle_killpriv=False if args.no_killpriv else None,
            latency_hint=not args.no_latency_hint,
        ) as handle:
            trip = round_trip(handle, mnt, shm, work, 20_000 if args.quick else 200_000)
            if not args.workloads_only:
                results += io_benchmarks(handle, mnt, shm, size_mb, small, trip.kernel)
            tarball = work / "corpus.tar"
            print(make_corpus(tarball, corpus, args.copies))
            results += workload_benchmarks(
                handle, mnt, shm, tarball, args.rounds, args.cold, trip.kernel
            )
            if not args.workloads_only:
                results.append(restore_benchmark(mnt, fs, files))
            total = handle.stats()
            mode = "open-free" if handle.open_free else "opens with requests"
            mode += ", CPU latency hint" if handle.latency_hint else ", no CPU latency hint"
            connection = handle.connection
            if connection is not None:
                mode += f"; libfuse {connection.libfuse}: {', '.join(connection.capabilities)}"
    python = sys.version.split()[0]
    # Idle vCPUs halt, and a request wakes one on each side: the mount's
    # figures depend on how busy the machine was, tmpfs's do not.
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"fuse benchmarks (python {python}, {mode}, load average {load}); "
        "ratio = times better than tmpfs"
    )
    print(trip.describe())
    for result in results:
        print(result.line())
    print(f"all requests: {total.summary(top=12)}")
    return 0 if all(r.met for r in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
