"""The log guard reads what a daemon logged (tests/support/logs.py, ``stop``)."""

from __future__ import annotations

import logging

from support.daemon import Daemons, stop
from support.logs import daemon_logged


def test_the_guard_reads_the_lines_of_the_daemon_it_stops(daemons: Daemons) -> None:
    first = daemons.start()
    stop(first)
    second = daemons.start()  # the same mount point: the same log file
    stop(second)
    assert first.log == second.log
    logged = daemon_logged(second.log, second.pid, logging.INFO)
    assert logged[0].message == f"serving {second.mountpoint} on {second.socket}"
    assert {e.source for e in logged} == {f"daemon {second.pid} workspacefs.daemon._server"}
    assert not daemon_logged(second.log, second.pid)  # nothing at ERROR
