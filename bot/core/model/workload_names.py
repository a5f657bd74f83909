"""A pod's workload, read from its name (pure): the same for every pod a controller makes,
so charts keep a band and diffs keep a finding when a pod is replaced."""

from __future__ import annotations

import re

#: the alphabet Kubernetes draws pod-template hashes and generated name suffixes from
_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
_REPLICASET_POD = re.compile(rf"^(.+)-{_SAFE}{{6,10}}-{_SAFE}{{5}}$")
_GENERATED_POD = re.compile(rf"^(.+)-{_SAFE}{{5}}$")


def workload_of(pod_key: str) -> str:
    """``ns/name`` of the workload a pod belongs to, read from its generated name: a
    Deployment's ``name-<template hash>-<suffix>`` and a DaemonSet's or Job's ``name-<suffix>``
    lose their suffixes; other pods (StatefulSet ordinals, bare pods) are their own."""
    ns, sep, name = pod_key.rpartition("/")
    for pattern in (_REPLICASET_POD, _GENERATED_POD):
        if m := pattern.match(name):
            name = m.group(1)
            break
    return f"{ns}{sep}{name}"
