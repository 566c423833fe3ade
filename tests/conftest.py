"""Shared test configuration."""

import pytest

pytest.register_assert_rewrite("workspacefs.testing")
