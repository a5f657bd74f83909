"""``gpunode collect``: print the node's EvidenceBundle as JSON (for the bot) or a summary.

The JSON path imports neither pydantic nor any bot-side SDK: it prints
``bundle.collect_document()`` directly (see ``bundle``'s docstring). The text summary is for a
person at a terminal on the node; the bot's own reports are rendered elsewhere from the JSON.
"""

from __future__ import annotations

import sys

from bot.collectors import jsontext
from bot.collectors.bundle import collect_document
from bot.collectors.options import parse_fast
from bot.errorbase import CollectorError, GpunodeError

TYPE_CHECKING = False  # typing and argparse cost ~5 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    import argparse
    from typing import Any

_GIB = 1024**3
_MIB = 1024**2


def _size(value: int | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= _GIB:
        return f"{value / _GIB:.1f}Gi"
    return f"{value / _MIB:.0f}Mi"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _percent(part: int | None, whole: int | None) -> str:
    if part is None or not whole:
        return ""
    return f" ({100 * part / whole:.0f}%)"


def render_text(doc: dict[str, Any]) -> str:
    """A short human summary of a bundle document."""
    lines = [
        f"gpunode collect {doc['collector_version']} on {doc['hostname']}"
        f" (node {doc.get('node_name') or '-'}) at {doc['collected_at']}"
        f" in {doc['duration_s'] * 1000:.0f} ms, cgroup v{doc.get('cgroup_version') or '?'}",
    ]
    free = doc.get("free")
    if free:
        lines.append(
            "memory: total {t}  used {u}  free {f}  shared {s}  buff/cache {b}  available {a}"
            "  (legacy used {lu}; swap used {su} of {st})".format(
                t=_size(free["total_bytes"]),
                u=_size(free["used_bytes"]),
                f=_size(free["free_bytes"]),
                s=_size(free["shared_bytes"]),
                b=_size(free["buff_cache_bytes"]),
                a=_size(free["available_bytes"]),
                lu=_size(free["used_legacy_bytes"]),
                su=_size(free["swap_used_bytes"]),
                st=_size(free["swap_total_bytes"]),
            )
        )
    meminfo = doc.get("meminfo") or {}
    if meminfo:
        lines.append(
            f"kernel: slab {_size(meminfo.get('slab_bytes'))}"
            f" (unreclaimable {_size(meminfo.get('s_unreclaim_bytes'))}),"
            f" sockets {_size(doc.get('socket_memory_bytes'))}"
        )
    pressure = doc.get("pressure")
    if pressure:
        some, full = pressure["some"], pressure.get("full") or {}
        lines.append(
            f"pressure: some avg10={some['avg10']:.2f} avg60={some['avg60']:.2f}"
            f"  full avg10={full.get('avg10', 0.0):.2f}"
        )
    containers = sorted(doc.get("containers", []), key=lambda c: -(c.get("working_set_bytes") or 0))
    lines.append(f"containers ({len(containers)}; working set / limit):")
    for c in containers[:15]:
        who = (c.get("pod_uid") or "-")[:36]
        cid = (c.get("container_id") or c["cgroup_path"].rsplit("/", 1)[-1])[:12]
        lines.append(
            f"  {_size(c.get('working_set_bytes')):>8} / {_size(c.get('limit_bytes')):>8}"
            f"{_percent(c.get('working_set_bytes'), c.get('limit_bytes')):>7}"
            f"  pod {who}  {cid} {c.get('runtime')} {c.get('qos') or ''}"
            f"  oom_kill={_count(c.get('oom_kill_events'))}"
        )
    lines.append(f"processes (top {len(doc['processes'])} of {doc['process_count']} by RSS):")
    for p in doc["processes"]:
        lines.append(
            f"  {p['pid']:>8} {_size(p['rss_bytes']):>8}  {p['command'][:16]:<16}"
            f" {(p.get('pod_uid') or '')[:8]:<8} {p['cmdline'][:60]}"
        )
    gpus = doc.get("gpus", [])
    driver = doc.get("nvml_driver_version") or "-"
    lines.append(f"gpus ({len(gpus)}, driver {driver}):")
    for g in gpus:
        lines.append(
            f"  {g['index']} {g['name']} used {_size(g['memory_used_bytes'])}"
            f" of {_size(g['memory_total_bytes'])}, free {_size(g['memory_free_bytes'])},"
            f" reserved {_size(g.get('memory_reserved_bytes'))}"
        )
    for gp in doc.get("gpu_processes", []):
        lines.append(
            f"    gpu{gp['gpu_index']} pid {gp['pid']} {gp.get('command') or '?'}"
            f" {_size(gp.get('used_gpu_memory_bytes'))} pod {gp.get('pod_uid') or '-'}"
        )
    klog = doc.get("kernel_log")
    if klog:
        lines.append(
            f"kernel log ({klog['records_read']} records, last {klog['window_s'] // 3600} h):"
        )
        for k in klog["oom_kills"]:
            lines.append(
                f"  {k.get('at') or '?'} {k['scope']} OOM kill: {k['comm']} pid {k['pid']}"
                f" anon-rss {_size(k.get('anon_rss_bytes'))} pod {k.get('pod_uid') or '-'}"
            )
        for x in klog["xids"]:
            lines.append(
                f"  {x.get('at') or '?'} XID {x['code']} on GPU"
                f" {x.get('gpu_index') if x.get('gpu_index') is not None else '?'}"
                f" ({x.get('pci_bus_id')}): {x.get('message')}"
            )
    gaps = doc.get("gaps", [])
    lines.append(f"gaps ({len(gaps)}):")
    lines += [f"  {g['source']}: {g['reason']}" for g in gaps]
    return "\n".join(lines) + "\n"


def load_fake_nvml(path: str) -> Any:
    """The sandbox's fake NVML module read from the JSON spec at ``path`` (``--fake-nvml``)."""
    try:
        from gpunode_sandbox.fake_nvml import FakeNvml
    except ModuleNotFoundError as exc:
        raise CollectorError(
            "--fake-nvml is for the sandbox's stand-in nodes, and this image has no "
            "sandbox; on a real node leave it out (NVML is read from the driver)"
        ) from exc
    try:
        return FakeNvml.from_file(path)
    except (OSError, ValueError) as exc:
        raise CollectorError(
            f"cannot read the fake-NVML spec {path}: {exc}; pass a JSON file "
            "as described in gpunode_sandbox/fake_nvml.py"
        ) from exc


def main(args: argparse.Namespace) -> int:
    """Handler for ``gpunode collect`` (args: root, top, format, fake_nvml, node_name)."""
    if args.top < 0:
        raise CollectorError("--top must be 0 or more")
    fake = load_fake_nvml(args.fake_nvml) if args.fake_nvml else None
    window = getattr(args, "kernel_log_window", 86400)
    if window < 0:
        raise CollectorError("--kernel-log-window must be 0 or more seconds")
    doc = collect_document(
        args.root,
        top=args.top,
        nvml_module=fake,
        node_name=args.node_name,
        kernel_log_window_s=window,
    )
    if args.format == "text":
        sys.stdout.write(render_text(doc))
    else:
        sys.stdout.write(jsontext.dumps(doc) + "\n")
    return 0


def run_job(words: list[str]) -> int | None:
    """The diagnostic Job's ``collect WORDS`` (``bot/__main__.py`` run by its path), as
    ``gpunode``'s ``main`` runs it -- same output, same words and status on an error -- without
    importing ``bot.cli.main`` or ``bot.errors``' other classes (~4M instructions, ~1 ms of the
    Job's run; issue #25). None when ``parse_fast`` declines the words: ``main`` (argparse)
    then decides, help and usage errors included."""
    args = parse_fast(words)
    if args is None:
        return None
    try:
        return main(args)
    except GpunodeError as err:  # as bot.cli.main's main words it (collect has no --lang)
        print(f"gpunode: {err}", file=sys.stderr)
        from bot.errors import UsageError  # only on the way out

        if isinstance(err, UsageError) and err.usage:
            print(f"usage: {err.usage}", file=sys.stderr)
        return 2 if isinstance(err, UsageError) else 1
    except KeyboardInterrupt:
        return 130
