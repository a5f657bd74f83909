"""``/openapi/v2`` and ``/openapi/v3``, built from kubernetes-validate's bundled schemas.

The definitions are the official ones kubernetes-validate ships for the configured version
(the same the stand-in validates with), turned back from JSON Schema into OpenAPI: ``$ref``s
point at ``#/definitions`` (v2) or ``#/components/schemas`` (v3), nullable type lists become
one type; the ``x-kubernetes-*`` extensions (group-version-kind, patch merge keys) stay, so
clients find kinds and strategic-merge keys. Paths list the served resources with their
verbs, each write taking ``dryRun`` and ``fieldValidation`` (kubectl checks the latter on the
PATCH operation before it leaves validation to the server).

JSON only: a client that accepts nothing but the protobuf encoding gets 406, as the API server
answers a media type it cannot produce.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web
from kubernetes_validate import utils as kv_utils

from gpunode_sandbox.kubesim.resources import RESOURCES, Resource
from gpunode_sandbox.kubesim.statuses import ApiError
from gpunode_sandbox.kubesim.validation import check_version

Obj = dict[str, Any]


def accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    types = [part.split(";")[0].strip() for part in accept.split(",")]
    return any(t in ("application/json", "*/*", "application/*") for t in types)


def require_json(accept: str) -> None:
    if not accepts_json(accept):
        raise ApiError(
            406,
            "only the following media types are accepted: application/json",
            reason="NotAcceptable",
        )


@functools.lru_cache(maxsize=4)
def _definitions(kube_version: str) -> Obj:
    version = check_version(kube_version)
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    defs = kv_utils.schema_contents(f"{folder}/_definitions.json", version)
    return dict(defs["$defs"])


def _convert(node: Any, ref_base: str) -> Any:
    if isinstance(node, list):
        return [_convert(x, ref_base) for x in node]
    if not isinstance(node, dict):
        return node
    out: Obj = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/$defs/", ref_base)
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if len(kinds) == 1:
                out[key] = kinds[0]
        elif key in ("$schema", "$id"):
            continue
        else:
            out[key] = _convert(value, ref_base)
    return out


def _gvk(res: Resource) -> Obj:
    return {"group": res.group, "version": res.version, "kind": res.kind}


def _param(name: str, v3: bool) -> Obj:
    if v3:
        return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    return {"name": name, "in": "query", "type": "string", "uniqueItems": True}


def _paths(group_version: str | None, *, v3: bool) -> Obj:
    """Collection and item paths of the served resources (of one group version, or all)."""
    paths: Obj = {}
    for res in RESOURCES:
        if group_version is not None and res.api_version != group_version:
            continue
        prefix = f"/apis/{res.api_version}" if res.group else "/api/v1"
        scope = f"{prefix}/namespaces/{{namespace}}" if res.namespaced else prefix
        writes = [_param("dryRun", v3), _param("fieldValidation", v3)]

        def op(action: str, verb: str, res: Resource = res, writes: list[Obj] = writes) -> Obj:
            return {
                "operationId": f"{verb}{res.kind}",
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": _gvk(res),
                "parameters": writes if action in ("post", "put", "patch") else [],
                "responses": {"200": {"description": "OK"}},
            }

        collection: Obj = {}
        item: Obj = {}
        if "list" in res.verbs:
            collection["get"] = op("list", "list")
        if "create" in res.verbs:
            collection["post"] = op("post", "create")
        if "get" in res.verbs:
            item["get"] = op("get", "read")
        if "update" in res.verbs:
            item["put"] = op("put", "replace")
        if "patch" in res.verbs:
            item["patch"] = op("patch", "patch")
        if "delete" in res.verbs:
            item["delete"] = op("delete", "delete")
        if collection:
            paths[f"{scope}/{res.plural}"] = collection
        if item:
            paths[f"{scope}/{res.plural}/{{name}}"] = item
    return paths


@functools.lru_cache(maxsize=4)
def _v2_text(kube_version: str) -> str:
    defs = _convert(copy.deepcopy(_definitions(kube_version)), "#/definitions/")
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"v{kube_version}.0"},
        "paths": _paths(None, v3=False),
        "definitions": defs,
    }
    return json.dumps(doc)


def v2(kube_version: str) -> str:
    """The Swagger 2.0 document (JSON text, cached per version)."""
    return _v2_text(kube_version)


def _group_versions() -> list[str]:
    return sorted({r.api_version for r in RESOURCES})


def _v3_path(gv: str) -> str:
    return "api/v1" if gv == "v1" else f"apis/{gv}"


@functools.lru_cache(maxsize=32)
def _v3_text(kube_version: str, gv: str) -> str:
    schemas = _convert(copy.deepcopy(_definitions(kube_version)), "#/components/schemas/")
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{kube_version}.0"},
        "paths": _paths(gv, v3=True),
        "components": {"schemas": schemas},
    }
    return json.dumps(doc)


def v3_index(kube_version: str) -> Obj:
    """``/openapi/v3``: where each group version's document lives (with a content hash)."""
    paths: Obj = {}
    for gv in _group_versions():
        digest = hashlib.sha512(_v3_text(kube_version, gv).encode()).hexdigest()[:128].upper()
        paths[_v3_path(gv)] = {"serverRelativeURL": f"/openapi/v3/{_v3_path(gv)}?hash={digest}"}
    return {"paths": paths}


def v3(kube_version: str, path: str) -> str:
    """One group version's OpenAPI 3 document (``api/v1``, ``apis/apps/v1``...)."""
    for gv in _group_versions():
        if _v3_path(gv) == path.strip("/"):
            return _v3_text(kube_version, gv)
    raise ApiError(404, "the server could not find the requested resource")


def add_routes(router: web.UrlDispatcher, version_of: Callable[[web.Request], str]) -> None:
    """Serve ``/openapi/v2``, ``/openapi/v3`` and ``/openapi/v3/{group version}``."""

    async def v2_handler(request: web.Request) -> web.Response:
        require_json(request.headers.get("Accept", ""))
        return web.Response(text=v2(version_of(request)), content_type="application/json")

    async def v3_index_handler(request: web.Request) -> web.Response:
        text = json.dumps(v3_index(version_of(request)))
        return web.Response(text=text, content_type="application/json")

    async def v3_handler(request: web.Request) -> web.Response:
        require_json(request.headers.get("Accept", ""))
        text = v3(version_of(request), request.match_info["path"])
        return web.Response(text=text, content_type="application/json")

    router.add_get("/openapi/v2", v2_handler)
    router.add_get("/openapi/v3", v3_index_handler)
    router.add_get("/openapi/v3/{path:.+}", v3_handler)
