"""Workflow configuration: defaults, validation against the schema, hashing.

The schema (``config.schema.yaml`` beside this module, linked from
``workflow/schemas/``) is the single source of truth for keys, types and
defaults: the workflow validates with it, :func:`load` does the same for the
package's own commands and tests, and the API's and CLI's defaults are
:func:`defaults` (the engine's cap and heuristic, the atlas's limits).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from pathlib import Path

import yaml

#: Keys that say where things are on this machine, not what is computed:
#: excluded from the config hash so the same study hashes the same anywhere.
LOCAL_KEYS = (("artifact", "mirror"), ("simrd", "path"))


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key."""


#: Shipped inside the package, so installed commands read the same defaults.
SCHEMA_PATH = Path(__file__).with_name("config.schema.yaml")


#: libyaml's parser where PyYAML has it (the same safe constructor; about 7x
#: faster: every workflow job reads the schema when it starts).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(stream):
    """``yaml.safe_load``, parsed by libyaml where available."""
    return yaml.load(stream, Loader=_LOADER)


@functools.cache
def _schema() -> dict:
    with open(SCHEMA_PATH) as f:
        return load_yaml(f)


def schema() -> dict:
    """The configuration schema (a copy)."""
    return copy.deepcopy(_schema())


@functools.cache
def _defaults() -> dict:
    # Filled, not validated: `import dtrlab` needs no jsonschema (the
    # workflow's extra); the tests validate the defaults.
    config: dict = {}
    _fill_defaults(config, _schema())
    return config


def defaults() -> dict:
    """Every setting at its schema default (a copy)."""
    return copy.deepcopy(_defaults())


def _key_of(error) -> str:
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        path.append(missing)
    elif error.validator == "additionalProperties":
        extra = error.message.split("'")[1] if "'" in error.message else "?"
        path.append(extra)
    return ".".join(path) or "<top level>"


def validate(config: dict, schema: dict) -> dict:
    """Fill defaults and validate; raises ConfigError naming the offending key."""
    import jsonschema

    config = _coerce(copy.deepcopy(config), schema, schema)
    _fill_defaults(config, schema)
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise ConfigError(f"config key '{_key_of(e)}': {e.message}{_did_you_mean(e)}")
    return config


def _did_you_mean(error) -> str:
    """For a misspelled key, the closest valid spelling."""
    import difflib

    if error.validator != "additionalProperties" or "'" not in error.message:
        return ""
    extra = error.message.split("'")[1]
    close = difflib.get_close_matches(extra, list(error.schema.get("properties", {})), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


#: Python types of the schema's scalar types.
_SCALARS = {"integer": (int,), "number": (int, float), "boolean": (bool,)}


def _coerce(value, sub: dict, root: dict):
    """Snakemake's ``--config`` hands nested values over as strings
    (``experiments={"chunk_size": 4}`` gives ``"4"``): read a string as YAML
    where the schema wants a number, a boolean or null there, and only if
    that gives such a value. Anything else is left for the validator."""
    if "$ref" in sub:
        sub = root["definitions"][sub["$ref"].rsplit("/", 1)[-1]]
    for option in sub.get("oneOf", []):
        kind = option.get("type")
        if (kind == "object" and isinstance(value, dict)) or (kind == "array" and isinstance(value, list)):
            sub = option
    if isinstance(value, dict):
        props = sub.get("properties", {})
        return {k: _coerce(v, props[k], root) if k in props else v for k, v in value.items()}
    if isinstance(value, list):
        items = sub.get("items")
        if isinstance(items, dict):
            return [_coerce(v, items, root) for v in value]
        if isinstance(items, list):
            return [_coerce(v, items[i], root) if i < len(items) else v for i, v in enumerate(value)]
        return value
    if isinstance(value, str):
        kinds = sub.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        wanted = tuple(t for k in kinds for t in _SCALARS.get(k, ()))
        if wanted or "null" in kinds:
            try:
                parsed = load_yaml(value)
            except yaml.YAMLError:
                return value
            if parsed is None and "null" in kinds:
                return None
            if isinstance(parsed, wanted) and not (isinstance(parsed, bool) and bool not in wanted):
                return parsed
    return value


def _fill_defaults(config: dict, schema: dict) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in config and "default" in sub:
            config[key] = copy.deepcopy(sub["default"])
        if isinstance(config.get(key), dict) and sub.get("type") == "object":
            _fill_defaults(config[key], sub)


def load(path: str | os.PathLike) -> dict:
    """Read, default-fill and validate a config file."""
    with open(path) as f:
        config = load_yaml(f) or {}
    return validate(config, _schema())


def config_hash(config: dict) -> str:
    """sha256 of the canonical JSON of what the config computes."""
    c = copy.deepcopy(config)
    for section, key in LOCAL_KEYS:
        if isinstance(c.get(section), dict):
            c[section].pop(key, None)
    return hashlib.sha256(json.dumps(c, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
