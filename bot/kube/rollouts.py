"""Controller JSON -> ``WorkloadInfo``: the rollout strategy, GitOps owner, VPA and Job
failure policy that decide what a remedy does to the pods. Pure (``parse_*``).

GitOps markers (what each tool writes on the objects it manages):
- Argo CD: label ``argocd.argoproj.io/instance`` (label tracking, the default before 3.0),
  annotation ``argocd.argoproj.io/tracking-id`` (annotation tracking, the default from 3.0),
  or ``app.kubernetes.io/instance`` together with the tracking annotation;
- Flux: labels ``kustomize.toolkit.fluxcd.io/name`` (Kustomization) and
  ``helm.toolkit.fluxcd.io/name`` (HelmRelease).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from bot.core.model.annotations import ARGO_TRACKING, HELM_RELEASE, HELM_RELEASE_NAMESPACE
from bot.core.model.workloads import (
    HELM_FIELDS,
    HELM_KEY_ANNOTATION,
    HelmField,
    HelmValuesKey,
    WorkloadInfo,
    parse_helm_keys,
)

Obj = Mapping[str, Any]
ARGO_LABEL = "argocd.argoproj.io/instance"
FLUX_LABELS = ("kustomize.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/name")
#: what Helm 3 writes on every object of a release (``helm install/upgrade``)
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
HELM_CHART = "helm.sh/chart"


def helm_owner(obj: Obj) -> tuple[str, str | None] | None:
    """(release namespace/name, chart) when Helm manages ``obj``: the release annotation, or
    the managed-by label alone (the release then unnamed: ``?``)."""
    meta = obj.get("metadata") or {}
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    release = notes.get(HELM_RELEASE)
    if not release and labels.get(HELM_MANAGED_BY[0]) != HELM_MANAGED_BY[1]:
        return None
    ns = notes.get(HELM_RELEASE_NAMESPACE) or meta.get("namespace") or ""
    name = f"{ns}/{release}" if release else "?"
    chart = labels.get(HELM_CHART)
    return name, str(chart) if chart else None


def chart_name(chart: str) -> str:
    """The chart's name from label ``helm.sh/chart`` (``<name>-<version>``, Helm's
    convention: the version is SemVer 2, so it starts at the first ``-`` followed by
    ``<digits>.<digits>``, an optional ``v`` before it; Helm writes its ``+`` as ``_``)."""
    match = _CHART_VERSION.match(chart)
    return match.group(1) if match else chart


_CHART_VERSION = re.compile(r"^(.+?)-v?\d+\.\d+(?:\.\d+)?(?:[-+_].*)?$")


def helm_keys_annotated(obj: Obj) -> list[HelmValuesKey]:
    """The values keys named on ``obj`` by ``gpunode.io/helm-values-key.<field>``."""
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    out: list[HelmValuesKey] = []
    for field in HELM_FIELDS:
        name = HELM_KEY_ANNOTATION + field
        if name in notes:
            out += parse_helm_keys(field, str(notes[name]), source="annotation", where=name)
    return out


def with_settings_keys(
    workloads: list[WorkloadInfo], mapping: Mapping[str, Mapping[HelmField, str]]
) -> list[WorkloadInfo]:
    """``workloads`` with the values keys the bot's settings name for their chart
    (``kube.helm_values_keys``: chart name -> field -> key), for each field the workload's
    own annotation does not name (the annotation wins)."""
    out = []
    for w in workloads:
        named = mapping.get(chart_name(w.helm_chart)) if w.helm_chart else None
        if not named:
            out.append(w)
            continue
        have = {k.field for k in w.helm_keys}
        extra = [
            k
            for field in HELM_FIELDS
            if field in named and field not in have
            for k in parse_helm_keys(
                field, named[field], source="settings", where=chart_name(w.helm_chart or "")
            )
        ]
        out.append(w.model_copy(update={"helm_keys": [*w.helm_keys, *extra]}) if extra else w)
    return out


def gitops_owner(obj: Obj) -> tuple[str, str] | None:
    """(tool, application) when Argo CD or Flux manages ``obj``."""
    meta = obj.get("metadata") or {}
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    if app := labels.get(ARGO_LABEL):
        return "Argo CD", str(app)
    if tracking := notes.get(ARGO_TRACKING):
        return "Argo CD", str(tracking).split(":", 1)[0]
    for label in FLUX_LABELS:
        if name := labels.get(label):
            ns = labels.get(label.replace("/name", "/namespace"))
            return "Flux", f"{ns}/{name}" if ns else str(name)
    return None


def _ignores_disruption(spec: Obj) -> bool:
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        if rule.get("action") != "Ignore":
            continue
        for cond in rule.get("onPodConditions") or []:
            if cond.get("type") == "DisruptionTarget" and cond.get("status", "True") == "True":
                return True
    return False


def vpa_for(kind: str, name: str, vpas: Iterable[Obj]) -> tuple[str, str | None] | None:
    """(VPA name, updateMode) of a VerticalPodAutoscaler whose targetRef is kind/name."""
    for vpa in vpas:
        spec = vpa.get("spec") or {}
        ref = spec.get("targetRef") or {}
        if ref.get("kind") == kind and ref.get("name") == name:
            mode = (spec.get("updatePolicy") or {}).get("updateMode")
            return str((vpa.get("metadata") or {}).get("name", "")), mode
    return None


def parse_workload(obj: Obj, vpas: Iterable[Obj] = ()) -> WorkloadInfo:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    kind = str(obj.get("kind", ""))
    strategy = spec.get("strategy") or spec.get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    gitops = gitops_owner(obj)
    vpa = vpa_for(kind, str(meta.get("name", "")), vpas)
    fields: dict[str, Any] = {}
    if kind == "Job":
        fields = {
            "backoff_limit": spec.get("backoffLimit"),
            "failed": status.get("failed", 0),
            "ignores_disruption": _ignores_disruption(spec),
        }
    default_strategy = {
        "Deployment": "RollingUpdate",
        "StatefulSet": "RollingUpdate",
        "DaemonSet": "RollingUpdate",
    }
    helm = helm_owner(obj)
    if helm is not None:
        fields |= {
            "helm_release": helm[0],
            "helm_chart": helm[1],
            "helm_keys": helm_keys_annotated(obj),
        }
    if kind == "StatefulSet" and rolling.get("partition") is not None:
        fields["partition"] = int(rolling["partition"])
    replicas = spec.get("replicas")
    if kind == "DaemonSet":  # one pod per eligible node: how many the controller wants
        replicas = status.get("desiredNumberScheduled")
    return WorkloadInfo(
        kind=kind,
        api_version=str(obj.get("apiVersion", "")),
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        replicas=replicas,
        strategy=strategy.get("type") or default_strategy.get(kind),
        max_surge=None if rolling.get("maxSurge") is None else str(rolling["maxSurge"]),
        max_unavailable=None
        if rolling.get("maxUnavailable") is None
        else str(rolling["maxUnavailable"]),
        pod_management_policy=spec.get("podManagementPolicy"),
        gitops=gitops[0] if gitops else None,
        gitops_name=gitops[1] if gitops else None,
        vpa=vpa[0] if vpa else None,
        vpa_mode=vpa[1] if vpa else None,
        containers=[
            str(c.get("name", ""))
            for c in ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        ],
        **fields,
    )
