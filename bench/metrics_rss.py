"""Memory of reading a metrics-server pod list whole (one piece, as metrics-server answers):
the traced peak of the read decoded in one process (``inline_traced_peak_mib``:
tracemalloc, what Python allocated for it, the clearest figure), and the bot's and the
decoder process's peak RSS (their peaks reset just before the read
(``/proc/PID/clear_refs``), so start-up's own peak does not hide it), at ``--pods`` pods (150,000 =
5,000 nodes of 30 pods).

The answer (shaped as metrics-server's PodMetricsList) is written once to a file and served
by ``python -m http.server`` in a process of its own; the bot side is
``bot.kube.tallying.read_working_set`` through the official client, in a fresh process per
run, with its decoder process. Run against another tree with ``--tree PATH`` (for a
before/after on the same answer and the same machine).

Usage: ``python bench/metrics_rss.py [--pods 150000] [--tree /work/main]``.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
from kubernetes import client
from bot.kube.decoding import PageDecoder
from bot.kube.tallying import read_working_set
from bot.kube.transport import Transport

def hwm(pid="self"):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0

conf = client.Configuration()
conf.host = sys.argv[1]
t = Transport(client.ApiClient(conf), timeout_s=300)
pods = int(sys.argv[2])
where = {f"team-{i % 20:02d}/pod-{i:06d}": f"gpu-node-{i % 5000:04d}" for i in range(pods)}
decoder = PageDecoder()
decoder.submit(len, b" " * (1 << 19)).result()  # start the worker before the baseline
# the worker's pid: a process of its own (``pid``) or, in trees before it, a pool's child
pid = decoder.pid if hasattr(decoder, "pid") else next(iter(decoder._pool._processes))
for who in ("self", pid):  # peaks from here on (start-up's imports are not this read's)
    Path(f"/proc/{who}/clear_refs").write_text("5")
before, decoder_before = hwm(), hwm(pid)
start = time.perf_counter()
used = read_working_set(t, "v1beta1", where, decoder)
took = time.perf_counter() - start
out = {"read_s": round(took, 3), "bot_rss_before_mib": round(before, 1),
       "decoder_rss_before_mib": round(decoder_before, 1),
       "bot_peak_rss_mib": round(hwm(), 1), "decoder_peak_rss_mib": round(hwm(pid), 1),
       "nodes": len(used), "bytes": sum(used.values())}
decoder.close()
# the same read with the decoding done in this process, under tracemalloc: the peak of the
# memory Python allocated for it (bot and decoder work together), free of what the
# allocator kept from start-up
import tracemalloc
here = PageDecoder(use_process=False)
tracemalloc.start()
read_working_set(t, "v1beta1", where, here)
out["inline_traced_peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
tracemalloc.stop()
print(json.dumps(out))
"""


def _answer(pods: int) -> bytes:
    items = [
        {
            "metadata": {
                "name": f"pod-{i:06d}",
                "namespace": f"team-{i % 20:02d}",
                "creationTimestamp": "2026-12-02T10:00:00Z",
                "labels": {"app": f"svc-{i // 200:04d}", "pod-template-hash": "5d8f7c9b6d"},
            },
            "timestamp": "2026-12-02T10:00:00Z",
            "window": "20.004s",
            "containers": [{"name": "app", "usage": {"cpu": "12m", "memory": "716800Ki"}}],
        }
        for i in range(pods)
    ]
    return json.dumps(
        {
            "kind": "PodMetricsList",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": items,
        },
        separators=(",", ":"),
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--tree", action="append", default=[], help="other trees to compare")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as root:
        where = Path(root, "apis/metrics.k8s.io/v1beta1")
        where.mkdir(parents=True)
        body = _answer(args.pods)
        Path(where, "pods").write_bytes(body)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)
        rows = {}
        try:
            for tree in [here, *args.tree]:
                env = {**os.environ, "PYTHONPATH": tree}
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, f"http://127.0.0.1:{port}", str(args.pods)],
                    env=env,
                    cwd=tree,  # `python -c` puts the working directory first on the path
                    capture_output=True,
                    text=True,
                    check=True,
                )
                rows[tree] = json.loads(done.stdout.strip().splitlines()[-1])
                print(tree, rows[tree], file=sys.stderr)
        finally:
            server.terminate()
            server.wait()
    mine = rows[here]
    out = {
        "bench": "metrics_rss",
        "metric": "bot_peak_rss_mib",
        "value": mine["bot_peak_rss_mib"],
        "pods": args.pods,
        "answer_mib": round(len(body) / 2**20, 1),
        "this_tree": mine,
    }
    for tree in args.tree:
        out[f"tree {tree}"] = rows[tree]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
