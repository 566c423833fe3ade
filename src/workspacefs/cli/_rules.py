"""rules, denials: the access rules of a running workspace (or of one of its forks), and
what they refused."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import JsonOption, app, split_mountpoint, workspace
from ._output import emit_json, stdout

if TYPE_CHECKING:
    from ..fs import DeclaredRules, Denial, Rule

ProtectOption = Annotated[
    list[str] | None,
    typer.Option(
        "--protect",
        metavar="GLOB",
        help="Make the paths GLOB covers read-only (.git, '**/*.pem'); repeatable.",
    ),
]
HideOption = Annotated[
    list[str] | None,
    typer.Option(
        "--hide",
        metavar="GLOB",
        help="Hide the paths GLOB covers (.env): not listed, not found, not changed; repeatable.",
    ),
]
QuotaOption = Annotated[
    list[str] | None,
    typer.Option(
        "--quota",
        metavar="GLOB=SIZE",
        help="The files GLOB covers may hold SIZE bytes together (logs/**=100MiB); repeatable.",
    ),
]
ToolOption = Annotated[
    str | None,
    typer.Option(
        "--tool", metavar="NAME", help="The rules given bind only this tool's calls (shell)."
    ),
]
ForkOption = Annotated[
    str | None,
    typer.Option("--fork", metavar="NAME", help="The rules of this fork (default: the workspace)."),
]


def rules_from_options(
    protect: Sequence[str] | None,
    hide: Sequence[str] | None,
    quota: Sequence[str] | None,
    tool: str | None = None,
) -> list[Rule]:
    """The rules ``--protect``, ``--hide`` and ``--quota`` give (for ``tool``'s calls)."""
    if not (protect or hide or quota):
        return []
    from ..fs import Rule
    from ._snapshots import size_option

    found = [Rule(glob, "read-only", tool=tool) for glob in protect or ()]
    found += [Rule(glob, "hidden", tool=tool) for glob in hide or ()]
    for given in quota or ():
        glob, sep, amount = given.rpartition("=")
        if not sep or not glob:
            raise typer.BadParameter(f"--quota takes GLOB=SIZE, not {given!r}")
        found.append(Rule(glob, "quota", quota=size_option(amount, "--quota"), tool=tool))
    return found


def rule_line(rule: Rule, where: str) -> str:
    """One rule for people: its mode, pattern, tool and where it is declared."""
    from ..fs import byte_count

    mode = f"quota {byte_count(rule.quota)}" if rule.quota is not None else rule.mode
    tool = f"  (tool {rule.tool})" if rule.tool is not None else ""
    return f"{mode:<18} {rule.pattern:<32} {where}{tool}"


def print_rules(declared: DeclaredRules) -> None:
    """Every rule in force, inherited ones first."""
    lines = [rule_line(rule, "workspace (inherited)") for rule in declared.inherited]
    lines += [rule_line(rule, declared.scope) for rule in declared.own]
    if not lines:
        stdout.print("No access rules.")
    for line in lines:
        print(line)


def denial_line(denial: Denial) -> str:
    """One denial for people."""
    when = denial.at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    return f"#{denial.seq:<5} {when}  {denial.describe()}"


@app.command(
    epilog="Examples: workspacefs rules ./ws --protect .git --hide .env; "
    "workspacefs rules ./ws --quota 'logs/**=100MiB' --tool shell; "
    "workspacefs rules ./ws --fork review --protect '**'"
)
def rules(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    protect: ProtectOption = None,
    hide: HideOption = None,
    quota: QuotaOption = None,
    tool: ToolOption = None,
    fork: ForkOption = None,
    remove: Annotated[
        list[str] | None,
        typer.Option("--remove", metavar="GLOB", help="Drop the rules of GLOB; repeatable."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show the access rules of a workspace (or fork), after adding or removing some.

    Read-only and hidden paths and quotas bind every writer: the mount (any
    process, any container), the API and the tools. A workspace's rules bind its
    forks too; a fork's bind it alone ('**' makes it read-only); with --tool, only
    that tool's calls. A refused change names its rule and changes nothing;
    ``workspacefs denials`` lists them."""
    point, _ = split_mountpoint(args or [], 0, 0)
    given = rules_from_options(protect, hide, quota, tool)
    if tool is not None and not given:
        raise typer.BadParameter("--tool needs --protect, --hide or --quota")
    with workspace(point) as fs:
        if remove:
            fs.remove_rules(list(remove), fork=fork)
        declared = fs.add_rules(given, fork=fork) if given else fs.access_rules(fork=fork)
    if as_json:
        from ..fs import to_json

        emit_json(to_json(declared))
        return
    print_rules(declared)


@app.command(epilog="Example: workspacefs denials ./ws .git --after 12")
def denials(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT] [PATH]")] = None,
    fork: ForkOption = None,
    after: Annotated[
        int, typer.Option("--after", metavar="N", help="Only those numbered after N.")
    ] = 0,
    as_json: JsonOption = False,
) -> None:
    """The changes the access rules refused, oldest first: what, where, the rule, and
    who tried (the tool call, or the process and container)."""
    point, rest = split_mountpoint(args or [], 0, 1)
    with workspace(point) as fs:
        found = fs.denials(rest[0] if rest else None, after=after, fork=fork)
    if as_json:
        from ..fs import to_json

        emit_json([to_json(denial) for denial in found])
        return
    if not found:
        stdout.print("No denials.")
    for denial in found:
        print(denial_line(denial))
