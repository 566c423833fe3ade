"""How the commands print: lines of plain text, tables and progress on a rich console, or one
JSON document.

Text prints as it is: the consoles take no markup and no emoji codes, so a tag, name or
path (``fix:bug:``, ``[draft]``) prints verbatim; styles are given as ``rich.text.Text``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


class _Console:
    """A rich ``Console`` made on first use: loading rich costs a command that prints
    nothing through it (``workspacefs mcp``, or only lines: ``say``) a tenth of its start."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._made: Console | None = None

    def made(self) -> Console:
        """The console itself."""
        if self._made is None:
            from rich.console import Console

            options = self._options
            if options.pop("fit_pipes", False):
                # Piped output is read by scripts: no terminal width, tables never truncate.
                options["width"] = None if sys.stdout.isatty() else 500
            self._made = Console(**options)
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)


_VERBATIM = {"highlight": False, "markup": False, "emoji": False, "soft_wrap": True}
stdout = cast("Console", _Console(fit_pipes=True, **_VERBATIM))
stderr = cast("Console", _Console(stderr=True, **_VERBATIM))


def say(line: str, *, err: bool = False) -> None:
    """Print one line of plain text on stdout (``err``: stderr), as it is, at once (what
    the console would print for it, without loading rich)."""
    out = sys.stderr if err else sys.stdout
    out.write(line + "\n")
    out.flush()


def emit_json(value: Any) -> None:
    """Print ``value`` as the command's one JSON document."""
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def size(count: int) -> str:
    """``count`` bytes for people: 1.5 MiB."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@contextlib.contextmanager
def working(description: str, *, quiet: bool = False) -> Iterator[None]:
    """A spinner with the elapsed time on stderr while long work runs (only on a
    terminal, and never in --json mode, so scripts read clean output)."""
    if quiet or not stderr.is_terminal:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    console = cast("_Console", stderr).made()
    with Progress(*columns, console=console, transient=True) as progress:
        progress.add_task(description, total=None)
        yield


def connection_line(connection: dict[str, Any] | None) -> str:
    """A mount's FUSE connection for people (``Connection.to_json``): its libfuse, the
    protocol, the capabilities negotiated."""
    if not connection:
        return "-"
    where = f" ({connection['library']})" if connection.get("library") else ""
    capabilities = ", ".join(connection["capabilities"]) or "no capabilities"
    return (
        f"libfuse {connection.get('libfuse') or '?'}{where}, "
        f"protocol {connection['protocol']}: {capabilities}"
    )
