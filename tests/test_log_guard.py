"""The log guard (tests/support/logs.py) run on a session of its own."""

from __future__ import annotations

import pytest

TESTS = """
import logging
import threading

import pytest

log = logging.getLogger("workspacefs.fuse._operations")


def test_a_warning_passes():
    log.warning("out of memory in read: is the budget too high?")


def test_another_library_passes():
    logging.getLogger("hypercorn.error").error("not workspacefs")


def test_an_error_fails():
    log.error("bug in FUSE handler read")


def test_an_error_in_another_thread_fails():
    thread = threading.Thread(target=log.error, args=("bug in FUSE handler write",))
    thread.start()
    thread.join()


@pytest.mark.logs_errors("bug in FUSE handler")
def test_a_declared_error_passes():
    log.exception("bug in FUSE handler read", exc_info=KeyError(424242))


@pytest.mark.logs_errors("forget failed")
def test_an_error_declared_otherwise_fails():
    log.error("bug in FUSE handler read")


@pytest.fixture(scope="module")
def noisy_module():
    yield
    logging.getLogger("workspacefs.fuse._mount").error("FUSE loop did not stop")


def test_an_error_in_a_module_fixture_fails_its_last_test(noisy_module):
    pass
"""


def test_a_test_fails_when_workspacefs_logs_an_error_it_did_not_declare(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_guarded=TESTS)
    pytester.makeini("[pytest]\nmarkers =\n    logs_errors: declared errors\n")
    result = pytester.runpytest_inprocess("-p", "support.logs", "--strict-markers")
    result.assert_outcomes(passed=7, errors=4)
    result.stdout.fnmatch_lines_random(
        [
            "ERROR test_guarded.py::test_an_error_fails*",
            "ERROR test_guarded.py::test_an_error_in_another_thread_fails*",
            "ERROR test_guarded.py::test_an_error_declared_otherwise_fails*",
            "ERROR test_guarded.py::test_an_error_in_a_module_fixture_fails_its_last_test*",
            "  ERROR workspacefs.fuse._operations: bug in FUSE handler write",
            "  ERROR workspacefs.fuse._mount: FUSE loop did not stop",
        ]
    )
