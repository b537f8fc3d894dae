"""Validating the workflow config against config/schema/, each schema file read once.

Snakemake's `validate` resolves a cross-file `$ref` by reading the referenced file again every
time the reference is met (84 reads for config/paper.yaml, about 15% of planning the paper
config). Here every `*.schema.yaml` of the schema directory is read once per process
(`read_schema`, which `selectlab.resources` also reads its defaults through) and registered
under its file URI, so references resolve from memory, for the config and for the variants its
grids expand into alike. As Snakemake's `validate` does, defaults declared in the schemas are
filled into the instance.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

from selectlab.config_errors import ConfigError, error_line

SCHEMA_GLOB = "*.schema.yaml"


@functools.cache
def _read(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def read_schema(path: str | Path) -> dict:
    """One schema file, parsed once per process (shared: do not modify it)."""
    return _read(Path(path).resolve())


@functools.cache
def _registry(directory: Path) -> Registry:
    def unknown(uri: str):
        raise NoSuchResource(ref=uri)

    # `$id` = the file's URI, so relative references ("resources.schema.yaml#/...") resolve.
    return Registry(retrieve=unknown).with_resources(
        (path.as_uri(), Resource.from_contents(read_schema(path) | {"$id": path.as_uri()}))
        for path in sorted(directory.glob(SCHEMA_GLOB)))


def schema_registry(root: str | Path) -> tuple[dict, Registry]:
    """The schema `root` and a registry holding every schema file of its directory."""
    root = Path(root).resolve()
    registry = _registry(root.parent)
    return registry.contents(root.as_uri()), registry


def forget_schemas() -> None:
    """Drop the parsed schema files (the next validation reads them again)."""
    _read.cache_clear()
    _registry.cache_clear()


def with_defaults(validator_class):
    """A validator class that fills in `default`s of properties the instance lacks."""
    check_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, subschemas, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in subschemas.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    # A copy: the schema is shared for the process, the config is the job's.
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from check_properties(validator, subschemas, instance, schema)

    return validators.extend(validator_class, {"properties": properties})


def schema_problems(config: dict, schema_path: str | Path) -> list[str]:
    """Every way `config` breaks the schema, one line each (nothing filled in)."""
    schema, registry = schema_registry(schema_path)
    validator = Draft202012Validator(schema, registry=registry)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    return list(dict.fromkeys(error_line(error) for error in errors))


def check_schema(config: dict, schema_path: str | Path, what: str = "config") -> None:
    problems = schema_problems(config, schema_path)
    if problems:
        raise ConfigError(f"{what} does not match the schema", problems)


def validate_config(config: dict, schema_path: str | Path, what: str = "config") -> dict:
    """Check `config` against the schema (filling in defaults, in place); return it. `what`
    names the instance in the error (e.g. the variants that grids expand into). A config that
    fails is checked again for every problem, so a valid config is validated once."""
    schema, registry = schema_registry(schema_path)
    validator = with_defaults(Draft202012Validator)(schema, registry=registry)
    try:
        validator.validate(config)
    except ValidationError as error:
        check_schema(config, schema_path, what)
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise ConfigError(f"{what} breaks its schema", [f"at {where}: {error.message}"]) \
            from error
    return config
