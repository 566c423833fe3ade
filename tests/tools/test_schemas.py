"""Exported schemas are valid JSON Schema in both providers' shapes; bad inputs fail
naming the field, never raising."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import Field

from workspacefs import InMemoryFilesystem
from workspacefs.tools import (
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolParams,
    ToolRegistry,
    ToolResult,
    filesystem_tools,
)

NAMES = [
    "ls",
    "stat",
    "read_file",
    "read_files",
    "read_bytes",
    "write_file",
    "edit_file",
    "multi_edit",
    "mkdir",
    "mv",
    "glob",
    "grep",
    "rm",
    "snapshot",
    "restore",
    "diff",
]


def _check(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{name} has no description"
        assert "title" not in prop


def test_openai_shape_validates() -> None:
    exported = filesystem_tools().openai_schemas()
    assert [entry["function"]["name"] for entry in exported] == NAMES
    for entry in exported:
        assert set(entry) == {"type", "function"}
        assert entry["type"] == "function"
        assert set(entry["function"]) == {"name", "description", "parameters"}
        assert entry["function"]["description"]
        _check(entry["function"]["parameters"])


def test_anthropic_shape_validates() -> None:
    exported = filesystem_tools().anthropic_schemas()
    assert [entry["name"] for entry in exported] == NAMES
    for entry in exported:
        assert set(entry) == {"name", "description", "input_schema"}
        _check(entry["input_schema"])


def test_schema_accepts_what_the_model_accepts() -> None:
    """A call valid against the exported schema validates in the tool, and vice versa."""
    tools = filesystem_tools()
    schema = tools["diff"].params.model_json_schema(by_alias=True)
    good = {"from": "s1", "to": None, "max_lines": 10}
    jsonschema.validate(good, schema)
    assert not isinstance(tools["diff"].validate(good), str)
    bad = {"from": "s1", "max_lines": 0}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert isinstance(tools["diff"].validate(bad), str)


BAD_INPUTS = [
    ("read_file", {}, "`path`: Field required"),
    ("read_file", {"path": 3}, "`path`: Input should be a valid string (got 3)"),
    (
        "read_file",
        {"path": "a", "offset": 0},
        "`offset`: Input should be greater than or equal to 1",
    ),
    ("read_file", {"path": "a", "limit": "many"}, "`limit`: Input should be a valid integer"),
    ("read_file", {"file_path": "a"}, "`file_path`: Extra inputs are not permitted"),
    ("write_file", {"path": "a"}, "`content`: Field required"),
    (
        "write_file",
        {"path": "a", "content": "x", "mode": "truncate"},
        "`mode`: Input should be 'create', 'overwrite' or 'append'",
    ),
    (
        "edit_file",
        {"path": "a", "old_string": "", "new_string": "x"},
        "`old_string`: String should have at least 1 character",
    ),
    (
        "edit_file",
        {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "often"},
        "`replace_all`: Input should be a valid boolean",
    ),
    ("glob", {"pattern": ["*"]}, "`pattern`: Input should be a valid string"),
    ("grep", {"pattern": "x", "output_mode": "lines"}, "`output_mode`: Input should be"),
    (
        "grep",
        {"pattern": "x", "context_lines": 99},
        "`context_lines`: Input should be less than or equal to 10",
    ),
    ("rm", {"path": None}, "`path`: Input should be a valid string (got None)"),
    ("snapshot", {"tag": ""}, "`tag`: String should have at least 1 character"),
    ("restore", {}, "`id_or_tag`: Field required"),
    ("diff", {"to": "x"}, "`from`: Field required"),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), BAD_INPUTS)
def test_bad_inputs_fail_naming_the_field(
    tool: str, arguments: dict[str, Any], expected: str
) -> None:
    fs = InMemoryFilesystem()
    fs.write("a", "content")
    result = filesystem_tools(fs).call(tool, arguments, context=ToolContext(filesystem=fs))
    assert not result.success
    assert result.message.startswith(f"{tool}: invalid arguments, nothing was done:")
    assert expected in result.message
    assert fs.read("a").content == "content"


def test_arguments_that_are_not_an_object() -> None:
    fs = InMemoryFilesystem()
    tool = filesystem_tools()["ls"]
    result = tool.invoke(["."], context=ToolContext(filesystem=fs))
    assert not result.success
    assert "JSON object" in result.message


def test_unknown_tool_is_a_failed_result() -> None:
    fs = InMemoryFilesystem()
    result = filesystem_tools().call("cat", {}, context=ToolContext(filesystem=fs))
    assert not result.success
    assert result.message.startswith("There is no tool named 'cat'; the tools are: ls, stat, ")


class EchoParams(ToolParams):
    words: list[str] = Field(description="What to say.")


def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[int]:
    return ToolResult.ok(" ".join(params.words), len(params.words))


def test_a_tool_defined_elsewhere_joins_with_one_call() -> None:
    registry = filesystem_tools()
    registry.add(
        Tool(
            "echo",
            "Say the words.",
            EchoParams,
            echo,
            ToolAnnotations(read_only=True, destructive=False),
        )
    )
    fs = InMemoryFilesystem()
    result = registry.call("echo", {"words": ["hi", "there"]}, context=ToolContext(filesystem=fs))
    assert result == ToolResult("hi there", 2, True)
    assert registry.anthropic_schemas()[-1]["input_schema"]["properties"]["words"] == {
        "description": "What to say.",
        "items": {"type": "string"},
        "type": "array",
    }
    with pytest.raises(FileExistsError):
        registry.add(registry["echo"])
    assert len(ToolRegistry([registry["echo"]])) == 1
