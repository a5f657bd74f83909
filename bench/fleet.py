"""Fleet benchmark: ``/gpunode top`` (``Gateway.gpu_node_loads``) over synthetic fleets of 30
pods per node, the Kubernetes stand-in serving in a process of its own, started warm
(``separate_process``'s ``warm``): every stored object's JSON and every pod metrics item made
before the first list, as the API server serves lists from its watch cache and metrics-server
from its last scrape, so the stand-in's Python encoding is not counted in the bot's time.

Per size (``--sizes``, nodes; default 500,2000; the issue's full set is 500,2000,5000), each
run on a fresh gateway as ``gpunode serve`` builds it (``informers=True``):

- cold ``top``: the first ``gpu_node_loads()``. The pods and nodes informers list every node
  and pod a page (500) at a time, each page decoded and cut to slim records in the gateway's
  decoder process, then summed on a gateway thread; the pod metrics are read as they stream.
  (The decoder process is started before the clock, as a serving bot's first read has it.)
  ``gpunode serve`` starts these lists itself once it is warm (``Gateway.prime``), so the
  cold ``top`` is what a ``top`` sent during that first list waits at most.
- warm ``top``: the next ``gpu_node_loads()``: pods and nodes summed from the informers'
  memory (they watch meanwhile), only the pod metrics read over the wire (metrics are not
  watchable).
- baseline: the bare list calls: nodes, pods and pod metrics, paged, through the same
  client and transport code (a client of its own), each page decoded with ``json.loads``
  on a thread and dropped, nothing else. Runs alternate (``top`` first on even runs),
  medians; the baseline's first run is a warm-up, not timed.
- peer: ``kubectl get nodes,pods -A -o json --chunk-size=500 | jq`` counting pods per node
  (less work than ``top``: no quantities), one run per size (kubectl sends no token over
  plain HTTP: the stand-in runs with its insecure-port superuser for it; the bot uses its
  token).
- the bot's peak RSS (``bot_peak_rss_mib``), its whole process tree: this process's VmHWM
  after the first cold and warm ``top`` (the informers holding every pod), before any
  baseline run of the size (the peak is reset to the current RSS as each size starts,
  ``bot_process_peak_reset``: an earlier size's baseline lists, decoded in this process, are
  not the bot's; what earlier sizes left resident still counts,
  ``bot_process_rss_at_start_mib``), plus the VmHWM of every worker of the bot's alive
  during a ``top``, summed (``bench/tree.py``: read from a process of its own every 0.1 s;
  the sum of per-process peaks, the conservative figure), each part reported too
  (``bot_process_…``, ``decoder_…``, ``analysis_worker_peak_rss_mib``); apart from the
  stand-in's. This process holds what a serving bot's does: its allocator's settings
  (``bot.wiring.heap.tune_malloc``), ``gpunode serve``'s imports (``bot.wiring.runtime``)
  and its warm-up (the analysis worker started and its charts imported, the templates
  compiled; ``bot.wiring.warming``; it also holds the stand-in's token module, which serve
  does not).
  A diagnosis's work runs just before each gateway's first ``top``: held as
  ``DiagnoseService`` holds it, the analysis of
  ``bench/analyze.py``'s 5,000-process node and its chart, in the analysis worker as
  ``gpunode serve`` wires it (``analysis_offloader``). That worker ends when the diagnosis
  is done; ``analysis_worker_exit_s`` is how long it took (the ``top`` starts after), and
  ``analysis_worker_drawing_peak_rss_mib`` its peak while it worked: a ``top`` during a
  diagnosis would hold ``bot_peak_rss_mid_diagnosis_mib`` (bot, decoder and that peak);
- the longest event-loop stall during the ``top``s, two ways: ``LoopLag`` (wall clock, 20 ms
  timer; the machine's load inflates it, so the same monitor's figure on an idle loop is
  reported beside it) and ``CallbackCpu`` (the loop thread's CPU time in its longest
  callback: the bot's own blocking, which other processes' load does not inflate), beside
  a 20 ms timer loop in a process of its own over the same moments (``control_max_stall_s``:
  the machine's own scheduling noise, which no interpreter lock of the bot's causes), and the
  longest garbage collection on any of the bot's threads (``GcPauses``: it holds the
  interpreter lock throughout; CPU and wall);
- the Kubernetes calls of a diagnosis after a ``top`` (``run_diagnostic`` +
  ``get_cluster_view`` on a GPU node, counted by the gateway's observer): the first one
  (``first_diagnosis_api_calls``: it starts the pod-events informer and the owner informers,
  whose lists it counts), the next one (``diagnosis_api_calls``: the owners cached), and one
  made after the owner cache expired (``cold_owner_diagnosis_api_calls``, ``fleet_cache_s``
  later: what a diagnosis that follows the last one by more than that makes, the usual
  incident; ``cold_owner_diagnosis_calls_by_kind``: the owner informers answer for the
  owners and budgets), as in ``gpunode serve``.

Usage: ``python bench/fleet.py [--sizes 500,2000,5000] [--runs 3] [--no-kubectl]``.
Last line: one JSON object for the largest size (``"sizes"`` holds every size's figures):
``value`` is the warm ``top``'s median (what a serving bot pays), ``cold_top_s`` the cold
one's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analyze import build
from bench.tree import TreeSampler, holds_memory, peak_of, status_mib, tree_peaks
from bot.config import KubeSettings
from bot.core.model.thresholds import Thresholds
from bot.core.reporting.charts import chart_spec
from bot.kube.gateway import Gateway
from bot.kube.transport import Transport
from bot.services.analysing import Analyst
from bot.services.diagnosing import measured_pods
from bot.slack.presenter import DRAW_CHARTS
from bot.telemetry.lag import CallbackCpu, GcPauses, LoopLag
from bot.wiring.heap import tune_malloc
from bot.wiring.runtime import analysis_offloader
from bot.wiring.warming import warm_up_with
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.process import separate_process

PODS_PER_NODE = 30
TARGETS = {"ratio_vs_lists": 1.2, "ratio_vs_kubectl_jq": 0.05, "rss_mib": 300, "stall_s": 0.1}
JQ = (
    '[.items[] | select(.kind == "Pod") | .spec.nodeName // ""] '
    "| group_by(.) | map({node: .[0], pods: length}) | length"
)


def _hwm_mib(pid: int | str = "self") -> float:
    return status_mib(pid) or 0.0


def _reset_hwm() -> bool:
    """Reset this process's VmHWM to its current RSS (``clear_refs`` 5, Linux ≥ 4.0), so
    that one size's peak is its own: the previous size's baseline (bare lists decoded here)
    and gateway do not count in it. False where the kernel refuses (the figure then holds
    every earlier peak: conservative)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _control(stop: Any, out: Any) -> None:
    """A 20 ms timer in a process of its own: (time.time(), lag) of each wake-up late by
    more than 20 ms, sent when ``stop`` is set."""
    late: list[tuple[float, float]] = []
    while not stop.is_set():
        asked = time.perf_counter()
        time.sleep(0.02)
        lag = time.perf_counter() - asked - 0.02
        if lag > 0.02:
            late.append((time.time(), lag))
    out.put(late)


class ControlLag:
    """``_control`` running while the bench runs; ``max_in(windows)``: its longest lag within
    the given (start, end) ``time.time()`` windows (the ``top``s)."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop, self._out = ctx.Event(), ctx.Queue()
        self._proc = ctx.Process(target=_control, args=(self._stop, self._out), daemon=True)
        self._proc.start()
        self.late: list[tuple[float, float]] = []

    def stop(self) -> None:
        self._stop.set()
        self.late = self._out.get(timeout=60)
        self._proc.join(timeout=30)

    def max_in(self, windows: list[tuple[float, float]]) -> float:
        return max((lag for at, lag in self.late for a, b in windows if a <= at <= b), default=0.0)


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


async def _timed_top(gw: Gateway, lag: LoopLag, cpu: CallbackCpu) -> tuple[float, int]:
    lag.reset()
    cpu.reset()
    start = time.perf_counter()
    loads = await gw.gpu_node_loads()
    return time.perf_counter() - start, len(loads)


def _gateway(url: str) -> Gateway:
    gw = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=url,
            token=BOT_TOKEN,
            verify_tls=False,
            request_timeout_s=300,
            namespace="gpunode",
            job_timeout_s=120,
        ),
        informers=True,
    )
    # the decoder process started before the clock, as a serving bot's first read has it
    gw._decoder.submit(len, b"", process=True).result()
    return gw


async def _diagnosis_work(analyst: Analyst) -> float:
    """A diagnosis's work in the analysis worker, as ``DiagnoseService`` does it: held from
    the Job's start (the worker started and primed then), the analysis and the history's
    attach of a 5,000-process node (``bench/analyze.py``'s), its chart drawn. Answers the
    seconds the worker took to end after the hold was released (the ``top`` waits for it)."""
    bundle, view = await asyncio.to_thread(build)
    async with analyst.held():
        worker = analyst.pid
        now = bundle.collected_at
        diagnosis = await analyst.analyze(bundle, view, thresholds=Thresholds(), now=now)
        diagnosis = await analyst.attach(diagnosis, None, bundle=bundle, view=view, now=now)
        spec = chart_spec(diagnosis, bundle)
        pngs = await analyst.offload.run(DRAW_CHARTS, {"memory": spec}, "en")
        assert pngs["memory"].startswith(b"\x89PNG")
    del bundle, view, diagnosis, spec, pngs
    released = time.perf_counter()
    for _ in range(3000):  # it exits once its input is closed (30 s at most)
        if worker is None or not holds_memory(worker):
            break
        await asyncio.sleep(0.01)
    return time.perf_counter() - released


async def _diagnosis_calls(gw: Gateway, node: str) -> tuple[int, int, list[str], int, list[str]]:
    """Calls of the first diagnosis (which starts the pod-events and owner informers, as in
    `gpunode serve`), of the next one, once the informers have listed (their watches, 300 s
    long, end outside the count), and of one more after the owner cache has expired
    (``fleet_cache_s`` later, as any diagnosis that follows the last one by more than that:
    the usual incident), the owners then read from the owner informers."""
    calls: list[str] = []
    gw.observe_api(lambda verb, resource, status: calls.append(f"{verb} {resource}"))

    async def diagnose() -> list[str]:
        calls.clear()
        bundle = await gw.run_diagnostic(node)
        await gw.get_cluster_view(node, measured=measured_pods(bundle))
        return list(calls)

    try:
        first = len(await diagnose())
        informers = [gw.pod_events(), *(gw.owner_informers() or {}).values()]
        for _ in range(6000):
            if all(i is None or i.synced.is_set() for i in informers):
                break
            await asyncio.sleep(0.1)
        warm = await diagnose()
        await asyncio.sleep(gw.settings.fleet_cache_s + 1)
        cold = await diagnose()
    finally:
        gw.observe_api(None)
    return first, len(warm), warm, len(cold), cold


async def _one_size(url: str, nodes: int, runs: int) -> dict[str, Any]:
    hwm_reset = _reset_hwm()
    rss_at_start = status_mib(field="VmRSS") or 0.0
    analyst = Analyst(offload=analysis_offloader())
    # serve's warm-up, for the memory it leaves in the bot's process (the analysis worker,
    # its charts imported, ends after its idle time); it settles the heap last, as serve's
    await warm_up_with(analyst.offload)
    lag = LoopLag(interval_s=0.02)
    lag.start()
    cold: list[float] = []
    warm: list[float] = []
    base: list[float] = []
    stalls: list[float] = []
    cpu_stalls: list[float] = []
    worst = ""
    windows: list[tuple[float, float]] = []
    gc_cpu: list[float] = []
    gc_wall: list[float] = []
    gc_worst = ""
    control = ControlLag()
    tree = TreeSampler()
    own_rss = 0.0
    exits: list[float] = []
    gpu_nodes = 0
    gw: Gateway | None = None
    bare = Transport(_client(url), timeout_s=300)
    try:
        with CallbackCpu() as cpu, GcPauses() as gcs:
            for i in range(runs):
                order = ("top", "baseline") if i % 2 == 0 else ("baseline", "top")
                for kind in order:
                    if kind == "baseline":
                        if not base:  # warm-up
                            await asyncio.to_thread(_bare_lists, bare)
                        start = time.perf_counter()
                        await asyncio.to_thread(_bare_lists, bare)
                        base.append(time.perf_counter() - start)
                        continue
                    if gw is not None:
                        await asyncio.to_thread(gw.close)
                    # off the loop: closing a gateway and starting the next one's decoder
                    # block, and would be counted as the `top`'s stall (the same task step)
                    gw = await asyncio.to_thread(_gateway, url)
                    exits.append(await _diagnosis_work(analyst))
                    for times in (cold, warm):
                        began = time.time()
                        gcs.reset()
                        took, gpu_nodes = await _timed_top(gw, lag, cpu)
                        windows.append((began, time.time()))
                        if gcs.max_cpu_s >= max(gc_cpu, default=0.0):
                            gc_worst = gcs.worst
                        gc_cpu.append(gcs.max_cpu_s)
                        gc_wall.append(gcs.max_wall_s)
                        times.append(took)
                        stalls.append(lag.max_s)
                        if cpu.max_s >= max(cpu_stalls, default=0.0):
                            worst = cpu.worst
                        cpu_stalls.append(cpu.max_s)
                    if i == 0:  # the informers hold every pod now; no baseline ran yet
                        own_rss = _hwm_mib()
                print(
                    f"  run {i}: bare lists {base[-1]:.2f}s top cold {cold[-1]:.2f}s "
                    f"warm {warm[-1]:.2f}s (max stall {max(stalls[-2:]) * 1000:.0f} ms wall, "
                    f"{max(cpu_stalls[-2:]) * 1000:.1f} ms loop CPU; longest collection "
                    f"{max(gc_cpu[-2:]) * 1000:.1f} ms CPU, "
                    f"{max(gc_wall[-2:]) * 1000:.0f} ms wall)",
                    file=sys.stderr,
                )
        assert gw is not None
        lag.reset()
        await asyncio.sleep(5)  # the machine's own noise: the same monitor on an idle loop
        idle_stall = lag.max_s
        first_calls, calls, names, cold_calls, cold_names = await _diagnosis_calls(
            gw, "gpu-node-0001"
        )
    finally:
        await lag.stop()
        control.stop()
        sightings = tree.stop()
        if gw is not None:
            gw.close()
        analyst.close()
        bare.api_client.close()  # type: ignore[no-untyped-call]
    warm_s, cold_s, base_s = (statistics.median(x) for x in (warm, cold, base))
    workers = tree_peaks(sightings, windows)
    decoder_rss = workers.get("decoder", 0.0)
    drawing = peak_of(sightings, "analysis_worker")
    return {
        "nodes": nodes,
        "pods": nodes * PODS_PER_NODE,
        "gpu_nodes": gpu_nodes,
        "top_s": round(warm_s, 3),
        "cold_top_s": round(cold_s, 3),
        "bare_lists_s": round(base_s, 3),
        "ratio_vs_lists": round(warm_s / base_s, 3),
        "cold_ratio_vs_lists": round(cold_s / base_s, 3),
        "max_stall_s": round(max(stalls), 3),
        "idle_max_stall_s": round(idle_stall, 3),
        "max_loop_cpu_s": round(max(cpu_stalls), 4),
        "worst_callback": worst,
        "control_max_stall_s": round(control.max_in(windows), 3),
        "max_gc_cpu_s": round(max(gc_cpu), 4),
        "max_gc_wall_s": round(max(gc_wall), 3),
        "worst_gc": gc_worst,
        "bot_peak_rss_mib": round(own_rss + sum(workers.values()), 1),
        "bot_process_peak_rss_mib": round(own_rss, 1),
        "bot_process_rss_at_start_mib": round(rss_at_start, 1),
        "bot_process_peak_reset": hwm_reset,
        "decoder_peak_rss_mib": round(decoder_rss, 1),
        "analysis_worker_peak_rss_mib": round(workers.get("analysis_worker", 0.0), 1),
        "other_workers_peak_rss_mib": round(workers.get("other_worker", 0.0), 1),
        "analysis_worker_drawing_peak_rss_mib": round(drawing, 1),
        "bot_peak_rss_mid_diagnosis_mib": round(own_rss + decoder_rss + drawing, 1),
        "analysis_worker_exit_s": round(max(exits), 3),
        "diagnosis_api_calls": calls,
        "first_diagnosis_api_calls": first_calls,
        "cold_owner_diagnosis_api_calls": cold_calls,
        "cold_owner_diagnosis_calls_by_kind": dict(Counter(cold_names).most_common()),
        "diagnosis_calls_by_kind": sorted(set(names)),
    }


def _client(url: str) -> Any:
    from bot.kube.connecting import build_api_client

    return build_api_client(
        KubeSettings(mode="server", server=url, token=BOT_TOKEN, verify_tls=False)
    )


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
    tune_malloc()  # as `gpunode serve` does first (its workers start with the same settings)
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
                row["cold_ratio_vs_kubectl_jq"] = round(row["cold_top_s"] / peer, 3)
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
                "cold_top_s": last["cold_top_s"],
                "cold_ratio_vs_lists": last["cold_ratio_vs_lists"],
                "kubectl_jq_s": last["kubectl_jq_s"],
                "ratio_vs_kubectl_jq": last.get("ratio_vs_kubectl_jq"),
                "cold_ratio_vs_kubectl_jq": last.get("cold_ratio_vs_kubectl_jq"),
                "bot_peak_rss_mib": last["bot_peak_rss_mib"],
                "bot_process_peak_rss_mib": last["bot_process_peak_rss_mib"],
                "bot_process_rss_at_start_mib": last["bot_process_rss_at_start_mib"],
                "decoder_peak_rss_mib": last["decoder_peak_rss_mib"],
                "analysis_worker_peak_rss_mib": last["analysis_worker_peak_rss_mib"],
                "analysis_worker_drawing_peak_rss_mib": last[
                    "analysis_worker_drawing_peak_rss_mib"
                ],
                "bot_peak_rss_mid_diagnosis_mib": last["bot_peak_rss_mid_diagnosis_mib"],
                "max_stall_s": last["max_stall_s"],
                "idle_max_stall_s": last["idle_max_stall_s"],
                "max_loop_cpu_s": last["max_loop_cpu_s"],
                "control_max_stall_s": last["control_max_stall_s"],
                "max_gc_cpu_s": last["max_gc_cpu_s"],
                "max_gc_wall_s": last["max_gc_wall_s"],
                "diagnosis_api_calls": last["diagnosis_api_calls"],
                "cold_owner_diagnosis_api_calls": last["cold_owner_diagnosis_api_calls"],
                "runs": args.runs,
                "sizes": results,
            }
        )
    )


if __name__ == "__main__":
    main()
