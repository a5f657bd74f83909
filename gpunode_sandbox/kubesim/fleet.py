"""A large synthetic fleet for benchmarks: ``Scenario.synthetic_fleet(nodes, pods, ...)``.

Nodes are GPU nodes (8 GPUs) for ``gpu_fraction`` of the fleet, CPU nodes otherwise; pods
come from at most ``MAX_DEPLOYMENTS`` Deployments (of ``PODS_PER_DEPLOYMENT`` pods each, more on
a larger fleet) spread round-robin over the nodes. Loading validates one sample object per
template (see ``building``), and each pod is built once and stored as built, so 5,000 nodes /
150,000 pods load in well under a minute.
"""

from __future__ import annotations

from gpunode_sandbox.kubesim import scenarios as sc

PODS_PER_DEPLOYMENT = 200
#: a larger fleet gets larger Deployments, not more: each one's objects are validated
MAX_DEPLOYMENTS = 200


def synthetic_fleet(
    *, nodes: int = 2000, pods: int = 60_000, gpu_fraction: float = 0.25
) -> sc.Scenario:
    n_gpu = round(nodes * gpu_fraction)
    node_list: list[sc.Node] = []
    for i in range(nodes):
        gpu = i < n_gpu
        name = f"gpu-node-{i:04d}" if gpu else f"cpu-node-{i:04d}"
        cap = {"cpu": "96" if gpu else "32", "memory": "251Gi" if gpu else "128Gi", "pods": "110"}
        alloc = {
            "cpu": "95500m" if gpu else "31850m",
            "memory": "241Gi" if gpu else "124Gi",
            "pods": "110",
        }
        if gpu:
            cap["nvidia.com/gpu"] = alloc["nvidia.com/gpu"] = "8"
        node_list.append(
            sc.Node(
                name=name, capacity=cap, allocatable=alloc, gpus=sc.Gpus(count=8) if gpu else None
            )
        )
    names = [n.name for n in node_list]
    workloads: list[sc.Workload] = []
    left, d = pods, 0
    per = max(PODS_PER_DEPLOYMENT, -(-pods // MAX_DEPLOYMENTS))
    while left > 0:
        replicas = min(per, left)
        start = (d * per) % len(names)
        placed = [names[(start + j) % len(names)] for j in range(replicas)]
        workloads.append(
            sc.Workload(
                kind="Deployment",
                name=f"svc-{d:04d}",
                namespace=f"team-{d % 20:02d}",
                replicas=replicas,
                nodes=placed,
                containers=[
                    sc.Container(
                        name="app",
                        requests={"cpu": "250m", "memory": "1Gi"},
                        limits={"memory": "2Gi"},
                        usage=sc.Usage(anon="600Mi", file="100Mi"),
                    )
                ],
            )
        )
        left -= replicas
        d += 1
    return sc.Scenario(
        name="synthetic-fleet",
        nodes=node_list,
        workloads=workloads,
        description=f"{nodes} nodes, {pods} pods (synthetic)",
    )
