"""Workflow configuration: defaults, validation against the schema, hashing.

The schema (``workflow/schemas/config.schema.yaml``) is the single source of
truth for keys, types and defaults; Snakemake validates with it, and
:func:`load` does the same for the package's own commands and tests.
"""

from __future__ import annotations

import copy
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


def schema_path(root: str | os.PathLike = ".") -> Path:
    return Path(root) / "workflow" / "schemas" / "config.schema.yaml"


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

    config = copy.deepcopy(config)
    _fill_defaults(config, schema)
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise ConfigError(f"config key '{_key_of(e)}': {e.message}")
    return config


def _fill_defaults(config: dict, schema: dict) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in config and "default" in sub:
            config[key] = copy.deepcopy(sub["default"])
        if isinstance(config.get(key), dict) and sub.get("type") == "object":
            _fill_defaults(config[key], sub)


def load(path: str | os.PathLike, root: str | os.PathLike = ".") -> dict:
    """Read, default-fill and validate a config file."""
    with open(path) as f:
        config = yaml.safe_load(f) or {}
    with open(schema_path(root)) as f:
        schema = yaml.safe_load(f)
    return validate(config, schema)


def config_hash(config: dict) -> str:
    """sha256 of the canonical JSON of what the config computes."""
    c = copy.deepcopy(config)
    for section, key in LOCAL_KEYS:
        if isinstance(c.get(section), dict):
            c[section].pop(key, None)
    return hashlib.sha256(json.dumps(c, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
