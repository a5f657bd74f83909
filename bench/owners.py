"""Owner-informer memory benchmark: what a serving bot holds for the owners and budgets of a
large cluster (``Gateway.owner_informers``), against a named baseline.

The cluster (``--deployments``, default 10,000): that many Deployments, each with ten
ReplicaSets (``revisionHistoryLimit``'s default: one live, nine old revisions at 0 replicas),
a Job per two Deployments and a PodDisruptionBudget per five; each object shaped as a real
API server serves it (labels, Helm's annotations, ``last-applied-configuration`` of 3 KB,
``managedFields``, a pod template with env).

- value: the bytes held (``tracemalloc``, after a collection) by the records as the owner
  informers keep them: each list page cut in the decoder's function
  (``ownerrecords.*_records_page``), pickled and read back as the decoder process hands it
  over, then held by namespace and name as ``Informer`` holds them.
- baseline: the same objects as a client-go-style informer holds them: every object decoded
  whole (``json.loads``), held the same way.

Deterministic (no timing), so one run each. Usage: ``python bench/owners.py
[--deployments 10000]``. Last line: ``{"bench": "owners", "metric": "held_mib", ...}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.kube.ownerrecords import budget_records_page, controller_records_page
from bot.kube.pages import SlimPage

Obj = dict[str, Any]
PAGE = 500
#: the issue's budget for the bot's whole process tree is 300 MiB; the owners' share
TARGET_MIB = 32.0
LAST_APPLIED = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "spec": "x" * 3000})


def _meta(name: str, ns: str, i: int, **more: Any) -> Obj:
    return {
        "name": name,
        "namespace": ns,
        "uid": f"9b1c2d3e-4f50-6172-8394-{i:012d}",
        "resourceVersion": str(1_000_000 + i),
        "generation": 7,
        "creationTimestamp": "2026-11-02T10:00:00Z",
        "labels": {
            "app": name,
            "app.kubernetes.io/name": name,
            "app.kubernetes.io/instance": "prod",
            "app.kubernetes.io/managed-by": "Helm",
            "helm.sh/chart": "svc-1.2.3",
        },
        "annotations": {
            "meta.helm.sh/release-name": name,
            "meta.helm.sh/release-namespace": ns,
            "kubectl.kubernetes.io/last-applied-configuration": LAST_APPLIED,
        },
        "managedFields": [
            {"manager": "helm", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ],
        **more,
    }


def _template(app: str) -> Obj:
    env = [{"name": f"VAR_{k}", "value": "x" * 20} for k in range(10)]
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "containers": [
                {"name": "app", "image": "registry/app:1", "env": env},
                {"name": "sidecar", "image": "registry/proxy:1"},
            ]
        },
    }


def cluster(deployments: int) -> dict[str, list[Obj]]:
    """kind -> its objects (list items: no kind or apiVersion, as a list serves them)."""
    out: dict[str, list[Obj]] = {"Deployment": [], "ReplicaSet": [], "Job": [], "Budget": []}
    for i in range(deployments):
        ns, name = f"team-{i % 50:02d}", f"svc-{i:05d}"
        selector = {"matchLabels": {"app": name}}
        out["Deployment"].append(
            {
                "metadata": _meta(name, ns, i),
                "spec": {
                    "replicas": 3,
                    "selector": selector,
                    "strategy": {"type": "RollingUpdate"},
                    "template": _template(name),
                },
                "status": {"replicas": 3, "readyReplicas": 3},
            }
        )
        ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "controller": True}
        for rev in range(10):
            live = rev == 9
            out["ReplicaSet"].append(
                {
                    "metadata": _meta(f"{name}-{rev:08x}", ns, i * 10 + rev, ownerReferences=[ref]),
                    "spec": {"replicas": 3 if live else 0, "selector": selector},
                    "status": {"replicas": 3 if live else 0},
                }
            )
        if i % 2 == 0:
            out["Job"].append(
                {
                    "metadata": _meta(f"batch-{i:05d}", ns, i),
                    "spec": {"backoffLimit": 4, "template": _template(name)},
                    "status": {"active": 1},
                }
            )
        if i % 5 == 0:
            out["Budget"].append(
                {
                    "metadata": _meta(f"pdb-{i:05d}", ns, i),
                    "spec": {"selector": selector, "minAvailable": 1},
                    "status": {"disruptionsAllowed": 1, "currentHealthy": 3},
                }
            )
    return out


def _pages(items: list[Obj]) -> Iterator[bytes]:
    for at in range(0, len(items), PAGE):
        yield json.dumps(
            {"metadata": {"resourceVersion": "1"}, "items": items[at : at + PAGE]}
        ).encode()


def _held(
    pages: Iterator[bytes], cut: Callable[[bytes], SlimPage[Any]]
) -> tuple[dict[str, dict[str, Any]], int]:
    held: dict[str, dict[str, Any]] = {}
    count = 0
    for body in pages:
        page = pickle.loads(pickle.dumps(cut(body)))  # as the decoder process hands it back
        for ns, name, record in page.items:
            held.setdefault(ns, {})[name] = record
            count += 1
    return held, count


def _whole(body: bytes) -> SlimPage[Obj]:
    page = json.loads(body)
    return SlimPage(
        None, "1", [(o["metadata"]["namespace"], o["metadata"]["name"], o) for o in page["items"]]
    )


def measure(objects: dict[str, list[Obj]], records: bool) -> tuple[float, dict[str, int]]:
    """MiB held, and the objects held by kind."""
    cuts: dict[str, Callable[[bytes], SlimPage[Any]]] = {
        "Deployment": lambda b: controller_records_page("Deployment", "apps/v1", b),
        "ReplicaSet": lambda b: controller_records_page("ReplicaSet", "apps/v1", b),
        "Job": lambda b: controller_records_page("Job", "batch/v1", b),
        "Budget": budget_records_page,
    }
    gc.collect()
    tracemalloc.start()
    kept: list[Any] = []
    counts: dict[str, int] = {}
    for kind, items in objects.items():
        held, counts[kind] = _held(_pages(items), cuts[kind] if records else _whole)
        kept.append(held)
    gc.collect()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return size / 2**20, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=10_000)
    args = parser.parse_args()
    objects = cluster(args.deployments)
    value, kept = measure(objects, records=True)
    baseline, listed = measure(objects, records=False)
    print(
        f"records {value:.1f} MiB {kept}; whole objects {baseline:.1f} MiB {listed}",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "bench": "owners",
                "metric": "held_mib",
                "value": round(value, 1),
                "baseline": round(baseline, 1),
                "ratio": round(value / baseline, 3),
                "target": TARGET_MIB,
                "baseline_name": "every object decoded whole (json.loads), as client-go holds them",
                "objects": {k: len(v) for k, v in objects.items()},
                "records_kept": kept,
            }
        )
    )


if __name__ == "__main__":
    main()
