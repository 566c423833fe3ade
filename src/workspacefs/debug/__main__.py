"""``python -m workspacefs.debug TARGET [--port N] [--open]``: serve the debug UI."""

from __future__ import annotations

import argparse
import sys

from . import DEFAULT_PORT, open_target, serve

USAGE_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, open the target and serve it until Ctrl-C; the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m workspacefs.debug",
        description="Browse the snapshots, trees, files and diffs of a workspace in a browser.",
        epilog="TARGET: a session dump (.jsonl), a workspace archive (.fs.zip, .zip), a "
        "directory of archives or checkpoints, or a git repository of persisted workspaces.",
    )
    parser.add_argument("target", metavar="TARGET")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port (0: any free)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default: %(default)s)"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a browser")
    parser.add_argument("--workspace", help="which workspace of a git repository")
    parser.add_argument("--filesystem", help="which filesystem of session checkpoints")
    args = parser.parse_args(argv)
    try:
        target = open_target(args.target, workspace=args.workspace, filesystem=args.filesystem)
    except (OSError, ValueError) as exc:
        print(f"{parser.prog}: {_describe(exc)}", file=sys.stderr)
        return USAGE_ERROR

    def ready(url: str) -> None:
        print(f"workspacefs debug: serving {args.target} at {url} (Ctrl-C stops)", flush=True)

    try:
        serve(target, host=args.host, port=args.port, open_browser=args.open, ready=ready)
    except (OSError, ValueError) as exc:
        print(f"{parser.prog}: {_describe(exc)}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        target.close()
    return 0


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
