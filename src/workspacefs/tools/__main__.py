"""``python -m workspacefs.tools``: serve the tools over MCP (stdio) on an in-memory workspace.

The ``workspacefs mcp`` command (CLI layer) will serve host directories too;
this entry needs only the layers below the tools.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..fs import HostMount, InMemoryFilesystem
from ._mcp import serve_stdio


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, fill the workspace, serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m workspacefs.tools", description=__doc__)
    parser.add_argument(
        "--hydrate",
        metavar="DIR",
        action="append",
        default=[],
        help="copy this host directory into the workspace root first (repeatable)",
    )
    parser.add_argument("--mount-point", default="/workspace", help="absolute path agents see")
    parser.add_argument("--read-only", action="store_true", help="refuse every write")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout is the protocol
    fs = InMemoryFilesystem(mount_point=args.mount_point, read_only=args.read_only)
    for directory in args.hydrate:
        fs.hydrate_from_host(HostMount(directory, mount_path="."), allowed_roots=[directory])
    serve_stdio(fs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
