"""No ``kubernetes``/``urllib3`` exception escapes ``bot.kube``: every gateway method, with
the API answering 500, 403, or too slowly, raises only ``bot.errors`` (or returns data)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.errors import GpunodeError
from bot.kube.gateway import Gateway

CALLS: dict[str, Callable[[Gateway], Awaitable[Any]]] = {
    "get_cluster_view": lambda g: g.get_cluster_view("gpu-node-01"),
    "list_gpu_nodes": lambda g: g.list_gpu_nodes(),
    "run_diagnostic": lambda g: g.run_diagnostic("gpu-node-01"),
    "cordon": lambda g: g.cordon("gpu-node-01", dry_run=True),
    "uncordon": lambda g: g.uncordon("gpu-node-01", dry_run=True),
    "evict": lambda g: g.evict("research", "jupyter-alice", dry_run=True),
    "ensure_priority_class": lambda g: g.ensure_priority_class(
        "x", 1, description="d", dry_run=True
    ),
    "set_priority_class_name": lambda g: g.set_priority_class_name(
        "Deployment", "data-prep", "preprocess", "batch-low", dry_run=True
    ),
    "patch_container_resources": lambda g: g.patch_container_resources(
        "Deployment",
        "data-prep",
        "preprocess",
        "pandas",
        requests={"memory": "1Gi"},
        limits={},
        env={},
        dry_run=True,
    ),
    "read_controller": lambda g: g.read_controller("Deployment", "data-prep", "preprocess"),
    "resize_pod": lambda g: g.resize_pod(
        "research", "jupyter-alice", "notebook", requests={"cpu": "1"}, limits={}, dry_run=True
    ),
}
FAULTS: dict[str, dict[str, Any]] = {
    "500": {"status": 500},
    "403": {"status": 403},
    "timeout": {"delay_s": 0.6},
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("method", sorted(CALLS))
async def test_only_bot_errors_escape_the_gateway(
    make_gateway: Any, method: str, fault: str
) -> None:
    gw, sim = await make_gateway()
    gw.transport.timeout_s = 0.2
    sim.faults.add("*", r"^/(api|apis|version)", times=-1, **FAULTS[fault])
    try:
        await CALLS[method](gw)
    except GpunodeError as exc:
        assert str(exc)
    except BaseException as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"{method} leaked {type(exc).__module__}.{type(exc).__name__}: {exc}")
