"""Schema validation of every stored object with kubernetes-validate's strict schemas.

Why not call ``kubernetes_validate.validate`` directly: it re-reads and re-compiles the JSON
schema on every call (~15 ms); a 60,000-pod fleet needs a cached validator per (version, kind),
built here the same way the library builds it, so the verdicts are the library's.
Kinds without a shipped schema (e.g. metrics) are accepted unchecked.

Every stand-in seeds the same objects from its scenario and deploy/base, so an object already
found valid is not walked again: a verdict depends only on the object and the Kubernetes
version, and the memo's key is exactly those, except that a string ``creationTimestamp`` (the
one field a seed differs in from one start to the next) counts as any string, because the
schema's ``Time`` is ``{type: [string, null], format: date-time}`` and formats are not asserted
(the validator has no format checker; ``_memo_masks_time`` checks both, per schema).
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from gpunode_sandbox.kubesim.statuses import ApiError, invalid

SUPPORTED = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")


def _schema_version(kube_version: str) -> str:
    mm = kv_utils.major_minor(kube_version.lstrip("v"))
    versions = [v for v in kv_utils.all_versions() if kv_utils.major_minor(v) <= mm]
    if not versions or mm not in SUPPORTED:
        raise ValueError(f"Kubernetes {kube_version} is not supported; use one of {SUPPORTED}")
    return str(versions[-1])


@functools.lru_cache(maxsize=8)
def _definitions(version: str) -> Any:
    """The version's shared ``_definitions.json`` (megabytes of JSON), read once: every kind's
    validator and ``_memo_masks_time`` use it, and nothing changes it."""
    return kv_utils.schema_contents(
        f"kubernetes-json-schema/v{version}-local-strict/_definitions.json", version
    )


@functools.lru_cache(maxsize=256)
def _validator(kube_version: str, kind: str, api_version: str) -> Any:
    version = _schema_version(kube_version)
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = kv_utils.schema_contents(f"{folder}/{kind.lower()}-{api}.json", version)
    except FileNotFoundError:
        return None
    defs = _definitions(version)
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(defs) @ registry
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
#: digests of (version, object) found valid; cleared when it holds this many
MEMO_MAX = 8192
_valid: set[bytes] = set()


@functools.lru_cache(maxsize=256)
def _memo_masks_time(kube_version: str, kind: str, api_version: str) -> bool:
    """Whether any string ``metadata.creationTimestamp`` validates alike for this schema: its
    metadata is ObjectMeta, whose creationTimestamp is a Time that only a type constrains."""
    validator = _validator(kube_version, kind, api_version)
    if validator is None or validator.format_checker is not None:
        return False
    meta = validator.schema.get("properties", {}).get("metadata", {})
    if not str(meta.get("$ref", "")).endswith(f"/{OBJECT_META}"):
        return False
    version = _schema_version(kube_version)
    defs = _definitions(version)["$defs"]
    created = defs[OBJECT_META]["properties"]["creationTimestamp"]
    time = defs[TIME]
    return bool(
        created.get("$ref", "").endswith(f"/{TIME}")
        and set(created) <= {"$ref", "description"}
        and set(time) <= {"type", "format", "description"}
        and set(time.get("type", [])) == {"string", "null"}
    )


def _memo_key(obj: dict[str, Any], kube_version: str) -> bytes:
    """The object's identity for the memo: its ``repr`` (tells a tuple from a list and
    ``True`` from ``1``, as the schema's types do), the timestamp masked where it may be."""
    meta = obj.get("metadata")
    if (
        isinstance(meta, dict)
        and isinstance(meta.get("creationTimestamp"), str)
        and _memo_masks_time(kube_version, obj.get("kind", ""), obj.get("apiVersion", ""))
    ):
        obj = {**obj, "metadata": {**meta, "creationTimestamp": "<any string>"}}
    return hashlib.blake2b(repr((kube_version, obj)).encode(), digest_size=20).digest()


def validate_object(obj: dict[str, Any], kube_version: str) -> None:
    """Raise a 422 ApiError listing every schema violation of ``obj``."""
    validator = _validator(kube_version, obj.get("kind", ""), obj.get("apiVersion", ""))
    if validator is None:
        return
    key = _memo_key(obj, kube_version)
    if key in _valid:
        return
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    if not errors:
        if len(_valid) >= MEMO_MAX:
            _valid.clear()
        _valid.add(key)
        return
    causes = [
        {
            "reason": "FieldValueInvalid",
            "message": e.message[:500],
            "field": ".".join(str(p) for p in e.absolute_path) or "<root>",
        }
        for e in errors[:20]
    ]
    meta = obj.get("metadata") or {}
    raise invalid(obj.get("kind", "Object"), meta.get("name", ""), causes)


def check_version(kube_version: str) -> str:
    """The schema version used for ``kube_version``; raises ValueError when unsupported."""
    try:
        return _schema_version(kube_version)
    except ValueError:
        raise
    except Exception as exc:  # pragma: no cover - library internals
        raise ApiError(500, str(exc)) from exc
