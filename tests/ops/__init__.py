import pytest

# Before the checker is imported: its asserts explain themselves in pytest's way.
pytest.register_assert_rewrite("tests.ops.consistency")
