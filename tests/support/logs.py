"""The log guard: a test fails if workspacefs logged an error while it ran.

A bug in a FUSE handler is answered ``EIO`` and logged (the mount must live on), an
exception in a daemon's request is answered 500 and logged: a test that only looks
at what the caller got would pass through both. So every error a ``workspacefs.*``
logger records (ERROR or above, any thread of the test process) during a test's
setup, call or teardown fails the test, as s3ql's ``pytest_checklogs`` does, unless
the test declares it with ``@pytest.mark.logs_errors("regex", ...)``: each error's
message must then match one of the patterns (``re.search``).

Daemons run in processes of their own: ``support.daemon.stop`` reads the
errors a daemon wrote to its log file and hands them to the same guard.

This module is a pytest plugin (tests/conftest.py loads it): the check runs after a
test's teardown, which also tears down the module and session fixtures its last test
used, so what they log counts too.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

LOGGER = "workspacefs"
MARKER = "logs_errors"


@dataclass(frozen=True, slots=True)
class Logged:
    """One error logged during a test."""

    source: str
    """The logger's name, after ``daemon PID`` for a daemon's line."""
    level: str
    message: str

    def __str__(self) -> str:
        return f"{self.level} {self.source}: {self.message}"


class ErrorLog(logging.Handler):
    """Keeps what ``workspacefs`` loggers record at ERROR and above, until taken."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self._guard = threading.Lock()  # FUSE handlers log from the mount's thread
        self._logged: list[Logged] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message += f" ({record.exc_info[1]!r})"
        self.add([Logged(record.name, record.levelname, message)])

    def add(self, logged: Iterable[Logged]) -> None:
        """Count ``logged`` too (what another process logged)."""
        with self._guard:
            self._logged.extend(logged)

    def take(self) -> list[Logged]:
        """What was logged since the last call."""
        with self._guard:
            taken, self._logged = self._logged, []
        return taken


ERRORS = ErrorLog()


_INSTALLED = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    # A session run inside another (pytester) finds the handler there and leaves it.
    logger = logging.getLogger(LOGGER)
    config.stash[_INSTALLED] = ERRORS not in logger.handlers
    if config.stash[_INSTALLED]:
        logger.addHandler(ERRORS)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_INSTALLED, False):
        logging.getLogger(LOGGER).removeHandler(ERRORS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    try:
        yield
    except BaseException:
        ERRORS.take()  # a teardown that failed reports itself; the next test starts clean
        raise
    check(item)


def expected_patterns(item: pytest.Item) -> list[re.Pattern[str]]:
    """The patterns of the errors ``item`` declares (its ``logs_errors`` markers)."""
    patterns: list[re.Pattern[str]] = []
    for marker in item.iter_markers(MARKER):
        if not marker.args:
            raise pytest.UsageError(f"{item.nodeid}: logs_errors needs the errors' patterns")
        patterns += [re.compile(pattern) for pattern in marker.args]
    return patterns


def unexpected(logged: Sequence[Logged], patterns: Sequence[re.Pattern[str]]) -> list[Logged]:
    """The errors no pattern matches."""
    return [e for e in logged if not any(p.search(e.message) for p in patterns)]


def check(item: pytest.Item) -> None:
    """Fail ``item`` if something it did not declare was logged since the last check."""
    left = unexpected(ERRORS.take(), expected_patterns(item))
    if left:
        lines = "\n".join(f"  {e}" for e in left)
        pytest.fail(
            f"workspacefs logged errors during this test (a test that provokes them says"
            f" so with @pytest.mark.{MARKER}(pattern, ...)):\n{lines}",
            pytrace=False,
        )


# A daemon's log lines, as daemon/__main__.py formats them:
# "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s".
_DAEMON_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d [\d:,.]+ (?P<pid>\d+) (?P<level>[A-Z]+) (?P<name>\S+): (?P<msg>.*)$"
)


def _ours(name: str) -> bool:
    return name == LOGGER or name.startswith(f"{LOGGER}.")


def daemon_logged(log: str | Path, pid: int, level: int = logging.ERROR) -> list[Logged]:
    """What the daemon ``pid`` wrote to its ``log`` file through a ``workspacefs``
    logger at ``level`` or above (the file may hold earlier daemons' lines)."""
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        match = _DAEMON_LINE.match(line)
        if not match or int(match["pid"]) != pid or not _ours(match["name"]):
            continue
        if logging.getLevelNamesMapping().get(match["level"], 0) >= level:
            found.append(Logged(f"daemon {pid} {match['name']}", match["level"], match["msg"]))
    return found
