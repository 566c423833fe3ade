"""Shared test configuration: the markers a test gets from where it is, the skips of
tests this machine cannot run, the log guard, stale mounts of killed runs detached."""

from __future__ import annotations

import functools
import os
from collections.abc import Generator, Iterator

import pytest

# Before they are imported: the checks of the suite and of the helpers explain themselves.
pytest.register_assert_rewrite("workspacefs.testing", "support")

# The log guard: a test fails if workspacefs logged an error it did not declare.
pytest_plugins = ["support.logs", "pytester"]  # pytester: the guard's own test

FUSE = (pytest.mark.fuse,)

MARKERS_BY_PATH: dict[str, tuple[pytest.MarkDecorator, ...]] = {
    "tests/fuse/": FUSE,
    "tests/daemon/": FUSE,  # every daemon mounts its workspace
    "tests/daemon/test_verb_table.py": (),  # reads the verb table, starts no daemon
    "tests/seeds/": (),  # the specifications' examples: no mount (Podman's mark themselves)
    "tests/crash/": FUSE,  # daemons killed under their mounts
}
"""Path (from the repository, a directory ending in ``/`` or a file) -> the markers
of every test in it; the longest path that holds a test decides, so a file listed
inside a listed directory has its own. Markers a file or test sets itself stay in it."""

MARKERS_BY_BACKEND: dict[str, tuple[pytest.MarkDecorator, ...]] = {
    "fuse": FUSE,
    "remote": FUSE,  # a daemon, which mounts its workspace
}
"""A test's ``backend`` parameter (tests/tools/ runs each test on every backend) ->
its markers."""


@functools.cache
def _fuse_unavailable() -> str | None:
    from workspacefs.fuse import unavailable_reason

    return unavailable_reason()


@functools.cache
def _sandbox_unavailable() -> str | None:
    from workspacefs.sandbox import preflight

    problems = preflight()
    return "Podman sandbox unavailable: " + "; ".join(problems) if problems else None


UNAVAILABLE = {"fuse": _fuse_unavailable, "container": _sandbox_unavailable}
"""Marker -> why this machine cannot run such tests (None if it can)."""


def _markers(item: pytest.Item) -> list[pytest.MarkDecorator]:
    """The markers the tables give ``item``."""
    path = item.nodeid.split("::", 1)[0]
    holding = [
        prefix
        for prefix in MARKERS_BY_PATH
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix))
    ]
    found = list(MARKERS_BY_PATH[max(holding, key=len)]) if holding else []
    if isinstance(item, pytest.Function) and hasattr(item, "callspec"):
        found += MARKERS_BY_BACKEND.get(str(item.callspec.params.get("backend")), ())
    return found


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Generator[None, None, None]:
    """The tables' markers, before ``-m`` selects by them; then a skip, saying why, for
    each selected test this machine lacks the means for (asked only if one needs them)."""
    for item in items:
        for marker in _markers(item):
            item.add_marker(marker)
    yield
    for item in items:
        for name, unavailable in UNAVAILABLE.items():
            if item.get_closest_marker(name) is not None and (reason := unavailable()):
                item.add_marker(pytest.mark.skip(reason=reason))


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


@pytest.fixture(scope="session", autouse=True)
def _private_data_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Named workspaces' stores and default repositories go to the session's own data
    directory (``XDG_DATA_HOME``), never the user's."""
    previous = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))
    yield
    if previous is None:
        del os.environ["XDG_DATA_HOME"]
    else:
        os.environ["XDG_DATA_HOME"] = previous
