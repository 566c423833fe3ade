"""A trial mount: what the kernel and libfuse agree on here (``workspacefs doctor``)."""

from __future__ import annotations

import tempfile

from ..fs import InMemoryFilesystem
from ._connection import Connection
from ._mount import mount


def probe_connection() -> Connection | None:
    """Mount an empty workspace on a new temporary directory, note what its INIT
    negotiated, and unmount it.

    Returns:
        The connection, or None with a stock pyfuse3 (which never shows it).

    Raises:
        BackendUnavailableError: The kernel refused the mount, or did not answer.
        BusyError: This process serves a mount already (one FUSE session a process).
    """
    with (
        tempfile.TemporaryDirectory(prefix="workspacefs-probe-") as directory,
        mount(
            InMemoryFilesystem(),
            directory,
            allow_other=False,
            show_snapshots=False,
            latency_hint=False,
        ) as handle,
    ):
        return handle.connection
