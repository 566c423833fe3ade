"""``ToolRegistry``: the tools an agent is offered, by name, in a fixed order.

A tool defined elsewhere (the sandbox's shell tool, a framework's own) joins
with one call, ``registry.add(tool)``, and is then dispatched, exported and
served over MCP like the built-in ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._errors import AlreadyExistsError
from ._context import ToolContext
from ._result import ToolResult
from ._schemas import JsonObject, anthropic_schema, openai_schema
from ._tool import Tool


class ToolRegistry:
    """An ordered set of tools with unique names.

    Args:
        tools: The initial tools.
    """

    def __init__(self, tools: Iterable[Tool[Any, Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any, Any]] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool[Any, Any]) -> Tool[Any, Any]:
        """Offer ``tool`` too; its name must be new. Returns it."""
        if tool.name in self._tools:
            raise AlreadyExistsError(f"a tool named {tool.name!r} is already registered", None)
        self._tools[tool.name] = tool
        return tool

    def remove(self, name: str) -> Tool[Any, Any]:
        """Stop offering the tool ``name``; KeyError if there is none."""
        return self._tools.pop(name)

    def get(self, name: str) -> Tool[Any, Any] | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool[Any, Any]:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[Any, Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def call(
        self, name: str, arguments: Mapping[str, Any] | None, *, context: ToolContext
    ) -> ToolResult[Any]:
        """Run the tool ``name`` on raw arguments; an unknown name is a failed result."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools)
            return ToolResult.fail(f"There is no tool named {name!r}; the tools are: {known}.")
        return tool.invoke(arguments, context=context)

    def openai_schemas(self) -> list[JsonObject]:
        """Every tool in OpenAI's function-calling shape."""
        return [openai_schema(tool) for tool in self]

    def anthropic_schemas(self) -> list[JsonObject]:
        """Every tool in Anthropic's tool-use shape."""
        return [anthropic_schema(tool) for tool in self]
