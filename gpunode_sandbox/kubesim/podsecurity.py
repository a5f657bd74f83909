"""Pod Security admission (``pod-security.kubernetes.io/enforce`` on the namespace).

The checks of the ``baseline`` and ``restricted`` levels of the Pod Security Standards that
matter to the pods this project runs, with pod-security-admission's wording: a refused pod is
``pods "NAME" is forbidden: violates PodSecurity "LEVEL:VERSION": REASON (DETAIL), ...``.
``privileged`` (or no label) admits everything. Only ``enforce`` refuses; ``warn`` and
``audit`` never do (the stand-in records no warnings).

Baseline: host namespaces, privileged containers, capabilities beyond the default set,
hostPath volumes, host ports. Restricted adds: allowPrivilegeEscalation=false, capabilities
dropping ALL (only NET_BIND_SERVICE added), runAsNonRoot, a RuntimeDefault or Localhost
seccomp profile.
"""

from __future__ import annotations

from typing import Any

from gpunode_sandbox.kubesim.statuses import ApiError

Obj = dict[str, Any]
ENFORCE = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
LEVELS = ("privileged", "baseline", "restricted")
#: capabilities a baseline pod may add (the container runtimes' default set)
BASELINE_CAPS = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)


def _containers(spec: Obj) -> list[Obj]:
    return [
        *(spec.get("initContainers") or []),
        *(spec.get("containers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]


def _sc(c: Obj) -> Obj:
    return c.get("securityContext") or {}


def _quote(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _caps(c: Obj, key: str) -> list[str]:
    sc = c.get("securityContext") or {}
    return [
        str(x).upper().removeprefix("CAP_") for x in (sc.get("capabilities") or {}).get(key) or []
    ]


def baseline(spec: Obj) -> list[str]:
    out: list[str] = []
    hosts = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    if hosts:
        out.append(f"host namespaces ({', '.join(hosts)})")
    privileged = [
        c["name"] for c in _containers(spec) if (c.get("securityContext") or {}).get("privileged")
    ]
    if privileged:
        which = "container" if len(privileged) == 1 else "containers"
        out.append(
            f"privileged ({which} {_quote(privileged)} must not set "
            "securityContext.privileged=true)"
        )
    extra = [
        f'container "{c["name"]}" must not include {_quote(bad)} in '
        "securityContext.capabilities.add"
        for c in _containers(spec)
        if (bad := [x for x in _caps(c, "add") if x not in BASELINE_CAPS])
    ]
    if extra:
        out.append(f"non-default capabilities ({'; '.join(extra)})")
    host_paths = [v["name"] for v in spec.get("volumes") or [] if "hostPath" in v]
    if host_paths:
        word = "volume" if len(host_paths) == 1 else "volumes"
        out.append(f"hostPath volumes ({word} {_quote(host_paths)})")
    ports = [
        str(p["hostPort"])
        for c in _containers(spec)
        for p in c.get("ports") or []
        if p.get("hostPort")
    ]
    if ports:
        out.append(f"hostPort (container ports {', '.join(ports)})")
    return out


def restricted(spec: Obj) -> list[str]:
    out = baseline(spec)
    pod_sc = spec.get("securityContext") or {}
    containers = _containers(spec)
    escalation = [
        c["name"] for c in containers if _sc(c).get("allowPrivilegeEscalation") is not False
    ]
    if escalation:
        out.append(
            f"allowPrivilegeEscalation != false (container {_quote(escalation)} must set "
            "securityContext.allowPrivilegeEscalation=false)"
        )
    caps: list[str] = []
    for c in containers:
        if "ALL" not in _caps(c, "drop"):
            caps.append(
                f'container "{c["name"]}" must set securityContext.capabilities.drop=["ALL"]'
            )
        if bad := [x for x in _caps(c, "add") if x != "NET_BIND_SERVICE"]:
            caps.append(
                f'container "{c["name"]}" must not include {_quote(bad)} in '
                "securityContext.capabilities.add"
            )
    if caps:
        out.append(f"unrestricted capabilities ({'; '.join(caps)})")
    pod_non_root = pod_sc.get("runAsNonRoot")
    non_root = [
        c["name"] for c in containers if _sc(c).get("runAsNonRoot", pod_non_root) is not True
    ]
    if non_root:
        out.append(
            f"runAsNonRoot != true (pod or container {_quote(non_root)} must set "
            "securityContext.runAsNonRoot=true)"
        )
    seccomp_ok = ("RuntimeDefault", "Localhost")
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    no_seccomp = [
        c["name"]
        for c in containers
        if ((c.get("securityContext") or {}).get("seccompProfile") or {}).get("type", pod_seccomp)
        not in seccomp_ok
    ]
    if no_seccomp:
        out.append(
            f"seccompProfile (pod or container {_quote(no_seccomp)} must set "
            'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
        )
    return out


def check_pod(namespace: Obj | None, pod: Obj) -> None:
    """Raise the API server's 403 when ``pod`` violates its namespace's enforced level."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    level = labels.get(ENFORCE, "privileged")
    if level not in LEVELS or level == "privileged":
        return
    spec = pod.get("spec") or {}
    reasons = baseline(spec) if level == "baseline" else restricted(spec)
    if not reasons:
        return
    version = labels.get(ENFORCE_VERSION, "latest")
    name = (pod.get("metadata") or {}).get("name", "")
    raise ApiError(
        403,
        f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": '
        + ", ".join(reasons),
        reason="Forbidden",
        name=name,
        kind="pods",
    )
