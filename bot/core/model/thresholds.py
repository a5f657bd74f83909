"""Every number the analysis compares against, in one documented, configurable model.

Why one model: a reader disputing a verdict ("why is 96% 'near the limit'?") finds each
threshold here with the reason for its default. Operators override them from a YAML file
(``parse_thresholds(dict)``); unknown keys are refused so a typo cannot silently keep a
default. Pure: no I/O.

Ratios are fractions (0.95), percentages are kubectl-style integers (95), bytes are bytes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.core.model.validation import problems, validation_message
from bot.errors import ConfigError

GIB = 1024**3


class Thresholds(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- containers -------------------------------------------------------------------
    # The kernel OOM-kills a cgroup at 100% of memory.max once nothing is reclaimable; the
    # working set already excludes inactive file cache, so 95% leaves about one allocation
    # burst of headroom: "imminent". The domain's preprocessing pod (62 of 64 GiB) is 96.9%.
    container_near_limit_ratio: float = Field(0.95, gt=0, le=1)
    # 85% is where a container is worth watching (warning) but not yet about to die.
    container_warn_limit_ratio: float = Field(0.85, gt=0, le=1)

    # --- workloads on the host -----------------------------------------------------------
    # One GPU's fair share of host RAM on an 8-GPU node is 1/8 = 12.5%; a pod without any GPU
    # that holds more than 15% of MemTotal competes with the training it exists to feed.
    non_gpu_workload_share: float = Field(0.15, gt=0, le=1)
    # Working set at twice the request is use the scheduler cannot see (it placed the pod
    # by its request); below 1 GiB of excess the difference does not matter on a GPU node.
    usage_over_request_ratio: float = Field(2.0, ge=1)
    usage_over_request_min_bytes: int = Field(1 * GIB, ge=0)
    # Noise floor: usage below this is never named as a cause (sidecars, exporters).
    min_consumer_bytes: int = Field(1 * GIB, ge=0)

    # --- node allocation (kubectl "Allocated resources" percentages) ---------------------
    # kubectl prints "Total limits may be over 100 percent"; at 95% one pod growing to its
    # limit can exhaust allocatable. Over 100% the node is overcommitted by construction.
    limits_overcommit_warn_percent: int = Field(95, ge=1)
    limits_overcommit_critical_percent: int = Field(100, ge=1)

    # --- kernel --------------------------------------------------------------------------
    # Unreclaimable slab normally stays at a few percent of RAM; 10% is abnormal (warning),
    # 25% is a leak that alone can push the node into a kernel OOM. The commonly quoted
    # alert uses 0.3 (a judgement call, reference/kubernetes.md §7e); 0.25 fires earlier.
    slab_unreclaim_warn_share: float = Field(0.10, gt=0, le=1)
    slab_unreclaim_critical_share: float = Field(0.25, gt=0, le=1)
    # Socket buffers above 5% of RAM are worth their own line (a socket leak is also
    # invisible to the kubelet's eviction signal).
    socket_memory_warn_share: float = Field(0.05, gt=0, le=1)
    # buff/cache under 8% of RAM: the page cache has been squeezed out (domain: 14 of 251
    # GiB = 5.6%). A healthy busy node keeps well above 10% as cache.
    page_cache_low_share: float = Field(0.08, gt=0, le=1)
    # ...but only when memory is short: a small cache beside 10%+ of RAM available is a
    # workload doing little file I/O (or just freed), not a cache the kernel reclaimed.
    page_cache_squeeze_available_share: float = Field(0.10, gt=0, le=1)
    # MemAvailable under 5% of RAM (domain: 3.5 of 251 GiB = 1.4%) is severe pressure;
    # under 2% the next allocation burst means a kernel OOM.
    available_low_share: float = Field(0.05, gt=0, le=1)
    available_critical_share: float = Field(0.02, gt=0, le=1)
    # PSI memory: "some" avg10 >= 10% means tasks stall on memory a tenth of the time;
    # "full" avg10 >= 5% means the whole node made no progress for 5% of the last 10 s.
    psi_some_avg10_warn: float = Field(10.0, ge=0)
    psi_full_avg10_critical: float = Field(5.0, ge=0)

    # --- GPU -----------------------------------------------------------------------------
    # Frameworks reserve memory in large blocks, so 90% used is "high" but normal for
    # training; 95% is where the next allocation fails (CUDA out of memory).
    gpu_memory_warn_ratio: float = Field(0.90, gt=0, le=1)
    gpu_memory_exhausted_ratio: float = Field(0.95, gt=0, le=1)

    # --- verdict (attribution first, bot.core.diagnosis.verdicts)
    # ----------------------------------
    # The node is "short" by what MemAvailable lacks to reach 10% of RAM: the headroom a
    # healthy GPU node keeps (same figure as page_cache_squeeze_available_share). Plans
    # state their relief against this number.
    shortage_target_available_share: float = Field(0.10, gt=0, le=1)
    # A consumer under 10% of RAM does not explain a node-wide shortage by itself: below
    # that, no single cause stands out (overcommit or inconclusive).
    culprit_min_share: float = Field(0.10, gt=0, le=1)
    # Confidence: a primary consumer 10% of RAM ahead of the next one is unmistakable
    # (high); within 2% it is a near tie (low unless it alone covers the shortage).
    verdict_clear_margin_share: float = Field(0.10, ge=0, le=1)
    verdict_tie_margin_share: float = Field(0.02, ge=0, le=1)
    # A process of no pod holding half of a GPU is "most of one GPU": nobody can free it
    # through Kubernetes, so it is named even when the GPU is not yet exhausted.
    gpu_orphan_share: float = Field(0.50, gt=0, le=1)

    # --- priorities and plans ------------------------------------------------------------
    # The domain's training PriorityClass value; user classes may go up to 1e9.
    critical_priority_threshold: int = Field(1_000_000, ge=0)
    # Tier 3 aims the node's limit total at 90% of allocatable: 10% stays for the kubelet's
    # eviction threshold, system daemons and page cache.
    tier3_limits_target_ratio: float = Field(0.90, gt=0, le=1)
    # Request = 87.5% of limit: the domain's 14 of 16 GiB and 28 of 32 GiB.
    memory_request_ratio: float = Field(0.875, gt=0, le=1)
    # CPU request = 75% of the cap: the domain's 6 of 8 cores.
    cpu_request_ratio: float = Field(0.75, gt=0, le=1)
    # OMP_NUM_THREADS when no CPU cap can be computed (the domain's value).
    default_omp_threads: int = Field(4, ge=1)


DEFAULT = Thresholds()


def parse_thresholds(raw: dict[str, Any] | None) -> Thresholds:
    """Build thresholds from a mapping (a YAML file's content); missing keys keep defaults."""
    if raw is None:
        return DEFAULT
    if not isinstance(raw, dict):
        raise ConfigError(
            "thresholds: expected a mapping of name: value; see bot/core/model/thresholds.py",
            key="thresholds_not_mapping",
        )
    try:
        return Thresholds.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"thresholds file is invalid ({validation_message(exc)}); fix or remove those keys",
            key="thresholds_invalid",
            params={"problems": problems(exc)},
        ) from exc
