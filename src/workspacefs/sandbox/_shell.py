"""The ``shell`` tool: a command in the sandbox, reported with what it changed.

It follows the tool package's conventions (``Tool``, a ``ToolParams``
model, a ``ToolResult`` with a message written for a model); the value is
the ``ExecResult``, given on failure too (a non-zero exit, a timeout), since
a failed command may still have changed files the caller wants to know of.

``shell_tool(sandbox, dry_run=True)`` adds a ``dry_run`` argument: the command
then runs as a try (``PodmanSandbox.try_exec``) and the message names the
try, which ``accept_try`` or ``reject_try`` (``try_tools``) decides.
"""

from __future__ import annotations

from pydantic import Field

from ..fs import FilesystemDiff
from ..tools import Tool, ToolAnnotations, ToolContext, ToolParams, ToolResult
from ._output import cut_notice
from ._result import ExecResult
from ._sandbox import PodmanSandbox

MAX_OUTPUT_CHARS = 15_000
"""Characters of each stream a message shows (head and tail)."""

MAX_LISTED = 100
"""Changed paths listed per kind before the rest are counted."""


class ShellParams(ToolParams):
    """Arguments of ``shell``."""

    command: str = Field(min_length=1, description="The command line, run with /bin/sh -c.")
    timeout: float = Field(
        120, gt=0, le=3600, description="Seconds before the command and all it started are killed."
    )
    cwd: str | None = Field(
        None, description="Working directory, relative to the workspace or absolute."
    )
    stdin: str | None = Field(None, description="Text the command reads on stdin.")


class DryRunShellParams(ShellParams):
    """Arguments of ``shell`` when it offers dry runs."""

    dry_run: bool = Field(
        False,
        description=(
            "Run in a throwaway copy of the workspace: report what the command would "
            "change and change nothing until accept_try is called with the returned try_id."
        ),
    )


def _cut(text: str, total_bytes: int, limit: int) -> str:
    """At most ``limit`` characters of a stream's kept text: its start and end, with a
    notice of how many of the ``total_bytes`` it wrote are not shown (an ``exec`` may
    have cut it already; the notice counts both cuts)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    head, tail = text[:half], text[-half:]
    hidden = total_bytes - len(head.encode()) - len(tail.encode())
    return head + cut_notice(max(hidden, 0)) + tail


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _changes(changes: FilesystemDiff, *, would: bool = False) -> list[str]:
    kinds = [("added", changes.added), ("modified", changes.modified), ("deleted", changes.deleted)]
    total = sum(len(paths) for _, paths in kinds)
    if not total:
        return ["It would change no files." if would else "No files in the workspace changed."]
    detail = ", ".join(f"{len(paths):,} {kind}" for kind, paths in kinds if paths)
    verb = "It would change" if would else "Changed"
    lines = [f"{verb} {_plural(total, 'file')} in the workspace: {detail}."]
    for kind, paths in kinds:
        if paths:
            lines.append(f"{kind}:")
            lines += [f"  {path}" for path in paths[:MAX_LISTED]]
            if len(paths) > MAX_LISTED:
                lines.append(f"  ... and {_plural(len(paths) - MAX_LISTED, 'more path')}")
    return lines


def describe_result(
    result: ExecResult, *, max_output_chars: int = MAX_OUTPUT_CHARS, try_id: str | None = None
) -> str:
    """The tool's message for ``result``: outcome, changed files, then the output.

    With ``try_id`` it describes a dry run: what the try would change, and how
    to accept or reject it.
    """
    head = ""
    if try_id is not None:
        head = (
            f"Dry run {try_id}: the command ran in a copy of the workspace; the workspace "
            "itself is unchanged.\n"
        )
    if result.timed_out:
        head += (
            f"The command timed out after {result.duration:.1f} s and was killed together with "
            f"every process it started (exit code {result.exit_code})."
        )
    else:
        head += f"Exit code {result.exit_code} after {result.duration:.1f} s."
    lines = [head, *_changes(result.changes, would=try_id is not None)]
    for name, text, total in (
        ("stdout", result.stdout, result.stdout_bytes),
        ("stderr", result.stderr, result.stderr_bytes),
    ):
        if not total:
            lines.append(f"{name}: (empty)")
            continue
        lines += [
            f"{name} ({_plural(total, 'byte')}):",
            _cut(text, total, max_output_chars).rstrip("\n"),
        ]
    if try_id is not None:
        lines.append(
            f'To apply these changes call accept_try with try_id "{try_id}"; to drop them '
            "call reject_try."
        )
    return "\n".join(lines)


_DRY_RUN = (
    " With dry_run=true the command runs in a throwaway copy of the workspace, in a "
    "container of its own: the result lists what it would change, and the workspace "
    "changes only when you call accept_try with the try_id the result names (reject_try "
    "drops it). Use it for commands you may not want to keep: installs, codemods, "
    "migrations, mass deletes."
)


def shell_tool(
    sandbox: PodmanSandbox, *, max_output_chars: int = MAX_OUTPUT_CHARS, dry_run: bool = False
) -> Tool[ShellParams, ExecResult]:
    """The ``shell`` tool, running commands in ``sandbox``.

    Add it to a registry with ``registry.add(shell_tool(sandbox))``. A call
    whose context holds another filesystem than the sandbox's is refused:
    the changes it reports are the sandbox workspace's.

    With ``dry_run`` the tool takes a ``dry_run`` argument (``DryRunShellParams``):
    such a call runs as a try and leaves it pending; add ``try_tools(sandbox)``
    too, which decide it.
    """

    def shell(params: ShellParams, *, context: ToolContext) -> ToolResult[ExecResult]:
        if context.workspace() is not sandbox.filesystem:
            return ToolResult.fail(
                "shell runs in the sandbox's workspace, not the one this call was given."
            )
        if isinstance(params, DryRunShellParams) and params.dry_run:
            run = sandbox.try_exec(
                params.command, timeout=params.timeout, cwd=params.cwd, stdin=params.stdin
            )
            message = describe_result(run.result, max_output_chars=max_output_chars, try_id=run.id)
            return ToolResult(message, run.result, run.result.ok)
        result = sandbox.exec(
            params.command, timeout=params.timeout, cwd=params.cwd, stdin=params.stdin
        )
        return ToolResult(
            describe_result(result, max_output_chars=max_output_chars), result, result.ok
        )

    network = (
        "There is no network."
        if sandbox.config.network == "none"
        else f"Network: {sandbox.config.network}."
    )
    return Tool(
        name="shell",
        description=(
            f"Run a shell command (/bin/sh -c) in a Linux container, with the workspace at "
            f"{sandbox.config.workdir} as the working directory: build, test, git, grep, "
            "sed and the like. Returns the exit code, stdout and stderr (long output: its "
            "start and end) and the files the command added, modified or deleted. A command "
            "is killed with everything it started after `timeout` seconds; processes it leaves "
            "in the background are stopped when it exits (start one with `setsid` to keep it "
            f"running). {network}{_DRY_RUN if dry_run else ''}"
        ),
        params=DryRunShellParams if dry_run else ShellParams,
        handler=shell,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Run shell command"
        ),
    )
