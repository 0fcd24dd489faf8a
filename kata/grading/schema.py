"""Check a JSON value against ``results.schema.json`` (or another JSON Schema, draft 2020-12) with ``jsonschema``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).with_name("results.schema.json")


def load() -> dict:
    """The schema of ``grade/results.json``."""
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def errors(value: Any, schema: dict | None = None) -> list[str]:
    """Every way ``value`` breaks ``schema`` (the results schema by default), as 'where: what' lines.

    A schema that is itself not valid JSON Schema raises ``jsonschema.SchemaError``, so a broken edit of one is
    never read as "no errors".
    """
    schema = schema if schema is not None else load()
    jsonschema.Draft202012Validator.check_schema(schema)
    found = jsonschema.Draft202012Validator(schema).iter_errors(value)
    return [f"{e.json_path}: {_said(e)}" for e in found]


def _said(error: jsonschema.ValidationError, most: int = 160) -> str:
    """The library's message; where that quotes a long value whole (a learner's file, say), the value cut short.

    The rule the value breaks is then named instead of the message.
    """
    if len(error.message) <= most:
        return error.message
    return f"{repr(error.instance)[:80]}… breaks {error.validator!r}: {repr(error.validator_value)[:60]}"
