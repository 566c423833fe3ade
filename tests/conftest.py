"""Shared test configuration."""

import pytest

pytest.register_assert_rewrite("workspacefs.testing")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Detach stale mounts a killed earlier run left in pytest's temp dirs.

    pytest deletes old temp dirs at startup; a dead FUSE mount inside one
    would fail that with ENOTCONN.
    """
    import tempfile

    from workspacefs.fuse import fuse_mounts, recover

    base = tempfile.gettempdir()
    for point in fuse_mounts():
        if point.startswith(f"{base}/pytest-of-"):
            recover(point)
