"""A tiny kustomize renderer for the features deploy/ uses, so neither CI nor the Kubernetes
stand-in (which loads the shipped RBAC and admission policies from deploy/base) needs kubectl.

Supported (and nothing else; an unknown kustomization field raises, so a new feature in
deploy/ cannot be silently ignored): ``resources`` (files and kustomization directories),
``namespace``, ``labels`` (metadata only: ``includeSelectors``/``includeTemplates`` must be
false or absent), ``images`` (``newName``/``newTag``), and ``patches`` given by ``path`` as
strategic merge patches matched by apiVersion group, kind and name, including
``$patch: delete`` (of an object, or of an item of a keyed list) and ``null`` to delete a
field. When kubectl exists the tests render with
``kubectl kustomize`` too and compare (tests/deploy/test_manifests.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

#: libyaml's safe loader when PyYAML has it (the same documents, several times faster)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KNOWN_FIELDS = {"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"}

CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "PersistentVolume",
    "StorageClass",
    "CustomResourceDefinition",
}
# Not listed, as in kustomize v5 (its built-in schema predates them): ValidatingAdmissionPolicy
# (+Binding) and OpenShift's SecurityContextConstraints get ``metadata.namespace`` too; the API
# server clears the namespace of a cluster-scoped object on create.

# Strategic-merge keys of the list fields deploy/ patches (from the Kubernetes API's
# x-kubernetes-patch-merge-key annotations). Other lists are replaced whole.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}


class KustomizeError(ValueError):
    """The kustomization uses something this renderer does not implement."""


def render(directory: str | Path) -> list[Obj]:
    """Render the kustomization in ``directory`` into a list of objects."""
    root = Path(directory)
    spec = yaml.load((root / "kustomization.yaml").read_text(encoding="utf-8"), Loader=LOADER)  # noqa: S506
    unknown = set(spec) - KNOWN_FIELDS
    if unknown:
        raise KustomizeError(f"{root}: unsupported kustomization fields {sorted(unknown)}")
    objects: list[Obj] = []
    for entry in spec.get("resources", []):
        path = root / entry
        if path.is_dir():
            objects.extend(render(path))
        else:
            objects.extend(_load_all(path))
    for patch_ref in spec.get("patches", []):
        if set(patch_ref) != {"path"}:
            raise KustomizeError(f"{root}: only `patches: - path:` is supported")
        for patch in _load_all(root / patch_ref["path"]):
            objects = _apply_patch(objects, patch)
    if "namespace" in spec:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = spec["namespace"]
    for label_set in spec.get("labels", []):
        if label_set.get("includeSelectors") or label_set.get("includeTemplates"):
            raise KustomizeError(f"{root}: labels with selectors/templates are not supported")
        for obj in objects:
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(label_set["pairs"])
    for image in spec.get("images", []):
        for obj in objects:
            _set_image(obj, image)
    return objects


def _load_all(path: Path) -> list[Obj]:
    docs = yaml.load_all(path.read_text(encoding="utf-8"), Loader=LOADER)
    return [d for d in docs if d is not None]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _same_target(obj: Obj, patch: Obj) -> bool:
    return (
        _group(obj["apiVersion"]) == _group(patch["apiVersion"])
        and obj["kind"] == patch["kind"]
        and obj["metadata"]["name"] == patch["metadata"]["name"]
    )


def _apply_patch(objects: list[Obj], patch: Obj) -> list[Obj]:
    targets = [o for o in objects if _same_target(o, patch)]
    if len(targets) != 1:
        raise KustomizeError(
            f"patch {patch['kind']}/{patch['metadata']['name']} matches {len(targets)} objects"
        )
    if patch.get("$patch") == "delete":
        return [o for o in objects if o is not targets[0]]
    body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
    merged = strategic_merge(targets[0], body)
    return [merged if o is targets[0] else o for o in objects]


def strategic_merge(base: Obj, patch: Obj) -> Obj:
    """Merge ``patch`` into a copy of ``base``: maps recursively, keyed lists by key.

    A ``None`` value deletes the key, as ``null`` does in a strategic merge patch.
    """
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = strategic_merge(out[key], value)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(out.get(key), list):
            out[key] = _merge_list(out[key], value, MERGE_KEYS[key])
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_list(base: list[Obj], patch: list[Obj], key: str) -> list[Obj]:
    merged = [copy.deepcopy(item) for item in base]
    for item in patch:
        index = next((i for i, b in enumerate(merged) if b.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":  # a keyed item with `$patch: delete` removes it
            if index is not None:
                del merged[index]
            continue
        if index is None:
            merged.append(copy.deepcopy(item))
        else:
            merged[index] = strategic_merge(merged[index], item)
    return merged


def _set_image(obj: Obj, image: Obj) -> None:
    pod = obj.get("spec", {}).get("template", {}).get("spec", {})
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        name, _, tag = container["image"].partition(":")
        if name != image["name"]:
            continue
        container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}"


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    """The one object of ``kind`` named ``name`` (KeyError when absent)."""
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise KeyError(f"{kind}/{name}")
