"""The ``shell`` tool: a command in the sandbox, reported with what it changed.

It follows the tool package's conventions (``Tool``, a ``ToolParams``
model, a ``ToolResult`` with a message written for a model); the value is
the ``ExecResult``, given on failure too (a non-zero exit, a timeout), since
a failed command may still have changed files the caller wants to know of.
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


def _changes(changes: FilesystemDiff) -> list[str]:
    kinds = [("added", changes.added), ("modified", changes.modified), ("deleted", changes.deleted)]
    total = sum(len(paths) for _, paths in kinds)
    if not total:
        return ["No files in the workspace changed."]
    detail = ", ".join(f"{len(paths):,} {kind}" for kind, paths in kinds if paths)
    lines = [f"Changed {_plural(total, 'file')} in the workspace: {detail}."]
    for kind, paths in kinds:
        if paths:
            lines.append(f"{kind}:")
            lines += [f"  {path}" for path in paths[:MAX_LISTED]]
            if len(paths) > MAX_LISTED:
                lines.append(f"  ... and {_plural(len(paths) - MAX_LISTED, 'more path')}")
    return lines


def describe_result(result: ExecResult, *, max_output_chars: int = MAX_OUTPUT_CHARS) -> str:
    """The tool's message for ``result``: outcome, changed files, then the output."""
    if result.timed_out:
        head = (
            f"The command timed out after {result.duration:.1f} s and was killed together with "
            f"every process it started (exit code {result.exit_code})."
        )
    else:
        head = f"Exit code {result.exit_code} after {result.duration:.1f} s."
    lines = [head, *_changes(result.changes)]
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
    return "\n".join(lines)


def shell_tool(
    sandbox: PodmanSandbox, *, max_output_chars: int = MAX_OUTPUT_CHARS
) -> Tool[ShellParams, ExecResult]:
    """The ``shell`` tool, running commands in ``sandbox``.

    Add it to a registry with ``registry.add(shell_tool(sandbox))``. A call
    whose context holds another filesystem than the sandbox's is refused:
    the changes it reports are the sandbox workspace's.
    """

    def shell(params: ShellParams, *, context: ToolContext) -> ToolResult[ExecResult]:
        if context.filesystem is not sandbox.filesystem:
            return ToolResult.fail(
                "shell runs in the sandbox's workspace, not the one this call was given."
            )
        result = sandbox.exec(
            params.command, timeout=params.timeout, cwd=params.cwd, stdin=params.stdin
        )
        return ToolResult(describe_result(result, max_output_chars=max_output_chars), result,
                          result.ok)  # fmt: skip

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
            f"running). {network}"
        ),
        params=ShellParams,
        handler=shell,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Run shell command"
        ),
    )
