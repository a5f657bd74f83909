"""A fixed kubectl script against the stand-in, with the kubectl releases people run.

The kubectls are the Google Cloud SDK's bundled ones (``kubectl.1.27`` … next to ``gcloud``);
a release that is not installed is skipped with the reason. Set ``KUBECTL_TRANSCRIPT=DIR`` to
keep each release's transcript (``DIR/kubectl-1.33.txt``).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
RELEASES = ("1.27", "1.31", "1.33")


def _kubectl_binary(release: str) -> str | None:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    candidate = Path(os.path.realpath(gcloud)).parent / f"kubectl.{release}"
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _cluster_role_checks() -> list[tuple[str, str]]:
    """(verb, resource[.group]) for every verb and resource the bot's ClusterRole grants."""
    doc = yaml.safe_load((REPO / "deploy/base/clusterrole.yaml").read_text())
    checks: list[tuple[str, str]] = []
    for rule in doc["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                plural, _, sub = resource.partition("/")
                target = f"{plural}.{group}" if group else plural
                for verb in rule["verbs"]:
                    checks.append((verb, f"{target}/{sub}" if sub else target))
    return checks


class Script:
    """Runs kubectl against one server and keeps the transcript."""

    def __init__(self, binary: str, url: str) -> None:
        self.binary, self.url = binary, url
        self.lines: list[str] = []

    def __call__(self, *args: str, ok: bool = True) -> str:
        done = subprocess.run(
            [self.binary, "--server", self.url, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        self.lines.append(f"$ kubectl {' '.join(args)}")
        self.lines.append(done.stdout.rstrip("\n"))
        if done.returncode != 0:
            self.lines.append(f"[exit {done.returncode}] {done.stderr.strip()}")
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout


@pytest.mark.parametrize("release", RELEASES)
async def test_the_kubectl_script_runs_against_the_stand_in(
    make_kubesim: Any, tmp_path: Path, release: str
) -> None:
    binary = _kubectl_binary(release)
    if binary is None:
        pytest.skip(
            f"kubectl {release} is not installed (the Google Cloud SDK's kubectl.{release})"
        )
    sim = await make_kubesim("seed", insecure_superuser=True, clock_from_start=True)
    run = Script(binary, sim.url)

    def script() -> None:
        nodes = run("get", "nodes")
        assert nodes.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        pods = run("get", "pods", "-A")
        assert "preprocess-" in pods
        assert not re.search(r"\(\d{3}d ago\)", pods), "scenario stamps are dated from the start"
        assert "<invalid>" not in nodes + pods, "no stamp lies in the future"

        described = run("describe", "node", "gpu-node-01")
        assert re.search(r"Lease:\s+HolderIdentity:\s+gpu-node-01", described)
        assert "Failed to get lease" not in described

        for verb, resource in _cluster_role_checks():
            assert run("auth", "can-i", verb, resource, "-A").strip() == "yes"
        discovery = run("api-resources", "--api-group=authorization.k8s.io", "-o", "name")
        if "selfsubjectrulesreviews" in discovery:
            listed = run("auth", "can-i", "--list", "-n", "ml-train")
            assert listed.splitlines()[0].split()[0] == "Resources"
        else:
            run.lines.append("# auth can-i --list skipped: SelfSubjectRulesReview is not served")

        if release >= "1.28":  # SelfSubjectReview is v1 (GA) since 1.28; 1.27 asks for v1beta1
            whoami = run("auth", "whoami")
            assert re.search(r"Username\s+system:unsecured", whoami)
        else:
            run.lines.append("# auth whoami skipped: kubectl 1.27 asks for the v1beta1 API")

        assert "node/gpu-node-02 cordoned" in run("cordon", "gpu-node-02")
        drained = run(
            "drain",
            "gpu-node-02",
            "--dry-run=server",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=60s",
        )
        assert "drained (server dry run)" in drained
        status = run(
            "rollout", "status", "statefulset/train-llm", "-n", "ml-train", "--timeout=60s"
        )
        assert "roll out complete" in status

        manifest = tmp_path / "cm.yaml"
        manifest.write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conformance, namespace: default}\n"
            "data: {answer: '42'}\n"
        )
        if release >= "1.28":
            applied = run("apply", "--server-side", "-f", str(manifest))
            assert "configmap/conformance serverside-applied" in applied
            got = run("get", "configmap", "conformance", "-n", "default", "-o", "yaml")
            assert yaml.safe_load(got)["data"] == {"answer": "42"}
        else:  # it reads /openapi/v2 as protobuf only; the stand-in serves OpenAPI as JSON
            run.lines.append(
                "# apply --server-side skipped: kubectl 1.27 wants protobuf OpenAPI v2"
            )

        events = run("events", "-A")
        assert "OOMKilling" in events

    def script_with_transcript() -> None:
        try:
            script()
        finally:
            if out := os.environ.get("KUBECTL_TRANSCRIPT"):
                Path(out).mkdir(parents=True, exist_ok=True)
                (Path(out) / f"kubectl-{release}.txt").write_text("\n".join(run.lines) + "\n")

    await asyncio.to_thread(script_with_transcript)
    # the dry-run drain evicted nothing
    assert any(p["spec"].get("nodeName") == "gpu-node-02" for p in sim.list("pods"))
