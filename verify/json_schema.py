"""The first violation of a JSON Schema (draft 2020-12) by a JSON value, for the keywords the
report's schema uses (``verify/report.schema.json``), without a dependency at run time.

Keywords: ``type``, ``enum``, ``const``, ``minimum``, ``pattern``, ``required``, ``properties``,
``additionalProperties``, ``propertyNames``, ``items``, ``minItems``, ``$ref`` (local ``#/...``),
``allOf``, ``oneOf``; annotations (``title``, ``description``, ``$id``, ``$schema``) are ignored.
A keyword outside this list is a ``ValueError``: the schema grew and this module must learn it.
The tests compare it with the ``jsonschema`` package on valid and broken reports.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
}
_ANNOTATIONS = {"title", "description", "$id", "$schema", "$defs"}
_KNOWN = _ANNOTATIONS | {
    "type", "enum", "const", "minimum", "pattern", "required", "properties",
    "additionalProperties", "propertyNames", "items", "minItems", "$ref", "allOf", "oneOf",
}  # fmt: skip


def first_error(value: Any, schema: dict, root: dict | None = None, where: str = "") -> str | None:
    """Where and how ``value`` violates ``schema`` (``"claims[3].status: 'x' is not one of
    [...]"``), or None when it is valid. ``root`` resolves ``$ref`` (default: ``schema``)."""
    root = schema if root is None else root
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"JSON Schema keyword(s) {sorted(unknown)} not supported here")
    at = where or "the report"
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        err = first_error(value, target, root, where)
        if err:
            return err
    for sub in schema.get("allOf", ()):
        err = first_error(value, sub, root, where)
        if err:
            return err
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if first_error(value, s, root, where) is None]
        if len(matches) != 1:
            return f"{at}: {value!r:.60} matches {len(matches)} of the alternatives, expected one"
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            return f"{at}: expected {' or '.join(types)}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{at}: {value!r:.60} is not one of {schema['enum']}"
    if "const" in schema and value != schema["const"]:
        return f"{at}: expected {schema['const']!r}, got {value!r:.60}"
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        return f"{at}: {value} is below the minimum {schema['minimum']}"
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        return f"{at}: {value!r:.60} does not match {schema['pattern']!r}"
    if isinstance(value, dict):
        return _object_error(value, schema, root, where)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{at}: expected at least {schema['minItems']} item(s), got {len(value)}"
        if "items" in schema:
            for i, item in enumerate(value):
                err = first_error(item, schema["items"], root, f"{where}[{i}]")
                if err:
                    return err
    return None


def _object_error(value: dict, schema: dict, root: dict, where: str) -> str | None:
    at = where or "the report"
    for key in schema.get("required", ()):
        if key not in value:
            return f"{at}: the required field {key!r} is missing"
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        path = f"{where}.{key}" if where else key
        if "propertyNames" in schema:
            err = first_error(key, schema["propertyNames"], root, f"{path} (name)")
            if err:
                return err
        if key in props:
            err = first_error(item, props[key], root, path)
        elif extra is False:
            err = f"{at}: unexpected field {key!r}"
        elif isinstance(extra, dict):
            err = first_error(item, extra, root, path)
        else:
            err = None
        if err:
            return err
    return None
