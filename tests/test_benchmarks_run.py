"""The benchmarks still run (tiny sizes, no timing asserted)."""

from benchmarks import bench_tree


def test_tree_benchmarks_run(capsys: object) -> None:
    assert bench_tree.main(["--quick"]) == 0
