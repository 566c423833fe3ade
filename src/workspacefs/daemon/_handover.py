"""``workspacefs mcp MOUNTPOINT``: this process hands its stdin and stdout to the daemon.

The daemon then serves the MCP session on them itself (``serve_mcp``): the
tools run where the tree is and a call costs no request at all. The client
side is here, standard library only, so that the command reaches its first
answer quickly:

1. listen on a Unix socket in a private temporary directory (mode 0700);
2. ask the daemon (``serve_mcp``) to connect to it;
3. send descriptors 0 and 1 over the connection (``SCM_RIGHTS``), then point
   them at ``/dev/null`` and stderr and say so (``RELEASED``): the wire is the
   daemon's alone now, and it serves from then on, so no answer ever reaches a
   client while this process still holds the wire;
4. wait until the daemon says the session is over (the client closed its
   input), or the connection drops (the daemon stopped: an error).
"""

from __future__ import annotations

import os
import socket
import tempfile
from typing import Protocol

from .._errors import BackendUnavailableError

STDIO_FDS = 2
"""Descriptors handed over: stdin and stdout."""
TAKE_TIMEOUT = 10.0
"""Seconds either side waits for the other to connect and hand over."""
SESSION_DONE = b"\x00"
"""What the daemon sends once it has served the session to its end."""
HANDED = b"stdio"
"""The bytes the descriptors travel with."""
RELEASED = b"\x01"
"""What the process sends after them, once it holds no copy of the descriptors."""


class _Serving(Protocol):
    """A daemon's client that can ask for a session (``RemoteFilesystem``)."""

    @property
    def socket(self) -> str: ...

    def serve_mcp(self, socket: str, *, rewind: bool = True) -> None: ...


def hand_over_stdio(daemon: _Serving, *, rewind: bool = True) -> None:
    """Have the daemon serve MCP on this process's stdin and stdout; return when the
    session is over (see the module docstring).

    Raises:
        BackendUnavailableError: The daemon did not take the descriptors, or stopped
            before the session was over.
    """
    with tempfile.TemporaryDirectory(prefix="workspacefs-mcp-") as directory:
        path = os.path.join(directory, "stdio")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(TAKE_TIMEOUT)
            daemon.serve_mcp(path, rewind=rewind)
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                raise BackendUnavailableError(
                    "the daemon did not take the session", daemon.socket
                ) from None
    with connection:
        socket.send_fds(connection, [HANDED], [0, 1])
        _divert_stdio()
        connection.settimeout(None)
        try:
            connection.sendall(RELEASED)
            said = connection.recv(1)
        except OSError:  # the daemon went away
            said = b""
    if said != SESSION_DONE:
        raise BackendUnavailableError("the daemon stopped during the session", daemon.socket)


def _divert_stdio() -> None:
    """Descriptors 0 and 1 read ``/dev/null`` and write to stderr: nothing here may take
    or tear the protocol's bytes (the daemon holds the wire)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
