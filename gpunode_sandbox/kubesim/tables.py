"""Server-side printing: ``meta.k8s.io/v1`` ``Table`` answers, as ``kubectl get`` asks for them
(``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``).

Columns and cells follow kube-apiserver's printers (``printers.py``): nodes
NAME/STATUS/ROLES/AGE/VERSION, pods NAME/READY/STATUS/RESTARTS/AGE, and so on; columns of
priority 1 are the ``-o wide`` ones. Ages are ``duration.HumanDuration`` of now minus
``creationTimestamp``. ``includeObject`` is honoured (``Metadata`` by default: a
``PartialObjectMetadata`` per row; ``Object``; ``None``). Resources without a printer get the
default NAME/CREATED AT columns, as the API server's default table convertor prints them.
"""

from __future__ import annotations

from datetime import datetime

from gpunode_sandbox.kubesim.printers import PRINTERS, Printer, human_duration
from gpunode_sandbox.kubesim.resources import Resource
from gpunode_sandbox.kubesim.store import Obj

__all__ = ["human_duration", "table", "wants_table"]


def wants_table(accept: str) -> bool:
    """Does the Accept header ask for a meta.k8s.io/v1 Table?"""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params and "v=v1" in params:
            return True
    return False


_DEFAULT: Printer = (
    (("Name", "string", 0), ("Created At", "date", 0)),
    lambda o, now: [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")],
)


def table(
    res: Resource,
    objects: list[Obj],
    *,
    now: datetime,
    include_object: str = "Metadata",
    list_meta: Obj | None = None,
) -> Obj:
    """The ``Table`` for ``objects`` of ``res``."""
    columns, row = PRINTERS.get(res.plural, _DEFAULT)
    rows: list[Obj] = []
    for obj in objects:
        entry: Obj = {"cells": row(obj, now)}
        if include_object == "Object":
            entry["object"] = obj
        elif include_object != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": [
            {
                "name": name,
                "type": kind,
                "format": "name" if name == "Name" else "",
                "description": f"{name} of the {res.kind}",
                "priority": priority,
            }
            for name, kind, priority in columns
        ],
        "rows": rows,
    }
