"""The daemon's verb table, the protocols and ``RemoteFilesystem`` never drift apart.

Each verb is declared once (``daemon._verbs``) with the protocol's own method
as its contract; these tests fail when a protocol grows a verb the table
lacks, when a client method or a server implementation says other than its
contract (a parameter, its kind, its default), or when the table names a
contract that is not the protocol's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from workspacefs.archive import Archivable
from workspacefs.daemon import (
    VERBS,
    Daemon,
    DaemonVerbs,
    FilesystemVerbs,
    InMemoryWorkspace,
    RemoteFilesystem,
    RemoteSnapshotView,
    Verb,
)
from workspacefs.daemon._verbs import contract_signature
from workspacefs.daemon._workspace import Workspace
from workspacefs.fs import (
    Filesystem,
    InMemoryFilesystem,
    SnapshotableFilesystem,
    TreeFilesystem,
)
from workspacefs.tools import ToolHost

FACTS = {"root", "read_only", "mount_point"}
"""Protocol properties the client answers from the daemon's facts, not by a verb."""

EXTENDED: dict[tuple[type, str], set[str]] = {(RemoteFilesystem, "unmount"): {"wait"}}
"""Client methods that add keyword arguments of their own to the verb's (with defaults)."""


def _members(protocol: type) -> Iterator[tuple[str, Any]]:
    """The verbs a protocol class declares (its own and its bases' within the protocol)."""
    for cls in protocol.__mro__:
        if cls in (object,) or cls.__module__ == "typing":
            continue
        for name, value in vars(cls).items():
            if not name.startswith("_") and (callable(value) or isinstance(value, property)):
                yield name, value


def _function(value: Any) -> Callable[..., Any]:
    function = value.fget if isinstance(value, property) else value
    assert callable(function)
    return function


Shape = list[tuple[str, Any, Any, Any]]


def _shape(function: Callable[..., Any], *, skip_self: bool = True) -> Shape:
    """Each parameter's name, kind and default (the annotation too: ``eval_str``)."""
    parameters = list(contract_signature(function).parameters.values())
    if skip_self:
        parameters = parameters[1:]
    return [(p.name, p.kind, p.default, p.annotation) for p in parameters]


def _without(shape: Shape, extra: set[str]) -> Shape:
    return [item for item in shape if item[0] not in extra]


@pytest.mark.parametrize(
    "protocol",
    [Filesystem, SnapshotableFilesystem, InMemoryWorkspace, Daemon, ToolHost],
    ids=lambda p: p.__name__,
)
def test_every_protocol_verb_is_in_the_table_with_the_protocols_contract(protocol: type) -> None:
    declared = dict(_members(protocol))
    missing = sorted(set(declared) - FACTS - set(VERBS))
    assert not missing, f"{protocol.__name__} verbs missing from the table: {missing}"
    for name in declared:
        if name in FACTS:
            continue
        contract = VERBS[name].contract
        owner = next(cls for cls in protocol.__mro__ if name in vars(cls))
        assert contract is _function(vars(owner)[name]), (name, contract)


def test_every_verb_is_a_protocol_method_named_as_declared() -> None:
    sources = (Filesystem, SnapshotableFilesystem, InMemoryWorkspace, Daemon, ToolHost)
    for name, verb in VERBS.items():
        assert verb.name == name
        assert any(
            _function(getattr(source, name, None) or (lambda: None)) is verb.contract
            for source in sources
            if hasattr(source, name)
        ), f"{name}: its contract is no protocol's method"


def _client_member(cls: type, name: str) -> tuple[str, Any]:
    """What ``cls.<name>`` is: the table's verb itself, or the client's own method."""
    value = inspect.getattr_static(cls, name)
    return ("verb", value) if isinstance(value, Verb) else ("own", value)


@pytest.mark.parametrize("client", [RemoteFilesystem, RemoteSnapshotView], ids=lambda c: c.__name__)
def test_client_methods_have_their_contracts_signatures(client: type) -> None:
    table = DaemonVerbs if client is RemoteFilesystem else FilesystemVerbs
    own = {"changes", "blame", "export_archive"} if client is RemoteSnapshotView else set()
    names = sorted({name for name in VERBS if hasattr(table, name)} | own)
    for name in names:
        kind, value = _client_member(client, name)
        verb = VERBS[name]
        if kind == "verb":
            assert value is verb, name  # the table's own descriptor: its contract's signature
            continue
        shape = _shape(_function(value))
        expected = _shape(verb.contract)
        if client is RemoteSnapshotView and name == "export_archive":
            expected = _shape(Archivable.export_archive)  # a view exports its own snapshot
        assert _without(shape, EXTENDED.get((client, name), set())) == expected, name
        for extra in EXTENDED.get((client, name), set()):
            parameter = inspect.signature(_function(value)).parameters[extra]
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, (name, extra)
            assert parameter.default is not inspect.Parameter.empty, (name, extra)


def test_a_views_table_has_no_snapshot_verbs() -> None:
    # Like the in-process view (``InMemoryFilesystem.at``), a remote view only reads.
    for name in ("snapshot", "restore", "diff", "prune", "persist", "fork"):
        assert not hasattr(RemoteSnapshotView, name), name


def _implementation(verb: Verb[Any, Any]) -> Any:
    if verb.runs == "view":
        return getattr(TreeFilesystem, verb.name)
    if verb.runs == "workspace":
        return getattr(InMemoryFilesystem, verb.name)
    return getattr(Workspace, verb.name)


@pytest.mark.parametrize("name", sorted(VERBS))
def test_the_server_implements_each_verb_as_its_contract_says(name: str) -> None:
    # The daemon binds a request against the contract (its defaults apply); an
    # implementation that says other defaults would answer in-process callers
    # otherwise than remote ones.
    verb = VERBS[name]
    implementation = _function(_implementation(verb))
    assert _shape(implementation) == _shape(verb.contract), name
    # The result too: a contract declared apart from its implementation
    # (``InMemoryWorkspace``) must not say another type than the one answered.
    answers = inspect.signature(implementation, eval_str=True).return_annotation
    assert answers == verb.result, name


@pytest.mark.parametrize("name", sorted(VERBS))
def test_each_verbs_arguments_and_result_have_a_json_form(name: str) -> None:
    # Looked up now rather than on the first call that needs them.
    verb = VERBS[name]
    from workspacefs.fs._codec import _decoder, _encoder

    for parameter in verb.signature.parameters.values():
        _encoder(parameter.annotation)
        _decoder(parameter.annotation)
    _encoder(verb.result)
    _decoder(verb.result)


def test_binary_arguments_are_read_from_the_contract() -> None:
    assert {name for name, verb in VERBS.items() if verb.binary} == {"write_bytes"}
    assert VERBS["write_bytes"].binary == {"content"}
