"""The Podman sandbox against plain Podman and against tmpfs, measured in the same run.

Run: ``scripts/bench.sh sandbox`` (or ``python -m benchmarks.bench_sandbox [--quick]``).

- Start to first exec: ``PodmanSandbox()`` (FUSE mount, overlay, container)
  until ``exec("true")`` returns, against a one-shot ``podman run --rm true``
  on the same root filesystem.
- Exec round trip: ``sandbox.exec("true")`` (runner, process group, two
  snapshots, a diff) against a bare ``podman exec`` of ``true`` in the same
  container.
- Agent loop: ``git clone`` of a small repository, its tests, ``git status``
  and ``grep -r``, each one ``exec``, in the workspace mount against the same
  container's tmpfs (``/dev/shm``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from workspacefs import InMemoryFilesystem
from workspacefs.sandbox import PodmanSandbox, containers_conf, preflight

from ._common import Result

GIT = "git -c user.name=bench -c user.email=bench@example.invalid -c gc.auto=0"


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def podman(*args: str) -> None:
    subprocess.run(
        ["podman", *args],
        check=True,
        capture_output=True,
        env={"CONTAINERS_CONF": containers_conf(), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"},
    )


def write_project(fs: InMemoryFilesystem, root: str, modules: int) -> None:
    """A small Python project: a package of ``modules`` modules and a test for each."""
    fs.write(f"{root}/README.md", "# calc\n\nA small project for the agent-loop benchmark.\n")
    fs.write(f"{root}/calc/__init__.py", "")
    fs.write(f"{root}/tests/__init__.py", "")
    for i in range(modules):
        fs.write(
            f"{root}/calc/op{i}.py",
            f'"""Operation {i}."""\n\n\ndef op{i}(x: int) -> int:\n    return x * {i} + 1\n',
        )
        fs.write(
            f"{root}/tests/test_op{i}.py",
            f"import unittest\n\nfrom calc.op{i} import op{i}\n\n\n"
            f"class TestOp{i}(unittest.TestCase):\n    def test_it(self) -> None:\n"
            f"        self.assertEqual(op{i}(2), {2 * i + 1})\n",
        )


def loop_steps(base: str) -> list[tuple[str, str]]:
    return [
        ("git clone", f"{GIT} clone -q {base}/origin {base}/work"),
        ("tests", f"cd {base}/work && python3 -B -m unittest -q 2>&1 | tail -1"),
        ("git status", f"cd {base}/work && {GIT} status --porcelain"),
        ("grep -r", f"cd {base}/work && grep -rn 'return x' . | wc -l"),
    ]


def agent_loop(box: PodmanSandbox, base: str, rounds: int) -> dict[str, float]:
    """Median seconds of each step over ``rounds`` (a fresh clone each round)."""
    times: dict[str, list[float]] = {}
    for _ in range(rounds):
        box.exec(f"rm -rf {base}/work")
        for name, command in loop_steps(base):
            result = box.exec(command, timeout=600)
            if not result.ok:
                raise RuntimeError(f"{name} failed in {base}: {result.stderr or result.stdout}")
            times.setdefault(name, []).append(result.duration)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    problems = preflight()
    if problems:
        print("sandbox benchmarks skipped: " + "; ".join(problems))
        return 0
    starts, rounds, modules, execs = (2, 1, 20, 5) if args.quick else (5, 3, 200, 30)

    first_exec, one_shot = [], []
    for _ in range(starts):
        started = time.perf_counter()
        with PodmanSandbox() as box:
            box.exec("true")
            first_exec.append(time.perf_counter() - started)
        one_shot.append(
            timed(lambda: podman("run", "--rm", "--network=none", "--rootfs", "/:O", "true"))
        )

    fs = InMemoryFilesystem(mount_point="/workspace")
    write_project(fs, "/workspace/origin", modules)
    with PodmanSandbox(fs) as box:
        setup = f"cd origin && {GIT} init -q -b main && {GIT} add -A && {GIT} commit -qm initial"
        if not box.exec(setup).ok:
            raise RuntimeError("could not set the project up")
        box.exec("true")
        ours = [box.exec("true").duration for _ in range(execs)]
        bare = [timed(lambda: podman("exec", box.name, "true")) for _ in range(execs)]
        box.exec("mkdir -p /dev/shm/bench && cp -a /workspace/origin /dev/shm/bench/")
        on_mount = agent_loop(box, "/workspace", rounds)
        on_tmpfs = agent_loop(box, "/dev/shm/bench", rounds)

    start_ms, one_shot_ms = statistics.median(first_exec) * 1e3, statistics.median(one_shot) * 1e3
    exec_ms, bare_ms = statistics.median(ours) * 1e3, statistics.median(bare) * 1e3
    results = [
        Result(
            "start to first exec (baseline: podman run --rm true)",
            start_ms,
            one_shot_ms,
            "ms",
            "under 3x a one-shot run",
            start_ms < 3 * one_shot_ms,
        ),
        Result(
            "exec round trip of `true` (baseline: bare podman exec)",
            exec_ms,
            bare_ms,
            "ms",
            "under 1.5x a bare exec",
            exec_ms < 1.5 * bare_ms,
        ),
    ]
    for name in on_mount:
        mount_ms, tmpfs_ms = on_mount[name] * 1e3, on_tmpfs[name] * 1e3
        results.append(
            Result(
                f"agent loop: {name}, {modules} modules (baseline: tmpfs)",
                mount_ms,
                tmpfs_ms,
                "ms",
                "under 3x tmpfs",
                mount_ms < 3 * tmpfs_ms,
            )
        )
    total_mount, total_tmpfs = sum(on_mount.values()) * 1e3, sum(on_tmpfs.values()) * 1e3
    results.append(
        Result(
            "agent loop: all four steps (baseline: tmpfs)",
            total_mount,
            total_tmpfs,
            "ms",
            "under 3x tmpfs",
            total_mount < 3 * total_tmpfs,
        )
    )
    print(
        f"sandbox benchmarks (python {sys.version.split()[0]}); ratio = times better "
        "than the baseline (<1: slower)"
    )
    for result in results:
        print(result.line())
    return 0 if all(r.met for r in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
