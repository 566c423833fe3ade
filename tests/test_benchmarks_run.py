"""The benchmarks still run (tiny sizes, no timing asserted)."""

from benchmarks import bench_tree


def test_tree_benchmarks_run(capsys: object) -> None:
    assert bench_tree.main(["--quick"]) == 0


def test_fuse_benchmarks_run() -> None:
    from tests.fuse.conftest import fuse_unavailable

    reason = fuse_unavailable()
    if reason:
        import pytest

        pytest.skip(reason)
    from benchmarks import bench_fuse

    assert bench_fuse.main(["--quick"]) == 0
