"""``validate_strict``: kubernetes-validate's strict check, each schema read once a process.

``kubernetes_validate.validate(obj, version, strict=True)`` reads and parses two JSON files on
every call, the kind's schema and the version's ``_definitions.json`` (megabytes), and builds
a validator from them: ~20 ms an object, and the manifest, kit and Job tests validate hundreds
(621 calls, 15 s of CPU, measured). This is that same check step for step (the library's
choice of schema version, its file names, its ``referencing`` registry, the same
``Draft202012Validator``), with the validator kept per (schema folder, kind, apiVersion)
instead of rebuilt: a validator holds no state between ``validate`` calls, and the schema
files do not change while the tests run. It answers what the library answers: the schema
version it used, or the library's own ``ValidationError``, ``SchemaNotFoundError`` and
``VersionNotSupportedError`` (tests/test_schemas.py compares the two on passing and failing
objects). ``gpunode_sandbox/kubesim/validation.py`` caches the same way for the stand-in; the
tests keep their own copy so that they stay an independent check of it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

__all__ = ["validate_strict"]


@functools.cache
def _versions() -> tuple[str, ...]:
    """The schema versions the library ships (a listing of its package folder)."""
    return tuple(kv_utils.all_versions())


@functools.cache
def _contents(filename: str, desired_version: str) -> Any:
    return kv_utils.schema_contents(filename, desired_version)


@functools.cache
def _validator(schema_dir: str, kind: str, api_version: str, desired_version: str) -> Any:
    """The library's validator for one kind: its schema and the version's definitions."""
    schema = _contents(
        f"kubernetes-json-schema/{schema_dir}/{kind}-{api_version}.json", desired_version
    )
    definitions = _contents(
        f"kubernetes-json-schema/{schema_dir}/_definitions.json", desired_version
    )
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(definitions) @ registry
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def validate_strict(data: dict[str, Any], desired_version: str) -> str:
    """``kubernetes_validate.validate(data, desired_version, strict=True)``: the schema
    version it validated against (major.minor), or the library's exception."""
    if desired_version.startswith("v"):
        desired_version = desired_version[1:]
    wanted = kv_utils.major_minor(desired_version)
    # the library's comparisons, as it makes them (strings: its latest is major.minor.patch)
    if wanted > _versions()[-1]:
        raise kv_utils.VersionNotSupportedError(version=wanted)
    version = [v for v in _versions() if kv_utils.major_minor(v) <= wanted][-1]
    api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", data["apiVersion"])
    try:
        validator = _validator(
            f"v{version}-local-strict", data["kind"].lower(), api_version, desired_version
        )
    except FileNotFoundError:
        raise kv_utils.SchemaNotFoundError(
            version=wanted, kind=data["kind"], api_version=data["apiVersion"]
        ) from None
    try:
        validator.validate(data)
    except jsonschema.ValidationError as e:
        raise kv_utils.ValidationError(e, version=kv_utils.major_minor(version)) from e
    return kv_utils.major_minor(version)
