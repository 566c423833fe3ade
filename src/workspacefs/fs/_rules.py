"""Access rules as data: ``Rule`` (a glob, a mode, a quota, a tool) and ``Denial``.

A ``Rule`` says which paths (a glob in ``rule_matcher``'s syntax: anchored at
the root, dot names matched, a directory covering what is below it) are
``read-only``, ``hidden``, or under a byte ``quota``, and optionally for which
tool's calls alone. A ``Denial`` is one change a rule refused. ``AccessRules``
(``_access``) holds a tree's rules and enforces them.
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from .._errors import InvalidArgumentError
from ..tree import Cause

Matcher = Callable[[str], bool]

RuleMode = Literal["read-only", "hidden", "quota"]
"""What a rule does to the paths it covers (see the module docstring)."""
RuleScope = Literal["workspace", "fork"]
"""Where a rule was declared: on a workspace (binding its forks too) or on a fork."""
MODES: tuple[RuleMode, ...] = ("read-only", "hidden", "quota")


@dataclass(frozen=True, slots=True)
class Rule:
    """One access rule.

    Attributes:
        pattern: The paths it covers: a glob relative to the workspace root
            (``.git``, ``**/*.pem``, ``.github/workflows/**``; a leading ``/`` is
            the root). A directory it matches covers everything below it.
        mode: ``read-only``, ``hidden`` or ``quota``.
        quota: For ``quota``: the most bytes the covered files may hold together.
        tool: Bind only the calls of this tool (None: every writer).
    """

    pattern: str
    mode: RuleMode = "read-only"
    quota: int | None = None
    tool: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidArgumentError(
                f"a rule's mode is one of {', '.join(MODES)}, not {self.mode!r}", self.pattern
            )
        if (self.quota is None) != (self.mode != "quota"):
            raise InvalidArgumentError("a quota rule, and only one, has a quota", self.pattern)
        if self.quota is not None and (isinstance(self.quota, bool) or self.quota < 0):
            raise InvalidArgumentError("a quota is a byte count, 0 or more", self.pattern)
        if self.tool is not None and not self.tool:
            raise InvalidArgumentError("a rule's tool is a tool's name", self.pattern)
        matcher(self.pattern)  # a bad pattern is refused when the rule is made

    @property
    def read_only_tree(self) -> bool:
        """True for ``read-only`` on ``**``: the whole tree (refused with EROFS)."""
        return self.mode == "read-only" and self.pattern.strip("/") == "**"

    def describe(self) -> str:
        """``read-only '.git/**'``, ``quota 10 MiB 'logs/**' for tool shell``."""
        mode = f"quota {byte_count(self.quota)}" if self.quota is not None else self.mode
        tool = f" for tool {self.tool}" if self.tool is not None else ""
        return f"{mode} {self.pattern!r}{tool}"


@dataclass(frozen=True, slots=True)
class Denial:
    """A change an access rule refused.

    Attributes:
        seq: Its number in its tree's denials, from 1 (``denials(after=seq)``
            reads the later ones).
        at: When.
        path: The path the rule covers (relative to the root; "" is the root).
        action: What was refused: ``write``, ``truncate``, ``chmod``, ``create``,
            ``mkdir``, ``unlink``, ``rename``, ``delete``, ...
        rule: The rule.
        scope: Where it was declared: ``workspace`` or ``fork``.
        errno: What the writer got (EACCES, EROFS, EDQUOT).
        cause: Who tried (``Cause``; None if no cause was in effect).
    """

    seq: int
    at: datetime
    path: str
    action: str
    rule: Rule
    scope: RuleScope
    errno: int
    cause: Cause | None = None

    def describe(self) -> str:
        """One line for people and models."""
        who = self.cause.describe() if self.cause is not None else "an unrecorded cause"
        return (
            f"{self.action} of `{self.path or '/'}` refused by {self.scope} rule "
            f"{self.rule.describe()} ({errno.errorcode.get(self.errno, self.errno)}), "
            f"tried by {who}"
        )


@dataclass(frozen=True, slots=True)
class DeclaredRules:
    """The access rules of one tree, as declared.

    Attributes:
        scope: Where its own are declared: ``workspace``, or ``fork``.
        own: Its own rules.
        inherited: Those of the workspace (and forks) it was forked from, which bind it
            too; ``own`` come after them.
    """

    scope: RuleScope
    own: tuple[Rule, ...] = ()
    inherited: tuple[Rule, ...] = ()


@functools.lru_cache(maxsize=1024)
def matcher(pattern: str) -> Matcher:
    """``rule_matcher`` of ``pattern``, each pattern compiled once (rules are made and
    compiled again on every change of a tree's rules, and a fork compiles its origin's)."""
    # Here, not at the top: a client that only names rules (a daemon's verbs) loads no RE2.
    from ._patterns import rule_matcher

    return rule_matcher(pattern)


def byte_count(count: int | None) -> str:
    """``count`` bytes for people: ``10 B``, ``1.5 MiB``."""
    value = float(count or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
