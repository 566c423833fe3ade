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

from ..store import DEFAULT_INTERVAL
from ._options import DaemonOptions
from ._server import fd_notifier, run_daemon


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and serve until unmounted."""
    parser = argparse.ArgumentParser(prog="python -m workspacefs.daemon", description=__doc__)
    parser.add_argument("mountpoint")
    parser.add_argument("--from", dest="source")
    parser.add_argument("--persist", dest="repository")
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--no-allow-other", dest="allow_other", action="store_false")
    parser.add_argument("--no-latency-hint", dest="latency_hint", action="store_false")
    parser.add_argument("--load-limit", dest="load_limits", action="append", default=[])
    parser.add_argument("--special-modes", action="store_true")
    parser.add_argument("--blame-full-commands", action="store_true")
    parser.add_argument("--name")
    parser.add_argument("--store")
    parser.add_argument("--durability", default="interval")
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL)
    parser.add_argument("--ready-fd", type=int, help="write one JSON line here once serving")
    parser.add_argument("--detach", action="store_true", help="fork; the parent exits at once")
    args = parser.parse_args(argv)
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
    options = DaemonOptions(
        mountpoint=args.mountpoint,
        source=args.source,
        repository=args.repository,
        read_only=args.read_only,
        allow_other=args.allow_other,
        latency_hint=args.latency_hint,
        load_limits=tuple(args.load_limits),
        special_modes=args.special_modes,
        blame_full_commands=args.blame_full_commands,
        name=args.name,
        store=args.store,
        durability=args.durability,
        interval=args.interval,
    )

    def to_stdout(message: dict[str, object]) -> None:
        print(json.dumps(message), flush=True)

    notify = fd_notifier(args.ready_fd) if args.ready_fd is not None else to_stdout
    return run_daemon(options, notify)


if __name__ == "__main__":
    sys.exit(main())
