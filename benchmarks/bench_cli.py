"""The ``workspacefs`` command against a running daemon, and ``import workspacefs``.

Run: ``scripts/bench.sh cli`` (or ``python -m benchmarks.bench_cli [--quick]``).

Each command runs as a user runs it, a new process each time (``python -m
workspacefs.cli``), ``--rounds`` times (10), against one daemon serving a small
workspace; printed: the mean wall time and the mean CPU time of the process. A
loaded machine stretches the wall times, so the baselines are measured in the
same run, alike:

* ``python -c pass``: the interpreter's own start;
* ``import typer``: the command-line library alone;
* a one-command typer app with one option printing a line: what typer costs any
  command, the floor under those that print lines (``status``, ``snapshot``,
  ``restore``, ``diff``);
* the same app printing through rich: the floor under those that print a table
  (``list``, ``log``);
* ``import httpx, httpcore``: what the client's transport would cost on top if it
  were httpx (httpcore loads trio and anyio when they are installed): the reason
  it is the standard library's ``http.client`` (``workspacefs.daemon._transport``).

Targets (issue: a quiet machine): ``list``, ``status``, ``snapshot`` at most
100 ms each, ``import workspacefs`` at most 30 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import workspacefs
from workspacefs.daemon import connect, start

from ._common import Result, private_places, scratch_dir

SOURCE_ROOT = str(Path(workspacefs.__file__).resolve().parents[1])

FLOOR_APP = """
from typing import Annotated
import typer
from rich.console import Console
app = typer.Typer(add_completion=False)
@app.command()
def show(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    Console().print("shown")
app()
"""

PLAIN_FLOOR_APP = FLOOR_APP.replace("from rich.console import Console\n", "").replace(
    'Console().print("shown")', 'print("shown")'
)


@dataclass(frozen=True)
class Timing:
    """Mean wall and CPU milliseconds of one command line over its rounds."""

    wall: float
    cpu: float


def _env() -> dict[str, str]:
    """The children import the workspacefs this benchmark imported."""
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def time_command(argv: list[str], rounds: int) -> Timing:
    """Run ``argv`` ``rounds`` times (after one unmeasured run that warms the caches);
    its mean wall and CPU (user + system) time, in ms."""
    walls, cpus = [], []
    env = _env()
    for i in range(rounds + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        if i:
            walls.append(wall * 1e3)
            cpus.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3)
    return Timing(statistics.mean(walls), statistics.mean(cpus))


def _workspace(mountpoint: Path, files: int) -> None:
    """``files`` small files and a snapshot tagged ``base``, then a change since."""
    with connect(mountpoint) as fs:
        for i in range(files):
            fs.write(f"src/d{i % 10}/f{i}.py", f"print({i})\n")
        fs.snapshot(tag="base")
        fs.write("src/d0/f0.py", "print('changed')\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="two rounds, for smoke tests")
    parser.add_argument("--rounds", type=int, default=None, help="runs a command line")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 10)
    python = sys.executable
    command = [python, "-m", "workspacefs.cli"]
    scratch = scratch_dir("bench-cli-")
    try:
        with private_places(scratch):
            mountpoint = scratch / "ws"
            mountpoint.mkdir()
            record = start(mountpoint)
            try:
                _workspace(mountpoint, 20 if args.quick else 200)
                point = str(mountpoint)
                lines = {
                    "python -c pass": [python, "-c", "pass"],
                    "python -c 'import typer'": [python, "-c", "import typer"],
                    "typer, one command, one option": [python, "-c", PLAIN_FLOOR_APP],
                    "typer + rich, one command, one option": [python, "-c", FLOOR_APP],
                    "python -c 'import httpx, httpcore'": [python, "-c", "import httpx, httpcore"],
                    "python -c 'import workspacefs'": [python, "-c", "import workspacefs"],
                    "workspacefs list": [*command, "list"],
                    "workspacefs status": [*command, "status", point],
                    "workspacefs snapshot": [*command, "snapshot", point],
                    "workspacefs log": [*command, "log", point],
                    "workspacefs diff": [*command, "diff", point, "base"],
                    "workspacefs restore": [*command, "restore", point, "base"],
                }
                timings = {name: time_command(line, rounds) for name, line in lines.items()}
            finally:
                with connect(record.socket) as fs:
                    fs.unmount()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _report(timings, rounds)
    return 0


def _report(timings: dict[str, Timing], rounds: int) -> None:
    print(f"mean of {rounds} runs a command line (python {sys.version.split()[0]}); ms")
    print(f"{'':<42}{'wall':>10}{'cpu':>10}")
    for name, timing in timings.items():
        print(f"{name:<42}{timing.wall:>10.1f}{timing.cpu:>10.1f}")
    floors = {
        "lines": timings["typer, one command, one option"],
        "table": timings["typer + rich, one command, one option"],
    }
    interpreter = timings["python -c pass"]
    for name, target in (
        ("python -c 'import workspacefs'", 30.0),
        ("workspacefs list", 100.0),
        ("workspacefs status", 100.0),
        ("workspacefs snapshot", 100.0),
        ("workspacefs log", None),
        ("workspacefs diff", None),
        ("workspacefs restore", None),
    ):
        table = name in ("workspacefs list", "workspacefs log")
        base = interpreter if name.startswith("python") else floors["table" if table else "lines"]
        against = "python -c pass" if base is interpreter else "typer + rich" if table else "typer"
        ours = timings[name].wall
        print(
            Result(
                f"{name} (vs {against})",
                ours,
                base.wall,
                "ms",
                "report" if target is None else f"<= {target:g} ms (quiet machine)",
                target is None or ours <= target,
                note=f"cpu {timings[name].cpu:.1f} ms, baseline's {base.cpu:.1f} ms",
            ).line()
        )


if __name__ == "__main__":
    sys.exit(main())
