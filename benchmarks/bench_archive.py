"""Workspace archives against zip/unzip on the same tree, measured in the same run.

Run: ``scripts/bench.sh archive`` (or ``python -m benchmarks.bench_archive [--quick]``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from workspacefs import HostMount, InMemoryFilesystem
from workspacefs.archive import export_archive, import_archive

from ._common import Result, scratch_dir


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    scratch = scratch_dir("wsfs-archive-bench-")
    try:
        work = scratch / "tree"
        shutil.copytree(stdlib / "json" if args.quick else stdlib, work, symlinks=True)
        size_mb = sum(p.stat().st_size for p in work.rglob("*") if p.is_file()) / 2**20
        fs = InMemoryFilesystem()
        fs.hydrate_from_host(HostMount(str(work), mount_path="."), allowed_roots=[scratch])
        started = time.perf_counter()
        export_archive(fs, scratch / "ours.zip")
        export_s = time.perf_counter() - started
        zip_s = timed(["zip", "-q", "-r", "-y", str(scratch / "plain.zip"), "."], work)
        target = InMemoryFilesystem()
        started = time.perf_counter()
        import_archive(target, scratch / "ours.zip")
        import_s = time.perf_counter() - started
        (scratch / "unzipped").mkdir()
        unzip_s = timed(["unzip", "-q", str(scratch / "plain.zip")], scratch / "unzipped")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results = [
        Result(
            f"export ({size_mb:,.0f} MB; baseline zip -r)",
            size_mb / export_s,
            size_mb / zip_s,
            "MB/s",
            "report",
            True,
            higher_is_better=True,
        ),
        Result(
            f"import ({size_mb:,.0f} MB; baseline unzip to tmpfs)",
            size_mb / import_s,
            size_mb / unzip_s,
            "MB/s",
            "report",
            True,
            higher_is_better=True,
        ),
    ]
    print(f"archive benchmarks (python {sys.version.split()[0]}); ratio = times better than zip")
    for result in results:
        print(result.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
