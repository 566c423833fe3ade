"""workspacefs's MCP server against the reference filesystem server, on the same tree.

The reference is ``@modelcontextprotocol/server-filesystem`` from npm, installed
into ``.cache/mcp-reference`` (kept out of git) on first use; without npm, or
when the install fails, the reference is skipped and the reason printed. Four
servers get a copy each of the same tree (this project's sources, four times
over: about 2,000 files) and are driven alike by the MCP SDK's own client over
stdio, one call at a time; each call is timed at the client:

* ``workspacefs mcp --from COPY`` (memory): an in-memory workspace loaded from the copy;
* ``workspacefs mcp --host COPY`` (host): the tools on the copy itself;
* ``workspacefs mcp MOUNTPOINT`` (mount): a running daemon's workspace, started with
  ``workspacefs mount --from COPY`` (the daemon serves the session itself); skipped,
  with the reason, where FUSE cannot mount;
* ``node server-filesystem COPY`` (reference).

Tasks, ours / the reference's tool: read (read_file / read_text_file), range
read (50 lines: offset+limit / head), write (4 KB), edit (one replacement),
multi-edit (three in one call: multi_edit / edit_file's edit list), list (ls /
list_directory), file info (stat / get_file_info), move (mv / move_file, back
and forth), glob (``**/*.py``: glob / search_files), grep (a regex over every
``.py`` file: grep; the reference has no content search, so an agent lists the
files with search_files and reads them with read_multiple_files, 100 a call, and
searches the text itself: that is what is timed for it), and start (spawn to the
first tools/list answer). Printed per task: p50 and p99 of each server, and
ratio = reference p50 / ours (>1: ours is faster); the target is ours no slower
at p50 (the issue's: a mount's start within 250 ms).

The machine may be shared: ``--repeat N`` measures everything N times, in turn, and
prints the median of each figure over the runs, with the load average before and
after. ``--servers mount,reference`` drives only those (ratios need the reference).

Run: ``scripts/bench.sh mcp`` (or ``python -m benchmarks.bench_mcp [--quick] [--repeat N]``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, types

from ._common import Result, scratch_dir

PACKAGE = "@modelcontextprotocol/server-filesystem"
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "mcp-reference"
SCRIPT = CACHE / "node_modules" / PACKAGE / "dist" / "index.js"
SOURCE_ROOT = Path(__file__).resolve().parents[1]
TREE_PARTS = ("src", "tests", "docs", "benchmarks")
READ = "src/workspacefs/fs/_memory.py"
LISTED = "src/workspacefs/tools"
GREP = r"def [a-z_]+\(self, path"
EDITED = "bench/edit.py"


def install_reference() -> tuple[Path | None, str]:
    """The reference server's script, installed with npm if it is not yet; or why not."""
    if SCRIPT.exists():
        return SCRIPT, ""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None, "npm or node is missing (apt-get install npm)"
    CACHE.mkdir(parents=True, exist_ok=True)
    command = ["npm", "install", "--prefix", str(CACHE), PACKAGE, "--no-audit", "--no-fund"]
    try:
        done = subprocess.run(
            [*command, "--loglevel=error"], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        return None, "npm install timed out"
    if done.returncode != 0 or not SCRIPT.exists():
        return None, f"npm install failed: {done.stderr.strip().splitlines()[-1:]}"
    return SCRIPT, ""


def build_tree(root: Path, copies: int) -> int:
    """``copies`` copies of this project's sources under ``root`` (the first at its top),
    plus the files the changing tasks work on; the file count."""
    for copy in range(copies):
        base = root if copy == 0 else root / f"copy{copy}"
        for part in TREE_PARTS:
            shutil.copytree(
                SOURCE_ROOT / part,
                base / part,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
    (root / "bench").mkdir()
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(60))
    (root / EDITED).write_text("A = 0\nB = 0\nC = 0\nD = 0\n" + body)
    (root / "bench/m0.txt").write_text("moved back and forth\n")
    return sum(1 for path in root.rglob("*") if path.is_file())


@dataclass
class Server:
    """One server under test: how to start it, and how it names a path."""

    name: str
    params: StdioServerParameters
    root: Path
    absolute: bool  # the reference takes absolute paths only

    def path(self, relative: str) -> str:
        return str(self.root / relative) if self.absolute else relative


Call = tuple[str, dict[str, Any]]
Task = Callable[[Server, int], list[Call]]
"""The calls of one iteration (``i``) of a task on a server; timed together."""


def _toggle(i: int, names: str) -> list[tuple[str, str]]:
    """``NAME = i % 2`` -> the other value, for each name: an edit that can repeat."""
    return [(f"{n} = {i % 2}\n", f"{n} = {(i + 1) % 2}\n") for n in names]


def _edit(server: Server, i: int, names: str) -> Call:
    pairs = _toggle(i, names)
    if server.absolute:
        edits = [{"oldText": old, "newText": new} for old, new in pairs]
        return "edit_file", {"path": server.path(EDITED), "edits": edits}
    if len(pairs) == 1:
        old, new = pairs[0]
        return "edit_file", {"path": EDITED, "old_string": old, "new_string": new}
    edits = [{"old_string": old, "new_string": new} for old, new in pairs]
    return "multi_edit", {"path": EDITED, "edits": edits}


def _move(server: Server, i: int) -> Call:
    source, destination = (f"bench/m{i % 2}.txt", f"bench/m{(i + 1) % 2}.txt")
    if server.absolute:
        return "move_file", {
            "source": server.path(source),
            "destination": server.path(destination),
        }
    return "mv", {"source": source, "destination": destination}


CONTENT = "x" * 63 + "\n"
TASKS: dict[str, Task] = {
    "read": lambda s, i: [
        ("read_text_file", {"path": s.path(READ)}) if s.absolute else ("read_file", {"path": READ})
    ],
    "range read (50 lines)": lambda s, i: [
        ("read_text_file", {"path": s.path(READ), "head": 50})
        if s.absolute
        else ("read_file", {"path": READ, "limit": 50})
    ],
    "write (4 KB)": lambda s, i: [
        ("write_file", {"path": s.path("bench/out.txt"), "content": CONTENT * 64})
    ],
    "edit": lambda s, i: [_edit(s, i, "A")],
    "multi-edit (3)": lambda s, i: [_edit(s, i, "BCD")],  # not A: edit leaves it either way
    "list": lambda s, i: [
        ("list_directory", {"path": s.path(LISTED)}) if s.absolute else ("ls", {"path": LISTED})
    ],
    "file info": lambda s, i: [
        ("get_file_info", {"path": s.path(READ)}) if s.absolute else ("stat", {"path": READ})
    ],
    "move": lambda s, i: [_move(s, i)],
    "glob **/*.py": lambda s, i: [
        ("search_files", {"path": str(s.root), "pattern": "**/*.py"})
        if s.absolute
        else ("glob", {"pattern": "**/*.py"})
    ],
}


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"{name}({arguments}) failed: {_text(result)[:300]}")
    return _text(result)


async def _grep(client: Client, server: Server) -> int:
    """Matching lines of ``GREP`` in every ``.py`` file, as an agent gets them."""
    if not server.absolute:
        arguments = {"pattern": GREP, "glob": "*.py", "max_results": 1000}
        found = await _call(client, "grep", arguments)
        return found.count("\n")
    listed = await _call(client, "search_files", {"path": str(server.root), "pattern": "**/*.py"})
    paths = [line for line in listed.splitlines() if line.endswith(".py")]
    pattern, matches = re.compile(GREP), 0
    for start in range(0, len(paths), 100):
        text = await _call(client, "read_multiple_files", {"paths": paths[start : start + 100]})
        matches += sum(1 for line in text.splitlines() if pattern.search(line))
    return matches


Timings = dict[str, list[float]]


async def _measure(server: Server, rounds: int, grep_rounds: int) -> Timings:
    timings: Timings = {task: [] for task in TASKS}
    timings["grep"] = []
    async with Client(server.params, read_timeout_seconds=300) as client:
        # Warm-ups first; an even number of calls in all, so that an edit or a move
        # toggled back and forth leaves its file as it found it, for the next run.
        warm = 1 + (rounds % 2 == 0)
        for task, calls in TASKS.items():
            for i in range(rounds + warm):
                started = time.perf_counter()
                for name, arguments in calls(server, i):
                    await _call(client, name, arguments)
                if i >= warm:
                    timings[task].append(time.perf_counter() - started)
        for i in range(grep_rounds + 1):
            started = time.perf_counter()
            await _grep(client, server)
            if i:
                timings["grep"].append(time.perf_counter() - started)
    return timings


async def _start(server: Server, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        async with Client(server.params, read_timeout_seconds=300) as client:
            await client.list_tools()
            times.append(time.perf_counter() - started)
    return times


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1e3


def _environment(runtime: Path | None = None) -> dict[str, str]:
    env = {
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(SOURCE_ROOT / "src"), os.environ.get("PYTHONPATH")) if p
        )
    }
    if runtime is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime)
    return env


OURS = [sys.executable, "-m", "workspacefs.cli"]
SERVERS = ("memory", "host", "mount", "reference")


@contextlib.contextmanager
def _mounted(tree: Path, scratch: Path) -> Iterator[tuple[Path, Path] | str]:
    """A daemon serving a workspace loaded from ``tree`` (its runtime directory and
    mount point), or why there is none."""
    from workspacefs.fuse import unavailable_reason

    reason = unavailable_reason()
    if reason:
        yield f"mount skipped: {reason}"
        return
    runtime, point = scratch / "run", scratch / "mnt"
    runtime.mkdir(mode=0o700)
    point.mkdir()
    env = {**os.environ, **_environment(runtime)}
    command = [*OURS, "mount", "--from", str(tree), "--store", str(scratch / "store"), str(point)]
    started = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    if started.returncode != 0:
        yield f"mount skipped: {started.stderr.strip()[-300:]}"
        return
    try:
        yield runtime, point
    finally:
        subprocess.run([*OURS, "unmount", str(point)], env=env, capture_output=True, timeout=120)


@contextlib.contextmanager
def _not_chosen() -> Iterator[str]:
    yield "mount not chosen"


def _servers(
    trees: dict[str, Path], script: Path | None, mounted: tuple[Path, Path] | str
) -> list[Server]:
    env = _environment()

    def ours(*args: str, environment: dict[str, str] = env) -> StdioServerParameters:
        return StdioServerParameters(
            command=OURS[0], args=[*OURS[1:], "mcp", *args], env=environment
        )

    servers = [
        Server(name, ours(option, str(trees[name])), trees[name], False)
        for name, option in (("memory", "--from"), ("host", "--host"))
        if name in trees
    ]
    if not isinstance(mounted, str):
        runtime, point = mounted
        params = ours(str(point), environment=_environment(runtime))
        servers.append(Server("mount", params, point, False))
    if script is not None:
        node = shutil.which("node") or "node"
        params = StdioServerParameters(command=node, args=[str(script), str(trees["reference"])])
        servers.append(Server("reference", params, trees["reference"], True))
    return servers


def _load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    parser.add_argument("--rounds", type=int, default=None, help="calls per task")
    parser.add_argument("--repeat", type=int, default=1, help="runs, medians printed")
    parser.add_argument(
        "--servers",
        default=",".join(SERVERS),
        help=f"the servers to drive, of {', '.join(SERVERS)} (comma-separated; default: all)",
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.servers.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SERVERS))
    if unknown or not chosen:
        parser.error(f"--servers: unknown {', '.join(unknown) or '(none given)'}")
    rounds = args.rounds or (3 if args.quick else 100)
    grep_rounds, start_rounds = (1, 1) if args.quick else (10, 10)
    copies = 1 if args.quick else 4
    script, why = install_reference() if "reference" in chosen else (None, "not chosen")
    scratch = scratch_dir("bench-mcp-")
    before = _load()
    runs: list[dict[str, Timings]] = []
    try:
        trees = {name: scratch / name for name in chosen}
        files = max(build_tree(tree, copies) for tree in trees.values())
        mounting = _mounted(trees["mount"], scratch) if "mount" in chosen else _not_chosen()
        with mounting as mounted:
            servers = _servers(trees, script, mounted)
            for _ in range(args.repeat):
                results: dict[str, Timings] = {}
                for server in servers:
                    results[server.name] = anyio.run(_measure, server, rounds, grep_rounds)
                    results[server.name]["start"] = anyio.run(_start, server, start_rounds)
                runs.append(results)
    finally:
        subprocess.run(["fusermount3", "-uz", str(scratch / "mnt")], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"MCP servers on the same {files:,}-file tree, {rounds} calls a task, "
        f"{args.repeat} run(s) (python {sys.version.split()[0]}); ms per call at the "
        "client, p50 / p99" + (", medians over the runs" if args.repeat > 1 else "")
    )
    print(f"{before} before, {_load()} after")
    if script is None and "reference" in chosen:
        print(f"reference skipped: {why}")
    if isinstance(mounted, str) and "mount" in chosen:
        print(mounted)
    _table(runs)
    return 0


Figures = dict[str, dict[str, tuple[float, float]]]
"""p50 and p99 in ms, by server and task."""


def _figures(runs: list[dict[str, Timings]]) -> Figures:
    """Each server's p50 and p99 of each task: the median over the runs."""
    figures: Figures = {}
    for name in runs[0]:
        figures[name] = {}
        for task in runs[0][name]:
            p50 = statistics.median(_p(run[name][task], 0.5) for run in runs)
            p99 = statistics.median(_p(run[name][task], 0.99) for run in runs)
            figures[name][task] = (p50, p99)
    return figures


def _table(runs: list[dict[str, Timings]]) -> None:
    figures = _figures(runs)
    names = list(figures)
    header = "".join(f"{name + ' p50/p99':>22}" for name in names)
    print(f"{'task':<22}{header}")
    for task in figures[names[0]]:
        cells = "".join(f"{figures[n][task][0]:>11.2f}{figures[n][task][1]:>11.2f}" for n in names)
        print(f"{task:<22}{cells}")
    if "reference" not in figures:
        return
    reference = figures["reference"]
    for name in (n for n in names if n != "reference"):
        for task, (p50, p99) in figures[name].items():
            theirs, their_p99 = reference[task]
            target, met = "p50 <= the reference's", p50 <= theirs
            if name == "mount" and task == "start":
                target, met = "p50 <= 250 ms", p50 <= 250
            note = f"p99 {p99:.2f} ms, reference {their_p99:.2f}"
            print(Result(f"{task} ({name})", p50, theirs, "ms", target, met, note=note).line())


if __name__ == "__main__":
    sys.exit(main())
