"""The labelled outcome of a corpus scenario: what an expert concludes from its numbers.

A scenario's ``expected:`` block (YAML) is written from the scenario's figures, never from
the bot's output; ``gpunode_sandbox.corpus`` compares a Diagnosis with it. Unknown keys are
errors, like everywhere in the scenario format.

- ``cause`` / ``subject``: the verdict. ``subject`` is a glob (``data-prep/preprocess-*``
  for a Deployment's pod, whose name has a generated suffix) or ``gpu:N``, the uuid of GPU
  index N on that node (uuids are generated).
- ``contributing``: consumers that must be named besides the primary one (a subset: the
  verdict may name more).
- ``tiers``: the tiers offered (tier 1 and 3: available and relieving the shortage; tier 2:
  available, it frees nothing by design). A tier not listed must not be offered; one
  listed with ``offered: false`` is checked for its relief only (e.g. "evicting these pods
  frees about 8 GiB, not enough").
- ``runbook``: a glob the unit of a manual runbook step must match (processes outside
  Kubernetes get a runbook step, no API action).
- ``shortage``: range for ``Verdict.shortage_bytes`` (MemAvailable short of 10% of RAM).

The advice, not only the label (issue #20): a tier can name the plan values an expert
accepts, each a range:

- ``cap`` and ``container``: tier 3's memory limit per container (``values``) and the
  container it caps (a glob: the sidecar that leaks, not the pod's first container);
- ``evicts`` (count range) and ``evicted`` (globs that must be among them): the pods
  tier 1 evicts (the fewest that cover the shortage, the culprit among them);
- ``restarts``: the pods a template change restarts across the cluster (every replica,
  here and on other nodes): the ``count`` of the plan's ``rolls_other_nodes`` note when it
  has one, else its ``restarts`` and ``blast_radius``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpunode_sandbox.kubesim.quantities import to_bytes

Quantity = str | int
#: what an expert may blame, in the corpus's own words (the labels are the stand-in's, not
#: imported from the product: tests/sandbox/kubesim/test_expectations_vocabulary.py checks
#: that the product's verdict causes are the same set, so a label can't drift out of reach)
VerdictCause = Literal[
    "host_memory_workload",
    "container_limit",
    "kernel_slab",
    "kernel_memory",
    "system_process",
    "shmem",
    "hugepages",
    "gpu_memory",
    "gpu_xid",
    "gpu_orphan",
    "overcommit",
    "healthy",
    "inconclusive",
]


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ByteRange(_M):
    """Inclusive bounds in bytes (quantity strings); either may be omitted."""

    min: Quantity | None = None
    max: Quantity | None = None

    @model_validator(mode="after")
    def _ordered(self) -> ByteRange:
        low, high = self.min, self.max
        if low is not None and high is not None and to_bytes(low) > to_bytes(high):
            raise ValueError(f"range min {self.min} is above max {self.max}")
        return self


class CountRange(_M):
    """Inclusive bounds on a count; either may be omitted."""

    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> CountRange:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"range min {self.min} is above max {self.max}")
        return self


class Contribution(_M):
    cause: VerdictCause
    subject: str | None = Field(None, description="glob, or gpu:N; None: any subject")


class TierExpectation(_M):
    offered: bool | None = Field(True, description="None: either (not judged)")
    relief: ByteRange | None = Field(None, description="range for the plan's relief_bytes")
    target: str | None = Field(None, description="glob for the plan's target (Kind/ns/name)")
    cap: ByteRange | None = Field(None, description="tier 3: memory limit per container")
    container: str | None = Field(None, description="tier 3: glob for the capped container")
    evicts: CountRange | None = Field(None, description="tier 1: how many pods it evicts")
    evicted: list[str] = Field(
        default_factory=list, description="tier 1: globs (ns/name) it must evict"
    )
    restarts: CountRange | None = Field(
        None, description="pods restarted across the cluster (here and on other nodes)"
    )


class Expected(_M):
    node: str
    cause: VerdictCause
    subject: str | None = None
    contributing: list[Contribution] = Field(default_factory=list)
    #: tier number (1-3); an int key so a JSON round trip (keys as strings) validates again
    tiers: dict[Annotated[int, Field(ge=1, le=3)], TierExpectation] = Field(default_factory=dict)
    runbook: str | None = None
    shortage: ByteRange | None = None
    why: str = Field(description="the expert's reasoning from the numbers, one or two lines")
