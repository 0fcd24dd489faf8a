"""Check a JSON value against ``results.schema.json`` without extra packages.

Implements the JSON Schema keywords the schema uses (type, enum, required, properties,
additionalProperties, items, minimum, maximum, $ref to ``#/$defs/...``) and refuses any other
keyword, so a schema edit can never be ignored silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).with_name("results.schema.json")
ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}
KEYWORDS = {"type", "enum", "required", "properties", "additionalProperties", "items", "minimum", "maximum", "$ref"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def load() -> dict:
    """The schema of ``grade/results.json``."""
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def errors(value: Any, schema: dict | None = None) -> list[str]:
    """Every way ``value`` breaks ``schema`` (the results schema by default), as 'where: what' lines."""
    root = schema if schema is not None else load()
    found: list[str] = []
    _check(value, root, root, "$", found)
    return found


def _check(value: Any, schema: dict, root: dict, where: str, found: list[str]) -> None:
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise ValueError(f"schema at {where} uses keywords this checker does not know: {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"schema at {where}: only #/$defs/ references are supported, got {ref}")
        _check(value, root["$defs"][ref.removeprefix("#/$defs/")], root, where, found)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            found.append(f"{where}: expected {' or '.join(types)}, got {type(value).__name__} {value!r:.80}")
            return
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r:.80} is not one of {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append(f"{where}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            found.append(f"{where}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{where}: missing {key!r}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], root, f"{where}.{key}", found)
            elif schema.get("additionalProperties", True) is False:
                found.append(f"{where}: unexpected key {key!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{i}]", found)
