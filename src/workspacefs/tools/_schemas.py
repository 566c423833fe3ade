"""Tool definitions in the shapes function-calling APIs take: plain dicts, no SDK.

The JSON Schema comes from the parameter model (pydantic writes draft 2020-12);
pydantic's ``title`` keys are dropped, since models read the descriptions.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ._tool import Tool

JsonObject = dict[str, Any]

_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("items", "additionalProperties", "not")


def _untitled(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out: JsonObject = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_untitled(sub) for sub in value]
        elif key in _SCHEMA_ONES:
            out[key] = _untitled(value)
        else:
            out[key] = value
    return out


def _inlined(schema: Any, defs: JsonObject) -> Any:
    """``schema`` with each ``$ref`` to ``defs`` replaced by what it names: a nested
    model (``multi_edit``'s edits) is spelt out where it is used, since not every
    client resolves references."""
    if isinstance(schema, list):
        return [_inlined(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        named = dict(defs[ref.removeprefix("#/$defs/")])
        named.update({key: value for key, value in schema.items() if key != "$ref"})
        return _inlined(named, defs)
    return {key: _inlined(value, defs) for key, value in schema.items()}


def input_schema(params: type[BaseModel]) -> JsonObject:
    """The JSON Schema (2020-12) of a parameter model, as tools advertise it."""
    schema: JsonObject = _untitled(params.model_json_schema(by_alias=True))
    defs = schema.pop("$defs", None)
    if defs:
        schema = _inlined(schema, defs)
    schema.pop("description", None)  # the model's docstring; the tool's description says it
    schema.setdefault("properties", {})
    return schema


def openai_schema(tool: Tool[Any, Any]) -> JsonObject:
    """The tool as OpenAI Chat Completions ``tools=[...]`` entries take it."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": input_schema(tool.params),
        },
    }


def anthropic_schema(tool: Tool[Any, Any]) -> JsonObject:
    """The tool as the Anthropic Messages API ``tools=[...]`` entries take it."""
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": input_schema(tool.params),
    }
