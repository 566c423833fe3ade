"""Shared test configuration."""

import pytest

pytest.register_assert_rewrite("workspacefs.testing")

# The log guard: a test fails if workspacefs logged an error it did not declare.
pytest_plugins = ["support.logs", "pytester"]  # pytester: the guard's own test


def pytest_sessionstart(session: pytest.Session) -> None:
    """Detach stale mounts a killed earlier run left in pytest's temp dirs.

    pytest deletes old temp dirs at startup; a dead FUSE mount inside one
    would fail that with ENOTCONN.
    """
    import contextlib
    import tempfile

    from workspacefs import MountedInsideError
    from workspacefs.fuse import fuse_mounts, recover

    base = tempfile.gettempdir()
    for point in sorted(fuse_mounts(), key=lambda p: p.count("/"), reverse=True):  # inner first
        if point.startswith(f"{base}/pytest-of-"):
            with contextlib.suppress(MountedInsideError):  # a live workspace inside: left
                recover(point)
