"""The three PATCH flavours the API server accepts, applied to plain JSON objects.

Pure functions (they return new objects):
- ``merge_patch``: RFC 7386 (``application/merge-patch+json``): maps merge, ``null`` deletes,
  lists replace.
- ``strategic_merge_patch`` (``application/strategic-merge-patch+json``): like merge, but lists
  with a known merge key merge element-wise (containers, initContainers, env, volumes,
  volumeMounts by ``name``; ports by ``containerPort``; conditions by ``type``; taints by
  ``key``). Supports ``$patch: delete`` / ``$patch: replace`` inside list elements and maps, and
  ignores ``$setElementOrder/...`` and ``$retainKeys`` directives (kubectl sends them).
- ``json_patch``: RFC 6902 (``application/json-patch+json``).
"""

from __future__ import annotations

import copy
from typing import Any

from gpunode_sandbox.kubesim.statuses import ApiError

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "ports": "containerPort",
    "conditions": "type",
    "taints": "key",
    "hostAliases": "ip",
}


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
        if patch.get("$patch") == "delete":
            return None
        out = copy.deepcopy(target) if isinstance(target, dict) else {}
        for k, v in patch.items():
            if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
                continue
            if k.startswith("$deleteFromPrimitiveList/"):
                name = k.split("/", 1)[1]
                out[name] = [x for x in out.get(name) or [] if x not in v]
                continue
            if v is None:
                out.pop(k, None)
                continue
            merged = strategic_merge_patch(out.get(k), v, k)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        return out
    if isinstance(patch, list) and field in MERGE_KEYS and isinstance(target, list):
        return _merge_list(target, patch, MERGE_KEYS[field])
    if isinstance(patch, list):
        return [
            x
            for x in (copy.deepcopy(e) for e in patch)
            if not (isinstance(x, dict) and x.get("$patch") == "delete")
        ]
    return copy.deepcopy(patch)


def _merge_list(target: list[Any], patch: list[Any], key: str) -> list[Any]:
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [copy.deepcopy(e) for e in patch if not (isinstance(e, dict) and "$patch" in e)]
    out = copy.deepcopy(target)
    for elem in patch:
        if not isinstance(elem, dict) or key not in elem:
            raise ApiError(400, f"map: {elem!r} does not contain declared merge key: {key}")
        idx = next(
            (i for i, e in enumerate(out) if isinstance(e, dict) and e.get(key) == elem[key]), None
        )
        if elem.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(strategic_merge_patch({}, elem))
        else:
            out[idx] = strategic_merge_patch(out[idx], elem)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            cur = cur[int(p)]
        elif isinstance(cur, dict):
            cur = cur[p]
        else:
            raise KeyError(p)
    return cur


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise KeyError(last)
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _walk(doc, parts[:-1])
    value = _walk(parent, parts[-1:])
    if isinstance(parent, list):
        parent.pop(int(parts[-1]))
    else:
        del parent[parts[-1]]
    return value


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902; a failed ``test`` or a missing path is a 422 like the API server's."""
    if not isinstance(ops, list):
        raise ApiError(400, "json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "add":
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "replace":
                _walk(doc, parts)  # must exist
                if parts:
                    _remove(doc, parts)
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = _remove(doc, src) if kind == "move" else copy.deepcopy(_walk(doc, src))
                doc = _add(doc, parts, value)
            elif kind == "test":
                if _walk(doc, parts) != op["value"]:
                    raise ApiError(
                        422,
                        f"the server rejected our request due to an error in "
                        f"our request: testing value {op['path']} failed",
                    )
            else:
                raise ApiError(400, f"unexpected json patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(
                422,
                f"the server rejected our request due to an error in our "
                f"request: path {op.get('path')!r}: {exc}",
            ) from exc
    return doc


def apply_patch(target: Any, patch: Any, content_type: str) -> Any:
    ct = content_type.split(";")[0].strip()
    if ct == "application/merge-patch+json":
        return merge_patch(target, patch)
    if ct == "application/strategic-merge-patch+json":
        return strategic_merge_patch(target, patch)
    if ct == "application/json-patch+json":
        return json_patch(target, patch)
    raise ApiError(
        415,
        f"the body of the request was in an unknown format - accepted media "
        f"types include: application/json-patch+json, application/merge-patch+"
        f"json, application/apply-patch+yaml, application/strategic-merge-patch"
        f"+json (got {ct!r})",
    )
