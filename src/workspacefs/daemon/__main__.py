"""``python -m workspacefs.daemon MOUNTPOINT``: the daemon process ``workspacefs mount`` starts.

Not meant to be typed: ``workspacefs mount`` (or ``workspacefs.daemon.start``)
runs it with a pipe to report readiness on, detached from the terminal.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from ..fs import from_json
from ._options import DaemonOptions
from ._server import fd_notifier, run_daemon


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and serve until unmounted."""
    parser = argparse.ArgumentParser(prog="python -m workspacefs.daemon", description=__doc__)
    parser.add_argument("mountpoint")
    parser.add_argument("--options", default="{}", help="the rest of DaemonOptions, as JSON")
    parser.add_argument("--ready-fd", type=int, help="write one JSON line here once serving")
    parser.add_argument("--detach", action="store_true", help="fork; the parent exits at once")
    args = parser.parse_args(argv)
    options = from_json(DaemonOptions, {**json.loads(args.options), "mountpoint": args.mountpoint})
    if args.detach and os.fork() > 0:
        os._exit(0)  # the starter reaps this process; the daemon is re-parented to init
    if args.ready_fd is not None:
        # The starter learns the pid (to stop a start that takes too long) and waits
        # for the pipe to close: no child of ours (fusermount3, git) may hold it open.
        os.set_inheritable(args.ready_fd, False)
        os.write(args.ready_fd, json.dumps({"starting": os.getpid()}).encode() + b"\n")
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s",
    )

    def to_stdout(message: dict[str, object]) -> None:
        print(json.dumps(message), flush=True)

    notify = fd_notifier(args.ready_fd) if args.ready_fd is not None else to_stdout
    return run_daemon(options, notify)


if __name__ == "__main__":
    sys.exit(main())
