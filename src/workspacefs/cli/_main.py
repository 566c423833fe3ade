"""The ``workspacefs`` entry point: run a command, turn any error into one line and an exit code."""

from __future__ import annotations

import sys
import traceback

import typer

from .._errors import MountedInsideError
from ._app import EXIT_FAILED, EXIT_MOUNTED_INSIDE, EXIT_NO_WORKSPACE, EXIT_OK, EXIT_USAGE, app
from ._output import say


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def exit_code(exc: BaseException) -> int:
    """The exit status for an error a command raised."""
    from ..daemon import DaemonUnreachableError, NoWorkspaceError

    if isinstance(exc, (NoWorkspaceError, DaemonUnreachableError)):
        return EXIT_NO_WORKSPACE
    if isinstance(exc, MountedInsideError):
        return EXIT_MOUNTED_INSIDE
    return EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit status.

    Errors print as one line on stderr (``workspacefs: error: ...``); with
    ``--debug`` anywhere on the line, the traceback follows.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    separator = args.index("--") if "--" in args else len(args)
    debug = "--debug" in args[:separator]
    if debug:
        args = [a for a in args[:separator] if a != "--debug"] + args[separator:]
    try:
        # Without standalone mode click returns the status of typer.Exit instead of raising.
        status = app(args=args, prog_name="workspacefs", standalone_mode=False)
    except typer.Exit as done:  # click.exceptions.Exit
        return done.exit_code
    except typer.Abort:
        say("Aborted.", err=True)
        return 130
    except typer.TyperException as exc:  # click's usage errors (typer vendors click)
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"workspacefs: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(f"workspacefs: error: {_one_line(exc)}", file=sys.stderr)
        return exit_code(exc)
    return status if isinstance(status, int) else EXIT_OK


def run() -> None:
    """The console script: ``sys.exit(main())``."""
    sys.exit(main())
