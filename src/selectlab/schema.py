"""Validating the workflow config against config/schema/, each schema file read once.

Snakemake's `validate` resolves a cross-file `$ref` by reading the referenced file again every
time the reference is met (84 reads for config/paper.yaml, about 15% of planning the paper
config). Here every `*.schema.yaml` beside the root schema is read once and registered under its
file URI, so references resolve from memory. As Snakemake's `validate` does, defaults declared
in the schemas are filled into the config.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource


class ConfigError(ValueError):
    """The config breaks its schema."""


def schema_registry(root: Path) -> tuple[dict, Registry]:
    """The root schema and a registry holding every schema file of its directory."""
    resources = {}
    for path in sorted(root.parent.glob("*.schema.yaml")):
        schema = yaml.safe_load(path.read_text())
        schema["$id"] = path.resolve().as_uri()  # relative references resolve against it
        resources[schema["$id"]] = schema

    def unknown(uri: str):
        raise NoSuchResource(ref=uri)

    registry = Registry(retrieve=unknown).with_resources(
        (uri, Resource.from_contents(schema)) for uri, schema in resources.items())
    return resources[root.resolve().as_uri()], registry


def with_defaults(validator_class):
    """A validator class that fills in `default`s of properties the instance lacks."""
    check_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, subschemas, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in subschemas.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, subschema["default"])
        yield from check_properties(validator, subschemas, instance, schema)

    return validators.extend(validator_class, {"properties": properties})


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Check `config` against the schema (filling in defaults, in place); return it."""
    schema, registry = schema_registry(Path(schema_path))
    validator = with_defaults(Draft202012Validator)(schema, registry=registry)
    try:
        validator.validate(config)
    except ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise ConfigError(f"config is invalid at {where}: {error.message}") from error
    return config
