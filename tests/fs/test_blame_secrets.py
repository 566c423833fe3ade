"""Blame keeps the program and a redacted command line: no secret is ever recorded.

A table of real-world command lines, each with the secrets it carries (flags,
headers, ``KEY=value`` pairs, URLs with credentials, token shapes), recorded
as a process's command and as a call's label (a sandbox's shell line); and
command lines that carry none, which stay exactly as they were.
"""

from __future__ import annotations

import shlex

import pytest

from support.command_lines import PLAIN, SECRETS
from workspacefs import Cause, InMemoryFilesystem, attributed
from workspacefs.fs import redact_command, redact_text


def recorded(cause: Cause, *, full: bool = False) -> Cause:
    """The cause a workspace records for a change made under ``cause``."""
    fs = InMemoryFilesystem(blame_full_commands=full)
    with attributed(cause):
        fs.write("f.txt", "x")
    (entry,) = fs.blame("f.txt")
    (kept,) = entry.causes
    assert fs.changes().changes[0].causes == (kept,)
    return kept


@pytest.mark.parametrize(("argv", "secrets"), SECRETS, ids=lambda v: str(v)[:40])
def test_a_process_command_line_is_recorded_without_its_secrets(
    argv: tuple[str, ...], secrets: tuple[str, ...]
) -> None:
    cause = recorded(Cause(pid=4242, command=argv, uid=1000))
    shown = repr(cause.to_dict()) + cause.describe()
    for secret in secrets:
        assert secret not in shown, (argv, cause.command)
    assert cause.command[0] == argv[0]  # the program stays
    assert len(cause.command) == len(argv)  # and the shape of the line
    assert "***" in " ".join(cause.command)


@pytest.mark.parametrize(("argv", "secrets"), SECRETS, ids=lambda v: str(v)[:40])
def test_a_calls_label_is_recorded_without_its_secrets(
    argv: tuple[str, ...], secrets: tuple[str, ...]
) -> None:
    """A sandbox's shell call carries the command line as its label."""
    cause = recorded(Cause.call("shell", "toolu_1", shlex.join(argv)))
    assert cause.label is not None
    for secret in secrets:
        assert secret not in cause.label, cause.label
    assert cause.label.startswith(argv[0])
    assert (cause.tool, cause.call_id) == ("shell", "toolu_1")


@pytest.mark.parametrize("argv", PLAIN, ids=lambda v: " ".join(v)[:40])
def test_a_command_line_without_secrets_is_kept_as_it_is(argv: tuple[str, ...]) -> None:
    assert redact_command(argv) == argv
    assert redact_text(shlex.join(argv)) == shlex.join(argv)
    assert recorded(Cause(pid=1, command=argv)).command == argv


def test_full_command_lines_are_kept_when_the_workspace_asks() -> None:
    argv, secrets = SECRETS[0]
    cause = Cause(pid=4242, command=argv, label=shlex.join(argv), uid=1000)
    assert recorded(cause, full=True) == cause
    fs = InMemoryFilesystem(blame_full_commands=True)
    assert fs.blame_full_commands
    assert fs.fork().blame_full_commands  # a fork keeps what its workspace asked
    fs.blame_full_commands = False
    with attributed(cause):
        fs.write("g.txt", "y")
    (entry,) = fs.blame("g.txt")
    assert secrets[0] not in repr(entry.causes)


def test_redaction_is_what_a_shell_line_and_an_argv_agree_on() -> None:
    assert redact_command(("curl", "-H", "Authorization: Bearer abc", "https://h")) == (
        "curl",
        "-H",
        "Authorization: ***",
        "https://h",
    )
    assert redact_text("curl -H 'Authorization: Bearer abc' https://h") == (
        "curl -H 'Authorization: ***' https://h"
    )
    assert redact_command(("git", "clone", "https://u:p4ss@h/r.git")) == (
        "git",
        "clone",
        "https://u:***@h/r.git",
    )
    assert redact_command(("mysql", "-pS3cret")) == ("mysql", "-p***")
    assert redact_text("A=1 API_KEY=xyz make") == "A=1 API_KEY=*** make"
