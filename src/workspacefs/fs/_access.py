"""Access rules enforced: ``AccessRules``, the rules of one tree, and its denials.

A ``Rule`` (``_rules``) is data: a glob, a mode (``read-only``, ``hidden``, or
``quota`` with a byte count) and, optionally, the one tool whose calls it
binds. ``AccessRules`` holds the rules of one live tree
and enforces them as the tree's ``Guard`` (``tree._guard``): every door that
changes the tree -- the mount's handlers (any process, any container), the
``Filesystem`` protocol, the tools -- goes through the tree's few changing
methods, and each asks first. So a rule is enforced once, where the doors meet.

Scopes. A workspace's rules bind it and every fork made of it, now and later
(a fork's ``AccessRules`` reads its origin's); a fork's own rules bind that fork
alone; a rule with ``tool`` binds only the calls of that tool (the cause in
effect, ``current_cause().tool``): its ``Tool.invoke`` calls, the requests of
the daemon's clients made for it, and the processes a ``shell`` call starts,
which the mount knows by the ``WORKSPACEFS_CAUSE`` variable the sandbox sets.

What each mode refuses:

* ``read-only``: any change of a path it covers (write, truncate, chmod, chown,
  utimes, xattrs, create, link, unlink, rmdir, rename from or into it, moving a
  directory that holds one), with EACCES -- EROFS for ``**``, a read-only tree;
* ``hidden``: the same changes, and the path is not there for readers: lookups,
  listings, ``glob``, ``grep``, ``stat``, reads (the mount's and the protocol's);
* ``quota``: a change that would make the files it covers hold more bytes,
  together, than its quota (EDQUOT). Shrinking is always allowed.

Every refusal is a ``Denial``, recorded with its cause and sequence number
(``denials``), the error names the rule, and nothing changed. The owner's bulk
verbs -- restore, rewind, merge, import, load, ``transaction`` -- are not bound.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .._errors import AccessDeniedError, FsError, InvalidArgumentError, QuotaExceededError
from ..tree import ROOT_INO, Directory, File, Tree, TreeView, current_cause
from ._history import SnapshotChanges
from ._rules import DeclaredRules, Denial, Matcher, Rule, RuleScope, byte_count, matcher
from ._snapshots import FilesystemDiff

SHOWN, HIDDEN, DEPENDS = 0, 1, 2
"""``AccessRules.visibility``: an entry is hidden from nobody, everybody, or some tools."""
MAX_DENIALS = 1024
"""The most denials a tree keeps (the latest; ``Denial.seq`` counts them all)."""
COVERED_PATHS = 4096
"""The most paths whose covering rules a tree remembers: a check matches each rule's
glob against each path it touches (an RE2 call each, a microsecond), and a mount
writes the same file in request after request."""


@dataclass(frozen=True, slots=True)
class _Active:
    """A rule in force on a tree, where it was declared, and its compiled glob."""

    rule: Rule
    scope: RuleScope
    matches: Matcher


@dataclass(frozen=True, slots=True)
class _Compiled:
    """The rules in force, by what they refuse."""

    rules: tuple[_Active, ...] = ()
    hidden: tuple[_Active, ...] = ()
    quotas: tuple[_Active, ...] = ()
    counted: dict[str, Matcher] = field(default_factory=dict)  # quota pattern -> matcher


def _slashed(view: TreeView, ino: int) -> list[str]:
    """Every path of ``ino`` as rules match them: ``/a/b``, "" for the root."""
    if ino == ROOT_INO:
        return [""]
    return ["/" + path for path in view.paths(ino)]


def _below(view: TreeView, ino: int) -> Iterator[tuple[str, int]]:
    """("/rel/path", inode) of everything below directory ``ino``, "" for ``ino``."""
    yield "", ino
    if isinstance(view.get(ino), Directory):
        for path, child, _ in view.walk(ino):
            yield "/" + path, child


class AccessRules:
    """The access rules in force on one live tree, and the denials they made.

    ``InMemoryFilesystem.rules`` is one (a fork's reads its origin's too). The
    methods that change the rules take the tree's lock; every change the tree
    makes asks ``check_*`` under it (the ``Guard`` protocol).

    Args:
        tree: The live tree it guards.
        scope: ``workspace``, or ``fork`` for a fork's own rules.
        origin: The rules of the workspace this tree was forked from, which bind it too.
        mount_point: Where agents see the root (``/workspace``): a pattern that starts
            with it is taken relative to it, as the tools take paths.
    """

    def __init__(
        self,
        tree: Tree,
        *,
        scope: RuleScope = "workspace",
        origin: AccessRules | None = None,
        mount_point: str | None = None,
    ) -> None:
        # Weakly: a fork's rules keep its origin's (the rules it inherits, and the link
        # to the workspace's, which bind it whatever becomes of the fork between), but
        # not the origin's tree, which dropping that fork must free.
        self._tree_ref = weakref.ref(tree)
        self._mount_point = mount_point
        self._scope = scope
        self._origin = origin
        self._own: tuple[Rule, ...] = ()
        self._compiled = _Compiled()
        self._children: weakref.WeakSet[AccessRules] = weakref.WeakSet()
        self._denials: collections.deque[Denial] = collections.deque(maxlen=MAX_DENIALS)
        self._seq = 0
        self._log_lock = threading.Lock()  # denials are read without the tree lock
        self._usage: dict[str, int] | None = None  # quota pattern -> bytes; None: count anew
        self._observers: list[Callable[[list[tuple[int, str]]], None]] = []
        self._on_denial: list[Callable[[Denial], None]] = []
        self._covered: dict[str, tuple[_Active, ...]] = {}  # path -> rules covering it
        self.hides = False
        """True if a hidden rule is in force (readers test it before asking ``hidden``)."""
        if origin is not None:
            origin._children.add(self)
            with tree.lock:
                self._recompile(shown=False)  # O(1): a new fork, of which nothing is cached

    @property
    def _tree(self) -> Tree:
        """The tree guarded; only its own callers ask, so it is alive."""
        tree = self._tree_ref()
        assert tree is not None, "the rules of a dropped tree guard nothing"
        return tree

    # -- the rules -------------------------------------------------------------------

    @property
    def scope(self) -> RuleScope:
        """Where this tree's own rules are declared: ``workspace`` or ``fork``."""
        return self._scope

    @property
    def own(self) -> tuple[Rule, ...]:
        """The rules declared on this tree."""
        return self._own

    @property
    def inherited(self) -> tuple[Rule, ...]:
        """The rules of the workspace (and forks) this tree was forked from."""
        return () if self._origin is None else self._origin.in_force

    @property
    def in_force(self) -> tuple[Rule, ...]:
        """Every rule binding this tree: inherited ones first, then its own."""
        return tuple(active.rule for active in self._compiled.rules)

    def declared(self) -> DeclaredRules:
        """Where this tree's rules are declared, its own, and those it inherits."""
        return DeclaredRules(self._scope, self._own, self.inherited)

    def set(self, rules: Iterable[Rule]) -> tuple[Rule, ...]:
        """Make ``rules`` this tree's own (replacing the others); its forks follow.

        A rule given twice is kept once. Takes effect for the next change; the
        mount's cached entries of paths a hidden rule now covers (or no longer
        covers) are invalidated.

        Raises:
            InvalidArgumentError: Something other than ``Rule`` values.
        """
        wanted: list[Rule] = []
        prefix = None if self._mount_point is None else self._mount_point + "/"
        for rule in rules:
            if not isinstance(rule, Rule):
                raise InvalidArgumentError(f"not a Rule: {rule!r}", None)
            if prefix is not None and rule.pattern.startswith(prefix):
                rule = dataclasses.replace(rule, pattern=rule.pattern[len(prefix) :])
            if rule not in wanted:
                wanted.append(rule)
        with self._tree.lock:  # its release publishes the entries to invalidate
            self._own = tuple(wanted)
            shown = self._recompile()
        self._tell(shown)
        self._tell_forks()
        return self._own

    def observe(self, observer: Callable[[list[tuple[int, str]]], None]) -> Callable[[], None]:
        """Tell ``observer`` the (directory inode, name) entries a hidden rule starts or
        stops covering, after each change of the rules, outside the tree's lock (the
        mount drops what the kernel cached of them in the tree's snapshots; the tree's
        own subscribers hear of them with its changes). Returns the function that stops
        it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def _tell(self, shown: list[tuple[int, str]]) -> None:
        if shown:
            for observer in list(self._observers):
                observer(shown)

    def add(self, *rules: Rule) -> tuple[Rule, ...]:
        """Add ``rules`` to this tree's own; the rules now declared here."""
        return self.set([*self._own, *rules])

    def remove(self, *patterns: str | Rule) -> tuple[Rule, ...]:
        """Drop this tree's own rules equal to a ``Rule`` given, or whose pattern is a
        string given; the rules now declared here."""
        gone = set(patterns)
        return self.set(r for r in self._own if r not in gone and r.pattern not in gone)

    def clear(self) -> None:
        """Drop every rule declared on this tree."""
        self.set(())

    def _tell_forks(self) -> None:
        # One tree's lock at a time, never this one's with a fork's: ``fast_forward``
        # takes a pair in its own order.
        for child in list(self._children):
            tree = child._tree_ref()
            if tree is None:  # a dropped fork whose forks live on: they inherit through it
                child._compile()
            else:
                with tree.lock:
                    shown = child._recompile()
                child._tell(shown)
            child._tell_forks()

    def _recompile(self, *, shown: bool = True) -> list[tuple[int, str]]:
        """Compile the rules in force and arm (or disarm) the tree; hold its lock. The
        entries a hidden rule now covers, or no longer does, come back (with ``shown``)."""
        before = self._compiled
        compiled = self._compile()
        self.hides = bool(compiled.hidden)
        if set(compiled.counted) != set(before.counted):
            self._usage = None
        self._tree.guard = self if compiled.rules else None
        if not shown:
            return []
        return self._republish(
            {a.rule.pattern: a.matches for a in (*before.hidden, *compiled.hidden)}
        )

    def _compile(self) -> _Compiled:
        """Compile the rules in force (the origin's, then this tree's own)."""
        actives = [] if self._origin is None else list(self._origin._compiled.rules)
        actives += [_Active(rule, self._scope, matcher(rule.pattern)) for rule in self._own]
        quotas = tuple(a for a in actives if a.rule.mode == "quota")
        compiled = _Compiled(
            rules=tuple(actives),
            hidden=tuple(a for a in actives if a.rule.mode == "hidden"),
            quotas=quotas,
            counted={a.rule.pattern: a.matches for a in quotas},
        )
        self._compiled = compiled
        self._covered = {}
        return compiled

    def _republish(self, changed: dict[str, Matcher]) -> list[tuple[int, str]]:
        """Tell the tree's subscribers (the mount) that the entries these hidden
        patterns cover may look different now (O(tree), on a rule change only)."""
        if not changed:
            return []
        tree = self._tree
        matchers = list(changed.values())
        entries: list[tuple[int, str]] = []
        for path, ino, _ in tree.walk():
            if any(matches("/" + path) for matches in matchers):
                node = tree.get(ino)
                entries += node.links if node is not None else ()
        tree.republish(entries)
        return entries

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """No rule is enforced on this tree while the block runs (the owner's bulk
        changes: a transaction); hold the tree's lock around it. What the quotas
        counted is recounted afterwards."""
        tree = self._tree
        tree.guard = None
        try:
            yield
        finally:
            tree.guard = self if self._compiled.rules else None
            self._usage = None

    def usage(self) -> dict[str, int]:
        """Bytes the files each quota rule covers hold now, by the rule's pattern (what
        a change is measured against). Counted as changes go; after a restore, a
        load or a rule change, by a walk of the tree on first use."""
        with self._tree.lock:
            if not self._compiled.counted:
                return {}
            self._held(next(iter(self._compiled.counted)))
            assert self._usage is not None
            return dict(self._usage)

    # -- denials ----------------------------------------------------------------------

    def denials(self, path: str | None = None, *, after: int = 0) -> list[Denial]:
        """The denials recorded (the latest ``MAX_DENIALS``), oldest first: those of
        ``path`` only (and below it, for a directory), if given, and those numbered
        after ``after`` (a reader that keeps the last ``seq`` it saw gets each once)."""
        with self._log_lock:
            found = [d for d in self._denials if d.seq > after]
        if path is not None:
            path = path.strip("/")
            found = [d for d in found if d.path == path or d.path.startswith(path + "/")]
        return found

    def on_denial(self, listener: Callable[[Denial], None]) -> Callable[[], None]:
        """Call ``listener`` with each denial as it is recorded (in the refused thread,
        under the tree's lock: it must only take note, as the change feed does).
        Returns the function that stops it."""
        with self._log_lock:
            self._on_denial.append(listener)

        def stop() -> None:
            with self._log_lock, contextlib.suppress(ValueError):
                self._on_denial.remove(listener)

        return stop

    def _deny(self, active: _Active, path: str, action: str) -> FsError:
        """Record the denial of ``action`` on ``path`` (slashed) and return its error."""
        rule = active.rule
        if rule.mode == "quota":
            code = errno.EDQUOT
        elif rule.read_only_tree:
            code = errno.EROFS
        else:
            code = errno.EACCES
        cause = current_cause()
        if cause is not None and not self._tree.blame_full_commands:
            cause = cause.redacted()
        shown = path.lstrip("/")
        with self._log_lock:
            self._seq += 1
            now = datetime.now(UTC)
            denial = Denial(self._seq, now, shown, action, rule, active.scope, code, cause)
            self._denials.append(denial)
            listeners = tuple(self._on_denial)
        for listener in listeners:
            listener(denial)
        message = f"refused by {active.scope} access rule {rule.describe()}"
        if rule.mode == "quota":
            used = (self._usage or {}).get(rule.pattern, 0)
            message += f" ({byte_count(used)} held there)"
            return QuotaExceededError(message, shown or "/")
        return AccessDeniedError(message, shown or "/", code=code)

    # -- readers ----------------------------------------------------------------------

    def hidden(self, view: TreeView, parent: int, name: str, *, anyone: bool = False) -> bool:
        """True if the entry ``name`` of directory ``parent`` (in ``view``, the live
        tree or a version of it) is hidden from the cause in effect; with ``anyone``,
        from any tool's call (for a reader that cannot say whose it is: a mount's
        listing request names no caller)."""
        base = _slashed(view, parent)
        return bool(base) and self.hidden_path(f"{base[0]}/{name}", anyone=anyone)

    def hidden_path(self, path: str, *, anyone: bool = False) -> bool:
        """True if ``path`` (``/a/b``, "" for the root) is hidden from the cause in
        effect (with ``anyone``: from some tool's call)."""
        tool = _tool()
        return any(
            active.rule.mode == "hidden"
            and (anyone or active.rule.tool is None or active.rule.tool == tool)
            for active in self._covering(path)
        )

    def visibility(self, view: TreeView, parent: int, name: str) -> int:
        """Whom the entry ``name`` of directory ``parent`` is hidden from: ``SHOWN``
        (nobody), ``HIDDEN`` (everybody: a rule without a tool covers it) or
        ``DEPENDS`` (some tools' calls), for a reader that caches what it finds for
        everyone (the kernel's entries) and must not when the answer depends on who asks."""
        base = _slashed(view, parent)
        if not base:
            return SHOWN
        path = f"{base[0]}/{name}"
        found = SHOWN
        for active in self._covering(path):
            if active.rule.mode == "hidden":
                if active.rule.tool is None:
                    return HIDDEN
                found = DEPENDS
        return found

    def hidden_filter(self) -> Callable[[str], bool] | None:
        """For walks over relative paths: what is hidden now (None: nothing can be)."""
        if not self.hides:
            return None
        return lambda path: self.hidden_path("/" + path if path else "")

    def shown_diff(self, diff: FilesystemDiff) -> FilesystemDiff:
        """``diff`` without the paths hidden from the cause in effect."""
        hidden = self.hidden_filter()
        if hidden is None:
            return diff
        return dataclasses.replace(
            diff,
            added=tuple(p for p in diff.added if not hidden(p)),
            modified=tuple(p for p in diff.modified if not hidden(p)),
            deleted=tuple(p for p in diff.deleted if not hidden(p)),
        )

    def shown_changes(self, changes: SnapshotChanges) -> SnapshotChanges:
        """``changes`` without the paths hidden from the cause in effect."""
        hidden = self.hidden_filter()
        if hidden is None:
            return changes
        shown = tuple(change for change in changes.changes if not hidden(change.path))
        if len(shown) == len(changes.changes):
            return changes
        return dataclasses.replace(changes, changes=shown)

    # -- the guard (the tree's lock is held) ----------------------------------------

    def _covering(self, path: str) -> tuple[_Active, ...]:
        """The rules in force that cover ``path`` (``/a/b``), in order, whoever asks."""
        covered = self._covered
        found = covered.get(path)
        if found is None:
            found = tuple(active for active in self._compiled.rules if active.matches(path))
            if len(covered) >= COVERED_PATHS:
                covered.clear()  # cheaper than an LRU; refilled by what is in use
            covered[path] = found
        return found

    def _quotas(self, path: str) -> frozenset[str]:
        """The patterns of the quota rules that cover ``path``."""
        return frozenset(a.rule.pattern for a in self._covering(path) if a.rule.mode == "quota")

    def _refuse(self, paths: Iterable[str], action: str, tool: str | None) -> None:
        for path in paths:
            for active in self._covering(path):
                rule = active.rule
                if rule.mode == "quota" or (rule.tool is not None and rule.tool != tool):
                    continue
                raise self._deny(active, path, action)

    def _held(self, quota: str) -> int:
        usage = self._usage
        if usage is None:
            usage = self._usage = self._count()
        return usage[quota]

    def _count(self) -> dict[str, int]:
        """What the files each quota covers hold now (a walk of the tree)."""
        counted = self._compiled.counted
        usage = dict.fromkeys(counted, 0)
        tree = self._tree
        for path, _, node in tree.walk():
            if isinstance(node, File) and node.size:
                slashed = "/" + path
                for quota, matches in counted.items():
                    if matches(slashed):
                        usage[quota] += node.size
        return usage

    def _limit(self, growth: dict[str, int], action: str, path: str, tool: str | None) -> None:
        """Refuse a change that makes a quota's files hold more than it allows."""
        for active in self._compiled.quotas:
            rule = active.rule
            grow = growth.get(rule.pattern, 0)
            if grow <= 0 or (rule.tool is not None and rule.tool != tool):
                continue
            assert rule.quota is not None
            if self._held(rule.pattern) + grow > rule.quota:
                raise self._deny(active, path, action)

    def check_new(self, path: str, action: str, size: int) -> None:
        """Refuse making the new path ``path`` (relative, of ``size`` bytes) where the
        rules would, by its path alone: for a caller about to make its missing
        parents first. Hold the tree's lock."""
        slashed = "/" + path if path else ""
        tool = _tool()
        self._refuse((slashed,), action, tool)
        growth: dict[str, int] = dict.fromkeys(self._quotas(slashed), size)
        if size and growth:
            self._limit(growth, action, slashed, tool)

    def check_change(self, tree: TreeView, ino: int, action: str, grow: int) -> object | None:
        """See ``Guard.check_change``."""
        paths = _slashed(tree, ino)
        tool = _tool()
        self._refuse(paths, action, tool)
        counted = self._compiled.counted
        if not grow or not counted or not paths:
            return None
        names: collections.Counter[str] = collections.Counter()
        for path in paths:
            names.update(self._quotas(path))
        if names:
            self._limit({q: n * grow for q, n in names.items()}, action, paths[0], tool)
        return [*names.items()] or None

    def check_add(
        self, tree: TreeView, parent: int, name: str, action: str, size: int
    ) -> object | None:
        """See ``Guard.check_add``."""
        base = _slashed(tree, parent)
        if not base:
            return None  # a removed directory: the tree refuses the change itself
        path = f"{base[0]}/{name}"
        tool = _tool()
        self._refuse((path,), action, tool)
        if not size:
            return None
        growth: dict[str, int] = dict.fromkeys(self._quotas(path), size)
        if growth:
            self._limit(growth, action, path, tool)
        return [*growth.items()] or None

    def check_remove(
        self, tree: TreeView, parent: int, name: str, ino: int, action: str
    ) -> object | None:
        """See ``Guard.check_remove``."""
        base = _slashed(tree, parent)
        if not base:
            return None
        path = f"{base[0]}/{name}"
        below = list(_below(tree, ino))
        self._refuse((path + rel for rel, _ in below), action, _tool())
        return self._moved(tree, [(path + rel, child) for rel, child in below], -1)

    def check_move(
        self,
        tree: TreeView,
        old_parent: int,
        old_name: str,
        new_parent: int,
        new_name: str,
        exchange: bool,
    ) -> object | None:
        """See ``Guard.check_move``: every path the move takes away, and every one it
        makes, of the whole subtree moved (and of what it replaces or swaps with)."""
        old_base, new_base = _slashed(tree, old_parent), _slashed(tree, new_parent)
        if not old_base or not new_base:
            return None
        old, new = f"{old_base[0]}/{old_name}", f"{new_base[0]}/{new_name}"
        moved = list(_below(tree, tree.lookup(old_parent, old_name)))
        target = tree.find(new_parent, new_name)
        other = [] if target is None else list(_below(tree, target))
        touched = [old + rel for rel, _ in moved] + [new + rel for rel, _ in moved]
        touched += [new + rel for rel, _ in other]
        if exchange:
            touched += [old + rel for rel, _ in other]
        tool = _tool()
        self._refuse(touched, "rename", tool)
        if not self._compiled.counted:
            return None
        gone = [(old + rel, ino) for rel, ino in moved] + [(new + rel, ino) for rel, ino in other]
        made = [(new + rel, ino) for rel, ino in moved]
        if exchange:
            made += [(old + rel, ino) for rel, ino in other]
        growth: dict[str, int] = collections.Counter()
        for sign, entries in ((-1, gone), (1, made)):
            for quota, amount in self._sizes(tree, entries):
                growth[quota] += sign * amount
        self._limit(dict(growth), "rename", new, tool)
        return [item for item in growth.items() if item[1]] or None

    def _moved(self, tree: TreeView, entries: list[tuple[str, int]], sign: int) -> object | None:
        """The quotas' share of ``entries`` (paths and their inodes), times ``sign``."""
        if not self._compiled.counted:
            return None
        growth: dict[str, int] = collections.Counter()
        for quota, amount in self._sizes(tree, entries):
            growth[quota] += sign * amount
        return [item for item in growth.items() if item[1]] or None

    def _sizes(
        self, tree: TreeView, entries: Sequence[tuple[str, int]]
    ) -> Iterator[tuple[str, int]]:
        """(quota pattern, bytes) of each file in ``entries`` a quota covers."""
        for path, ino in entries:
            node = tree.get(ino)
            if isinstance(node, File) and node.size:
                for quota in self._quotas(path):
                    yield quota, node.size

    def commit(self, pending: object, scale: int) -> None:
        """See ``Guard.commit``."""
        usage = self._usage
        if usage is None or not isinstance(pending, list):
            return  # counted anew when next asked
        for quota, amount in pending:
            if quota in usage:
                usage[quota] += amount * scale

    def reset(self) -> None:
        """See ``Guard.reset``."""
        self._usage = None


def _tool() -> str | None:
    """The tool whose call is in effect (its rules bind it), if any."""
    cause = current_cause()
    return None if cause is None else cause.tool
