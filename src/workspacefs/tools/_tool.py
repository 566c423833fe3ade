"""``Tool``: a name, a description, a pydantic parameter model and a handler.

A handler has the seed's shape, ``handler(params, *, context) -> ToolResult``.
``Tool.invoke`` validates raw arguments (a model's JSON) against the model
first: wrong types, missing or unknown fields come back as a failed result
naming each field, never as an exception.

The built-in tools are ``served``: a workspace that runs them where it is (a
``ToolHost``: a daemon's client) gets each call of one whole, as one request,
rather than a request for every step its handler takes; ``invoke`` makes the
same ``ToolResult`` of its ``ToolAnswer`` (the value read back as the handler's
return annotation declares it).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..fs import Cause, FilesystemSnapshot, attributed, current_cause, from_json, to_json
from ._answer import ToolAnswer
from ._context import NO_FILESYSTEM, NoFilesystemError, ToolContext
from ._messages import describe_error
from ._result import ToolResult

P = TypeVar("P", bound=BaseModel)
P_contra = TypeVar("P_contra", bound=BaseModel, contravariant=True)
T = TypeVar("T")


class ToolParams(BaseModel):
    """Base of parameter models: unknown fields are refused, so a misspelt one is named."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolHandler(Protocol[P_contra, T]):
    """``handler(params, *, context) -> ToolResult``."""

    def __call__(self, params: P_contra, /, *, context: ToolContext) -> ToolResult[T]: ...


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """Hints about a tool's effects (MCP's tool annotations use the same three).

    Attributes:
        read_only: Never changes the workspace; undo takes no snapshot for it.
        destructive: May delete or overwrite what was there (meaningful if not read-only).
        idempotent: Repeating the call with the same arguments changes nothing more.
        title: A human-readable name.
        changes_directories: May make, move or remove directories, which a diff
            (file by file) does not see; undo snapshots after each call of it that
            succeeds. Not one of MCP's hints.
    """

    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    title: str | None = None
    changes_directories: bool = False


@dataclass(frozen=True, slots=True)
class Tool(Generic[P, T]):
    """One tool an agent can call.

    Attributes:
        name: The name models call it by.
        description: What it does and when to use it, written for a model.
        params: The pydantic model its arguments are validated against.
        handler: ``handler(params, *, context) -> ToolResult``.
        annotations: Hints about its effects.
        output: The type its result's value is written as (``fs.to_json``) for MCP's
            structured content, besides the message; None: the message only.
    """

    name: str
    description: str
    params: type[P]
    handler: ToolHandler[P, T]
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    output: Any = None

    @property
    def mutating(self) -> bool:
        """True if the tool may change the workspace."""
        return not self.annotations.read_only

    def validate(self, arguments: Mapping[str, Any] | P | None) -> P | str:
        """The validated parameters, or a message naming every bad field."""
        if type(arguments) is not dict:  # a model's JSON arguments are a dict: checked first
            if isinstance(arguments, self.params):
                return arguments
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, Mapping):
                return f"{self.name}: arguments must be a JSON object of named parameters."
            arguments = dict(arguments)
        try:
            # The model's own validator: ``model_validate`` wraps it in as much time again.
            return self.params.__pydantic_validator__.validate_python(  # type: ignore[no-any-return]
                arguments
            )
        except ValidationError as exc:
            return invalid_arguments(self.name, exc)

    def invoke(
        self, arguments: Mapping[str, Any] | P | None, *, context: ToolContext
    ) -> ToolResult[T]:
        """Validate ``arguments`` and run the handler.

        Every change the handler makes is attributed to this tool and the
        context's ``call_id`` (with the label of a cause the caller set, if
        any), in this thread or task only.

        A filesystem error (``OSError``) or bad value (``ValueError``) that the
        handler did not word itself becomes a failed result, and so does a
        context without the filesystem the handler needs (``NO_FILESYSTEM``);
        anything else is a bug and propagates.
        """
        host = self._host(context)
        if host is not None:
            return self._forward(host, arguments, context)
        params = self.validate(arguments)
        if isinstance(params, str):
            return ToolResult.fail(params)
        outer = current_cause()
        if context.call_id is None and outer is None:
            call = _tool_cause(self.name)
        else:
            call = Cause.call(self.name, context.call_id).with_call(outer)
        try:
            with attributed(call):
                return self.handler(params, context=context)
        except NoFilesystemError:
            return ToolResult.fail(NO_FILESYSTEM)
        except (OSError, ValueError) as exc:
            return ToolResult.fail(f"{self.name} failed: {describe_error(exc)}.")

    def _host(self, context: ToolContext) -> Callable[..., ToolAnswer] | None:
        """The context's ``ToolHost.call_tool``, if it has one and this is the tool a host
        runs under this name (a tool of the caller's own of the same name is run here)."""
        if not is_served(self) or context.filesystem is None:
            return None
        try:
            return host_of(context.workspace())
        except NoFilesystemError:
            return None

    def _forward(
        self,
        call_tool: Callable[..., ToolAnswer],
        arguments: Mapping[str, Any] | P | None,
        context: ToolContext,
    ) -> ToolResult[T]:
        """Run the call where the workspace is: one request; the same result."""
        raw = wire_arguments(self, arguments)
        if isinstance(raw, str):
            return ToolResult.fail(raw)
        try:
            answer = call_tool(self.name, raw, call_id=context.call_id)
        except (OSError, ValueError) as exc:  # the host unreachable, or the wire refused
            return ToolResult.fail(f"{self.name} failed: {describe_error(exc)}.")
        return result_of(self, answer)


_SERVED: dict[str, Tool[Any, Any]] = {}


def served(tool: Tool[P, T]) -> Tool[P, T]:
    """Mark ``tool`` as one every ``ToolHost`` runs itself under its name (the built-in
    tools: a workspace daemon serves them all); returns it."""
    _SERVED[tool.name] = tool
    return tool


def is_served(tool: Tool[Any, Any]) -> bool:
    """Whether ``tool`` is the one a ``ToolHost`` runs under its name (``served``)."""
    return _SERVED.get(tool.name) is tool


def host_of(filesystem: object) -> Callable[..., ToolAnswer] | None:
    """``filesystem``'s ``ToolHost.call_tool``, or None if it runs no tools itself."""
    call = getattr(filesystem, "call_tool", None)
    return call if callable(call) else None


def wire_arguments(tool: Tool[Any, Any], arguments: object) -> dict[str, Any] | str:
    """``arguments`` as a host takes them: checked here (else the message refusing them,
    as ``validate`` words it) and written as the parameter model's JSON."""
    params = tool.validate(arguments)
    if isinstance(params, str):
        return params
    dumped: dict[str, Any] = params.model_dump(mode="json", by_alias=True)
    return dumped


def value_type(tool: Tool[Any, Any]) -> Any:
    """The type of ``tool``'s result values: ``T`` of its handler's ``ToolResult[T]``
    return annotation (``Any`` if it declares none)."""
    handler: Callable[..., Any] = tool.handler
    try:
        return _value_type(handler)
    except TypeError:  # a handler that cannot be a cache key
        return _value_type.__wrapped__(handler)


@functools.cache
def _value_type(handler: Callable[..., Any]) -> Any:
    try:
        hint = typing.get_type_hints(handler).get("return")
    except (NameError, TypeError):  # an annotation that names what is not importable
        return Any
    args = typing.get_args(hint)
    return args[0] if args else Any


def answer_of(
    tool: Tool[Any, Any] | None,
    result: ToolResult[Any],
    *,
    call_id: str | None = None,
    before: FilesystemSnapshot | None = None,
    after: FilesystemSnapshot | None = None,
) -> ToolAnswer:
    """``result`` of a call of ``tool`` (None: no tool has its name) as a host answers it."""
    value = None
    if tool is not None and result.value is not None:
        value = to_json(result.value, value_type(tool))
    return ToolAnswer(
        result.message, result.success, value, result.attachments, call_id, before, after
    )


def result_of(tool: Tool[Any, T], answer: ToolAnswer) -> ToolResult[T]:
    """The ``ToolResult`` a host's ``answer`` to a call of ``tool`` stands for."""
    value = None if answer.value is None else from_json(value_type(tool), answer.value)
    return ToolResult(answer.message, value, answer.success, answer.attachments)


@functools.lru_cache(maxsize=256)
def _tool_cause(tool: str) -> Cause:
    """The cause of a call of ``tool`` with no call id and no outer cause: one object
    per tool, so the tree sees the same cause again and skips comparing it."""
    return Cause.call(tool)


def invalid_arguments(tool: str, exc: ValidationError) -> str:
    """One line per bad field: ``- `limit`: Input should be ... (got 0)``."""
    lines = [f"{tool}: invalid arguments, nothing was done:"]
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        got = "" if error["type"] == "missing" else f" (got {error['input']!r:.80})"
        lines.append(f"- `{where}`: {error['msg']}{got}")
    return "\n".join(lines)
