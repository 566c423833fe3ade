"""The benchmarks still run (tiny sizes, no timing asserted)."""

import pytest
from benchmarks import bench_archive, bench_fuse, bench_git, bench_host, bench_tools, bench_tree

from workspacefs.fuse import unavailable_reason


def test_tree_benchmarks_run() -> None:
    assert bench_tree.main(["--quick"]) == 0


@pytest.mark.fuse
def test_fuse_benchmarks_run() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    assert bench_fuse.main(["--quick"]) == 0


def test_git_benchmarks_run() -> None:
    assert bench_git.main(["--quick"]) == 0


def test_archive_benchmarks_run() -> None:
    assert bench_archive.main(["--quick"]) == 0


def test_host_benchmarks_run() -> None:
    assert bench_host.main(["--quick"]) == 0


def test_tools_benchmarks_run() -> None:
    assert bench_tools.main(["--quick"]) == 0
