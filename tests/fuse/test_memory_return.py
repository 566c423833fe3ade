"""Memory comes back after deletes and truncates, within the documented bound.

Reproduces what the mount process kept before: all of a deleted tree (the
allocator was told to keep 1 GiB), and whole write buffers behind files
truncated to one chunk (a chunk was a view pinning its buffer). It runs in a
fresh process: the RSS of a test process that has run thousands of tests
says little about one mount.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCENARIO = textwrap.dedent(
    """
    import json, os, sys, time
    from workspacefs import InMemoryFilesystem, mount
    from workspacefs.fuse._allocator import TRIM_AFTER, TRIM_IDLE

    MIB = 1 << 20

    def rss():
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    fs = InMemoryFilesystem()
    point = sys.argv[1]
    with mount(fs, point):
        blob = os.urandom(16 * MIB)
        base = rss()
        for index in range(16):
            with open(os.path.join(point, f"f{index}"), "wb") as handle:
                handle.write(blob)
        grown = rss() - base
        for index in range(8):
            os.truncate(os.path.join(point, f"f{index}"), 64 * 1024)
        for index in range(8, 16):
            os.unlink(os.path.join(point, f"f{index}"))
        bound = base + TRIM_AFTER + 32 * MIB  # slack: the kernel's forgets, Python's heap
        deadline = time.monotonic() + 4 * TRIM_IDLE + 5
        while rss() > bound and time.monotonic() < deadline:
            time.sleep(0.1)
        print(json.dumps({"grown": grown, "settled": rss(), "bound": bound,
                          "held": fs.memory_usage().held}))
    """
)


def test_deleted_and_truncated_data_is_returned(tmp_path: Path) -> None:
    point = tmp_path / "mnt"
    point.mkdir()
    source = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": source}
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(point)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["grown"] > 200 << 20
    assert report["settled"] <= report["bound"], report
    assert report["held"] == 8 * 64 * 1024


CHURN = textwrap.dedent(
    """
    import json, os, sys, time
    from workspacefs.fuse._allocator import TRIM_IDLE, Trimmer, tune
    from workspacefs.store import open_workspace

    MIB = 1 << 20

    def rss():
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    tune()  # as a mount does: freed memory is kept for reuse
    durable, _ = open_workspace(sys.argv[1], memory_budget=8 * MIB)
    fs = durable.fs
    files = {f"f{n}": os.urandom(2 * MIB) for n in range(12)}
    for name, data in files.items():  # three budgets: the budget is a cache now
        fs.write_bytes(name, data)
    trimmer = Trimmer(fs.tree.budget)
    trimmer.start()
    time.sleep(0.2)
    base = rss()
    # What churn leaves in the heap: 64 KiB chunks made and three in four freed again.
    kept = [bytearray(64 << 10) for _ in range(4096)]
    del kept[1::4], kept[1::3], kept[1::2]
    grown = rss() - base
    bound = len(kept) * (64 << 10) + 32 * MIB  # what is in use, and the interpreter's slack
    deadline = time.monotonic() + 4 * TRIM_IDLE + 5
    while rss() - base > bound and time.monotonic() < deadline:
        for name, data in files.items():  # read back: data keeps leaving memory
            assert fs.read_bytes(name).content == data
    trimmer.stop()
    print(json.dumps({"grown": grown, "settled": rss() - base, "bound": bound}))
    durable.close()
    """
)


def test_memory_a_churning_cache_frees_is_returned(tmp_path: Path) -> None:
    # A workspace whose budget is a cache holds its budget while data churns through
    # it; what the heap kept beyond it came back only when the held data dropped.
    source = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", CHURN, str(tmp_path / "store")],
        env={**os.environ, "PYTHONPATH": source},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["grown"] > report["bound"] + (64 << 20), report  # the churn left holes
    assert report["settled"] <= report["bound"], report
