"""The daemon's verbs, each declared once: the table both ends of the control API read.

As git's ``commands[]`` table drives git, and one ``Tool`` value drives an agent
tool's schemas and its MCP server, one ``Verb`` here drives a verb everywhere:

* its *contract* is the protocol's own method (``Filesystem.read``,
  ``InMemoryWorkspace.prune``, ``Daemon.persist``): its parameters, their
  defaults and its result type are the verb's, read with ``inspect``;
* the server answers ``POST /v3/<name>`` by binding the body against that
  signature (an argument it does not name is refused, one left out gets the
  protocol's default), each value read as its annotation says
  (``fs.from_json``), and by writing the result as the contract's return type
  says (``fs.to_json``);
* the client's classes inherit the tables: a ``Method`` is a descriptor typed
  by its contract, so ``RemoteFilesystem.read`` has ``Filesystem.read``'s
  signature for mypy and at run time, and calls ``_call(verb, ...)``; so does
  the daemon's own view of its workspace for the tools it runs
  (``_tool_calls``), which calls the same verbs in process.

Adding a protocol verb is the protocol, its implementation, and one line here.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    Literal,
    ParamSpec,
    Protocol,
    TypeVar,
    cast,
    get_args,
    get_origin,
    overload,
)

from .. import fs
from .._errors import InvalidArgumentError
from ..archive import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits
from ..fs import MAX_ENTRIES, Filesystem, SnapshotableFilesystem, from_json, to_json
from ..tools import ToolHost
from ._fork_results import ForkInfo

if TYPE_CHECKING:
    from ..fs import (
        BlameEntry,
        DeclaredRules,
        Denial,
        FilesystemSnapshot,
        HeldMerge,
        MergeReport,
        PersistResult,
        PruneResult,
        RecordedCall,
        RewindResult,
        Rule,
        Side,
        SnapshotChanges,
        SnapshotRetentionPolicy,
        SpaceUsage,
        TransferResult,
        TreeEntry,
        Trial,
    )

P = ParamSpec("P")
R = TypeVar("R")

Runs = Literal["view", "workspace", "daemon"]
"""What a verb runs on in the daemon:

* ``view``: a ``Filesystem`` verb, of the live workspace or (the request's ``at``,
  a snapshot id) of a snapshot's read-only view;
* ``workspace``: a method of the live ``InMemoryFilesystem``;
* ``daemon``: a method of the daemon's ``Workspace`` (its own verbs, and protocol
  verbs with more to do there: forgetting cached views, a read-only diff).
"""

VIEW: Runs = "view"
WORKSPACE: Runs = "workspace"
DAEMON: Runs = "daemon"


class InMemoryWorkspace(Protocol):
    """The verbs of the workspace a daemon keeps beyond the ``Filesystem`` and snapshot
    protocols: ``InMemoryFilesystem``'s snapshot list, history and space, and
    ``TreeFilesystem.entries``. Declared here, with their signatures, so that a client
    names them without loading the in-memory backend and the tree beneath it
    (tests/daemon/test_verb_table.py checks that both say the same)."""

    def entries(
        self, path: str = ".", *, after: str = "", limit: int = MAX_ENTRIES, recursive: bool = True
    ) -> list[TreeEntry]:
        """A page of the listing below the directory ``path``, depth first in git's
        order from after the key ``after`` (see ``TreeFilesystem.entries``)."""
        ...

    def snapshots(self) -> Sequence[FilesystemSnapshot]:
        """Every kept snapshot, in creation order."""
        ...

    def delete_snapshot(self, snapshot: FilesystemSnapshot) -> None:
        """Forget a snapshot; memory no other version shares is freed."""
        ...

    def prune(self, policy: SnapshotRetentionPolicy, *, dry_run: bool = False) -> PruneResult:
        """Delete the snapshots ``policy`` expires, oldest first (with ``dry_run``, only
        name them); what that frees (see ``InMemoryFilesystem.prune``)."""
        ...

    def space_usage(self) -> SpaceUsage:
        """Shared and exclusive bytes of file data for the live tree, every snapshot
        and every fork (see ``InMemoryFilesystem.space_usage``)."""
        ...

    def changes(self, snapshot: FilesystemSnapshot | None = None) -> SnapshotChanges:
        """What ``snapshot`` changed since the snapshot before it (None: the live
        workspace's changes no snapshot holds yet), with causes."""
        ...

    def blame(self, path: str, *, snapshot: FilesystemSnapshot | None = None) -> list[BlameEntry]:
        """Every change to the file at ``path``, newest first, from ``snapshot`` (None:
        the live workspace) back (see ``InMemoryFilesystem.blame``)."""
        ...


class Daemon(Protocol):
    """The verbs a workspace daemon serves beyond the ``Filesystem`` and snapshot
    protocols: archives, git, forks, the recorded tool calls and the daemon itself."""

    def export_archive(
        self, path: str | os.PathLike[str], *, snapshot: FilesystemSnapshot | None = None
    ) -> int:
        """Write the workspace (or ``snapshot``) as a ZIP archive at the absolute
        ``path``, as the daemon's user; the file count."""
        ...

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Replace the workspace with the archive at the absolute ``path``; the file count."""
        ...

    def persist(
        self,
        snapshot: FilesystemSnapshot | None = None,
        *,
        tag: str | None = None,
        remote: str | None = None,
        max_file_bytes: int | None = None,
    ) -> PersistResult:
        """Persist ``snapshot`` (None: a new one, tagged ``tag``) to the workspace's git
        repository, incrementally; then push to ``remote`` if given.

        A file larger than ``max_file_bytes`` (default: the workspace's memory
        budget; see ``git.persist``) is refused before anything is written, or
        any snapshot taken.
        """
        ...

    def push(self, url: str) -> TransferResult:
        """Push the workspace's persisted snapshots to a git remote, replacing none of
        the remote's refs: a snapshot number the remote uses is taken anew there, a
        tag it holds stays (see ``git.push``); the result says what went where."""
        ...

    def fetch(self, url: str) -> TransferResult:
        """Fetch the workspace's persisted snapshots from a git remote, replacing none
        of the repository's refs: a snapshot number it uses is taken anew, a tag it
        holds stays, what is not whole is refused (see ``git.fetch``)."""
        ...

    def fork(
        self, name: str | None = None, *, snapshot: FilesystemSnapshot | None = None
    ) -> ForkInfo:
        """Fork the workspace (its live state, or ``snapshot``) in the daemon, in O(1),
        and serve it at ``<mountpoint>/.forks/<name>`` (default name: ``fork-<n>``).

        Raises:
            AlreadyExistsError: A fork of that name exists.
            ReadOnlyError: The daemon serves the workspace read-only.
        """
        ...

    def forks(self) -> list[ForkInfo]:
        """The forks the daemon serves, by name."""
        ...

    def drop_fork(self, name: str) -> None:
        """Stop serving fork ``name`` (its path goes at once) and forget it."""
        ...

    def merge_fork(
        self, name: str, *, dry_run: bool = False, markers: bool = False, hold: bool = False
    ) -> MergeReport:
        """Merge fork ``name`` into the workspace, three-way, all or nothing
        (``workspacefs.git.merge``); the fork stays until dropped.

        Args:
            name: The fork.
            dry_run: Only report.
            markers: Give text conflicts the merged text with git's markers.
            hold: Hold a merge with conflicts open (``held`` in the report): its
                result so far in a fork served at ``<mountpoint>/.forks/merge-<n>``,
                text conflicts with markers, to resolve there, then
                ``continue_merge`` or ``abort_merge``.

        Raises:
            BusyError: ``hold``, and a merge is held open already.
        """
        ...

    def merge_status(self) -> HeldMerge | None:
        """The merge held open (None: none is): its fork, and per conflict whether it
        is resolved, the side taken and the lines still holding markers."""
        ...

    def continue_merge(self, *, choose: Mapping[str, Side] | None = None) -> MergeReport:
        """Take the sides ``choose`` names (path -> ``base``, ``ours`` or ``theirs``) in
        the merge's fork, then merge the fork into the workspace: all or nothing.

        Raises:
            UnresolvedConflictsError: Paths still conflict (named); nothing changed.
            ContentChangedError: The workspace changed a path since the merge opened,
                differently; nothing changed.
            NotFoundError: No merge is held open.
        """
        ...

    def abort_merge(self) -> None:
        """Drop the merge held open and its fork; the workspace never changed.

        Raises:
            NotFoundError: No merge is held open.
        """
        ...

    def best_of(
        self,
        commands: Sequence[str],
        *,
        score: str | None = None,
        timeout: float | None = None,
        image: str | None = None,
        rootfs: str | None = None,
        memory: str | None = None,
    ) -> Trial:
        """Run each command at once in a fork of the workspace and a Podman container of
        its own (the sandbox's defaults; ``image``, ``rootfs`` and ``memory`` as
        ``workspacefs run`` takes them), then ``score`` after each in its fork; the
        workspace stays as it is. Each attempt waits for a decision, its fork served
        at ``<mountpoint>/.forks/<attempt id>`` (``PodmanSandbox.best_of``).

        Raises:
            InvalidArgumentError: No command, too many, or a bad one or option.
            ReadOnlyError: The daemon serves the workspace read-only.
            BusyError: Too many attempts would wait for a decision.
            BackendUnavailableError: A container did not start or stopped.
        """
        ...

    def trials(self) -> list[Trial]:
        """The trials, oldest first: those waiting for a decision and the last few
        decided."""
        ...

    def accept_attempt(self, attempt_id: str, *, hold: bool = False) -> MergeReport:
        """Accept an attempt of a pending trial (a fast-forward, or a merge if the
        workspace changed meanwhile) and drop the trial's others. A merge that
        conflicts applies nothing and leaves every attempt pending; with ``hold`` it is
        held open (``held``, served at ``<mountpoint>/.forks/merge-<n>``) and
        continuing it accepts the attempt.

        Raises:
            NotFoundError: No pending trial has an attempt of that id.
            InvalidArgumentError: Its trial was decided already.
            BusyError: ``hold``, and a merge is held open already.
        """
        ...

    def drop_trial(self, trial_id: str) -> Trial:
        """Drop every attempt of a pending trial (their forks go); its report.

        Raises:
            NotFoundError: No trial of that id.
            InvalidArgumentError: It was decided already.
        """
        ...

    def call_history(self) -> list[RecordedCall]:
        """The tool calls the workspace records (its ``undo:<tool>:<call id>``
        snapshots), oldest first: what ``rewind`` can return to (``fs.call_history``)."""
        ...

    def rewind(self, call_id: str, *, force: bool = False) -> RewindResult:
        """Return the workspace to how it was just before the recorded call ``call_id``;
        that call and every later recorded one are undone, and named, oldest first, in
        the result: the cut point (``fs.rewind``).

        Raises:
            SnapshotNotFoundError: No recorded call has this id.
            ContentChangedError: Without ``force``: a writer other than the recorded
                calls changed the workspace after the call; nothing was changed.
        """
        ...

    def serve_mcp(self, socket: str, *, rewind: bool = True) -> None:
        """Serve the agent tools over MCP here, in the daemon, to the client of a
        ``workspacefs mcp MOUNTPOINT`` process: connect to the Unix socket at the
        absolute path ``socket``, take the two descriptors sent on it (the client's
        input and output) and serve the session on them in a thread of its own until
        the input ends, then say so on the socket. Answered once the thread started.

        Args:
            socket: The process's socket.
            rewind: Record every call for ``history`` and ``rewind`` (where the
                workspace takes writes).
        """
        ...

    def access_rules(self, *, fork: str | None = None) -> DeclaredRules:
        """The access rules of the workspace (or of fork ``fork``): its own, and those it
        inherits (see ``fs.AccessRules``)."""
        ...

    def add_rules(self, rules: Sequence[Rule], *, fork: str | None = None) -> DeclaredRules:
        """Declare ``rules`` on the workspace (binding its forks too) or on fork ``fork``
        (binding it alone); in force for the next change, the mount's cached entries of
        paths a hidden rule covers dropped. A workspace kept in a store keeps its rules
        when it is resumed.

        Raises:
            NotFoundError: No fork of that name.
        """
        ...

    def remove_rules(self, patterns: Sequence[str], *, fork: str | None = None) -> DeclaredRules:
        """Drop the rules declared on the workspace (or fork ``fork``) whose pattern is one
        of ``patterns``."""
        ...

    def denials(
        self, path: str | None = None, *, after: int = 0, fork: str | None = None
    ) -> list[Denial]:
        """The changes the access rules refused in the workspace (or fork ``fork``),
        oldest first, with their causes: of ``path`` and below only, if given, and
        numbered after ``after`` only (see ``InMemoryFilesystem.denials``)."""
        ...

    def info(self) -> dict[str, Any]:
        """The daemon's fixed facts: API version, pid, mount point, socket, workspace
        id, repository, log, and what the ``Filesystem`` properties answer."""
        ...

    def status(self) -> dict[str, Any]:
        """``info`` plus files, bytes, resident memory, snapshots, uptime, the
        mount's kernel requests (``requests``: total, handler_seconds, open_free,
        latency_hint, counts and seconds by request type) and its FUSE connection
        (``fuse``: libfuse, library, protocol, capabilities, declined)."""
        ...

    def unmount(self) -> None:
        """Stop the daemon once this call is answered: unmount, remove its socket.

        Raises:
            MountedInsideError: Something is mounted inside the mount point.
        """
        ...


class _ProtocolTypes(dict[str, Any]):
    """The names an annotation may use in a module that imports the protocol's value
    types for type checkers only (``TreeEntry``, ``MergeReport``): those the module does
    not define are looked up in ``workspacefs.fs`` when first named, so a client loads
    the types of the verbs it calls, not every module of the protocol."""

    def __init__(self, module: Mapping[str, Any]) -> None:
        super().__init__()
        self._module = module

    def __missing__(self, name: str) -> Any:
        if name in self._module or hasattr(builtins, name):
            raise KeyError(name)  # the module's own names, and the builtins
        try:
            return getattr(fs, name)
        except AttributeError:
            raise KeyError(name) from None


def contract_signature(function: Callable[..., Any]) -> inspect.Signature:
    """The signature of ``function`` (a verb's contract, a client's method), its
    annotations evaluated (``inspect.signature(function, eval_str=True)``) with the
    protocol's value types its module names for type checkers only loaded on first
    use (``_ProtocolTypes``)."""
    names = _ProtocolTypes(getattr(function, "__globals__", {}))
    return inspect.signature(function, eval_str=True, locals=names)


class _Caller(Protocol):
    """A client: what runs a verb on the daemon."""

    def _call(self, verb: Verb[Any, Any], /, *args: Any, **kwargs: Any) -> Any: ...


class Verb(Generic[P, R]):
    """One verb of the control API: its contract and what it asks of the daemon.

    Args:
        contract: The protocol's method (or property) whose signature is the verb's.
        runs: What it runs on (``Runs``).
        changes: It changes the workspace: the client sends its cause (the
            verb is blamed on it), and a read-only daemon refuses it (a
            ``view`` verb: the read-only view does, naming the path; a dry run
            changes nothing and is served).
        stops: The daemon stops once it has answered.
        carries_call: The client sends the cause in effect in its thread or task, if
            any, and nothing else (not the process): a tool call, which attributes
            its changes to the tool and call id itself and takes only the call fields
            of that cause (``Tool.invoke``), as it would in the client's process.
    """

    def __init__(
        self,
        contract: Callable[Concatenate[Any, P], R],
        runs: Runs,
        *,
        changes: bool = False,
        stops: bool = False,
        carries_call: bool = False,
    ) -> None:
        function = contract.fget if isinstance(contract, property) else contract
        assert function is not None, "a property verb reads its getter"
        self.contract: Callable[..., Any] = function
        self.name: str = function.__name__
        self.runs = runs
        self.changes = changes
        self.stops = stops
        self.carries_call = carries_call

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:
            raise TypeError(f"the verb {self.name!r} is declared as {name!r}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} ({self.runs})>"

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The contract's signature without ``self``: the verb's arguments and result."""
        full = contract_signature(self.contract)
        return full.replace(parameters=list(full.parameters.values())[1:])

    @property
    def result(self) -> Any:
        """The type of the verb's result."""
        return self.signature.return_annotation

    @functools.cached_property
    def binary(self) -> frozenset[str]:
        """The arguments that are bytes (base64 on the wire)."""
        return frozenset(
            name
            for name, parameter in self.signature.parameters.items()
            if _holds_bytes(parameter.annotation)
        )

    # -- the client's half ---------------------------------------------------------

    def request(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The body of a call: the arguments the caller gave (bound as the contract
        binds them: TypeError as for a method), each as JSON; the daemon applies the
        protocol's defaults to the others."""
        bound = self.signature.bind(*args, **kwargs)
        parameters = self.signature.parameters
        body = {}
        for name, value in bound.arguments.items():
            try:
                body[name] = to_json(value, parameters[name].annotation)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"{self.name}: {name}: {exc.strerror}", None) from None
        return body

    def result_of(self, data: Any) -> R:
        """The result the daemon answered, as the contract's type."""
        return cast("R", from_json(self.result, data))

    # -- the server's half ---------------------------------------------------------

    def arguments(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments by name: every parameter of the contract, those the
        body leaves out at the protocol's default.

        Raises:
            InvalidArgumentError: An argument the contract does not have, one it
                needs and did not get, or a value not of its type.
        """
        parameters = self.signature.parameters
        unknown = sorted(set(body) - set(parameters))
        if unknown:
            raise InvalidArgumentError(
                f"{self.name} takes no argument {', '.join(map(repr, unknown))} "
                f"(it takes {', '.join(parameters) or 'none'})",
                None,
            )
        decoded = {}
        for name, value in body.items():
            try:
                decoded[name] = from_json(parameters[name].annotation, value)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"{self.name}: {name}: {exc.strerror}", None) from None
        try:
            bound = self.signature.bind(**decoded)
        except TypeError as exc:
            raise InvalidArgumentError(f"{self.name}: {exc}", None) from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def answer(self, value: Any) -> Any:
        """The result as JSON, written as the contract's return type."""
        return to_json(value, self.result)


class _Bound:
    """A ``Method`` of one client: calling it runs the verb; it shows the contract's
    signature and docstring (``help``, ``inspect.signature``)."""

    __slots__ = ("_caller", "_verb")

    def __init__(self, verb: Verb[Any, Any], caller: _Caller) -> None:
        self._verb = verb
        self._caller = caller

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._caller._call(self._verb, *args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return self._verb.signature

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._verb.contract.__doc__

    @property
    def __name__(self) -> str:
        return self._verb.name

    def __repr__(self) -> str:
        return f"<verb {self._verb.name} of {self._caller!r}>"


class Method(Verb[P, R]):
    """A verb called as a method: ``fs.read(path)``."""

    def of(self, caller: _Caller) -> Callable[P, R]:
        """The verb as a method of ``caller`` (what ``caller.<name>`` is, unless the
        caller's class does more around it)."""
        return cast("Callable[P, R]", _Bound(self, caller))

    @overload
    def __get__(self, instance: None, owner: type) -> Method[P, R]: ...
    @overload
    def __get__(self, instance: _Caller, owner: type) -> Callable[P, R]: ...
    def __get__(self, instance: _Caller | None, owner: type) -> Method[P, R] | Callable[P, R]:
        if instance is None:
            return self
        return self.of(instance)


class Property(Verb[[], R]):
    """A verb read as a property: ``fs.current_snapshot_id``."""

    @overload
    def __get__(self, instance: None, owner: type) -> Property[R]: ...
    @overload
    def __get__(self, instance: _Caller, owner: type) -> R: ...
    def __get__(self, instance: _Caller | None, owner: type) -> Property[R] | R:
        if instance is None:
            return self
        return cast("R", instance._call(self))


def _holds_bytes(annotation: Any) -> bool:
    if annotation is bytes:
        return True
    return get_origin(annotation) is not None and any(_holds_bytes(a) for a in get_args(annotation))


class FilesystemVerbs:
    """The ``Filesystem`` verbs: of the live workspace, or of a snapshot's view."""

    read = Method(Filesystem.read, VIEW)
    read_bytes = Method(Filesystem.read_bytes, VIEW)
    exists = Method(Filesystem.exists, VIEW)
    stat = Method(Filesystem.stat, VIEW)
    readlink = Method(Filesystem.readlink, VIEW)
    list = Method(Filesystem.list, VIEW)
    entries = Method(InMemoryWorkspace.entries, VIEW)
    glob = Method(Filesystem.glob, VIEW)
    grep = Method(Filesystem.grep, VIEW)
    write = Method(Filesystem.write, VIEW, changes=True)
    write_bytes = Method(Filesystem.write_bytes, VIEW, changes=True)
    delete = Method(Filesystem.delete, VIEW, changes=True)
    mkdir = Method(Filesystem.mkdir, VIEW, changes=True)
    rename = Method(Filesystem.rename, VIEW, changes=True)


class WorkspaceVerbs(FilesystemVerbs):
    """The verbs of a daemon's workspace: the ``Filesystem`` verbs, snapshots,
    history, archives, git, forks and the daemon's own."""

    snapshot = Method(SnapshotableFilesystem.snapshot, WORKSPACE)
    restore = Method(SnapshotableFilesystem.restore, WORKSPACE, changes=True)
    diff = Method(SnapshotableFilesystem.diff, DAEMON)
    current_snapshot_id = Property(SnapshotableFilesystem.current_snapshot_id, WORKSPACE)
    snapshots = Method(InMemoryWorkspace.snapshots, WORKSPACE)
    delete_snapshot = Method(InMemoryWorkspace.delete_snapshot, DAEMON)
    prune = Method(InMemoryWorkspace.prune, DAEMON)
    space_usage = Method(InMemoryWorkspace.space_usage, WORKSPACE)
    changes = Method(InMemoryWorkspace.changes, WORKSPACE)
    blame = Method(InMemoryWorkspace.blame, WORKSPACE)
    export_archive = Method(Daemon.export_archive, DAEMON)
    import_archive = Method(Daemon.import_archive, DAEMON, changes=True)
    persist = Method(Daemon.persist, DAEMON)
    push = Method(Daemon.push, DAEMON)
    fetch = Method(Daemon.fetch, DAEMON)
    fork = Method(Daemon.fork, DAEMON)
    forks = Method(Daemon.forks, DAEMON)
    drop_fork = Method(Daemon.drop_fork, DAEMON)
    merge_fork = Method(Daemon.merge_fork, DAEMON, changes=True)
    call_history = Method(Daemon.call_history, DAEMON)
    rewind = Method(Daemon.rewind, DAEMON, changes=True)
    access_rules = Method(Daemon.access_rules, DAEMON)
    add_rules = Method(Daemon.add_rules, DAEMON)
    remove_rules = Method(Daemon.remove_rules, DAEMON)
    denials = Method(Daemon.denials, DAEMON)
    merge_status = Method(Daemon.merge_status, DAEMON)
    continue_merge = Method(Daemon.continue_merge, DAEMON, changes=True)
    abort_merge = Method(Daemon.abort_merge, DAEMON)
    best_of = Method(Daemon.best_of, DAEMON)
    trials = Method(Daemon.trials, DAEMON)
    accept_attempt = Method(Daemon.accept_attempt, DAEMON, changes=True)
    drop_trial = Method(Daemon.drop_trial, DAEMON)
    info = Method(Daemon.info, DAEMON)
    status = Method(Daemon.status, DAEMON)
    unmount = Method(Daemon.unmount, DAEMON, stops=True)


class DaemonVerbs(WorkspaceVerbs):
    """Every verb of a daemon: its workspace's, and running tools there (a call:
    ``ToolHost``; an MCP session: ``serve_mcp``).

    Apart from ``WorkspaceVerbs``, which the tools the daemon runs see their
    workspace through: a call of a tool there runs where it is."""

    call_tool = Method(ToolHost.call_tool, DAEMON, carries_call=True)
    serve_mcp = Method(Daemon.serve_mcp, DAEMON)


VERBS: Mapping[str, Verb[Any, Any]] = {
    name: value
    for cls in reversed(DaemonVerbs.__mro__)
    for name, value in vars(cls).items()
    if isinstance(value, Verb)
}
"""Every verb by name: what the daemon serves."""
