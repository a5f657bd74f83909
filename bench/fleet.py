"""Fleet benchmark: ``/gpunode top`` (``Gateway.gpu_node_loads``) over synthetic fleets of 30
pods per node, the Kubernetes stand-in serving in a process of its own.

Per size (``--sizes``, nodes; default 500,2000; the issue's full set is 500,2000,5000):

- measured: ``gpu_node_loads()`` with the fleet cache off (every run reads the fleet): list
  nodes, pods and pod metrics a page (500) at a time, each page decoded and reduced in the
  gateway's decoder process, merged on a gateway thread, Allocated-resources rows per GPU
  node.
- baseline: the bare list calls: the same three paged lists through the same client and
  transport, each page decoded with ``json.loads`` on a thread and dropped, nothing else.
  Alternating runs, medians.
- peer: ``kubectl get nodes,pods -A -o json --chunk-size=500 | jq`` counting pods per node
  (less work than ``top``: no quantities), one run per size (kubectl sends no token over
  plain HTTP: the stand-in runs with its insecure-port superuser for it; the bot uses its
  token).
- each side's first run is a warm-up, not timed (the bot's starts its decoder process).
- the bot's peak RSS (this process's VmHWM after the first measured run, before any baseline
  run, plus the decoder process's), apart from the stand-in's;
- the longest event-loop stall during the measured runs (``bot.telemetry.lag.LoopLag``, 20 ms
  timer);
- the Kubernetes calls of a diagnosis after a ``top`` (``run_diagnostic`` +
  ``get_cluster_view`` on a GPU node, counted by the gateway's observer): the first one
  (``first_diagnosis_api_calls``: it starts the pod-events informer and reads each owner),
  and the next one (``diagnosis_api_calls``), as in ``gpunode serve``.

Usage: ``python bench/fleet.py [--sizes 500,2000,5000] [--runs 3] [--no-kubectl]``.
Last line: one JSON object for the largest size (``"sizes"`` holds every size's figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config import KubeSettings
from bot.kube.gateway import Gateway
from bot.kube.transport import Transport
from bot.services.diagnosing import measured_pods
from bot.telemetry.lag import LoopLag
from bot.wiring.heap import settle_heap
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.process import separate_process

PODS_PER_NODE = 30
TARGETS = {"ratio_vs_lists": 1.2, "ratio_vs_kubectl_jq": 0.05, "rss_mib": 300, "stall_s": 0.1}
JQ = (
    '[.items[] | select(.kind == "Pod") | .spec.nodeName // ""] '
    "| group_by(.) | map({node: .[0], pods: length}) | length"
)


def _hwm_mib(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _bare_lists(t: Transport) -> int:
    count = 0
    for path in ("/api/v1/nodes", "/api/v1/pods", "/apis/metrics.k8s.io/v1beta1/pods"):
        token = None
        while True:
            page = json.loads(
                t.request_bytes("GET", path, query=[("limit", 500), ("continue", token)])
            )
            count += len(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            del page
            if not token:
                break
    return count


async def _timed_top(gw: Gateway, lag: LoopLag) -> tuple[float, int]:
    lag.reset()
    start = time.perf_counter()
    loads = await gw.gpu_node_loads()
    return time.perf_counter() - start, len(loads)


async def _diagnosis_calls(gw: Gateway, node: str) -> tuple[int, int, list[str]]:
    """Calls of the first diagnosis (which starts the pod-events informer, as in `gpunode
    serve`) and of the next one, once the informer has listed (its watch, 300 s long, ends
    outside the count)."""
    calls: list[str] = []
    gw.observe_api(lambda verb, resource, status: calls.append(f"{verb} {resource}"))
    try:
        bundle = await gw.run_diagnostic(node)
        await gw.get_cluster_view(node, measured=measured_pods(bundle))
        first = len(calls)
        informer = gw.pod_events()
        for _ in range(6000):
            if informer is None or informer.synced.is_set():
                break
            await asyncio.sleep(0.1)
        calls.clear()
        bundle = await gw.run_diagnostic(node)
        await gw.get_cluster_view(node, measured=measured_pods(bundle))
    finally:
        gw.observe_api(None)
    return first, len(calls), calls


async def _one_size(url: str, nodes: int, runs: int) -> dict[str, Any]:
    settle_heap()  # as `gpunode serve` does after start-up
    gw = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=url,
            token=BOT_TOKEN,
            verify_tls=False,
            request_timeout_s=300,
            fleet_cache_s=0,
            namespace="gpunode",
            job_timeout_s=120,
        ),
        informers=True,
    )
    lag = LoopLag(interval_s=0.02)
    lag.start()
    meas: list[float] = []
    base: list[float] = []
    stalls: list[float] = []
    try:
        # warm-up (not timed: it starts the decoder process), and the memory figure
        _, gpu_nodes = await _timed_top(gw, lag)
        stalls.append(lag.max_s)
        decoder_pid = next(iter(gw._decoder._pool._processes))  # type: ignore[union-attr]
        own_rss, decoder_rss = _hwm_mib(), _hwm_mib(decoder_pid)
        bot_rss = own_rss + decoder_rss
        await asyncio.to_thread(_bare_lists, gw.transport)  # warm-up of the baseline
        for i in range(runs):
            order = ("baseline", "measured") if i % 2 == 0 else ("measured", "baseline")
            for kind in order:
                if kind == "baseline":
                    start = time.perf_counter()
                    await asyncio.to_thread(_bare_lists, gw.transport)
                    base.append(time.perf_counter() - start)
                else:
                    took, _ = await _timed_top(gw, lag)
                    meas.append(took)
                    stalls.append(lag.max_s)
            print(
                f"  run {i}: bare lists {base[-1]:.2f}s top {meas[-1]:.2f}s "
                f"(max stall {stalls[-1] * 1000:.0f} ms)",
                file=sys.stderr,
            )
        lag.reset()
        await asyncio.sleep(5)  # the machine's own noise: the same monitor on an idle loop
        idle_stall = lag.max_s
        # the fleet is read; a diagnosis reuses it as it would after a `top`
        gw.settings = gw.settings.model_copy(update={"fleet_cache_s": 3600})
        await gw.fleet(max_age_s=0)
        first_calls, calls, names = await _diagnosis_calls(gw, "gpu-node-0001")
    finally:
        await lag.stop()
        gw.close()
    return {
        "nodes": nodes,
        "pods": nodes * PODS_PER_NODE,
        "gpu_nodes": gpu_nodes,
        "top_s": round(statistics.median(meas), 3),
        "bare_lists_s": round(statistics.median(base), 3),
        "ratio_vs_lists": round(statistics.median(meas) / statistics.median(base), 3),
        "max_stall_s": round(max(stalls), 3),
        "idle_max_stall_s": round(idle_stall, 3),
        "bot_peak_rss_mib": round(bot_rss, 1),
        "bot_process_peak_rss_mib": round(own_rss, 1),
        "decoder_peak_rss_mib": round(decoder_rss, 1),
        "diagnosis_api_calls": calls,
        "first_diagnosis_api_calls": first_calls,
        "diagnosis_calls_by_kind": sorted(set(names)),
    }


def _kubectl_jq(url: str) -> float | str:
    if not (shutil.which("kubectl") and shutil.which("jq")):
        return "skipped: kubectl or jq not installed"
    start = time.perf_counter()
    kubectl = subprocess.Popen(
        ["kubectl", "get", "nodes,pods", "-A", "-o", "json", "--chunk-size=500", "--server", url],
        stdout=subprocess.PIPE,
    )
    jq = subprocess.run(
        ["jq", JQ], stdin=kubectl.stdout, capture_output=True, text=True, check=False
    )
    kubectl.wait()
    if kubectl.returncode or jq.returncode:
        return f"failed: kubectl {kubectl.returncode}, jq {jq.returncode}: {jq.stderr[:200]}"
    return round(time.perf_counter() - start, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000", help="node counts, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-kubectl", action="store_true", help="skip the kubectl+jq peer")
    args = parser.parse_args()
    results = []
    for nodes in (int(s) for s in args.sizes.split(",")):
        t0 = time.perf_counter()
        fleet = {"nodes": nodes, "pods": nodes * PODS_PER_NODE, "insecure_superuser": True}
        with separate_process(**fleet) as (url, pid):  # type: ignore[arg-type]
            print(f"{nodes} nodes: stand-in up in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
            row = asyncio.run(_one_size(url, nodes, args.runs))
            peer = "skipped: --no-kubectl" if args.no_kubectl else _kubectl_jq(url)
            row["kubectl_jq_s"] = peer
            if isinstance(peer, float):
                row["ratio_vs_kubectl_jq"] = round(row["top_s"] / peer, 3)
            row["standin_peak_rss_mib"] = round(_hwm_mib(pid), 1)
        print(json.dumps(row), file=sys.stderr)
        results.append(row)
    last = results[-1]
    print(
        json.dumps(
            {
                "bench": "fleet",
                "metric": "top_wall_s_median",
                "value": last["top_s"],
                "baseline": last["bare_lists_s"],
                "ratio": last["ratio_vs_lists"],
                "target": TARGETS["ratio_vs_lists"],
                "targets": TARGETS,
                "nodes": last["nodes"],
                "kubectl_jq_s": last["kubectl_jq_s"],
                "ratio_vs_kubectl_jq": last.get("ratio_vs_kubectl_jq"),
                "bot_peak_rss_mib": last["bot_peak_rss_mib"],
                "max_stall_s": last["max_stall_s"],
                "idle_max_stall_s": last["idle_max_stall_s"],
                "diagnosis_api_calls": last["diagnosis_api_calls"],
                "runs": args.runs,
                "sizes": results,
            }
        )
    )


if __name__ == "__main__":
    main()
