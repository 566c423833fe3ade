"""Tool-call overhead: each agent tool against the bare protocol calls that give the same facts.

A tool call validates its arguments (pydantic), calls the protocol and words
the result for a model; the baseline is the protocol call alone, on the same
in-memory workspace in the same run. Goal: the tool layer adds under 10%.
The walks (grep, glob, ls) meet it. The others do work the bare call does
not, and that work alone is over 10% of the bare call:

* read_file builds the ``cat -n`` page: the read's own lines
  (``ReadResult.lines``) slotted between cached prefixes and joined once,
  plus a scan for over-long lines (~35-40 us for 2,000 lines, about a third of the read).
* edit_file names the line it changed: counting the line breaks before the
  edit is a byte-by-byte ``bytes.count`` (~40 us at the end of a 96 KB file);
  working on the bytes saves the decode, the encode and the second search
  ``str.replace`` makes, which pays for the rest of the tool.
* a 1 KiB write_file pays validation, attribution and its message (~5 us)
  against a ~16 us write.

glibc gives freed memory at the top of the heap back to the system once it
passes 128 KiB, and the next call faults it in again; whether a 2,000-line
call crosses that line depends on the heap's layout, so a run can show one
figure ~50 us slower than the next (``MALLOC_TRIM_THRESHOLD_=100000000``
rules it out).

Run: ``scripts/bench.sh tools`` (or ``python -m benchmarks.bench_tools [--quick]``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from workspacefs import InMemoryFilesystem
from workspacefs.tools import ToolContext, ToolRegistry, UndoableToolset, filesystem_tools

from ._common import Result

GOAL = 1.10
"""Tool time over bare time that meets the goal."""


def best(action: Callable[[], object], rounds: int, per_round: int) -> float:
    """Fastest mean seconds per call over ``rounds`` rounds of ``per_round`` calls."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(per_round):
            action()
        times.append((time.perf_counter() - started) / per_round)
    return min(times)


def compare(
    name: str, tool: Callable[[], object], bare: Callable[[], object], rounds: int, per_round: int
) -> Result:
    """Time both, interleaved so drift hits them alike; microseconds per call."""
    tool_s = bare_s = float("inf")
    for _ in range(rounds):
        tool_s = min(tool_s, best(tool, 1, per_round))
        bare_s = min(bare_s, best(bare, 1, per_round))
    overhead = (tool_s / bare_s - 1) * 100
    return Result(
        f"{name} ({overhead:+.1f}%)",
        tool_s * 1e6,
        bare_s * 1e6,
        "us",
        f"tool <= {GOAL:.2f} x bare",
        tool_s <= GOAL * bare_s,
    )


def build_tree(fs: InMemoryFilesystem, files: int) -> None:
    """``files`` small source files, 100 to a directory; one in 1,000 holds a TODO."""
    body = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(5))
    for n in range(files):
        marker = "# TODO: rework\n" if n % 1_000 == 0 else ""
        fs.write(f"pkg{n // 100:04d}/mod{n % 100:02d}.py", marker + body)


def toggling_edit(tools: ToolRegistry, context: ToolContext) -> Callable[[], object]:
    """An edit that alternates between two strings, so every call changes the file."""
    state = {"flip": False}

    def edit() -> object:
        old, new = ("compute(1999,", "compute(1999 ,")
        if state["flip"]:
            old, new = new, old
        state["flip"] = not state["flip"]
        return tools.call(
            "edit_file",
            {"path": "big/file.py", "old_string": old, "new_string": new},
            context=context,
        )

    return edit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    parser.add_argument("--files", type=int, default=None, help="files in the grep tree")
    args = parser.parse_args(argv)
    files = args.files or (2_000 if args.quick else 50_000)
    # Many short interleaved rounds: the fastest of each survives a busy machine's noise.
    rounds, walks = (2, 1) if args.quick else (15, 5)

    fs = InMemoryFilesystem()
    tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)

    def call(name: str, **arguments: object) -> Callable[[], object]:
        return lambda: tools.call(name, arguments, context=context)

    lines = (f"    value_{i} = compute({i}, 'x' * 40)  # line\n" for i in range(2_000))
    fs.write_bytes("big/file.py", "".join(lines).encode())
    for i in range(500):
        fs.write(f"listing/entry{i:03d}.txt", "x" * i)

    def ls_bare() -> object:
        return [fs.stat(e.path).size_bytes if e.is_file else None for e in fs.list("listing")]

    flip = {"edit": False}

    def edit_bare() -> object:
        """What any exact-replace edit must do: read, replace once, write back."""
        old, new = ("compute(1999,", "compute(1999 ,")
        if flip["edit"]:
            old, new = new, old
        flip["edit"] = not flip["edit"]
        text = fs.read_bytes("big/file.py").content.decode()
        return fs.write_bytes("big/file.py", text.replace(old, new, 1).encode())

    # The single-file tools first, on a small workspace; then the walks, on the big tree.
    results = [
        compare(
            "read_file, 2,000-line file",
            call("read_file", path="big/file.py"),
            lambda: fs.read("big/file.py"),
            rounds,
            20,
        ),
        compare(
            "ls, 500 entries (bare: list + stat)", call("ls", path="listing"), ls_bare, rounds, 5
        ),
        compare(
            "edit_file, 2,000-line file (bare: read, replace, write)",
            toggling_edit(tools, context),
            edit_bare,
            rounds,
            10,
        ),
        compare(
            "write_file, 1 KiB",
            call("write_file", path="w.txt", content="y" * 1024),
            lambda: fs.write("w.txt", "y" * 1024),
            rounds,
            50,
        ),
    ]

    undo = UndoableToolset(filesystem_tools(fs), fs)
    counter = iter(range(10**9))
    results.append(
        compare(
            "write_file with undo (O(1) snapshot + diff per call)",
            lambda: undo.call("write_file", {"path": "u.txt", "content": str(next(counter))}),
            lambda: tools.call(
                "write_file", {"path": "u.txt", "content": str(next(counter))}, context=context
            ),
            rounds,
            50,
        )
    )

    started = time.perf_counter()
    build_tree(fs, files)
    built_s = time.perf_counter() - started
    results += [
        compare(
            f"grep TODO over {files:,} files",
            call("grep", pattern="TODO"),
            lambda: fs.grep("TODO"),
            walks,
            1,
        ),
        compare(
            f"glob **/mod0*.py over {files:,} files",
            call("glob", pattern="**/mod0*.py"),
            lambda: fs.glob("**/mod0*.py"),
            walks,
            1,
        ),
    ]

    print(
        f"tool benchmarks (python {sys.version.split()[0]}; {files:,}-file tree built in "
        f"{built_s:.1f} s); per call, ratio = times faster than the bare protocol call"
    )
    for result in results:
        print(result.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
