"""A client whose daemon was SIGKILLed is told so by its next call, and leaves nothing
open: not the kept-alive connection, not the socket of the failed reconnect."""

from __future__ import annotations

import gc
import uuid
import warnings

import pytest

from support.daemon import scratch_dir
from workspacefs import connect
from workspacefs.daemon import DaemonUnreachableError

from .harness import Workspace


def test_a_call_after_the_daemon_was_killed_fails_and_leaks_nothing() -> None:
    with scratch_dir() as scratch:
        workspace = Workspace(scratch / "ws", f"client-{uuid.uuid4().hex[:8]}")
        workspace.mount()
        with connect(workspace.mountpoint) as fs:
            fs.write("a.txt", "kept alive\n")  # the connection stays open after the call
            workspace.kill()
            workspace.detach()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(3):
                    with pytest.raises(DaemonUnreachableError):
                        fs.read("a.txt")
                gc.collect()  # a socket left open says so when it is collected
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
